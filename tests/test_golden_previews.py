"""Golden previews compare what a change does, not the order the engine happened to print it in."""

from __future__ import annotations

from e2e.harness.golden import GOLDEN, normalise

PATCH = "kubernetes:core/v1:NamespacePatch"


def child(name: str, value: str) -> list[str]:
    return [
        f"        + {PATCH}: (create)",
        f"            [urn=urn:pulumi:s::kiam::kiam:index:NamespacePermissions${PATCH}::{name}]",
        "            metadata  : {",
        f'                name       : "{value}"',
        "            }",
    ]


def preview(children: list[list[str]], duration: str = "1s") -> str:
    lines = [
        "Previewing update (s):",
        "  pulumi:pulumi:Stack: (same)",
        "    [urn=urn:pulumi:s::kiam::pulumi:pulumi:Stack::kiam-s]",
        "    + kiam:index:NamespacePermissions: (create)",
        "        [urn=urn:pulumi:s::kiam::kiam:index:NamespacePermissions::kiam-permissions]",
        *(line for block in children for line in block),
        "    ~ kubernetes:apps/v1:Deployment: (update)",
        "        [provider=urn:pulumi:s::kiam::pulumi:providers:kubernetes::kubernetes::"
        "0b6f3c4e-1d2a-4c5b-9e8f-7a6b5c4d3e2f]",
        "Resources:",
        "    + 2 to create",
        f"Duration: {duration}",
    ]
    return "\n".join(lines) + "\n"


def test_nested_siblings_in_either_order_normalise_alike() -> None:
    billing, search = (
        child("kiam-permissions-billing", "billing"),
        child("kiam-permissions-search", "search"),
    )
    assert normalise(preview([search, billing])) == normalise(preview([billing, search]))


def test_each_block_keeps_its_own_lines_and_the_summary_stays_last() -> None:
    billing, search = (
        child("kiam-permissions-billing", "billing"),
        child("kiam-permissions-search", "search"),
    )
    lines = normalise(preview([search, billing], duration="3m2s")).splitlines()
    # The component's children sorted under it, each with its own properties; then the sibling
    # Deployment (sorted after the component: `+` before `~`), then the summary as printed.
    assert lines[3:15] == [
        "    + kiam:index:NamespacePermissions: (create)",
        "        [urn=urn:pulumi:s::kiam::kiam:index:NamespacePermissions::kiam-permissions]",
        *billing,
        *search,
    ]
    assert lines[15:] == [
        "    ~ kubernetes:apps/v1:Deployment: (update)",
        "        [provider=urn:pulumi:s::kiam::pulumi:providers:kubernetes::kubernetes::<id>]",
        "Resources:",
        "    + 2 to create",
        "Duration: <t>",
    ]


def test_different_changes_stay_different() -> None:
    billing = child("kiam-permissions-billing", "billing")
    assert normalise(preview([billing])) != normalise(
        preview([child("kiam-permissions-billing", "x")])
    )


def test_every_golden_file_is_in_normal_form() -> None:
    goldens = sorted(GOLDEN.glob("*.txt"))
    assert [p.name for p in goldens] == [
        "adoption-1-servers.txt",
        "adoption-2-takeover.txt",
        "adoption-3-complete.txt",
        "fleet-preview.txt",  # the fleet tool's table (e2e/tests/test_fleet.py)
        "leaving-1-kiam-to-kiam+podIdentity.txt",
        "leaving-2-kiam+podIdentity-to-podIdentity.txt",
        "leaving-3-podIdentity-to-kiam+podIdentity.txt",
        "leaving-4-kiam+podIdentity-to-kiam.txt",
        "leaving-5-kiam-to-kiam+irsa.txt",
        "leaving-6-kiam+irsa-to-irsa.txt",
        "leaving-7-legacy-kiam-to-kiam+podIdentity.txt",
        "leaving-8-legacy-kiam+podIdentity-to-podIdentity.txt",
        "preview-image-bump.txt",
        "preview-namespace-takeover.txt",
        "preview-node-group-replacement.txt",
        "preview-taint-change.txt",
    ]
    for path in goldens:
        assert normalise(path.read_text()) == path.read_text(), path.name


def test_the_stand_in_groups_generated_suffix_is_normalised_and_nothing_else() -> None:
    text = (
        "name: kiam-server-nodes-a1b2c3d4-0 => kiam-server-nodes-9z8y7x6w-0\nkiam-server-nodes-0\n"
    )
    assert normalise(text) == (
        "name: kiam-server-nodes-<suffix>-0 => kiam-server-nodes-<suffix>-0\nkiam-server-nodes-0\n"
    )

"""Taking over an `iam.amazonaws.com/permitted` annotation someone else set (`kiam:existingPermitted`):
asserted before it is forced, the union admitted while it is held, the found value given back."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kiam_eks.components.namespace_permissions import permitted_regexp, permitted_union
from kiam_eks.contracts.kiam import permits
from kiam_eks.invariants import check_all
from kiam_eks.invariants.recorded import resources_from_recording
from kiam_eks.settings import SettingsError
from kiam_eks.settings.loader import settings_from_values
from tests.conftest import base_config, expected_of, run_program
from tools.mock_engine import Recording

PATCH = "kubernetes:core/v1:NamespacePatch"
BASE = "arn:aws:iam::111122223333:role/kiam-apps/"
# What a running kiam left on the billing namespace: two roles its pods use today.
FOUND = "arn:aws:iam::111122223333:role/kiam-apps/billing-(reports|batch)"
APPS = {
    "billing": {"namespace": "billing", "roleName": "billing-api"},
    "search": {"namespace": "search", "roleName": "search-api"},
}
PERMITTED = "iam.amazonaws.com/permitted"
EXISTING = "kiam.pulumi.io/existing-permitted"
FORCE = "pulumi.com/patchForce"


def takeover_config(apps: dict[str, Any]) -> dict[str, Any]:
    return base_config(applications=apps, existingPermitted={"billing": FOUND})


CONFIGS = {
    "holding": takeover_config(APPS),
    "given_back": takeover_config({"search": APPS["search"]}),
}


@pytest.fixture(scope="module")
def holding() -> Recording:
    return run_program(CONFIGS["holding"])


@pytest.fixture(scope="module")
def given_back() -> Recording:
    return run_program(CONFIGS["given_back"])


def patches(rec: Recording) -> dict[str, Any]:
    return {r.name: r for r in rec.by_type(PATCH)}


def test_holding_asserts_the_found_value_then_forces_the_union(holding: Recording) -> None:
    found = patches(holding)
    assert set(found) == {
        "kiam-permissions-billing-existing",
        "kiam-permissions-billing",
        "kiam-permissions-search",
    }
    check, takeover = found["kiam-permissions-billing-existing"], found["kiam-permissions-billing"]
    # The check re-asserts exactly the value found, without force, and never updates afterwards.
    assert check.inputs["metadata"] == {"name": "billing", "annotations": {PERMITTED: FOUND}}
    assert check.ignore_changes == ("metadata.annotations",)
    assert not check.retain_on_delete
    # The takeover comes after it, forced, records the value found and keeps the union on delete.
    assert check.urn in takeover.dependencies
    assert takeover.inputs["metadata"] == {
        "name": "billing",
        "annotations": {
            PERMITTED: f"{FOUND}$|^(arn:aws:iam::111122223333:role/kiam-apps/billing-api)$",
            FORCE: "true",
            EXISTING: FOUND,
        },
    }
    assert takeover.retain_on_delete
    # A namespace nobody annotated before is patched as always: no force, nothing kept.
    search = found["kiam-permissions-search"]
    assert search.inputs["metadata"]["annotations"] == {
        PERMITTED: permitted_regexp([f"{BASE}search-api"])
    }
    assert not search.retain_on_delete
    assert search.ignore_changes == ()


def test_the_union_admits_old_and_new_roles_and_nothing_else(holding: Recording) -> None:
    union = patches(holding)["kiam-permissions-billing"].inputs["metadata"]["annotations"][
        PERMITTED
    ]
    admitted = {
        role: permits(union, f"{BASE}{role}")
        for role in (
            "billing-reports",
            "billing-batch",
            "billing-api",
            "billing-other",
            "search-api",
        )
    }
    assert admitted == {
        "billing-reports": True,
        "billing-batch": True,
        "billing-api": True,
        "billing-other": False,
        "search-api": False,
    }


def test_giving_back_writes_the_found_value_and_shares_it(given_back: Recording) -> None:
    found = patches(given_back)
    assert set(found) == {
        "kiam-permissions-billing-existing",
        "kiam-permissions-billing",
        "kiam-permissions-billing-given-back",
        "kiam-permissions-search",
    }
    takeover = found["kiam-permissions-billing"]
    assert takeover.inputs["metadata"]["annotations"] == {
        PERMITTED: FOUND,
        FORCE: "true",
        EXISTING: FOUND,
    }
    # Not kept: deleting it gives up the force annotation and the record, nothing else.
    assert not takeover.retain_on_delete
    shared = found["kiam-permissions-billing-given-back"]
    assert shared.inputs["metadata"] == {"name": "billing", "annotations": {PERMITTED: FOUND}}
    assert takeover.urn in shared.dependencies
    assert shared.retain_on_delete


@pytest.mark.parametrize("which", ["holding", "given_back"])
def test_every_guarantee_holds(which: str, request: pytest.FixtureRequest) -> None:
    resources = resources_from_recording(request.getfixturevalue(which))
    assert check_all(resources, expected_of(CONFIGS[which])) == []


def test_a_takeover_that_stops_admitting_the_role_is_a_violation(holding: Recording) -> None:
    """The patch that records the value found decides, not the one that only re-asserts it."""
    import dataclasses

    resources = resources_from_recording(holding)
    broken = [
        dataclasses.replace(
            r,
            inputs={
                **r.inputs,
                "metadata": {
                    "name": "billing",
                    "annotations": {PERMITTED: FOUND, FORCE: "true", EXISTING: FOUND},
                },
            },
        )
        if r.type == PATCH and r.urn.endswith("::kiam-permissions-billing")
        else r
        for r in resources
    ]
    messages = [v.reason for v in check_all(broken, expected_of(CONFIGS["holding"]))]
    assert messages == [
        f"namespace billing permits {FOUND!r}, which does not admit {BASE}billing-api"
    ]


@pytest.mark.parametrize(
    ("existing", "message"),
    [
        (
            "arn:aws:iam::111122223333:role/(billing",
            "kiam:existingPermitted.billing 'arn:aws:iam::111122223333:role/(billing' cannot be "
            "matched the way kiam matches it: it is not a regular expression (missing ), "
            "unterminated subpattern at position 31)",
        ),
        (
            "arn:aws:iam::111122223333:role/kiam-apps/.*",
            "kiam:existingPermitted.billing 'arn:aws:iam::111122223333:role/kiam-apps/.*' admits "
            "arn:aws:iam::111122223333:role/kiam-apps/search-api, the role of application search "
            "in namespace search: pods of billing could assume it. Narrow the annotation first "
            "(kubectl annotate --overwrite namespace billing iam.amazonaws.com/permitted=...) and "
            "give the narrowed value",
        ),
        (
            "(?i)arn:aws:iam::111122223333:role/kiam-apps/billing-.*",
            "kiam:existingPermitted.billing '(?i)arn:aws:iam::111122223333:role/kiam-apps/billing-.*' "
            "cannot be matched the way kiam matches it: anchored as kiam anchors it, this check "
            "cannot read it (global flags not at the start of the expression at position 1); write "
            "flags as a scoped group such as (?i:...)",
        ),
    ],
)
def test_a_found_value_the_stack_could_not_keep_safely_is_refused(
    existing: str, message: str
) -> None:
    config = base_config(applications=APPS, existingPermitted={"billing": existing})
    values = {k.removeprefix("kiam:"): v for k, v in config.items()}
    with pytest.raises(SettingsError) as caught:
        settings_from_values(values, "stacks/Pulumi.x.yaml")
    assert caught.value.problems == [message]


@pytest.mark.parametrize(
    ("existing", "arns", "expected"),
    [
        ("x", [], "x"),
        ("", ["arn:a"], "^(arn:a)$"),
        ("a|b", ["arn:c"], "a|b$|^(arn:c)$"),
    ],
)
def test_permitted_union(existing: str, arns: list[str], expected: str) -> None:
    assert permitted_union(existing, arns) == expected


# Regexps found on namespaces, built from what kiam users write: literal ARNs, wildcards, classes,
# groups, top-level alternation (which kiam's `^` + expression + `$` anchors only at its ends),
# explicit anchors, and empty (which admits nothing).
_PIECES = st.sampled_from(
    ["arn:aws:iam::1:role/a", "arn:aws:iam::1:role/.*", "arn:aws:iam::1:role/(a|b)", "a", ".*",
     "[ab]", "role/b", "^arn:aws:iam::1:role/b$", "arn:aws:iam::1:role/a-[0-9]+"]
)  # fmt: skip
_EXISTING = st.one_of(st.just(""), st.lists(_PIECES, min_size=1, max_size=3).map("|".join))
_CANDIDATES = [
    "arn:aws:iam::1:role/a", "arn:aws:iam::1:role/b", "arn:aws:iam::1:role/c",
    "arn:aws:iam::1:role/a-12", "arn:aws:iam::1:role/new", "xarn:aws:iam::1:role/a", "a", "b", "",
]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    existing=_EXISTING,
    ours=st.lists(st.sampled_from(_CANDIDATES[:5]), min_size=1, max_size=2, unique=True),
)
def test_the_union_admits_exactly_the_found_values_admissions_and_the_roles(
    existing: str, ours: list[str]
) -> None:
    union = permitted_union(existing, ours)
    for candidate in _CANDIDATES:
        assert permits(union, candidate) == (permits(existing, candidate) or candidate in ours), (
            union,
            candidate,
        )


def test_the_plan_renders_each_patch_of_one_namespace_to_its_own_file(
    given_back: Recording,
) -> None:
    from tools.render import render

    files = {name for name in render(given_back).manifests if name.startswith("namespace-")}
    assert files == {
        "namespace-billing-kiam-permissions-billing-existing.yaml",
        "namespace-billing-kiam-permissions-billing.yaml",
        "namespace-billing-kiam-permissions-billing-given-back.yaml",
        "namespace-search.yaml",
        "namespace-kiam.yaml",
    }

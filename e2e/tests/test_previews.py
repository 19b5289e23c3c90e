"""Scenario 2, the pull-request preview for real: `pulumi preview --diff` of an image bump and of a
node group replacement show exactly what changes, kept as golden files (`e2e/golden/`) that the
README's pull-request section links. Rewrite them with `pytest e2e/tests --update-golden`."""

from __future__ import annotations

import re
from typing import Any

import pytest

from e2e.harness.environment import Environment
from e2e.harness.pulumi import PulumiStack
from e2e.harness.toolchain import REPO
from e2e.tests.conftest import changes, example_config, set_settings, with_changes

GOLDEN = REPO / "e2e" / "golden"
BUMPED_IMAGE = "quay.io/uswitch/kiam:v4.2-e2e"
STACK = "dev"


def normalise(text: str) -> str:
    """The preview without what changes from run to run: timings, local paths, the provider's id,
    and the order of the resources' blocks (the engine registers siblings concurrently)."""
    text = re.sub(r"Duration: \S+", "Duration: <t>", text)
    text = re.sub(r"(pulumi:providers:kubernetes::kubernetes::)[0-9a-f-]{36}", r"\1<id>", text)
    text = re.sub(r"/tmp/\S+", "<tmp>", text)
    lines = [line.rstrip() for line in text.splitlines() if "View in Browser" not in line]
    head: list[str] = []
    blocks: list[list[str]] = []
    tail: list[str] = []
    for line in lines:
        if tail or line.startswith(("    --outputs:--", "Resources:")):
            tail.append(line)
        elif RESOURCE_BLOCK.match(line):
            blocks.append([line])
        elif blocks:
            blocks[-1].append(line)
        else:
            head.append(line)
    ordered = [line for block in sorted(blocks, key=lambda b: "\n".join(b)) for line in block]
    return "\n".join([*head, *ordered, *tail]).strip() + "\n"


# The first line of one resource's block: `    ~ kubernetes:apps/v1:Deployment: (update)`.
RESOURCE_BLOCK = re.compile(r"^    [-+~]+ ?[\w.-]+:[\w./-]+:\w+: \(")


def check_golden(name: str, text: str, update: bool) -> None:
    path = GOLDEN / name
    if update:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"{path} is missing: run the suite with --update-golden"
    assert text == path.read_text(), (
        f"{name} differs from the golden file (--update-golden to accept)"
    )


def preview_of(
    env: Environment, stack: PulumiStack, config: dict[str, Any]
) -> tuple[str, dict[tuple[str, str], str]]:
    """The normalised `preview --diff` of a settings change, and its steps (settings restored)."""
    set_settings(env, stack, config)
    try:
        diff = stack.preview("--diff").output
        steps = changes(stack.preview("--json").stdout)
    finally:
        set_settings(env, stack, example_config(STACK))
    return normalise(diff), steps


def test_an_image_bump_previews_as_two_updates(
    env: Environment, installed_dev: PulumiStack, request: pytest.FixtureRequest
) -> None:
    config = with_changes(
        example_config(STACK), server={"image": BUMPED_IMAGE}, agent={"image": BUMPED_IMAGE}
    )
    diff, steps = preview_of(env, installed_dev, config)
    assert steps == {
        ("kubernetes:apps/v1:Deployment", "kiam-server"): "update",
        ("kubernetes:apps/v1:DaemonSet", "kiam-agent"): "update",
    }
    check_golden("preview-image-bump.txt", diff, request.config.getoption("--update-golden"))


def test_a_node_group_replacement_previews_as_replaced_nodes_and_a_new_node_selector(
    env: Environment, installed_dev: PulumiStack, request: pytest.FixtureRequest
) -> None:
    config = with_changes(example_config(STACK), nodeGroup={"instanceTypes": ["t3.medium"]})
    diff, steps = preview_of(env, installed_dev, config)
    # The stand-in group is its Nodes: each is replaced, create-before-delete, as EKS replaces
    # the group; the Deployment follows the new group's name.
    assert steps == {
        ("kubernetes:core/v1:Node", "kiam-server-nodes-0"): "replace",
        ("kubernetes:core/v1:Node", "kiam-server-nodes-1"): "replace",
        ("kubernetes:apps/v1:Deployment", "kiam-server"): "update",
    }
    assert "nodeSelector" in diff
    check_golden(
        "preview-node-group-replacement.txt", diff, request.config.getoption("--update-golden")
    )

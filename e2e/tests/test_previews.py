"""Scenario 2, the pull-request preview for real: `pulumi preview --diff` of an image bump and of a
node group replacement show exactly what changes, kept as golden files (`e2e/golden/`) that
docs/pull-requests.md links. Rewrite them with `pytest e2e/tests --update-golden`."""

from __future__ import annotations

from typing import Any

import pytest

from e2e.harness.environment import Environment
from e2e.harness.golden import check_golden, normalise
from e2e.harness.pulumi import PulumiStack
from e2e.tests.conftest import changes, example_config, set_settings, with_changes

BUMPED_IMAGE = "quay.io/uswitch/kiam:v4.2-e2e"
STACK = "dev"


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
    # The stand-in group (a ConfigMap of its arguments) and its Nodes are replaced,
    # create-before-delete, as EKS replaces the group; the Deployment follows the new name.
    assert steps == {
        ("kubernetes:core/v1:ConfigMap", "kiam-server-nodes"): "replace",
        ("kubernetes:core/v1:Node", "kiam-server-nodes-0"): "replace",
        ("kubernetes:core/v1:Node", "kiam-server-nodes-1"): "replace",
        ("kubernetes:apps/v1:Deployment", "kiam-server"): "update",
    }
    assert "nodeSelector" in diff
    check_golden(
        "preview-node-group-replacement.txt", diff, request.config.getoption("--update-golden")
    )


def test_a_taint_change_previews_as_a_replaced_group_not_an_update_of_the_running_nodes(
    env: Environment, installed_dev: PulumiStack, request: pytest.FixtureRequest
) -> None:
    config = with_changes(
        example_config(STACK), nodeGroup={"taint": {"value": "kiam", "effect": "NO_EXECUTE"}}
    )
    diff, steps = preview_of(env, installed_dev, config)
    # What a reviewer sees: the group is replaced (EKS would have tainted the running nodes), the
    # servers' toleration and the agents' exclusion follow the new taint.
    assert steps == {
        ("kubernetes:core/v1:ConfigMap", "kiam-server-nodes"): "replace",
        ("kubernetes:core/v1:Node", "kiam-server-nodes-0"): "replace",
        ("kubernetes:core/v1:Node", "kiam-server-nodes-1"): "replace",
        ("kubernetes:apps/v1:Deployment", "kiam-server"): "update",
        ("kubernetes:apps/v1:DaemonSet", "kiam-agent"): "update",
    }
    assert "+-kubernetes:core/v1:ConfigMap: (replace)" in diff
    check_golden("preview-taint-change.txt", diff, request.config.getoption("--update-golden"))

"""What a change of each node group setting does to the server nodes under this program: the
path `contracts/eks_node_group.py` gives its argument, the `replaceOnChanges` that enforces it,
and the mock engine's node group name (a new one exactly for a replacement)."""

from __future__ import annotations

from typing import Any

import pytest

from kiam_eks.contracts.eks_node_group import REPLACE_ON_CHANGES, NodeChange, path_taken
from kiam_eks.settings.node_group import SETTING_ARGUMENT, NodeGroupSettings
from tests.conftest import base_config, run_program
from tools.mock_engine import Recording

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"

# One valid change of each setting, over tests.conftest.BASE_CONFIG.
CHANGES: dict[str, dict[str, Any]] = {
    "subnets": {
        "node_group": {
            "subnets": [
                {"id": "subnet-00000000000000001", "zone": "eu-west-1a"},
                {"id": "subnet-00000000000000009", "zone": "eu-west-1b"},
            ]
        }
    },
    "instanceTypes": {"node_group": {"instanceTypes": ["m6i.large"]}},
    "capacityType": {"node_group": {"capacityType": "SPOT"}},
    "amiType": {"node_group": {"amiType": "BOTTLEROCKET_x86_64"}},
    "minSize": {"node_group": {"minSize": 3, "desiredSize": 4, "maxSize": 5}},
    "desiredSize": {"node_group": {"desiredSize": 4}},
    "maxSize": {"node_group": {"maxSize": 6}},
    "diskSizeGiB": {"node_group": {"diskSizeGiB": 40}},
    "labels": {"node_group": {"labels": {"team": "platform"}}},
    "taint": {"node_group": {"taint": {"value": "kiam"}}},
    "maxUnavailable": {"node_group": {"maxUnavailable": 2}},
    "kubernetesVersion": {"cluster": {"kubernetesVersion": "1.34"}},
}

EXPECTED_PATH = {
    "subnets": NodeChange.REPLACEMENT,
    "instanceTypes": NodeChange.REPLACEMENT,
    "capacityType": NodeChange.REPLACEMENT,
    "amiType": NodeChange.REPLACEMENT,
    "minSize": NodeChange.SCALING,
    "desiredSize": NodeChange.SCALING,
    "maxSize": NodeChange.SCALING,
    "diskSizeGiB": NodeChange.REPLACEMENT,
    "labels": NodeChange.CONFIG_UPDATE,
    "taint": NodeChange.REPLACEMENT,
    "maxUnavailable": NodeChange.CONFIG_UPDATE,
    "kubernetesVersion": NodeChange.REPLACEMENT,
}


def _changed_arguments(before: dict[str, Any], after: dict[str, Any]) -> set[str]:
    return {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}


def _arguments(run: Recording) -> dict[str, Any]:
    return run.one(NODE_GROUP).inputs


def test_every_node_group_setting_has_a_known_path() -> None:
    keys = {field.alias for field in NodeGroupSettings.model_fields.values()}
    assert set(SETTING_ARGUMENT) == keys | {"kubernetesVersion"}
    assert {s: path_taken(a) for s, a in SETTING_ARGUMENT.items()} == EXPECTED_PATH


def test_the_engine_is_asked_to_replace_on_the_arguments_the_contract_names(
    base_run: Recording,
) -> None:
    assert base_run.one(NODE_GROUP).replace_on_changes == REPLACE_ON_CHANGES


@pytest.mark.parametrize("setting", sorted(CHANGES))
def test_a_change_lands_on_its_argument_and_renames_the_group_only_when_it_replaces(
    setting: str, base_run: Recording
) -> None:
    changed = run_program(base_config(**CHANGES[setting]))
    before, after = _arguments(base_run), _arguments(changed)
    argument = SETTING_ARGUMENT[setting].split(".", 1)[0]
    assert argument in _changed_arguments(before, after)
    renamed = (
        base_run.one(NODE_GROUP).outputs["nodeGroupName"]
        != changed.one(NODE_GROUP).outputs["nodeGroupName"]
    )
    assert renamed is (EXPECTED_PATH[setting] is NodeChange.REPLACEMENT)

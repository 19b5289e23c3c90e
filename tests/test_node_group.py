"""The dedicated node group: taint, label, subnets, IMDSv2, and what keeps its replacement safe."""

from __future__ import annotations

from typing import Any

import pulumi
import pytest

from kiam_eks.contracts import names, tokens
from tests.conftest import base_config, run_program, types_and_names
from tools.mock_engine import Recording

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"


def test_children_and_parentage(base_run: Recording) -> None:
    component = base_run.one(tokens.SERVER_NODE_GROUP)
    assert component.parent == base_run.one(tokens.KIAM).urn
    assert types_and_names(base_run.children_of(component.urn)) == {
        (LAUNCH_TEMPLATE, "kiam-server-nodes-launch-template"),
        (NODE_GROUP, "kiam-server-nodes"),
    }


def test_tainted_labelled_and_spread_over_the_subnets(base_run: Recording) -> None:
    group = base_run.one(NODE_GROUP)
    assert group.inputs["taints"] == [
        {"key": "dedicated", "value": "kiam-server", "effect": "NO_SCHEDULE"}
    ]
    assert group.inputs["labels"] == {"dedicated": "kiam-server"}
    assert group.inputs["subnetIds"] == [
        "subnet-00000000000000001",
        "subnet-00000000000000002",
        "subnet-00000000000000003",
    ]
    assert group.inputs["scalingConfig"] == {"minSize": 3, "desiredSize": 3, "maxSize": 4}
    assert group.inputs["updateConfig"] == {"maxUnavailable": 1}
    assert group.inputs["clusterName"] == "test"
    assert group.inputs["version"] == "1.33"
    assert (group.inputs["amiType"], group.inputs["capacityType"]) == (
        "AL2023_x86_64_STANDARD",
        "ON_DEMAND",
    )
    assert group.inputs["instanceTypes"] == ["t3.medium"]


def test_user_labels_join_the_dedicated_label() -> None:
    rec = run_program(base_config(node_group={"labels": {"team": "platform"}}))
    assert rec.one(NODE_GROUP).inputs["labels"] == {"team": "platform", "dedicated": "kiam-server"}


def test_replaceable_without_collision_and_create_before_delete(base_run: Recording) -> None:
    group = base_run.one(NODE_GROUP)
    assert "nodeGroupName" not in group.inputs
    assert group.inputs["nodeGroupNamePrefix"] == names.SERVER_NODE_GROUP_PREFIX == "kiam-server-"
    # The settings cap the cluster name by this prefix's length (kiam:cluster.name).
    template = base_run.one(LAUNCH_TEMPLATE)
    assert template.inputs["namePrefix"] == names.launch_template_name_prefix("test")
    assert template.inputs["namePrefix"] == "test-kiam-server-"
    assert group.delete_before_replace is False
    assert group.custom_timeouts == {"create": "40m", "update": "60m", "delete": "40m"}


def test_waits_for_the_node_role_and_its_policies(base_run: Recording) -> None:
    group = base_run.one(NODE_GROUP)
    attachments = base_run.by_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
    node_role = base_run.one("aws:iam/role:Role", "kiam-iam-server-node")
    assert {a.urn for a in attachments} <= set(group.dependencies)
    assert len(attachments) == 3
    assert group.inputs["nodeRoleArn"] == node_role.outputs["arn"]
    assert group.property_dependencies["nodeRoleArn"] == (node_role.urn,)


def test_launch_template_requires_imdsv2_with_a_hop_for_server_pods(base_run: Recording) -> None:
    template = base_run.one(LAUNCH_TEMPLATE)
    assert template.inputs["metadataOptions"] == {
        "httpEndpoint": "enabled",
        "httpTokens": "required",
        "httpPutResponseHopLimit": 2,
    }
    assert template.inputs["blockDeviceMappings"] == [
        {
            "deviceName": "/dev/xvda",
            "ebs": {
                "volumeSize": 20,
                "volumeType": "gp3",
                "encrypted": "true",
                "deleteOnTermination": "true",
            },
        }
    ]
    assert "name" not in template.inputs
    group = base_run.one(NODE_GROUP)
    assert template.id.startswith("lt-")
    assert group.inputs["launchTemplate"] == {
        "id": template.id,
        "version": str(template.outputs["latestVersion"]),
    }
    assert template.urn in group.property_dependencies["launchTemplate"]


def test_bottlerocket_puts_the_disk_on_its_data_volume() -> None:
    rec = run_program(base_config(node_group={"amiType": "BOTTLEROCKET_x86_64"}))
    assert rec.one(LAUNCH_TEMPLATE).inputs["blockDeviceMappings"][0]["deviceName"] == "/dev/xvdb"


def test_the_mock_engine_replaces_the_group_on_what_the_program_registered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A taint change gives the group a new name because the program registers it to be replaced
    on the taint; without that option the mock engine, as EKS, changes the group in place."""
    from kiam_eks.components import node_group

    taint = {"taint": {"value": "servers"}}

    def name(config: dict[str, Any]) -> str:
        return str(run_program(config).one(NODE_GROUP).outputs["nodeGroupName"])

    assert name(base_config()) != name(base_config(node_group=taint))
    monkeypatch.setattr(node_group, "replacement_options", lambda: pulumi.ResourceOptions())
    assert name(base_config()) == name(base_config(node_group=taint))
    # What EKS itself replaces a group for still renames it.
    assert name(base_config()) != name(base_config(node_group={"instanceTypes": ["m6i.large"]}))

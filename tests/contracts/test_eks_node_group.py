"""What EKS does with each node group change, spelled out literally from where it is written, so a
wrong belief in `contracts/eks_node_group.py` fails here instead of passing every other gate.

terraform-provider-aws `internal/service/eks/node_group.go` (commit 012e0a32), which pulumi-aws
bridges: `ForceNew: true` in `resourceNodeGroup`'s schema on ami_type, capacity_type, cluster_name,
disk_size, instance_types, launch_template.0.id, launch_template.0.name, node_group_name,
node_group_name_prefix, node_role_arn, remote_access and subnet_ids; `resourceNodeGroupUpdate`
begins "Do any version update first" with `d.HasChanges("launch_template", "release_version",
"version")` -> `UpdateNodegroupVersion`, and sends the rest (labels, taint, scaling_config,
update_config, node_repair_config) as `UpdateNodegroupConfig`.
"""

from __future__ import annotations

from kiam_eks.contracts.eks_node_group import (
    FORCE_NEW,
    IN_PLACE,
    ON_CHANGE,
    REPLACE_ON_CHANGES,
    NodeChange,
    path_taken,
)


def test_the_arguments_eks_replaces_a_group_for() -> None:
    assert set(FORCE_NEW) == {
        "amiType",
        "capacityType",
        "clusterName",
        "diskSize",
        "instanceTypes",
        "launchTemplate.id",
        "launchTemplate.name",
        "nodeGroupName",
        "nodeGroupNamePrefix",
        "nodeRoleArn",
        "remoteAccess",
        "subnetIds",
    }


def test_a_launch_template_version_and_a_kubernetes_version_are_rolled_in_place_by_eks() -> None:
    assert {k for k, v in ON_CHANGE.items() if v is NodeChange.VERSION_UPDATE} == {
        "launchTemplate.version",
        "version",
        "releaseVersion",
    }


def test_labels_taints_update_and_repair_configuration_are_applied_to_the_running_group() -> None:
    assert {k for k, v in ON_CHANGE.items() if v is NodeChange.CONFIG_UPDATE} == {
        "labels",
        "taints",
        "updateConfig",
        "nodeRepairConfig",
        "tags",
    }
    assert {k for k, v in ON_CHANGE.items() if v is NodeChange.SCALING} == {"scalingConfig"}


def test_every_in_place_path_that_touches_the_servers_nodes_is_replaced_instead() -> None:
    # A version update rolls new software onto the nodes; a taint applied in place evicts (NoExecute)
    # or strands the servers: the program takes the replacement path for both.
    assert REPLACE_ON_CHANGES == ("launchTemplate", "version", "releaseVersion", "taints")
    for argument, change in ON_CHANGE.items():
        if change is NodeChange.VERSION_UPDATE or argument == "taints":
            assert path_taken(argument) is NodeChange.REPLACEMENT, argument
    assert {path_taken(a) for a in IN_PLACE} == {NodeChange.CONFIG_UPDATE, NodeChange.SCALING}
    # Every argument is either replaced or deliberately left in place: none is forgotten.
    replaced = {a for a in ON_CHANGE if path_taken(a) is NodeChange.REPLACEMENT}
    assert replaced | set(IN_PLACE) == set(ON_CHANGE)
    assert not replaced & set(IN_PLACE)


def test_the_volume_a_launch_template_sizes_per_ami_family() -> None:
    # Bottlerocket's documentation: an OS volume (/dev/xvda) and a data volume (/dev/xvdb) that
    # holds containers and images; Amazon Linux keeps everything on its root volume, /dev/xvda.
    from kiam_eks.contracts.eks_node_group import root_device

    assert root_device("BOTTLEROCKET_x86_64") == "/dev/xvdb"
    assert root_device("BOTTLEROCKET_ARM_64") == "/dev/xvdb"
    assert root_device("AL2023_x86_64_STANDARD") == "/dev/xvda"
    assert root_device("AL2023_ARM_64_STANDARD") == "/dev/xvda"


def test_how_long_eks_waits_for_a_drain_before_it_terminates_a_node() -> None:
    # "Delete a managed node group": forced termination after 5 minutes of draining.
    from e2e.harness.drainer import DRAIN_LIMIT_SECONDS
    from kiam_eks.contracts.eks_node_group import DRAIN_BEFORE_TERMINATION_SECONDS

    assert DRAIN_BEFORE_TERMINATION_SECONDS == 300
    # The stand-in's drainer waits exactly as long as EKS does.
    assert DRAIN_LIMIT_SECONDS == 300.0

"""What EKS does with a change of each argument of an `aws.eks.NodeGroup`, and which of those paths
this program lets EKS take.

Sources, spelled out literally by `tests/contracts/test_eks_node_group.py`:
- terraform-provider-aws `internal/service/eks/node_group.go` (which pulumi-aws bridges; read at
  commit 012e0a32f0686212f447447fd3d81c3d0ce256ad): the schema's `ForceNew` marks a replacement;
  `resourceNodeGroupUpdate` sends `UpdateNodegroupVersion` when `launch_template`,
  `release_version` or `version` changed, and `UpdateNodegroupConfig` for `labels`, `taint`,
  `scaling_config`, `update_config` and `node_repair_config`.
- EKS API reference, `UpdateNodegroupConfig` (labels and taints are applied to the nodes already
  in the group) and `NodegroupScalingConfig` ("If this parameter is given a value that is smaller
  than the current number of running worker nodes, the necessary number of worker nodes are
  terminated").
- EKS user guide, "Managed node update behavior" (a version update surges new nodes into the same
  group, then cordons and drains the old ones through the eviction API, failing with
  `PodEvictionFailure` after 15 minutes unless forced) and "Delete a managed node group" (each
  instance is drained before it is terminated; after 5 minutes the termination is forced).
"""

from __future__ import annotations

from enum import StrEnum

# EKS user guide, "Delete a managed node group" (scale-in terminates nodes the same way): "If the
# node hasn't been drained after 5 minutes, Amazon EKS lets Auto Scaling continue the forced
# termination of the instance."
DRAIN_BEFORE_TERMINATION_SECONDS = 5 * 60


class NodeChange(StrEnum):
    """The path EKS takes for a change of one node group argument."""

    REPLACEMENT = "replacement"
    """`ForceNew`: a new group is created (`CreateNodegroup`) and the old one deleted; with Pulumi's
    default create-before-delete, the new group exists before the old is drained."""
    VERSION_UPDATE = "version update"
    """`UpdateNodegroupVersion`: EKS rolls the nodes of the same group, surging new ones and
    draining the old ones through the eviction API."""
    CONFIG_UPDATE = "configuration update"
    """`UpdateNodegroupConfig`: applied to the nodes already running (labels, taints) or to the
    group's own bookkeeping (update and repair configuration)."""
    SCALING = "scaling"
    """`UpdateNodegroupConfig` with a scaling configuration: nodes are added, or drained and
    terminated."""


# Every argument of aws.eks.NodeGroup that this program sets or that forces a new group, in the
# engine's (camelCase) spelling, with the path EKS takes when it changes.
ON_CHANGE: dict[str, NodeChange] = {
    "amiType": NodeChange.REPLACEMENT,
    "capacityType": NodeChange.REPLACEMENT,
    "clusterName": NodeChange.REPLACEMENT,
    "diskSize": NodeChange.REPLACEMENT,
    "instanceTypes": NodeChange.REPLACEMENT,
    "nodeGroupName": NodeChange.REPLACEMENT,
    "nodeGroupNamePrefix": NodeChange.REPLACEMENT,
    "nodeRoleArn": NodeChange.REPLACEMENT,
    "remoteAccess": NodeChange.REPLACEMENT,
    "subnetIds": NodeChange.REPLACEMENT,
    "launchTemplate.id": NodeChange.REPLACEMENT,
    "launchTemplate.name": NodeChange.REPLACEMENT,
    # A launch template the program owns gets a new version for every change of its content
    # (block devices, metadata options): a version update of the same group, not a new group.
    "launchTemplate.version": NodeChange.VERSION_UPDATE,
    "version": NodeChange.VERSION_UPDATE,
    "releaseVersion": NodeChange.VERSION_UPDATE,
    "labels": NodeChange.CONFIG_UPDATE,
    "taints": NodeChange.CONFIG_UPDATE,
    "updateConfig": NodeChange.CONFIG_UPDATE,
    "nodeRepairConfig": NodeChange.CONFIG_UPDATE,
    "scalingConfig": NodeChange.SCALING,
    # The group's own tags (TagResource/UntagResource on its ARN; terraform-provider-aws
    # `resourceNodeGroupUpdate` updates `tags` in place, no ForceNew): no node is touched.
    "tags": NodeChange.CONFIG_UPDATE,
}

# The arguments whose change EKS itself replaces the group for.
FORCE_NEW: tuple[str, ...] = tuple(k for k, v in ON_CHANGE.items() if v is NodeChange.REPLACEMENT)

# What this program does instead of the in-place path, for the changes that touch the servers'
# nodes: their software (a new launch template version, a Kubernetes version or AMI release) or
# who may run on them (the taint). Applied in place, a new NoExecute taint evicts every server at
# once, outside the PodDisruptionBudget, and their replacements stay Pending until the
# Deployment's toleration follows; a version update drains under a 15-minute eviction limit. Asked
# as Pulumi's `replaceOnChanges`, each of these takes the one path the program proves: a new
# group, the servers Ready on it, then the old group drained and deleted.
REPLACE_ON_CHANGES: tuple[str, ...] = ("launchTemplate", "version", "releaseVersion", "taints")

# Left in place on purpose: a label change evicts no pod (node affinity and selectors are
# IgnoredDuringExecution, and no label the servers or agents select on is among the extra labels);
# an update or repair configuration, or the group's own tags, touch no node; a scaling change adds
# nodes, or drains the ones it terminates as a deletion does.
IN_PLACE: tuple[str, ...] = (
    "labels",
    "updateConfig",
    "nodeRepairConfig",
    "scalingConfig",
    "tags",
)


def path_taken(argument: str) -> NodeChange:
    """The path a change of `argument` takes under this program: a replacement for everything the
    program replaces on change, otherwise what EKS does."""
    top = argument.split(".", 1)[0]
    if argument in REPLACE_ON_CHANGES or top in REPLACE_ON_CHANGES:
        return NodeChange.REPLACEMENT
    return ON_CHANGE[argument]


def replaces_group(argument: str) -> bool:
    """Whether a change of `argument` gives the group a new name under this program."""
    return path_taken(argument) is NodeChange.REPLACEMENT


def root_device(ami_type: str) -> str:
    """The device an AMI type's launch template must size: Bottlerocket keeps containers and
    images on its second volume (/dev/xvdb), Amazon Linux on the root volume (/dev/xvda)."""
    return "/dev/xvdb" if ami_type.startswith("BOTTLEROCKET") else "/dev/xvda"

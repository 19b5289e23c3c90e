"""The dedicated, tainted EKS managed node group the kiam servers run on."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, model_validator

from kiam_eks.contracts.eks_node_group import NodeChange, path_taken
from kiam_eks.settings.base import LABEL_NAME, LabelKey, Model, matching

# EC2 resource ids carry 8 hex digits (older ids) or 17 (EC2 User Guide, "Resource IDs").
SubnetId = Annotated[
    str,
    matching(r"subnet-([0-9a-f]{8}|[0-9a-f]{17})", "a subnet id such as subnet-0abc1234"),
]
# A region (settings/cluster.py) and one letter; that it is the cluster's region is checked once
# both are known (settings/stack.py).
Zone = Annotated[
    str, matching(r"[a-z]+(-[a-z]+)+-\d+[a-z]", "an availability zone such as eu-west-1a")
]
# Sizes may carry a dash: c7i.metal-24xl.
InstanceType = Annotated[
    str, matching(r"[a-z][a-z0-9-]*\.[a-z0-9-]+", "an EC2 instance type such as m6i.large")
]
# CreateNodegroup takes 0-20 instanceTypes when a launch template is given (EKS API reference).
MAX_INSTANCE_TYPES = 20
# EKS refuses node labels (and taints) whose key contains one of these (InvalidParameterException
# "Label cannot contain reserved prefixes [kubernetes.io/, k8s.io/, eks.amazonaws.com/]"); the
# kubelet itself would refuse most `kubernetes.io` labels too (NodeRestriction).
EKS_RESERVED_LABEL_PREFIXES = ("kubernetes.io/", "k8s.io/", "eks.amazonaws.com/")


def _check_node_label_key(key: str) -> str:
    # CreateNodegroup's labelKey and taintKey: 1 to 63 characters, prefix included.
    if len(key) > 63:
        raise ValueError(
            f"{key!r} is longer than the 63 characters EKS allows for a node label key"
        )
    reserved = [p for p in EKS_RESERVED_LABEL_PREFIXES if p in key]
    if reserved:
        raise ValueError(
            f"{key!r} uses the prefix {reserved[0]}, which EKS reserves (kubernetes.io/, k8s.io/, "
            "eks.amazonaws.com/): use your own, such as example.com/role"
        )
    return key


NodeLabelKey = Annotated[LabelKey, AfterValidator(_check_node_label_key)]
"""A label (or taint) key EKS accepts on a managed node group."""

NodeLabelValue = Annotated[
    str,
    matching(LABEL_NAME, "a node label value of 1 to 63 characters (EKS refuses empty ones)"),
]
"""A label value EKS accepts on a managed node group: unlike Kubernetes, not empty."""

ARM_AMI_TYPES = ("AL2023_ARM_64_STANDARD", "BOTTLEROCKET_ARM_64")
AmiType = Literal[
    "AL2023_x86_64_STANDARD", "AL2023_ARM_64_STANDARD", "BOTTLEROCKET_x86_64", "BOTTLEROCKET_ARM_64"
]
# Graviton families carry a `g` right after the generation digit (m7g, c6gn, t4g); a1 is the first.
_ARM_FAMILY = re.compile(r"^([a-z]+\d+g[a-z]*|a1)$")


# Where each `kiam:nodeGroup` setting (and `kiam:cluster.kubernetesVersion`) lands among the
# arguments of aws.eks.NodeGroup, so what a change of it does is `contracts.eks_node_group`'s
# answer for that argument. `diskSizeGiB` lives in the launch template the group runs: its change
# is a new template version, which reaches the group as `launchTemplate.version`.
SETTING_ARGUMENT: dict[str, str] = {
    "subnets": "subnetIds",
    "instanceTypes": "instanceTypes",
    "capacityType": "capacityType",
    "amiType": "amiType",
    "minSize": "scalingConfig",
    "desiredSize": "scalingConfig",
    "maxSize": "scalingConfig",
    "diskSizeGiB": "launchTemplate.version",
    "labels": "labels",
    "taint": "taints",
    "maxUnavailable": "updateConfig",
    "kubernetesVersion": "version",
}

# What a change of a setting does to the server nodes, by the path its argument takes
# (`contracts.eks_node_group.path_taken`): the words the configuration reference and the plan use.
WHAT_A_CHANGE_DOES: dict[NodeChange, str] = {
    NodeChange.REPLACEMENT: "replaces the node group: new nodes first (minutes on EKS), the "
    "servers move there and are Ready, then the old nodes are drained and deleted",
    NodeChange.CONFIG_UPDATE: "applied to the running nodes in place (seconds); no server moves",
    NodeChange.SCALING: "adds nodes, or drains and terminates the surplus (EKS drains each node "
    "before terminating it, forced after 5 minutes); servers on the kept nodes stay",
    NodeChange.VERSION_UPDATE: "rolled by EKS inside the group (never taken: replaced instead)",
}


def what_a_change_does(setting: str) -> str:
    """For a `kiam:nodeGroup` key (or `kubernetesVersion`): what changing it does to the nodes."""
    return WHAT_A_CHANGE_DOES[path_taken(SETTING_ARGUMENT[setting])]


class SubnetSettings(Model):
    """One subnet of the node group; the zone lets the program prove the group spans zones."""

    id: SubnetId = Field(description="Subnet id.")
    zone: Zone | None = Field(default=None, description="Availability zone of the subnet.")


class TaintSettings(Model):
    """The taint that reserves the node group for kiam servers; the same pair labels its nodes."""

    key: NodeLabelKey = Field(
        default="dedicated",
        description="Taint (and node label) key; no kubernetes.io/, k8s.io/ or "
        "eks.amazonaws.com/ prefix (EKS reserves them).",
    )
    value: NodeLabelValue = Field(
        default="kiam-server",
        description="Taint (and node label) value; not empty, as it is also a node label.",
    )
    effect: Literal["NO_SCHEDULE", "NO_EXECUTE"] = Field(
        default="NO_SCHEDULE",
        description="EKS taint effect; PREFER_NO_SCHEDULE is not allowed: it would not dedicate.",
    )

    @property
    def kubernetes_effect(self) -> str:
        """The effect as Kubernetes spells it in tolerations."""
        return {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute"}[self.effect]


class NodeGroupSettings(Model):
    """`kiam:nodeGroup`: the dedicated managed node group for kiam servers."""

    subnets: list[SubnetSettings] = Field(
        min_length=2,
        description="Private subnets for the nodes, in at least two availability zones "
        "(give each as `{id, zone}` so the program can check the spread).",
    )
    instance_types: list[InstanceType] = Field(
        default=["t3.medium"],
        min_length=1,
        max_length=MAX_INSTANCE_TYPES,
        description=f"EC2 instance types (at most {MAX_INSTANCE_TYPES}, EKS's limit).",
    )
    capacity_type: Literal["ON_DEMAND", "SPOT"] = Field(
        default="ON_DEMAND",
        description="ON_DEMAND or SPOT. Spot reclaims nodes with two minutes' notice: only "
        "for clusters that can lose a server at any moment.",
    )
    ami_type: AmiType = Field(default="AL2023_x86_64_STANDARD", description="EKS AMI type.")
    min_size: int = Field(default=3, ge=1, le=100, description="Minimum number of nodes.")
    desired_size: int = Field(default=3, ge=1, le=100, description="Desired number of nodes.")
    max_size: int = Field(default=4, ge=1, le=100, description="Maximum number of nodes.")
    disk_size_gib: int = Field(
        default=20,
        ge=20,
        le=1000,
        alias="diskSizeGiB",
        description="Root volume size in GiB (gp3, encrypted).",
    )
    labels: dict[NodeLabelKey, NodeLabelValue] = Field(
        default={},
        description="Extra node labels (the taint's key/value label is always set). EKS "
        "refuses keys longer than 63 characters or containing kubernetes.io/, k8s.io/ or "
        "eks.amazonaws.com/, and empty values.",
    )
    taint: TaintSettings = Field(default=TaintSettings(), description="The dedicating taint.")
    max_unavailable: int = Field(
        default=1, ge=1, le=100, description="Nodes EKS may take down at once during an update."
    )

    @model_validator(mode="after")
    def _check(self) -> NodeGroupSettings:
        ids = [s.id for s in self.subnets]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise ValueError(f"subnets lists {', '.join(duplicates)} more than once")
        zones = [s.zone for s in self.subnets]
        if any(zones):
            if not all(zones):
                raise ValueError("give a zone for every subnet or for none")
            if len(set(zones)) < 2:
                raise ValueError(
                    f"subnets are all in {zones[0]}: the servers must span at least two zones"
                )
        if not self.min_size <= self.desired_size <= self.max_size:
            raise ValueError(
                f"sizes must satisfy minSize <= desiredSize <= maxSize "
                f"(got {self.min_size}, {self.desired_size}, {self.max_size})"
            )
        arm = self.ami_type in ARM_AMI_TYPES
        wrong = [t for t in self.instance_types if bool(_ARM_FAMILY.match(t.split(".")[0])) != arm]
        if wrong:
            arch = "arm64" if arm else "x86_64"
            raise ValueError(
                f"instanceTypes {', '.join(wrong)} do not match the {arch} amiType {self.ami_type}"
            )
        if self.taint.key in self.labels:
            raise ValueError(
                f"labels must not set {self.taint.key!r}: the taint's key/value label is set for you"
            )
        return self

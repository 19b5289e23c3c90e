"""The node group stand-in: kwok Nodes registered through Pulumi, so the engine itself creates,
replaces (create-before-delete) and deletes them as it does an EKS managed node group."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from contracts import labels
from settings.node_group import ARM_AMI_TYPES, NodeGroupSettings

GROUP_PREFIX = "kiam-server-"
# What kwok needs to take a Node over: it keeps it Ready and runs (pretends to run) its pods.
KWOK_ANNOTATION = {"kwok.x-k8s.io/node": "fake"}
# The workload nodes the harness applies get a small instance's room. The dedicated nodes cannot
# (the SDK's Node takes no status): kwok gives them its defaults, 1k CPUs and 1Ti, which the
# servers' requests fit, as they must fit the instance types the stack names.
CAPACITY = {"cpu": "2", "memory": "4Gi", "pods": "110"}


def group_name(s: NodeGroupSettings) -> str:
    """A name that changes whenever a field that replaces an EKS node group changes (instance
    types, capacity type, AMI type, subnets, disk size), like EKS's generated suffix."""
    forcing = {
        "instanceTypes": s.instance_types,
        "capacityType": s.capacity_type,
        "amiType": s.ami_type,
        "subnets": [subnet.id for subnet in s.subnets],
        "diskSizeGiB": s.disk_size_gib,
    }
    digest = hashlib.sha256(json.dumps(forcing, sort_keys=True).encode()).hexdigest()
    return f"{GROUP_PREFIX}{digest[:12]}"


def node_zones(s: NodeGroupSettings, region: str) -> list[str]:
    """The zone of each node: EKS spreads a group's nodes over its subnets' zones in turn."""
    zones = [subnet.zone or f"{region}{'abcdef'[i % 6]}" for i, subnet in enumerate(s.subnets)]
    return [zones[i % len(zones)] for i in range(s.desired_size)]


def node_labels(
    s: NodeGroupSettings, group: str, node: str, zone: str, region: str
) -> dict[str, str]:
    """The labels EKS (and the kubelet) put on a managed node, plus the group's own."""
    return {
        **s.labels,
        s.taint.key: s.taint.value,
        labels.NODE_GROUP_LABEL: group,
        "eks.amazonaws.com/capacityType": s.capacity_type,
        "node.kubernetes.io/instance-type": s.instance_types[0],
        labels.ZONE_TOPOLOGY: zone,
        "topology.kubernetes.io/region": region,
        labels.HOSTNAME_TOPOLOGY: node,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "arm64" if s.ami_type in ARM_AMI_TYPES else "amd64",
        "type": "kwok",
    }


@dataclass(frozen=True, kw_only=True)
class KwokNodeGroupArgs:
    """Inputs of `KwokNodeGroup`."""

    settings: NodeGroupSettings
    region: str


class KwokNodeGroup(pulumi.ComponentResource):
    """`ServerNodes` as kwok Nodes: one per desired node, labelled and tainted as EKS does; kwok
    marks them Ready and gives them addresses and room, as a kubelet would."""

    node_group_name: pulumi.Output[str]
    nodes: list[k8s.core.v1.Node]

    def __init__(
        self, name: str, args: KwokNodeGroupArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("kiam:e2e:KwokNodeGroup", name, None, opts)
        s = args.settings
        group = group_name(s)
        taint = s.taint
        self.nodes = []
        for index, zone in enumerate(node_zones(s, args.region)):
            node = f"{group}-{index}"
            self.nodes.append(
                k8s.core.v1.Node(
                    # Stable logical names: a new group name replaces each Node, create first.
                    f"{name}-{index}",
                    metadata={
                        "name": node,
                        "labels": node_labels(s, group, node, zone, args.region),
                        "annotations": KWOK_ANNOTATION,
                    },
                    spec={
                        "taints": [
                            {
                                "key": taint.key,
                                "value": taint.value,
                                "effect": taint.kubernetes_effect,
                            }
                        ]
                    },
                    opts=pulumi.ResourceOptions(parent=self),
                )
            )
        # Like the real group's name, known only once every node of the group exists.
        self.node_group_name = pulumi.Output.all(*[n.metadata.name for n in self.nodes]).apply(
            lambda _: group
        )
        self.register_outputs({"node_group_name": self.node_group_name})

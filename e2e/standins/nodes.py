"""The node group stand-in: kwok Nodes registered through Pulumi, so the engine itself creates,
replaces (create-before-delete), updates and deletes them as it does an EKS managed node group.

The group is a ConfigMap holding, one key each, the arguments an `aws.eks.NodeGroup` would get
from the same settings whose change makes a new group: what EKS replaces a group for, and what
the program's `replaceOnChanges` names (`contracts/eks_node_group.py`). The engine replaces it on
any change, create-before-delete; a new group is a new ConfigMap name, so new Nodes. A label
change reaches the running Nodes in place; a size change adds or removes Nodes. The taint and the versions never change on a running Node, because the program
replaces the group for them, as it does on AWS.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from contracts import labels
from contracts.eks_node_group import replaces_group, root_device
from settings.node_group import ARM_AMI_TYPES, NodeGroupSettings

# Where the group ConfigMaps live: a namespace every control plane has.
GROUP_NAMESPACE = "kube-system"
# Holds a deleted Node until the harness has drained it, as EKS drains a node before it
# terminates it (e2e/harness/drainer.py).
DRAIN_FINALIZER = "kiam.e2e/eks-drain"
# What kwok needs to take a Node over: it keeps it Ready and runs (pretends to run) its pods.
KWOK_ANNOTATION = {"kwok.x-k8s.io/node": "fake"}
# The workload nodes the harness applies get a small instance's room. The dedicated nodes cannot
# (the SDK's Node takes no status): kwok gives them its defaults, 1k CPUs and 1Ti, which the
# servers' requests fit, as they must fit the instance types the stack names.
CAPACITY = {"cpu": "2", "memory": "4Gi", "pods": "110"}


def group_arguments(s: NodeGroupSettings, kubernetes_version: str) -> dict[str, Any]:
    """What `components/node_group.py` passes aws.eks.NodeGroup for these settings, by argument
    (`launchTemplate` stands for the content of the template it runs, whose change is a new
    version). `tests/test_standins.py` checks each setting moves the same argument here as there."""
    taint = s.taint
    return {
        "subnetIds": [subnet.id for subnet in s.subnets],
        "instanceTypes": list(s.instance_types),
        "capacityType": s.capacity_type,
        "amiType": s.ami_type,
        "scalingConfig": {
            "minSize": s.min_size,
            "desiredSize": s.desired_size,
            "maxSize": s.max_size,
        },
        "launchTemplate": {"diskSizeGiB": s.disk_size_gib, "rootDevice": root_device(s.ami_type)},
        "labels": {**s.labels, taint.key: taint.value},
        "taints": [{"key": taint.key, "value": taint.value, "effect": taint.effect}],
        "updateConfig": {"maxUnavailable": s.max_unavailable},
        "version": kubernetes_version,
    }


def _as_data(arguments: dict[str, Any]) -> dict[str, str]:
    return {k: json.dumps(v, sort_keys=True) for k, v in arguments.items()}


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
    kubernetes_version: str


class KwokNodeGroup(pulumi.ComponentResource):
    """`ServerNodes` as kwok Nodes: one per desired node, labelled and tainted as EKS does; kwok
    marks them Ready and gives them addresses and room, as a kubelet would."""

    node_group_name: pulumi.Output[str]
    group: k8s.core.v1.ConfigMap
    nodes: list[k8s.core.v1.Node]

    def __init__(
        self, name: str, args: KwokNodeGroupArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("kiam:e2e:KwokNodeGroup", name, None, opts)
        s = args.settings
        arguments = group_arguments(s, args.kubernetes_version)
        self.group = k8s.core.v1.ConfigMap(
            # No metadata.name: the provider generates `<this name>-<suffix>`, a new one for each
            # replacement, as the AWS provider does from `nodeGroupNamePrefix`. pulumi-kubernetes
            # replaces a ConfigMap on any change of its data (pulumi-kubernetes#1567, unless the
            # provider's enableConfigMapMutable is on; `replaceOnChanges` says so regardless), so
            # it holds exactly the arguments whose change makes a new group. The others reach the
            # running Nodes (labels) or their number (scaling), as EKS applies them.
            name,
            metadata={"namespace": GROUP_NAMESPACE},
            data=_as_data({k: v for k, v in arguments.items() if replaces_group(k)}),
            opts=pulumi.ResourceOptions(
                parent=self, replace_on_changes=["data"], delete_before_replace=False
            ),
        )
        group: pulumi.Output[str] = self.group.metadata.name
        taint = s.taint
        self.nodes = []
        for index, zone in enumerate(node_zones(s, args.region)):
            node_name = group.apply(_node_name(index))
            self.nodes.append(
                k8s.core.v1.Node(
                    # Stable logical names: a new group name replaces each Node, create first.
                    f"{name}-{index}",
                    metadata={
                        "name": node_name,
                        "labels": pulumi.Output.all(group, node_name).apply(
                            _labels_of(s, zone, args.region)
                        ),
                        "annotations": KWOK_ANNOTATION,
                        "finalizers": [DRAIN_FINALIZER],
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
        self.node_group_name = pulumi.Output.all(
            group, *[n.metadata.name for n in self.nodes]
        ).apply(lambda names: str(names[0]))
        self.register_outputs({"node_group_name": self.node_group_name})


def _node_name(index: int) -> Callable[[str], str]:
    return lambda group: f"{group}-{index}"


def _labels_of(
    s: NodeGroupSettings, zone: str, region: str
) -> Callable[[list[Any]], dict[str, str]]:
    return lambda names: node_labels(s, str(names[0]), str(names[1]), zone, region)

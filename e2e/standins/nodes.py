"""The node group stand-in: kwok Nodes registered through Pulumi, so the engine itself creates,
replaces (create-before-delete), updates and deletes them as it does an EKS managed node group.

The group is a ConfigMap holding, one annotation each, every argument an `aws.eks.NodeGroup`
gets from the same settings, registered with the program's own options for the group
(components/node_group_options.py): it is replaced (a new generated name, so new Nodes) exactly
on a change of an argument EKS replaces a group for (`contracts.eks_node_group.FORCE_NEW`) or one
those options name in `replaceOnChanges`, create-before-delete unless they say otherwise. Any
other change takes EKS's in-place path: labels and taints reach the running Nodes (a NoExecute
taint evicts what does not tolerate it, by the real controller manager), a size change adds or
removes Nodes, and a version update (the Kubernetes version, the launch template's content) rolls
the group's Nodes: new ones of the same group, then the old ones drained and deleted, as EKS's
managed node update does. Without the program's options, the real-engine node-change scenario
therefore sees what EKS would do.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pulumi

from kiam_eks.components import kubernetes_objects as kube
from kiam_eks.components.node_group_options import replacement_options
from kiam_eks.contracts import labels
from kiam_eks.contracts.eks_node_group import FORCE_NEW, root_device
from kiam_eks.contracts.labels import PATCH_FORCE_ANNOTATION
from kiam_eks.settings.node_group import ARM_AMI_TYPES, NodeGroupSettings

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


# What a node runs: a change of these is EKS's version update, which replaces the group's nodes.
NODE_SOFTWARE = ("version", "launchTemplate")


def replaced_on(arguments: list[str], options: pulumi.ResourceOptions) -> list[str]:
    """The stand-in's arguments whose change replaces the group: those EKS replaces a group for
    (FORCE_NEW, by their top-level name; `launchTemplate.id` is not among the stand-in's, whose
    template content is one argument), and those `options.replace_on_changes` names."""
    asked = {path.split(".", 1)[0] for path in options.replace_on_changes or []}
    return [a for a in arguments if a in FORCE_NEW or a in asked]


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
    group: kube.ConfigMap
    nodes: list[kube.Node]

    def __init__(
        self, name: str, args: KwokNodeGroupArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("kiam:e2e:KwokNodeGroup", name, None, opts)
        s = args.settings
        arguments = group_arguments(s, args.kubernetes_version)
        options = replacement_options()
        self.group = kube.ConfigMap(
            # No metadata.name: the provider generates `<this name>-<suffix>`, a new one for each
            # replacement, as the AWS provider does from `nodeGroupNamePrefix`. The arguments are
            # annotations, which pulumi-kubernetes updates in place (its data would force a
            # replacement of a ConfigMap on any change, provider.go `forceNewProperties`): only
            # the options make it replace itself.
            name,
            metadata={"namespace": GROUP_NAMESPACE, "annotations": _as_data(arguments)},
            opts=pulumi.ResourceOptions(
                parent=self,
                replace_on_changes=[
                    f"metadata.annotations.{a}" for a in replaced_on(list(arguments), options)
                ],
                delete_before_replace=options.delete_before_replace,
            ),
        )
        group: pulumi.Output[str] = self.group.metadata["name"]
        # An in-place version update replaces the nodes of the same group: new names.
        software = _short_hash({k: arguments[k] for k in NODE_SOFTWARE})
        taint = s.taint
        self.nodes = []
        for index, zone in enumerate(node_zones(s, args.region)):
            node_name = group.apply(_node_name(index, software))
            self.nodes.append(
                kube.Node(
                    # Stable logical names: a new group name replaces each Node, create first.
                    f"{name}-{index}",
                    metadata={
                        "name": node_name,
                        "labels": pulumi.Output.all(group, node_name).apply(
                            _labels_of(s, zone, args.region)
                        ),
                        # EKS applies a group's labels and taints to its running nodes itself:
                        # no other field manager (the node controller keeps taints too) can
                        # refuse it, so the stand-in applies its Nodes with force.
                        "annotations": {**KWOK_ANNOTATION, PATCH_FORCE_ANNOTATION: "true"},
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
            group, *[n.metadata["name"] for n in self.nodes]
        ).apply(lambda names: str(names[0]))
        self.register_outputs({"node_group_name": self.node_group_name})


def _node_name(index: int, software: str) -> Callable[[str], str]:
    return lambda group: f"{group}-{software}-{index}"


def _short_hash(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:5]


def _labels_of(
    s: NodeGroupSettings, zone: str, region: str
) -> Callable[[list[Any]], dict[str, str]]:
    return lambda names: node_labels(s, str(names[0]), str(names[1]), zone, region)

"""The rest of a cluster, shaped by a stack file as a real cluster would be: workload nodes in the
node group's zones, a tainted pool for each agent toleration (and one the agents do not tolerate),
and the namespaces its applications name."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from e2e.harness.kube import Kube
from e2e.standins.nodes import CAPACITY, KWOK_ANNOTATION, node_zones
from kiam_eks.contracts.labels import PERMITTED_ANNOTATION
from kiam_eks.settings.agent import TolerationSettings
from kiam_eks.settings.stack import StackSettings

WORKERS = 3
# A pool no example stack's agents tolerate: agents must not be there, whatever the stack.
UNTOLERATED_TAINT = {"key": "workload-class", "value": "reserved", "effect": "NoSchedule"}


@dataclass(frozen=True)
class ClusterShape:
    """The Nodes and Namespaces a stack expects to find."""

    nodes: list[dict[str, Any]]
    namespaces: list[str]
    namespace_annotations: dict[str, dict[str, str]] = field(default_factory=dict)
    """Annotations a namespace had before the stack (`kiam:existingPermitted`'s found values)."""

    def apply(self, kube: Kube) -> None:
        kube.apply(
            [
                *self.nodes,
                *(
                    {
                        "apiVersion": "v1",
                        "kind": "Namespace",
                        "metadata": {
                            "name": n,
                            **(
                                {"annotations": self.namespace_annotations[n]}
                                if n in self.namespace_annotations
                                else {}
                            ),
                        },
                    }
                    for n in self.namespaces
                ),
            ]
        )

    @property
    def node_names(self) -> list[str]:
        return [n["metadata"]["name"] for n in self.nodes]


def taint_for(toleration: TolerationSettings) -> dict[str, str]:
    """A taint this toleration (and, in a real cluster, the pool it was written for) matches."""
    return {
        "key": toleration.key or "any",
        "value": toleration.value
        if toleration.operator == "Equal" and toleration.value
        else "present",
        "effect": toleration.effect or "NoSchedule",
    }


def shape_of(settings: StackSettings, workers: int = WORKERS) -> ClusterShape:
    """The cluster a stack expects, with `workers` untainted workload nodes across its zones."""
    region = settings.cluster.region
    zones = sorted(set(node_zones(settings.node_group, region)))
    nodes = [_node(f"worker-{i}", zones[i % len(zones)], region, taints=[]) for i in range(workers)]
    for i, toleration in enumerate(settings.agent.tolerations):
        nodes.append(_node(f"tolerated-{i}", zones[0], region, taints=[taint_for(toleration)]))
    nodes.append(_node("untolerated-0", zones[-1], region, taints=[UNTOLERATED_TAINT]))
    namespaces = sorted(
        {app.namespace for app in settings.applications.values()} | set(settings.existing_permitted)
    )
    # A namespace whose annotation the stack takes over carries it already, as it was found.
    found = {n: {PERMITTED_ANNOTATION: v} for n, v in settings.existing_permitted.items()}
    return ClusterShape(nodes=nodes, namespaces=namespaces, namespace_annotations=found)


def _node(name: str, zone: str, region: str, taints: list[dict[str, str]]) -> dict[str, Any]:
    # A stable, distinct address per node name (host-network pods, the agents, get it); past the
    # first 240 of a kind, the second octet counts the hundreds.
    index = int(name.rsplit("-", 1)[1])
    address = f"10.{index // 240}.{sum(name.encode()) % 250}.{10 + index % 240}"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": KWOK_ANNOTATION,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "topology.kubernetes.io/zone": zone,
                "topology.kubernetes.io/region": region,
                "type": "kwok",
            },
        },
        "spec": {"taints": taints},
        "status": {
            "capacity": CAPACITY,
            "allocatable": CAPACITY,
            "addresses": [
                {
                    "type": "InternalIP",
                    "address": address,
                }
            ],
        },
    }

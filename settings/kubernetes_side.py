"""The settings kiam's Kubernetes side reads, and the rules across them, written once.

Both the whole stack (`StackSettings`, settings/stack.py) and `KiamKubernetes` (for a cluster
whose IAM roles, node group and certificates are made elsewhere) hold these settings under the
same sections and keys: `KubernetesSideSettings` is the part of the stack settings the Kubernetes
side reads, each field the stack setting's own (`same_setting`), and both models hold the rules
below, so a stack file and a `KiamKubernetes` argument are refused by the same words.
"""

from __future__ import annotations

from typing import Protocol

from pydantic import Field, model_validator

from kiam_eks.settings.adoption import Adoption
from kiam_eks.settings.agent import AgentSettings
from kiam_eks.settings.base import DnsLabel, Model, same_setting
from kiam_eks.settings.cluster import ClusterSettings
from kiam_eks.settings.node_group import NodeGroupSettings, TaintSettings
from kiam_eks.settings.server import ServerSettings

# Namespaces every cluster has (Kubernetes docs, "Namespaces: Initial namespaces"): creating one
# fails with AlreadyExists.
INITIAL_NAMESPACES = ("default", "kube-node-lease", "kube-public", "kube-system")
# A DNS name has at most 253 characters (RFC 1035); agents dial the server by one.
MAX_DNS_NAME = 253


class NamespaceSettings(Model):
    """`kiam:namespace`: where the kiam objects live."""

    name: DnsLabel = Field(default="kiam", description="Namespace of every kiam object.")
    create: bool = Field(
        default=True,
        description="Create the namespace (labelled privileged for Pod Security: the agent needs "
        "host networking and NET_ADMIN). Set false to use an existing one, e.g. kube-system "
        "(which, like default, kube-public and kube-node-lease, always exists).",
    )


def refuse_first(*problems: str | None) -> None:
    """Raise the first problem found (a model validator's refusal), if any."""
    for problem in problems:
        if problem is not None:
            raise ValueError(problem)


def too_few_nodes(min_size: int, replicas: int) -> str | None:
    """Why the servers cannot all run on the nodes the group keeps, or None: hard anti-affinity
    puts one server per node (components/server.py), so with fewer nodes than servers the extra
    ones stay Pending."""
    if min_size >= replicas:
        return None
    return (
        f"kiam:nodeGroup.minSize must be at least kiam:server.replicas (got {min_size} nodes for "
        f"{replicas} servers): hard anti-affinity puts one server per node, so the extra "
        "servers would stay Pending"
    )


def agents_tolerate_server_taint(agent: AgentSettings, taint: TaintSettings) -> str | None:
    """Why the agents could run on the server nodes, or None: an agent there would hand those
    nodes' credentials (the instance role that may assume the kiam-server role) to any pod."""
    for index, toleration in enumerate(agent.tolerations):
        if toleration.tolerates(taint.key, taint.value, taint.kubernetes_effect):
            return (
                f"kiam:agent.tolerations[{index}] tolerates the server taint "
                f"{taint.key}={taint.value}:{taint.kubernetes_effect}: agents must never run on "
                "server nodes (they would expose the nodes' credentials)"
            )
    return None


def server_name_too_long(server: ServerSettings, namespace: str, domain: str) -> str | None:
    """Why the name agents dial is no DNS name, or None."""
    address = f"{server.service_name}.{namespace}.svc.{domain}"
    if len(address) <= MAX_DNS_NAME:
        return None
    return (
        f"kiam:cluster.clusterDomain {domain!r} makes the name agents dial, "
        "<kiam:server.serviceName>.<kiam:namespace.name>.svc.<clusterDomain>, "
        f"{len(address)} characters: DNS allows {MAX_DNS_NAME}"
    )


def creates_an_initial_namespace(namespace: NamespaceSettings) -> str | None:
    """Why creating the namespace would fail, or None."""
    if not (namespace.create and namespace.name in INITIAL_NAMESPACES):
        return None
    return (
        f"kiam:namespace.create must be false for {namespace.name!r}: every cluster "
        "has it, so creating it would fail with AlreadyExists"
    )


class ServerNodeGroupSettings(Model):
    """The dedicated server node group made elsewhere: the nodes it keeps, and its taint."""

    min_size: int = same_setting(NodeGroupSettings, "min_size")
    taint: TaintSettings = same_setting(NodeGroupSettings, "taint")


class KubernetesClusterSettings(Model):
    """The cluster's settings the Kubernetes side reads."""

    region: str = same_setting(ClusterSettings, "region")
    cluster_domain: str = same_setting(ClusterSettings, "cluster_domain")


class KubernetesSideSettings(Model):
    """What kiam's servers and agents are made from, under the stack settings' sections and keys,
    for a cluster whose IAM roles, node group and certificates are made elsewhere."""

    cluster: KubernetesClusterSettings
    node_group: ServerNodeGroupSettings = Field(default=ServerNodeGroupSettings())
    server: ServerSettings = Field(default=ServerSettings())
    agent: AgentSettings = Field(default=AgentSettings())
    namespace: NamespaceSettings = Field(default=NamespaceSettings())

    @property
    def retire(self) -> bool:
        """`KiamKubernetes` has no retirement: removing it is deleting the component."""
        return False

    @property
    def adoption_state(self) -> Adoption:
        """`KiamKubernetes` takes over no running install: its agents are its own."""
        return Adoption.of(None)

    @model_validator(mode="after")
    def _check(self) -> KubernetesSideSettings:
        refuse_first(
            too_few_nodes(self.node_group.min_size, self.server.replicas),
            agents_tolerate_server_taint(self.agent, self.node_group.taint),
            server_name_too_long(self.server, self.namespace.name, self.cluster.cluster_domain),
            creates_an_initial_namespace(self.namespace),
        )
        return self


class _Domain(Protocol):
    @property
    def cluster_domain(self) -> str: ...


class KubernetesSide(Protocol):
    """What the change judge reads of kiam's Kubernetes side (transitions/):
    `StackSettings` and `KubernetesSideSettings` alike."""

    @property
    def cluster(self) -> _Domain: ...
    @property
    def namespace(self) -> NamespaceSettings: ...
    @property
    def server(self) -> ServerSettings: ...
    @property
    def agent(self) -> AgentSettings: ...
    @property
    def retire(self) -> bool: ...
    @property
    def adoption_state(self) -> Adoption: ...

"""The whole `kiam:` namespace of one stack file, and the rules that span its sections."""

from __future__ import annotations

from pydantic import Field, SecretStr, model_validator

from settings.agent import AgentSettings
from settings.base import DnsLabel, Model
from settings.cluster import ClusterSettings
from settings.iam import IamSettings
from settings.node_group import NodeGroupSettings
from settings.server import ServerSettings
from settings.tls import TlsSettings


class NamespaceSettings(Model):
    """`kiam:namespace`: where the kiam objects live."""

    name: DnsLabel = Field(default="kiam", description="Namespace of every kiam object.")
    create: bool = Field(
        default=True,
        description="Create the namespace (labelled privileged for Pod Security: the agent needs "
        "host networking and NET_ADMIN). Set false to use an existing one, e.g. kube-system.",
    )


class StackSettings(Model):
    """Every setting of one stack: the keys under `kiam:` in `stacks/Pulumi.<stack>.yaml`."""

    cluster: ClusterSettings = Field(description="The EKS cluster, account and region.")
    node_group: NodeGroupSettings = Field(description="The dedicated server node group.")
    server: ServerSettings = Field(
        default=ServerSettings(), description="The kiam-server Deployment."
    )
    agent: AgentSettings = Field(default=AgentSettings(), description="The kiam-agent DaemonSet.")
    iam: IamSettings = Field(default=IamSettings(), description="What the server may assume.")
    tls: TlsSettings = Field(default=TlsSettings(), description="Certificate lifetimes.")
    namespace: NamespaceSettings = Field(default=NamespaceSettings(), description="The namespace.")
    kubeconfig: SecretStr | None = Field(
        default=None,
        description="A kubeconfig to use instead of looking the cluster up (set it as a secret: "
        "`pulumi config set --secret kiam:kubeconfig < file`).",
    )

    @model_validator(mode="after")
    def _check(self) -> StackSettings:
        if self.node_group.min_size < self.server.replicas:
            raise ValueError(
                f"kiam:nodeGroup.minSize ({self.node_group.min_size}) must be at least "
                f"kiam:server.replicas ({self.server.replicas}): hard anti-affinity puts one server "
                "per node, so the extra servers would stay Pending"
            )
        taint = self.node_group.taint
        for index, toleration in enumerate(self.agent.tolerations):
            if toleration.tolerates(taint.key, taint.value, taint.kubernetes_effect):
                raise ValueError(
                    f"kiam:agent.tolerations[{index}] tolerates the server taint "
                    f"{taint.key}={taint.value}:{taint.kubernetes_effect}: agents must never run on "
                    "server nodes (they would expose the nodes' credentials)"
                )
        return self

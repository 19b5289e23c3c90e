"""The whole of kiam on one EKS cluster: IAM, dedicated nodes, TLS, servers, agents, in order."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components import naming
from components.agent import AgentArgs, KiamAgent
from components.iam import IamArgs, KiamIam
from components.node_group import NodeGroupArgs, ServerNodeGroup
from components.server import KiamServer, ServerArgs
from components.tls import KiamTls, TlsArgs
from settings.stack import StackSettings


@dataclass(frozen=True, kw_only=True)
class KiamArgs:
    """Inputs of `Kiam`."""

    settings: StackSettings
    """The validated settings of the stack."""


class Kiam(pulumi.ComponentResource):
    """Composes every part of kiam so that one `pulumi up` installs, upgrades or recycles it safely."""

    iam: KiamIam
    node_group: ServerNodeGroup
    tls: KiamTls
    server: KiamServer
    agent: KiamAgent
    server_address: str
    """What agents dial."""

    def __init__(
        self, name: str, args: KiamArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("kiam:index:Kiam", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        s = args.settings

        self.iam = KiamIam(f"{name}-iam", IamArgs(cluster=s.cluster, iam=s.iam), child)
        self.node_group = ServerNodeGroup(
            f"{name}-server-nodes",
            NodeGroupArgs(
                cluster_name=s.cluster.name,
                kubernetes_version=s.cluster.kubernetes_version,
                settings=s.node_group,
                node_role_arn=self.iam.node_role.arn,
                node_role_policies=self.iam.node_policy_attachments,
            ),
            child,
        )
        namespace: pulumi.Input[str] = s.namespace.name
        if s.namespace.create:
            namespace = k8s.core.v1.Namespace(
                f"{name}-namespace",
                metadata={
                    "name": s.namespace.name,
                    # The agent needs host networking and NET_ADMIN: Pod Security must allow it here.
                    "labels": {"pod-security.kubernetes.io/enforce": "privileged"},
                },
                opts=child,
            ).metadata.name

        domain = s.cluster.cluster_domain
        service, ns_name = s.server.service_name, s.namespace.name
        self.tls = KiamTls(
            f"{name}-tls",
            TlsArgs(
                settings=s.tls,
                namespace=namespace,
                server_dns_names=naming.service_dns_names(service, ns_name, domain),
            ),
            child,
        )
        self.server = KiamServer(
            f"{name}-server",
            ServerArgs(
                settings=s.server,
                namespace=namespace,
                region=s.cluster.region,
                node_group_name=self.node_group.node_group_name,
                node_taint=s.node_group.taint,
                server_role_arn=self.iam.server_role.arn,
                role_base_arn=self.iam.role_base_arn,
                tls_secret=self.tls.server_secret,
            ),
            child,
        )
        self.server_address = naming.agent_server_address(
            service, ns_name, domain, s.server.grpc_port
        )
        self.agent = KiamAgent(
            f"{name}-agent",
            AgentArgs(
                settings=s.agent,
                namespace=namespace,
                server_address=self.server_address,
                server_node_taint=s.node_group.taint,
                tls_secret=self.tls.agent_secret,
                wait_for=[self.server.deployment],
            ),
            child,
        )
        self.register_outputs(
            {
                "node_role_arn": self.iam.node_role.arn,
                "server_role_arn": self.iam.server_role.arn,
                "role_base_arn": self.iam.role_base_arn,
                "node_group_name": self.node_group.node_group_name,
                "server_address": self.server_address,
            }
        )

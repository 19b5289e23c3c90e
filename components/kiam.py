"""The whole of kiam on one EKS cluster: IAM, dedicated nodes, TLS, servers, agents, in order."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components import naming, policies
from components.agent import AgentArgs, KiamAgent
from components.application_role import ApplicationRole, ApplicationRoleArgs
from components.iam import IamArgs, KiamIam
from components.namespace_permissions import NamespacePermissions, NamespacePermissionsArgs
from components.node_group import NodeGroupArgs, ServerNodeGroup
from components.server import KiamServer, ServerArgs
from components.tls import KiamTls, TlsArgs
from settings.stack import StackSettings


@dataclass(frozen=True, kw_only=True)
class KiamArgs:
    """Inputs of `Kiam`."""

    settings: StackSettings
    """The validated settings of the stack."""
    oidc_issuer: pulumi.Input[str] | None = None
    """The cluster's OIDC issuer URL; needed only by applications also trusted through IRSA."""


class Kiam(pulumi.ComponentResource):
    """Composes every part of kiam so that one `pulumi up` installs, upgrades or recycles it safely."""

    iam: KiamIam
    node_group: ServerNodeGroup
    tls: KiamTls
    server: KiamServer
    agent: KiamAgent | None
    """None while a running install's agents are still in service (migration phase `servers`)."""
    applications: dict[str, ApplicationRole]
    server_address: str
    """What agents dial."""

    def __init__(
        self, name: str, args: KiamArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("kiam:index:Kiam", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        s = args.settings
        adoption = s.adoption
        # During the first migration phase the running install's Service and agents stay in charge.
        own_agents = adoption is None or adoption.phase != "servers"

        self.iam = KiamIam(
            f"{name}-iam",
            IamArgs(
                cluster=s.cluster,
                iam=s.iam,
                application_paths=[
                    policies.application_path(s.iam, a) for a in s.applications.values()
                ],
            ),
            child,
        )
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
                existing_ca=(
                    (
                        adoption.ca_certificate.get_secret_value(),
                        adoption.ca_private_key.get_secret_value(),
                    )
                    if adoption
                    else None
                ),
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
                extra_pod_labels=adoption.server_pod_labels if adoption else None,
                create_service=own_agents,
            ),
            child,
        )
        self.server_address = naming.agent_server_address(
            service, ns_name, domain, s.server.grpc_port
        )
        self.agent = None
        if own_agents:
            self.agent = KiamAgent(
                f"{name}-agent",
                AgentArgs(
                    settings=s.agent,
                    namespace=namespace,
                    server_address=self.server_address,
                    server_node_taint=s.node_group.taint,
                    tls_secret=self.tls.agent_secret,
                    wait_for=[self.server.deployment],
                    daemon_set_name=adoption.agent_daemon_set_name
                    if adoption
                    else naming.AGENT_NAME,
                    adopted_selector=adoption.agent_pod_labels if adoption else None,
                ),
                child,
            )
        self.applications = self._applications(name, args, child)
        self.register_outputs(
            {
                "node_role_arn": self.iam.node_role.arn,
                "server_role_arn": self.iam.server_role.arn,
                "role_base_arn": self.iam.role_base_arn,
                "node_group_name": self.node_group.node_group_name,
                "server_address": self.server_address,
            }
        )

    def _applications(
        self, name: str, args: KiamArgs, child: pulumi.ResourceOptions
    ) -> dict[str, ApplicationRole]:
        s = args.settings
        roles = {
            app: ApplicationRole(
                f"{name}-app-{app}",
                ApplicationRoleArgs(
                    settings=settings,
                    path=policies.application_path(s.iam, settings),
                    server_role_arn=self.iam.server_role.arn,
                    role_base_arn=self.iam.role_base_arn,
                    oidc_issuer=args.oidc_issuer,
                    partition=s.cluster.partition,
                    account_id=s.cluster.account_id,
                ),
                child,
            )
            for app, settings in sorted(s.applications.items())
        }
        by_namespace: dict[str, list[pulumi.Input[str]]] = defaultdict(list)
        for app, role in roles.items():
            by_namespace[s.applications[app].namespace].append(role.role.arn)
        if by_namespace:
            NamespacePermissions(
                f"{name}-permissions",
                NamespacePermissionsArgs(role_arns_by_namespace=by_namespace),
                child,
            )
        return roles

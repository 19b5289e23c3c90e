"""The whole of kiam on one EKS cluster: IAM, dedicated nodes, TLS, servers, agents, in order."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.agent import AgentArgs, KiamAgent
from components.cloud import ApplicationAccess, CloudSide, KiamRoles, ServerNodes
from components.monitoring import KiamMonitoring, MonitoringArgs, scrape_annotations
from components.namespace_permissions import NamespacePermissions, NamespacePermissionsArgs
from components.server import KiamServer, ServerArgs
from components.tls import KiamTls, TlsArgs
from contracts import names
from settings.stack import StackSettings
from specs import alert_rules


@dataclass(frozen=True, kw_only=True)
class KiamArgs:
    """Inputs of `Kiam`."""

    settings: StackSettings
    """The validated settings of the stack."""
    cloud: CloudSide
    """Creates what lives outside Kubernetes: IAM, the dedicated nodes, certificates, roles."""


class Kiam(pulumi.ComponentResource):
    """Composes every part of kiam so that one `pulumi up` installs, upgrades or recycles it safely."""

    roles: KiamRoles
    server_nodes: ServerNodes
    tls: KiamTls
    server: KiamServer
    agent: KiamAgent | None
    """None while a running install's agents are still in service (migration phase `servers`)."""
    applications: dict[str, ApplicationAccess]
    pod_identity_agent: pulumi.Resource | None
    """The `eks-pod-identity-agent` add-on, when the stack manages it and Pod Identity serves an
    application."""
    pod_identity_associations: dict[str, pulumi.Resource]
    """The EKS Pod Identity association of each application Pod Identity serves."""
    monitoring: KiamMonitoring | None
    """The Prometheus Operator's objects, when `kiam:monitoring` asks for them."""
    server_address: str
    """What agents dial."""

    def __init__(
        self, name: str, args: KiamArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("kiam:index:Kiam", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        s, cloud = args.settings, args.cloud
        adoption = s.adoption_state

        self.roles = cloud.roles(f"{name}-iam", child)
        self.server_nodes = cloud.server_nodes(names.server_nodes_name(name), self.roles, child)
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
        ca = adoption.running_install_ca
        service, ns_name = s.server.service_name, s.namespace.name
        self.tls = KiamTls(
            f"{name}-tls",
            TlsArgs(
                settings=s.tls,
                namespace=namespace,
                server_dns_names=names.service_dns_names(service, ns_name, domain),
                authority=cloud.certificate_authority,
                existing_ca=(
                    (ca[0].get_secret_value(), ca[1].get_secret_value()) if ca is not None else None
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
                node_group_name=self.server_nodes.node_group_name,
                node_taint=s.node_group.taint,
                spare_nodes=s.node_group.desired_size - s.server.replicas,
                server_role_arn=self.roles.server_role_arn,
                role_base_arn=self.roles.role_base_arn,
                tls_secret=self.tls.server_secret,
                adoption=adoption,
                pod_annotations=scrape_annotations(s.monitoring, s.server.metrics_port),
            ),
            child,
        )
        self.server_address = names.agent_server_address(
            service, ns_name, domain, s.server.grpc_port
        )
        self.agent = None
        if adoption.stack_owns_agents:
            self.agent = KiamAgent(
                f"{name}-agent",
                AgentArgs(
                    settings=s.agent,
                    namespace=namespace,
                    server_address=self.server_address,
                    server_node_taint=s.node_group.taint,
                    tls_secret=self.tls.agent_secret,
                    wait_for=[self.server.deployment],
                    adoption=adoption,
                    pod_annotations=scrape_annotations(s.monitoring, s.agent.metrics_port),
                ),
                child,
            )
        self.monitoring = None
        if s.monitoring.service_monitors:
            self.monitoring = KiamMonitoring(
                f"{name}-monitoring",
                MonitoringArgs(
                    settings=s.monitoring,
                    namespace=namespace,
                    agent_metrics_port=s.agent.metrics_port,
                    alerts=alert_rules.context_of(s),
                ),
                child,
            )
        self.applications = self._applications(name, args, child)
        self.register_outputs(
            {
                "node_role_arn": self.roles.node_role_arn,
                "server_role_arn": self.roles.server_role_arn,
                "role_base_arn": self.roles.role_base_arn,
                "node_group_name": self.server_nodes.node_group_name,
                "server_address": self.server_address,
            }
        )

    def _applications(
        self, name: str, args: KiamArgs, child: pulumi.ResourceOptions
    ) -> dict[str, ApplicationAccess]:
        s, cloud = args.settings, args.cloud
        roles = {
            app: cloud.application_role(f"{name}-app-{app}", settings, self.roles, child)
            for app, settings in sorted(s.applications.items())
        }
        served = {app: s.applications[app].served_by for app in roles}
        # The agent runs while any application is served by Pod Identity; the stack's
        # associations wait for it, so no pod gets Pod Identity credentials before an agent
        # serves them. It is a child of the install, not of kiam's parts: retiring kiam keeps it.
        self.pod_identity_agent = (
            cloud.pod_identity_agent(f"{name}-pod-identity-agent", child)
            if any(state.pod_identity for state in served.values())
            else None
        )
        self.pod_identity_associations = {}
        for app, role in roles.items():
            if not served[app].pod_identity:
                continue
            # A child of the application's role component where the cloud side has one (AWS);
            # of the install where the role is only computed (the e2e stand-ins).
            parent = role if isinstance(role, pulumi.Resource) else self
            self.pod_identity_associations[app] = cloud.pod_identity_association(
                f"{name}-app-{app}-pod-identity",
                s.applications[app],
                role.role_arn,
                pulumi.ResourceOptions(
                    parent=parent,
                    depends_on=[self.pod_identity_agent] if self.pod_identity_agent else [],
                ),
            )
        # kiam admits only the roles it still serves: a namespace none of whose applications
        # kiam serves loses its entry exactly as when its last application is removed.
        by_namespace: dict[str, list[pulumi.Input[str]]] = defaultdict(list)
        for app, role in roles.items():
            if served[app].kiam:
                by_namespace[s.applications[app].namespace].append(role.role_arn)
        if by_namespace or s.existing_permitted:
            NamespacePermissions(
                f"{name}-permissions",
                NamespacePermissionsArgs(
                    role_arns_by_namespace=by_namespace, existing=s.existing_permitted
                ),
                child,
            )
        return roles

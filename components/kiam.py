"""The whole of kiam on one EKS cluster: IAM, dedicated nodes, TLS, servers, agents, in order; and
its retirement (`kiam:retire`), which keeps only the application roles and what serves them now."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import pulumi

from kiam_eks.components.agent import Agent, AgentArgs
from kiam_eks.components.agent_retirement import AgentRetirement, AgentRetirementArgs
from kiam_eks.components.cloud import ApplicationAccess, CloudSide, KiamRoles, ServerNodes
from kiam_eks.components.monitoring import Monitoring, MonitoringArgs, scrape_annotations
from kiam_eks.components.namespace import kiam_namespace
from kiam_eks.components.namespace_permissions import NamespacePermissions, NamespacePermissionsArgs
from kiam_eks.components.server import Server, ServerArgs
from kiam_eks.components.tls import Tls, TlsArgs
from kiam_eks.contracts import names, tokens
from kiam_eks.settings.stack import StackSettings
from kiam_eks.settings.transitions import Transition, first_update
from kiam_eks.specs import alert_rules, iam_policies


@dataclass(frozen=True, kw_only=True)
class KiamArgs:
    """Inputs of `Kiam`."""

    settings: StackSettings
    """The validated settings of the stack."""
    cloud: CloudSide
    """Creates what lives outside Kubernetes: IAM, the dedicated nodes, certificates, roles."""
    transition: Transition | None = None
    """The change from what the stack's last update installed, judged (settings/transitions.py):
    what this update must keep or arrange so that credentials keep flowing while it applies.
    None: the stack's first update."""


class Kiam(pulumi.ComponentResource):
    """Composes every part of kiam so that one `pulumi up` installs, upgrades or recycles it safely,
    and, with `kiam:retire`, removes it in one `pulumi up` while the application roles stay."""

    roles: KiamRoles
    """kiam's IAM chain; once retired, only what the application roles still read of it
    (`RetiredRoles`: no kiam role exists any more)."""
    server_nodes: ServerNodes | None
    """None once retired."""
    tls: Tls | None
    """None once retired."""
    server: Server | None
    """None once retired."""
    agent: Agent | None
    """None while a running install's agents are still in service (migration phase `servers`),
    and once retired."""
    retirement: AgentRetirement | None
    """With `kiam:retire`: what rolls the agents to remove their iptables rule before they go."""
    applications: dict[str, ApplicationAccess]
    pod_identity_agent: pulumi.Resource | None
    """The `eks-pod-identity-agent` add-on, when the stack manages it and Pod Identity serves an
    application."""
    pod_identity_associations: dict[str, pulumi.Resource]
    """The EKS Pod Identity association of each application Pod Identity serves."""
    monitoring: Monitoring | None
    """The Prometheus Operator's objects, when `kiam:monitoring` asks for them (never once retired)."""
    server_address: str
    """What agents dial."""
    settled: pulumi.Output[bool]
    """True once the servers, the agents and any retirement roll are done: the stack output
    `installed` waits for it, so a failed update leaves the facts of the one before."""

    def __init__(
        self, name: str, args: KiamArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(tokens.KIAM, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        s = args.settings
        domain = s.cluster.cluster_domain
        self.server_address = names.agent_server_address(
            s.server.service_name, s.namespace.name, domain, s.server.grpc_port
        )
        self.server_nodes = self.tls = self.server = self.agent = self.monitoring = None
        self.retirement = None
        if s.retire:
            self._retire(name, args, child)
        else:
            self._install(name, args, child)
        self.settled = pulumi.Output.all(
            *[r.urn for r in self._awaited()],
            *([self.retirement.done] if self.retirement is not None else []),
        ).apply(lambda _: True)
        self.applications = self._applications(name, args, child)
        self.register_outputs(
            {}
            if self.server_nodes is None
            else {
                "node_role_arn": self.roles.node_role_arn,
                "server_role_arn": self.roles.server_role_arn,
                "role_base_arn": self.roles.role_base_arn,
                "node_group_name": self.server_nodes.node_group_name,
                "server_address": self.server_address,
            }
        )

    def _awaited(self) -> list[pulumi.Resource]:
        """What must be done before the update's facts are recorded: the rollouts."""
        return [
            r
            for r in (
                self.server.deployment if self.server else None,
                self.agent.daemon_set if self.agent else None,
            )
            if r is not None
        ]

    def _retire(self, name: str, args: KiamArgs, child: pulumi.ResourceOptions) -> None:
        """Register only what rolls the agents; everything else of the install is no longer
        registered, so the engine deletes it at the end of this `pulumi up`, agents first
        (components/agent_retirement.py says why that order holds)."""
        s = args.settings
        transition = args.transition or first_update(s)
        self._namespace(name, s, transition, child)
        self.roles = RetiredRoles(
            role_base_arn=iam_policies.role_base_arn(
                s.cluster.partition, s.cluster.account_id, s.iam
            )
        )
        self.retirement = AgentRetirement(
            f"{name}-agent-retirement",
            AgentRetirementArgs(
                settings=s.agent,
                namespace=s.namespace.name,
                daemon_set_name=s.adoption_state.agent_daemon_set_name,
                server_address=self.server_address,
                roll=transition.roll_agents_before_retiring,
            ),
            child,
        )

    @staticmethod
    def _namespace(
        name: str, s: StackSettings, transition: Transition, child: pulumi.ResourceOptions
    ) -> pulumi.Input[str]:
        """kiam's namespace: created (and owned) by the stack, released, or used as found.

        Released: `kiam:namespace.create` switched off for a namespace the stack created. Not
        registering it would delete it, and everything in it, at the end of the update; it is
        registered once more, kept on delete, so the next update forgets it from the state and
        the cluster keeps it (settings/transitions.py)."""
        if transition.namespace == "use":
            return s.namespace.name
        return kiam_namespace(
            f"{name}-namespace",
            s.namespace.name,
            pulumi.ResourceOptions.merge(
                child, pulumi.ResourceOptions(retain_on_delete=transition.namespace == "release")
            ),
        )

    def _install(self, name: str, args: KiamArgs, child: pulumi.ResourceOptions) -> None:
        s, cloud = args.settings, args.cloud
        adoption = s.adoption_state

        self.roles = cloud.roles(f"{name}-iam", child)
        server_nodes = cloud.server_nodes(names.server_nodes_name(name), self.roles, child)
        self.server_nodes = server_nodes
        transition = args.transition or first_update(s)
        namespace = self._namespace(name, s, transition, child)

        domain = s.cluster.cluster_domain
        ca = adoption.running_install_ca
        service, ns_name = s.server.service_name, s.namespace.name
        tls = Tls(
            f"{name}-tls",
            TlsArgs(
                settings=s.tls,
                namespace=namespace,
                # While the address agents dial changes, the certificate also names the one the
                # running agents still dial, until every agent has moved (settings/transitions.py).
                server_dns_names=[
                    *names.service_dns_names(service, ns_name, domain),
                    *transition.previous_server_names,
                ],
                authority=cloud.certificate_authority,
                existing_ca=(
                    (ca[0].get_secret_value(), ca[1].get_secret_value()) if ca is not None else None
                ),
            ),
            child,
        )
        self.tls = tls
        server = Server(
            f"{name}-server",
            ServerArgs(
                settings=s.server,
                namespace=namespace,
                region=s.cluster.region,
                node_group_name=server_nodes.node_group_name,
                node_taint=s.node_group.taint,
                spare_nodes=s.node_group.desired_size - s.server.replicas,
                server_role_arn=self.roles.server_role_arn,
                role_base_arn=self.roles.role_base_arn,
                tls_secret=tls.server_secret,
                adoption=adoption,
                pod_annotations=scrape_annotations(s.monitoring, s.server.metrics_port),
                restart_for_names=transition.previous_server_names,
            ),
            child,
        )
        self.server = server
        if adoption.stack_owns_agents:
            self.agent = Agent(
                f"{name}-agent",
                AgentArgs(
                    settings=s.agent,
                    namespace=namespace,
                    server_address=self.server_address,
                    server_node_taint=s.node_group.taint,
                    tls_secret=tls.agent_secret,
                    # Also what makes a retirement delete the agents before the servers: the
                    # engine deletes a resource only after those that depend on it.
                    wait_for=[server.deployment],
                    adoption=adoption,
                    pod_annotations=scrape_annotations(s.monitoring, s.agent.metrics_port),
                    force_apply=transition.restore_agents,
                ),
                child,
            )
        if s.monitoring.service_monitors:
            self.monitoring = Monitoring(
                f"{name}-monitoring",
                MonitoringArgs(
                    settings=s.monitoring,
                    namespace=namespace,
                    agent_metrics_port=s.agent.metrics_port,
                    alerts=alert_rules.context_of(s),
                ),
                child,
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
            self.pod_identity_associations[app] = cloud.pod_identity_association(
                f"{name}-app-{app}-pod-identity",
                s.applications[app],
                role,
                pulumi.ResourceOptions(
                    parent=self,
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


@dataclass(frozen=True)
class RetiredRoles:
    """`KiamRoles` of a retired stack: kiam's roles are gone, and applications no longer served by
    kiam (the only ones `kiam:retire` allows) read nothing of them but `role_base_arn`, from which
    the kiam pod annotation in the `applications` output is still computed."""

    role_base_arn: str
    """kiam's `--role-base-arn` as it was: a pure function of the settings."""

    @property
    def server_role_arn(self) -> str:
        """No kiam-server role: an application role that still trusted one would name nothing
        (the settings refuse `kiam:retire` while kiam serves an application)."""
        return ""

    @property
    def node_role_arn(self) -> str:
        """No server nodes, so no node role."""
        return ""

    @property
    def application_role_patterns(self) -> list[str]:
        """No server, so nothing it may assume."""
        return []

    @property
    def node_role_policies(self) -> Sequence[pulumi.Resource]:
        """No node role, so nothing attached to it."""
        return []

"""The whole of kiam on one EKS cluster: IAM, dedicated nodes, TLS, servers, agents, in order; and
its retirement (`kiam:retire`), which keeps only the application roles and what serves them now.

`Kiam` takes the arguments a Pulumi program passes (`KiamArgs`): the cluster's name and OIDC
issuer may be another resource's outputs, the rest are the stack settings (docs/configuration.md)
under the arguments' names, validated by the same models before anything is registered. This
repository's program, which has validated its stack file into those settings already, hands them
over as they are (`Kiam.of_settings`); tests/test_kiam_args.py proves both ways compose the same.
"""

# No `from __future__ import annotations`: the component provider reads `KiamArgs` and `Kiam`'s
# outputs as types at run time to infer the package's schema (provider/).
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NotRequired, TypedDict

import pulumi

from kiam_eks.components.agent import Agent
from kiam_eks.components.agent_retirement import AgentRetirement, AgentRetirementArgs
from kiam_eks.components.application_output import application_output
from kiam_eks.components.argument_types import (
    AdoptionOptions,
    AgentOptions,
    ApplicationOptions,
    IamOptions,
    MonitoringOptions,
    NamespaceOptions,
    NodeGroupOptions,
    PodIdentityAgentOptions,
    ServerOptions,
    TlsOptions,
)
from kiam_eks.components.cloud import ApplicationAccess, CloudSide, KiamRoles, ServerNodes
from kiam_eks.components.known import lifted, when_known
from kiam_eks.components.kubernetes_side import KubernetesSideArgs, compose_kubernetes_side
from kiam_eks.components.last_update import judged_change
from kiam_eks.components.monitoring import Monitoring, MonitoringArgs, scrape_annotations
from kiam_eks.components.namespace import judged_namespace
from kiam_eks.components.namespace_permissions import NamespacePermissions, NamespacePermissionsArgs
from kiam_eks.components.public_args import (
    ArgumentsError,
    checked_cluster_name,
    checked_subnet_ids,
    kiam_settings,
    subnet_ids_known,
)
from kiam_eks.components.server import Server
from kiam_eks.components.tls import Tls, TlsArgs
from kiam_eks.contracts import names, tokens
from kiam_eks.settings.stack import StackSettings
from kiam_eks.specs import alert_rules, iam_policies
from kiam_eks.transitions.judge import Transition


class KiamArgs(TypedDict):
    """The arguments of `Kiam`. A section (`node_group`, `server`...) is that stack setting, a named type with the same keys in each language's spelling (`min_size` in Python, `minSize` elsewhere and in the stack file), defaults and rules (docs/configuration.md)."""

    cluster_name: pulumi.Input[str]
    """Name of the EKS cluster (`kiam:cluster.name`): a string, or the cluster resource's name output (checked once known)."""
    account_id: str
    """AWS account id of the cluster, 12 digits (`kiam:cluster.accountId`)."""
    region: str
    """AWS region of the cluster (`kiam:cluster.region`): kiam's regional STS endpoint and the partition of every ARN."""
    kubernetes_version: str
    """The cluster's Kubernetes minor version, such as `1.33`: the server nodes run it (`kiam:cluster.kubernetesVersion`)."""
    node_group: NotRequired[NodeGroupOptions]
    """The dedicated server node group (`kiam:nodeGroup`): `subnets` in at least two zones (each `{id, zone}`, so that the spread is checked), sizes, instance types, taint."""
    subnet_ids: NotRequired[pulumi.Input[list[pulumi.Input[str]]]]
    """Instead of `node_group`'s `subnets`: the subnets' ids, such as a VPC resource's private subnet ids output (checked once known; their zones are not, so give `subnets` with zones to have the spread over two zones checked)."""
    oidc_issuer: NotRequired[pulumi.Input[str]]
    """The cluster's OIDC issuer URL, needed only by applications served through IRSA: such as the cluster resource's `identities[0].oidcs[0].issuer` output."""
    cluster_domain: NotRequired[str]
    """The cluster's DNS domain (`kiam:cluster.clusterDomain`)."""
    server: NotRequired[ServerOptions]
    """The kiam-server Deployment (`kiam:server`)."""
    agent: NotRequired[AgentOptions]
    """The kiam-agent DaemonSet (`kiam:agent`)."""
    iam: NotRequired[IamOptions]
    """What the server may assume (`kiam:iam`)."""
    tls: NotRequired[TlsOptions]
    """Certificate lifetimes (`kiam:tls`)."""
    namespace: NotRequired[NamespaceOptions]
    """kiam's namespace (`kiam:namespace`)."""
    monitoring: NotRequired[MonitoringOptions]
    """Prometheus scraping and alerts (`kiam:monitoring`)."""
    adoption: NotRequired[AdoptionOptions]
    """A running kiam install being taken over (`kiam:adoption`, docs/migration.md)."""
    applications: NotRequired[dict[str, ApplicationOptions]]
    """Application roles by application name, and what serves each (`kiam:applications`)."""
    existing_permitted: NotRequired[dict[str, str]]
    """Namespaces whose `iam.amazonaws.com/permitted` annotation someone else set, with its value (`kiam:existingPermitted`)."""
    pod_identity_agent: NotRequired[PodIdentityAgentOptions]
    """The EKS Pod Identity agent add-on (`kiam:podIdentityAgent`)."""
    retire: NotRequired[bool]
    """Remove kiam, keeping every application role (`kiam:retire`, docs/leaving-kiam.md)."""


@dataclass(frozen=True, kw_only=True)
class Composition:
    """What `Kiam` composes from: its arguments as settings, the cloud side, the change."""

    settings: StackSettings
    """The validated settings of the stack."""
    cloud: CloudSide
    """Creates what lives outside Kubernetes: IAM, the dedicated nodes, certificates, roles."""
    transition: Transition
    """The change from what the stack's last update installed, judged (transitions/):
    what this update must keep or arrange so that credentials keep flowing while it applies."""


class Kiam(pulumi.ComponentResource):
    """kiam on one EKS cluster: the IAM chain, a dedicated tainted managed node group, kiam-server as a Deployment there (hard anti-affinity, a headless Service, a PodDisruptionBudget), the agents on every other node once the servers are Ready, the application roles and what serves each; with `retire`, kiam removed while the application roles stay."""

    # The outputs, as every language reads them (the package schema's; one line each).
    node_role_arn: pulumi.Output[str | None]
    """ARN of the server nodes' instance role; null once retired."""
    server_role_arn: pulumi.Output[str | None]
    """ARN of the kiam-server role (kiam's `--assume-role-arn`), which alone may assume the application roles; null once retired."""
    role_base_arn: pulumi.Output[str]
    """kiam's `--role-base-arn`: what a pod annotation naming a role by name is appended to."""
    node_group_name: pulumi.Output[str | None]
    """Generated name of the dedicated server node group; null once retired."""
    server_address: pulumi.Output[str | None]
    """The `host:port` agents dial; null once retired."""
    installed: pulumi.Output[dict[str, Any]]
    """What this update installed, recorded once its rollouts are done: the next `preview` and `up` judge their change from it, before anything is registered (docs/transitions.md). Its parts are the judge's, not an interface."""
    applications: pulumi.Output[dict[str, Any]]
    """Per application: what serves it (`servedBy`, `next`), its `roleArn`, the `podAnnotation` its pods carry while kiam serves it, the `serviceAccount` Pod Identity or IRSA serves, the `podIdentityAssociationId`, and for a role made elsewhere the `trust` its owner must keep (docs/using-it.md, Outputs)."""

    def __init__(
        self,
        name: str,
        args: KiamArgs,
        opts: pulumi.ResourceOptions | None = None,
        *,
        cloud: CloudSide | None = None,
        transition: Transition | None = None,
    ) -> None:
        """`cloud`: what creates the IAM roles, nodes and certificates; the AWS one (IAM, an EKS
        managed node group, pulumi-tls) unless given. `transition`: the change from what the
        stack's last update installed, judged already (this repository's program judges it
        first, for its providers); without it the component judges it itself, from its own
        record, before it registers anything (components/last_update.py `judged_change`)."""
        # Checked before the component itself is registered: a mistake creates nothing.
        source = f"Kiam {name!r}"
        settings = kiam_settings(source, dict(args))
        cluster_name = args["cluster_name"]
        subnet_ids = args.get("subnet_ids")
        subnets_known = subnet_ids is None or subnet_ids_known(subnet_ids)
        if cloud is not None and not (isinstance(cluster_name, str) and subnets_known):
            # A cloud side given here reads the cluster's name and the subnets from the settings.
            raise ArgumentsError(
                source,
                ["cluster_name, subnet_ids: must be known values when a cloud side is given"],
            )
        self._construct(
            name,
            settings,
            opts,
            cloud=cloud,
            oidc_issuer=args.get("oidc_issuer"),
            # A string was checked with the rest; another resource's output is, once known.
            cluster_name=when_known(cluster_name, checked_cluster_name),
            subnet_ids=None if subnets_known else _subnet_ids_once_known(subnet_ids),
            transition=transition,
        )

    @classmethod
    def of_settings(
        cls,
        name: str,
        settings: StackSettings,
        opts: pulumi.ResourceOptions | None = None,
        *,
        oidc_issuer: pulumi.Input[str] | None = None,
        cloud: CloudSide | None = None,
        transition: Transition | None = None,
    ) -> "Kiam":
        """`Kiam` from stack settings validated already, as this repository's program reads them
        from its stack file: the component `Kiam(name, arguments_of(settings), ...)` makes
        (tests/test_kiam_args.py proves `kiam_settings(arguments_of(s)) == s` for every example
        state), without turning typed settings into an untyped mapping and validating them a
        second time."""
        kiam = cls.__new__(cls)
        kiam._construct(
            name,
            settings,
            opts,
            cloud=cloud,
            oidc_issuer=oidc_issuer,
            cluster_name=settings.cluster.name,
            subnet_ids=None,
            transition=transition,
        )
        return kiam

    def _construct(
        self,
        name: str,
        settings: StackSettings,
        opts: pulumi.ResourceOptions | None,
        *,
        cloud: CloudSide | None,
        oidc_issuer: pulumi.Input[str] | None,
        cluster_name: pulumi.Input[str],
        subnet_ids: pulumi.Output[list[str]] | None,
        transition: Transition | None,
    ) -> None:
        """Judge the change, register the component and compose its children from valid
        `settings`."""
        if transition is None:
            # Before the component registers: a refused change creates and changes nothing.
            transition = judged_change(settings, name, f"Kiam {name!r}")
            if cloud is None and isinstance(cluster_name, str):
                # What the program checks before its providers (program/providers.py), with the
                # AWS provider this component is given: the add-on EKS would refuse to create.
                # Imported here, as AwsCloud below: the e2e stand-ins need no AWS SDK.
                from kiam_eks.components.pod_identity import (
                    aws_invoke_options,
                    check_agent_addon_before_registering,
                )

                check_agent_addon_before_registering(
                    settings, transition, cluster_name, aws_invoke_options(opts)
                )
        # The parts, for the program and tests (Python only: not outputs of the schema).
        self.roles: KiamRoles
        """kiam's IAM chain; once retired, only what the application roles still read of it
        (`RetiredRoles`: no kiam role exists any more)."""
        self.server_nodes: ServerNodes | None = None
        """None once retired."""
        self.tls: Tls | None = None
        """None once retired."""
        self.server: Server | None = None
        """None once retired."""
        self.agent: Agent | None = None
        """None while a running install's agents are still in service (migration phase
        `servers`), and once retired."""
        self.retirement: AgentRetirement | None = None
        """With `kiam:retire`: what rolls the agents to remove their iptables rule first."""
        self.application_access: dict[str, ApplicationAccess] = {}
        """Each application's role and the annotations that select it."""
        self.pod_identity_agent: pulumi.Resource | None = None
        """The `eks-pod-identity-agent` add-on, when the stack manages it and Pod Identity
        serves an application."""
        self.pod_identity_associations: dict[str, pulumi.Resource] = {}
        """The EKS Pod Identity association of each application Pod Identity serves."""
        self.monitoring: Monitoring | None = None
        """The Prometheus Operator's objects, when `kiam:monitoring` asks for them."""
        self.settled: pulumi.Output[bool]
        """True once the servers, the agents and any retirement roll are done: the stack output
        `installed` waits for it, so a failed update leaves the facts of the one before."""
        super().__init__(tokens.KIAM, name, None, opts)
        if cloud is None:
            # Imported here: a cloud side given instead (the e2e stand-ins) needs no AWS SDK.
            from kiam_eks.components.aws_cloud import AwsCloud

            cloud = AwsCloud(settings, oidc_issuer, cluster_name, subnet_ids=subnet_ids)
        self.transition = transition
        """The change this update applies, judged."""
        self._compose(name, Composition(settings=settings, cloud=cloud, transition=transition))

    def _compose(self, name: str, args: Composition) -> None:
        child = pulumi.ResourceOptions(parent=self)
        s = args.settings
        domain = s.cluster.cluster_domain
        self.address = names.agent_server_address(
            s.server.service_name, s.namespace.name, domain, s.server.grpc_port
        )
        """What agents dial (the `server_address` output while kiam is installed)."""
        if s.retire:
            self._retire(name, args, child)
        else:
            self._install(name, args, child)
        self.settled = pulumi.Output.all(
            *[r.urn for r in self._awaited()],
            *([self.retirement.done] if self.retirement is not None else []),
        ).apply(lambda _: True)
        self.application_access = self._applications(name, args, child)
        self._outputs(s)

    def _outputs(self, s: StackSettings) -> None:
        """The outputs every language reads: kiam's four and the address while installed, and
        always the record the next update is judged from (`installed`). A component's outputs are
        stored with the state, not diffed: a running install's first update with the record shows
        no change (e2e/tests/test_upgrade.py, test_consumers.py)."""
        installed = self.server_nodes is not None
        self.node_role_arn = pulumi.Output.from_input(
            self.roles.node_role_arn if installed else None
        )
        self.server_role_arn = pulumi.Output.from_input(
            self.roles.server_role_arn if installed else None
        )
        self.role_base_arn = pulumi.Output.from_input(self.roles.role_base_arn)
        self.node_group_name = pulumi.Output.from_input(
            self.server_nodes.node_group_name if self.server_nodes is not None else None
        )
        self.server_address = pulumi.Output.from_input(self.address if installed else None)
        applications: pulumi.Input[dict[str, Any]] = {
            app: application_output(
                s.applications[app], access, self.pod_identity_associations.get(app)
            )
            for app, access in self.application_access.items()
        }
        if self.retirement is not None:
            # Known only once the agents are rolled: the program records its outputs then, so a
            # failed roll leaves the previous ones, `serverAddress` included, and the next
            # `pulumi up` rolls again (components/agent_retirement.py).
            applications = lifted([self.retirement.done, applications]).apply(
                lambda done_and_applications: done_and_applications[1]
            )
        self.application_outputs = applications
        """`applications` as the program exports it: a mapping of each application's values
        (outside a retirement), so that a preview shows every value known so far; as one
        output (`applications`) it is unknown while any of them is."""
        self.applications = lifted(applications)
        leaves = self.transition.leaves(s).to_output()
        # Recorded only once the rollouts (and a retirement's roll) are done: an update that fails
        # half way leaves the record of the one before, and the next judges the same change again.
        self.installed = self.settled.apply(lambda _: leaves)
        recorded: dict[str, Any] = {"installed": self.installed}
        if self.server_nodes is not None:
            recorded |= {
                "node_role_arn": self.roles.node_role_arn,
                "server_role_arn": self.roles.server_role_arn,
                "role_base_arn": self.roles.role_base_arn,
                "node_group_name": self.server_nodes.node_group_name,
                "server_address": self.address,
            }
        self.register_outputs(recorded)

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

    def _retire(self, name: str, args: Composition, child: pulumi.ResourceOptions) -> None:
        """Register only what rolls the agents; everything else of the install is no longer
        registered, so the engine deletes it at the end of this `pulumi up`, agents first
        (components/agent_retirement.py says why that order holds)."""
        s = args.settings
        transition = args.transition
        judged_namespace(name, s.namespace.name, transition.namespace, child)
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
                server_address=self.address,
                roll=transition.roll_agents_before_retiring,
            ),
            child,
        )

    def _install(self, name: str, args: Composition, child: pulumi.ResourceOptions) -> None:
        s, cloud = args.settings, args.cloud
        adoption = s.adoption_state

        transition = args.transition
        previous = transition.previous
        # The permission's layout as the last update left it: an update then moves no role ARN
        # from one of the server role's documents to another (settings/server_permission.py).
        self.roles = cloud.roles(
            f"{name}-iam", child, previous.server_permission if previous is not None else None
        )
        server_nodes = cloud.server_nodes(names.server_nodes_name(name), self.roles, child)
        self.server_nodes = server_nodes
        namespace = judged_namespace(name, s.namespace.name, transition.namespace, child)

        domain = s.cluster.cluster_domain
        ca = adoption.running_install_ca
        service, ns_name = s.server.service_name, s.namespace.name
        side = compose_kubernetes_side(
            name,
            KubernetesSideArgs(
                namespace=namespace,
                tls=TlsArgs(
                    settings=s.tls,
                    namespace=namespace,
                    # While the address agents dial changes, the certificate also names the one
                    # the running agents still dial, until every agent has moved
                    # (transitions/).
                    server_dns_names=[
                        *names.service_dns_names(service, ns_name, domain),
                        *transition.previous_server_names,
                    ],
                    authority=cloud.certificate_authority,
                    existing_ca=(
                        (ca[0].get_secret_value(), ca[1].get_secret_value())
                        if ca is not None
                        else None
                    ),
                ),
                server=s.server,
                agent=s.agent if adoption.stack_owns_agents else None,
                region=s.cluster.region,
                node_group_name=server_nodes.node_group_name,
                node_taint=s.node_group.taint,
                spare_nodes=s.node_group.desired_size - s.server.replicas,
                server_role_arn=self.roles.server_role_arn,
                role_base_arn=self.roles.role_base_arn,
                server_address=self.address,
                adoption=adoption,
                server_pod_annotations=scrape_annotations(s.monitoring, s.server.metrics_port),
                agent_pod_annotations=scrape_annotations(s.monitoring, s.agent.metrics_port),
                restart_for_names=transition.previous_server_names,
                force_apply_agents=transition.restore_agents,
            ),
            child,
        )
        self.tls, self.server, self.agent = side.tls, side.server, side.agent
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
        self, name: str, args: Composition, child: pulumi.ResourceOptions
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
            cloud.pod_identity_agent(names.pod_identity_agent_name(name), child)
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


def _subnet_ids_once_known(subnet_ids: Any) -> pulumi.Output[list[str]]:
    """Subnet ids another resource computes, checked once known (`checked_subnet_ids`)."""
    known: pulumi.Output[list[str]] = pulumi.Output.from_input(subnet_ids)
    return known.apply(checked_subnet_ids)


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

"""kiam's Kubernetes side alone, for a cluster whose IAM roles, dedicated node group and
certificates are made elsewhere (terraform-aws-eks, pulumi-eks' `ManagedNodeGroup`, cert-manager,
another stack): the servers as a Deployment on that node group, their headless Service and
PodDisruptionBudget, the agents on every other node, the namespaces' permitted roles.

The same components as `Kiam`'s (components/kubernetes_side.py, namespace_permissions.py), under
the same names, from arguments a Pulumi program in any language passes: what was made elsewhere
is a `pulumi.Input` (another resource's output); the settings are `Kiam`'s arguments of the same
names, the same named types, defaults and rules (settings/kubernetes_side.py), checked before
anything is registered.
"""

# No `from __future__ import annotations`: the component provider reads these classes'
# annotations as types at run time to infer the package's schema (provider/).
from collections.abc import Mapping, Sequence
from typing import Any, NotRequired, TypedDict

import pulumi

from kiam_eks.components.argument_types import (
    AgentOptions,
    NamespaceOptions,
    ServerNodeGroupOptions,
    ServerOptions,
)
from kiam_eks.components.cloud import KeyPair
from kiam_eks.components.kubernetes_side import KubernetesSideArgs, compose_kubernetes_side
from kiam_eks.components.last_update import judged_kubernetes_side
from kiam_eks.components.namespace import judged_namespace
from kiam_eks.components.namespace_permissions import NamespacePermissions, NamespacePermissionsArgs
from kiam_eks.components.public_args import checked_role_arn, kubernetes_side
from kiam_eks.components.tls import ProvidedCertificates, TlsArgs
from kiam_eks.contracts import names, tokens
from kiam_eks.settings.adoption import Adoption
from kiam_eks.settings.tls import TlsSettings
from kiam_eks.transitions.installed import kubernetes_side_installed


# The docstrings below are the package schema's descriptions (the provider reads them from the
# source, undedented), so each is one line.
class KiamKubernetesArgs(TypedDict):
    """The arguments of `KiamKubernetes`. Plain values default to the stack settings' defaults (docs/api.md lists each)."""

    node_group_name: pulumi.Input[str]
    """Name of the dedicated, tainted EKS managed node group the servers run on (its nodes' `eks.amazonaws.com/nodegroup` label). Pass the node group resource's name output: replacing the group then rolls the servers onto the new nodes before the old ones are drained."""
    server_role_arn: pulumi.Input[str]
    """The kiam-server role's ARN (kiam's `--assume-role-arn`): the role the server nodes' instance role may assume, and which alone may assume the application roles."""
    role_base_arn: str
    """kiam's `--role-base-arn`, such as `arn:aws:iam::111122223333:role/`: what a pod's annotation naming a role (not a full ARN) is appended to."""
    region: str
    """AWS region of the cluster (`kiam:cluster.region`): kiam's regional STS endpoint and the partition of every ARN."""
    ca_certificate_pem: pulumi.Input[str]
    """kiam's CA certificate (PEM), which signed the two below; servers and agents trust only it."""
    server_certificate_pem: pulumi.Input[str]
    """The server certificate (PEM): server and client authentication, for every name in the `serverDnsNames` output and the IP address 127.0.0.1 (the server's health probe)."""
    server_private_key_pem: pulumi.Input[str]
    """The server certificate's private key (PEM); stored only in a Secret."""
    agent_certificate_pem: pulumi.Input[str]
    """The agent certificate (PEM): client authentication."""
    agent_private_key_pem: pulumi.Input[str]
    """The agent certificate's private key (PEM); stored only in a Secret."""
    permitted_roles: NotRequired[dict[str, list[pulumi.Input[str]]]]
    """For each application namespace, the role ARNs its pods may have kiam assume: written as the namespace's `iam.amazonaws.com/permitted` annotation (kiam refuses every other role there)."""
    node_group: NotRequired[ServerNodeGroupOptions]
    """The dedicated node group named by `node_group_name` (`kiam:nodeGroup`): `min_size`, the nodes the servers can count on (at least `server.replicas`, one server per node; with more, a new server starts before an old one stops), and the `taint` that dedicates it."""
    server: NotRequired[ServerOptions]
    """The kiam-server Deployment (`kiam:server`)."""
    agent: NotRequired[AgentOptions]
    """The kiam-agent DaemonSet (`kiam:agent`)."""
    namespace: NotRequired[NamespaceOptions]
    """kiam's namespace (`kiam:namespace`)."""
    cluster_domain: NotRequired[str]
    """The cluster's DNS domain (`kiam:cluster.clusterDomain`)."""


class KiamKubernetes(pulumi.ComponentResource):
    """kiam's servers and agents on a cluster whose IAM roles, dedicated node group and certificates are made elsewhere: the servers as a Deployment on the dedicated nodes (hard anti-affinity, exactly the group's toleration, a headless Service, a PodDisruptionBudget), the agents on every other node once the servers are Ready."""

    server_address: pulumi.Output[str]
    """The `host:port` agents dial: the headless Service's name in the cluster's domain."""
    server_dns_names: pulumi.Output[list[str]]
    """The DNS names the server certificate must hold."""
    namespace: pulumi.Output[str]
    """The namespace of every kiam object."""
    server_deployment_name: pulumi.Output[str]
    """Name of the kiam-server Deployment."""
    agent_daemon_set_name: pulumi.Output[str]
    """Name of the kiam-agent DaemonSet."""
    installed: pulumi.Output[dict[str, Any]]
    """What this update installed, recorded once its rollouts are done: the next `preview` and `up` judge their change from it, before anything is registered (docs/transitions.md). Its parts are the judge's, not an interface."""

    def __init__(
        self, name: str, args: KiamKubernetesArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        # Checked before the component itself is registered: a mistake creates nothing.
        source = f"KiamKubernetes {name!r}"
        checked = kubernetes_side(source, dict(args))
        s = checked.settings
        # Judged from what its last update recorded, before anything is registered: a refused
        # change creates and changes nothing (components/last_update.py).
        transition = judged_kubernetes_side(s, name, source)
        super().__init__(tokens.KIAM_KUBERNETES, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        namespace = judged_namespace(name, s.namespace.name, transition.namespace, child)
        domain = s.cluster.cluster_domain
        service = s.server.service_name
        dns_names = names.service_dns_names(service, s.namespace.name, domain)
        address = names.agent_server_address(service, s.namespace.name, domain, s.server.grpc_port)
        parts = compose_kubernetes_side(
            name,
            KubernetesSideArgs(
                namespace=namespace,
                tls=TlsArgs(
                    # Lifetimes are for certificates issued here; these are given.
                    settings=TlsSettings(),
                    namespace=namespace,
                    server_dns_names=dns_names,
                    authority=None,
                    provided=ProvidedCertificates(
                        ca_cert_pem=args["ca_certificate_pem"],
                        server=KeyPair(
                            cert_pem=args["server_certificate_pem"],
                            key_pem=pulumi.Output.secret(args["server_private_key_pem"]),
                        ),
                        agent=KeyPair(
                            cert_pem=args["agent_certificate_pem"],
                            key_pem=pulumi.Output.secret(args["agent_private_key_pem"]),
                        ),
                    ),
                ),
                server=s.server,
                agent=s.agent,
                region=s.cluster.region,
                node_group_name=args["node_group_name"],
                node_taint=s.node_group.taint,
                spare_nodes=s.node_group.min_size - s.server.replicas,
                server_role_arn=_checked_once_known(args["server_role_arn"], "server_role_arn"),
                role_base_arn=checked.role_base_arn,
                server_address=address,
                adoption=Adoption.of(None),
            ),
            child,
        )
        self.server_address = pulumi.Output.from_input(address)
        server, agent = parts.server, parts.agent
        assert agent is not None  # the agents are always this component's
        # Strings were checked above; another resource's output once known.
        permitted: Mapping[str, Sequence[pulumi.Input[str]]] = {
            namespace: [_checked_once_known(arn, "permitted_roles") for arn in arns]
            for namespace, arns in (args.get("permitted_roles") or {}).items()
        }
        if permitted:
            NamespacePermissions(
                f"{name}-permissions",
                NamespacePermissionsArgs(role_arns_by_namespace=permitted),
                child,
            )
        self.server_dns_names = pulumi.Output.from_input(dns_names)
        self.namespace = pulumi.Output.from_input(namespace)
        self.server_deployment_name = server.deployment.metadata["name"]
        self.agent_daemon_set_name = agent.daemon_set.metadata["name"]
        leaves = kubernetes_side_installed(s, transition.previous).to_output()
        # Recorded only once the servers and agents are rolled out: an update that fails half
        # way leaves the record of the one before, and the next judges the same change again.
        self.installed = pulumi.Output.all(server.deployment.urn, agent.daemon_set.urn).apply(
            lambda _: leaves
        )
        outputs: dict[str, Any] = {
            "installed": self.installed,
            "server_address": self.server_address,
            "server_dns_names": self.server_dns_names,
            "namespace": self.namespace,
            "server_deployment_name": self.server_deployment_name,
            "agent_daemon_set_name": self.agent_daemon_set_name,
        }
        self.register_outputs(outputs)


def _checked_once_known(arn: pulumi.Input[str], argument: str) -> pulumi.Input[str]:
    """A role ARN as given: a string was checked before anything was registered; another
    resource's output is checked when it is known, failing the update with the argument's name."""
    if isinstance(arn, str):
        return arn
    known: pulumi.Output[str] = pulumi.Output.from_input(arn)
    return known.apply(lambda value: checked_role_arn(value, argument))

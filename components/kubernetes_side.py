"""kiam's Kubernetes side, composed once for both public components: the certificates' Secrets,
the servers, then the agents once the servers are Ready.

`Kiam` composes it from the stack settings and what its cloud side made (the roles, the node
group, the certificate authority); `KiamKubernetes` from arguments naming what was made elsewhere.
The children keep the names and the parent they always had (`<name>-tls`, `<name>-server`,
`<name>-agent` under the calling component), so no running install sees a new URN.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi

from kiam_eks.components.agent import Agent, AgentArgs
from kiam_eks.components.server import Server, ServerArgs
from kiam_eks.components.tls import Tls, TlsArgs
from kiam_eks.settings.adoption import Adoption
from kiam_eks.settings.agent import AgentSettings
from kiam_eks.settings.node_group import TaintSettings
from kiam_eks.settings.server import ServerSettings


@dataclass(frozen=True, kw_only=True)
class KubernetesSideArgs:
    """What the Kubernetes side is composed from."""

    namespace: pulumi.Input[str]
    """Namespace of every object."""
    tls: TlsArgs
    """The certificates: issued here (`Kiam`) or given (`KiamKubernetes`)."""
    server: ServerSettings
    agent: AgentSettings | None
    """None while a running install's agents are not yet the stack's (an adoption's first
    phase): no agent DaemonSet is registered."""
    region: str
    """The servers' regional STS endpoint."""
    node_group_name: pulumi.Input[str]
    """The dedicated node group the servers run on."""
    node_taint: TaintSettings
    """The taint dedicating that group: the servers tolerate exactly it, the agents never."""
    spare_nodes: int
    """Nodes of the group beyond the servers (components/server.py `rolling_update`)."""
    server_role_arn: pulumi.Input[str]
    role_base_arn: str
    server_address: str
    """The `host:port` agents dial."""
    adoption: Adoption
    server_pod_annotations: dict[str, str] | None = None
    agent_pod_annotations: dict[str, str] | None = None
    restart_for_names: Sequence[str] = ()
    """Names the servers restart onto before the agents move (ServerArgs)."""
    force_apply_agents: bool = False
    """Apply the agent DaemonSet with force (AgentArgs `force_apply`)."""


@dataclass(frozen=True)
class KubernetesParts:
    """What `compose_kubernetes_side` registered."""

    tls: Tls
    server: Server
    agent: Agent | None


def compose_kubernetes_side(
    name: str, args: KubernetesSideArgs, child: pulumi.ResourceOptions
) -> KubernetesParts:
    """The Secrets, the servers, and the agents after them, as children in `child`."""
    tls = Tls(f"{name}-tls", args.tls, child)
    server = Server(
        f"{name}-server",
        ServerArgs(
            settings=args.server,
            namespace=args.namespace,
            region=args.region,
            node_group_name=args.node_group_name,
            node_taint=args.node_taint,
            spare_nodes=args.spare_nodes,
            server_role_arn=args.server_role_arn,
            role_base_arn=args.role_base_arn,
            tls_secret=tls.server_secret,
            adoption=args.adoption,
            pod_annotations=args.server_pod_annotations,
            restart_for_names=args.restart_for_names,
        ),
        child,
    )
    agent = None
    if args.agent is not None:
        agent = Agent(
            f"{name}-agent",
            AgentArgs(
                settings=args.agent,
                namespace=args.namespace,
                server_address=args.server_address,
                server_node_taint=args.node_taint,
                tls_secret=tls.agent_secret,
                # The agents only once the servers are Ready; also what makes a retirement
                # delete the agents before the servers: the engine deletes a resource only after
                # those that depend on it.
                wait_for=[server.deployment],
                adoption=args.adoption,
                pod_annotations=args.agent_pod_annotations,
                force_apply=args.force_apply_agents,
            ),
            child,
        )
    return KubernetesParts(tls, server, agent)

"""Judging a change: `judge` runs every judge of the table against the last update's facts and
either raises `RefusedChangeError` or returns the `Transition` the program applies, in a safe order."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from kiam_eks.contracts import names
from kiam_eks.contracts.tokens import DAEMON_SET_PATCH
from kiam_eks.settings.kubernetes_side import KubernetesSide, KubernetesSideSettings
from kiam_eks.settings.stack import StackSettings
from kiam_eks.transitions.installed import Installed, InstalledAgents, installed_by, namespace_owner
from kiam_eks.transitions.judges import (
    agents_change,
    covers,
    namespace_change,
    server_address_change,
)
from kiam_eks.transitions.table import TABLE
from kiam_eks.transitions.verdicts import Kind, RefusedChangeError, Verdict, refused, sequenced

NamespaceMode = Literal["create", "release", "use"]


@dataclass(frozen=True)
class Transition:
    """What the program needs to know to apply the change it is asked for, in a safe order."""

    previous: Installed | None
    """The last update's facts; None on a stack's first update."""
    verdicts: tuple[Verdict, ...]
    """Every change the judges noticed, safe and sequenced (a refusal raises instead)."""
    namespace: NamespaceMode
    """`create` it; `release` it (keep a namespace the stack created, now `create: false`,
    registered once more and kept on delete, so the next update forgets it without deleting it);
    `use` it as found."""
    previous_server_names: tuple[str, ...]
    """DNS names the server certificate keeps for this update, besides its own: those of the
    address the running agents dial, while the address changes."""
    roll_agents_before_retiring: bool
    """`kiam:retire` and the last update left kiam installed: roll the agents to remove their
    rule before they go (components/agent_retirement.py)."""
    restore_agents: bool
    """A retirement that stopped half way left its patch (and agents started with
    `--iptables-remove`) behind, and the stack is not retiring any more: apply the agent
    DaemonSet with force, so every agent rolls back to the stack's own command line."""
    agent_addon_registered: bool = False
    """The stack's state holds the `eks-pod-identity-agent` add-on it installs
    (`kiam:podIdentityAgent.manageAddon`), even where the last update stopped before recording
    its facts: one the state lacks is created, which EKS refuses while the cluster has one
    (program/providers.py checks)."""

    @property
    def installed(self) -> Installed | None:
        return self.previous

    def leaves(self, settings: StackSettings) -> Installed:
        """The facts this update leaves (the stack output `installed`)."""
        return installed_by(settings, self.previous)


def first_update(settings: KubernetesSide) -> Transition:
    """A stack's first update: nothing runs yet, so nothing to keep or arrange."""
    return Transition(
        previous=None,
        verdicts=(),
        namespace=namespace_mode(settings, None),
        previous_server_names=(),
        roll_agents_before_retiring=False,
        restore_agents=False,
    )


def namespace_mode(settings: KubernetesSide, previous: Installed | None) -> NamespaceMode:
    """Whether this update registers kiam's namespace, and how (`Transition.namespace`). A
    retirement deletes a namespace the stack created with the rest of kiam, unless it is being
    released."""
    owner = namespace_owner(settings, previous)
    if owner == "released":
        return "release"
    if settings.namespace.create and not settings.retire:
        return "create"
    return "use"


def judge(
    settings: StackSettings,
    previous: Installed | None,
    state: Mapping[str, str],
    source: str,
) -> Transition:
    """The transition from `previous` (None: a first update) to `settings`; `state` is every
    resource of the stack's last update (URN to type). Raises `RefusedChangeError`, naming every
    refused change, before anything is registered."""
    registered = _agent_addon_registered(state)
    if previous is None:
        return replace(first_update(settings), agent_addon_registered=registered)
    verdicts: list[Verdict] = []
    seen: set[int] = set()
    for row in TABLE:
        if row.judge is None or id(row.judge) in seen:
            continue
        seen.add(id(row.judge))
        verdicts += row.judge(previous, settings)
    restore = not settings.retire and _retirement_patch_left(state)
    if restore and settings.adoption_state.stack_owns_agents:
        verdicts.append(
            sequenced(
                "kiam:retire",
                "a retirement that stopped half way left agents running with --iptables-remove: "
                "the agent DaemonSet is applied with force, so every agent rolls back to the "
                "stack's own command line",
            )
        )
    _refuse(verdicts, source)
    return Transition(
        previous=previous,
        verdicts=tuple(verdicts),
        namespace=namespace_mode(settings, previous),
        previous_server_names=_previous_server_names(previous, settings),
        roll_agents_before_retiring=settings.retire and previous.kiam_installed,
        restore_agents=restore and settings.adoption_state.stack_owns_agents,
        agent_addon_registered=registered,
    )


def judge_kubernetes_side(
    settings: KubernetesSideSettings, previous: Installed | None, source: str
) -> Transition:
    """`judge` for `KiamKubernetes`: the same judges of the namespace, the address agents dial
    and the agents, the rest (IAM, the cluster, applications, adoption, retirement) being made
    elsewhere. A move of the address agents dial is refused rather than sequenced: the servers
    would have to present a certificate naming the old address and the new while the agents
    move, and `KiamKubernetes` serves the certificates it is given. Raises `RefusedChangeError`."""
    if previous is None:
        return first_update(settings)
    verdicts = [*namespace_change(previous, settings), *agents_change(previous, settings)]
    for moved in server_address_change(previous, settings):
        if moved.kind is Kind.SEQUENCED and previous.server is not None:
            old = previous.server.address(settings.namespace.name)
            moved = refused(
                moved.setting,
                f"the running agents dial {old} until each is rolled, and the servers must "
                "meanwhile present a certificate naming both that and the new address, which "
                "KiamKubernetes cannot issue: it serves the certificates it is given. Keep "
                f"{old.rsplit(':', 1)[0]}",
            )
        verdicts.append(moved)
    _refuse(verdicts, source)
    return replace(
        first_update(settings),
        previous=previous,
        verdicts=tuple(verdicts),
        namespace=namespace_mode(settings, previous),
    )


def _refuse(verdicts: Sequence[Verdict], source: str) -> None:
    """Raise `RefusedChangeError` naming every refused change, if any."""
    problems = [str(v) for v in verdicts if v.kind is Kind.REFUSED]
    if problems:
        raise RefusedChangeError(source, problems)


def _agent_addon_registered(state: Mapping[str, str]) -> bool:
    return any(urn.endswith("::" + names.POD_IDENTITY_AGENT) for urn in state)


def _retirement_patch_left(state: Mapping[str, str]) -> bool:
    return any(
        kind == DAEMON_SET_PATCH and urn.endswith("::" + names.RETIREMENT_PATCH)
        for urn, kind in state.items()
    )


def _previous_server_names(previous: Installed, s: KubernetesSide) -> tuple[str, ...]:
    server, namespace = previous.server, previous.namespace
    if server is None or previous.retired or namespace is None or s.retire:
        return ()
    now = names.service_dns_names(s.server.service_name, s.namespace.name, s.cluster.cluster_domain)
    before = names.service_dns_names(server.service_name, namespace.name, server.cluster_domain)
    return tuple(n for n in before if n not in now)


def agents_lost(agents: InstalledAgents | None, settings: StackSettings) -> bool:
    """Whether the stack's running agents would stop for good on some node: the stack stops
    owning agents, or tolerates less (the DaemonSet controller deletes the agents of nodes it no
    longer tolerates)."""
    if agents is None:
        return False
    if settings.retire or not settings.adoption_state.stack_owns_agents:
        return True
    return any(
        not any(covers(n, o) for n in settings.agent.tolerations) for o in agents.tolerations
    )

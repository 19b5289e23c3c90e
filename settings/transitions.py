"""Every change from what the stack's last update installed, classified from one table.

A change of a setting is one of three things on a running cluster:

- **safe**: the change keeps every pod's credentials flowing as it is applied (servers roll behind
  their PodDisruptionBudget and `pulumi up` waits for them; agents roll `kiam:agent.rollout.maxUnavailable` nodes at a time, each
  taking over the metadata DNAT rule of the one it replaces);
- **sequenced**: applied in one `pulumi up` only in the order that keeps credentials flowing,
  which the program arranges from what it knows was installed (`Transition`);
- **refused**: no order keeps credentials flowing, so the program stops before it registers
  anything, naming the setting, the running value and the safe way to get there.

`TABLE` lists every setting once (docs/transitions.md is generated from it and the configuration
reference links each key to its row); each row that can be anything but safe has a judge, which
`judge` runs against the facts of the last update (settings/installed.py). A change judged here
is also judged by the transition guarantees (invariants/transitions.py) on what the program then
renders, as every stack is judged by the other guarantees.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Literal

from kiam_eks.contracts import names
from kiam_eks.contracts.iam import role_arn_parts
from kiam_eks.contracts.tokens import DAEMON_SET_PATCH
from kiam_eks.settings.agent import TolerationSettings
from kiam_eks.settings.applications import ServedBy
from kiam_eks.settings.installed import (
    Installed,
    InstalledAdoption,
    InstalledAgents,
    InstalledApplication,
    fingerprint,
    installed_by,
    namespace_owner,
)
from kiam_eks.settings.kubernetes_side import KubernetesSide, KubernetesSideSettings
from kiam_eks.settings.loader import SettingsError
from kiam_eks.settings.stack import StackSettings

NamespaceMode = Literal["create", "release", "use"]


class Kind(StrEnum):
    """What a change of a setting is on a running cluster."""

    SAFE = "safe"
    SEQUENCED = "sequenced"
    REFUSED = "refused"


@dataclass(frozen=True)
class Verdict:
    """One change judged: the exact key path, its class, and what happens (for a refusal: the
    running value, why, and the safe sequence)."""

    setting: str
    kind: Kind
    message: str

    def __str__(self) -> str:
        return f"{self.setting}: {self.message}"


Judge = Callable[[Installed, StackSettings], list[Verdict]]


@dataclass(frozen=True)
class Row:
    """One setting (or every key below a prefix ending in `.*`) and what changing it does."""

    setting: str
    kinds: tuple[Kind, ...]
    what: str
    """What a change does on a running cluster, for docs/transitions.md."""
    judge: Judge | None = None

    def covers(self, key: str) -> bool:
        if self.setting.endswith(".*"):
            return key.startswith(self.setting[:-1])
        return key == self.setting or key.startswith((self.setting + ".", self.setting + "["))


class RefusedChangeError(SettingsError):
    """A change no order of steps can apply without taking credentials away."""

    def __init__(self, source: str, problems: list[str]) -> None:
        super().__init__(source, problems)
        noun = "problem" if len(problems) == 1 else "problems"
        lines = "\n".join(f"  - {p}" for p in problems)
        self.args = (
            f"{source}: refused: this change from what the stack's last update installed would "
            f"take credentials away ({len(problems)} {noun}):\n{lines}",
        )

    def __str__(self) -> str:
        return str(self.args[0])


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


# --- the judges ----------------------------------------------------------------------------------

KEEP_RULE = (
    "set kiam:agent.removeIptablesRuleOnExit: true and `pulumi up` first (the agents roll one "
    "node at a time, each keeping the rule while it restarts), then make this change (each agent "
    "that stops takes its rule with it: pods there reach the node's own metadata service, as "
    "without kiam, until an agent serves them again), then set it back to false"
)


def refused(setting: str, message: str) -> Verdict:
    return Verdict(setting, Kind.REFUSED, message)


def sequenced(setting: str, message: str) -> Verdict:
    return Verdict(setting, Kind.SEQUENCED, message)


def safe(setting: str, message: str) -> Verdict:
    return Verdict(setting, Kind.SAFE, message)


def _cluster(prev: Installed, s: StackSettings) -> list[Verdict]:
    p = prev.cluster
    if p is None:
        return []
    out = []
    for key, what, old, new in (
        ("name", "cluster", p.name, s.cluster.name),
        ("accountId", "account", p.account_id, s.cluster.account_id),
        ("region", "region", p.region, s.cluster.region),
    ):
        if old == new:
            continue
        retire = (
            "retire kiam there first (kiam:retire: true, one `pulumi up`), then "
            if prev.kiam_installed
            else ""
        )
        out.append(
            refused(
                f"kiam:cluster.{key}",
                f"the stack's last update installed kiam in {what} {old}, and {new} is another "
                f"{what}: this update would delete what the stack made in {old} (kiam's agents "
                "without removing their iptables rule) and create it anew in "
                f"{new}. One stack per cluster: keep {old} here; to leave it, {retire}give {new} "
                "a stack of its own",
            )
        )
    return out


def _namespace(prev: Installed, s: KubernetesSide) -> list[Verdict]:
    before = prev.namespace
    if before is None or not prev.kiam_installed:
        return []
    name = s.namespace.name
    if before.name != name and s.retire:
        return [
            refused(
                "kiam:namespace.name",
                f"kiam runs in namespace {before.name} (the stack's last update); the retirement "
                f"rolls the agents there to remove their iptables rule before it deletes them, "
                f"and in {name} there are none to roll. Keep {before.name}",
            )
        ]
    if before.name != name:
        port = f" {prev.agents.port}" if prev.agents is not None else ""
        return [
            refused(
                "kiam:namespace.name",
                f"kiam runs in namespace {before.name} (the stack's last update); moving it to "
                f"{name} would start a second agent DaemonSet that needs the port{port} the "
                "first one holds on every node, and delete the first without removing its "
                f"iptables rule. Keep {before.name}",
            )
        ]
    # A retirement registers no namespace to create (`namespace_mode`).
    if before.owner == "existing" and s.namespace.create and not s.retire:
        return [
            refused(
                "kiam:namespace.create",
                f"namespace {name} is not this stack's (its last update used it as it found it, "
                "kiam:namespace.create false): creating it would fail with AlreadyExists, or "
                "take over a namespace someone else owns. Keep false",
            )
        ]
    owner = namespace_owner(s, prev)
    if before.owner == "stack" and owner == "released":
        return [
            sequenced(
                "kiam:namespace.create",
                f"namespace {name}, which the stack created, stays with everything in it: this "
                "update keeps it in the stack's state, kept on delete, and the next `pulumi up` "
                "forgets it without deleting it",
            )
        ]
    if before.owner == "released" and owner == "existing":
        return [
            sequenced(
                "kiam:namespace.create",
                f"the stack forgets namespace {name}, released by its last update, without "
                "deleting it",
            )
        ]
    return []


def _server_address(prev: Installed, s: KubernetesSide) -> list[Verdict]:
    server, namespace = prev.server, prev.namespace
    if server is None or prev.retired or s.retire:
        return []
    if namespace is None or namespace.name != s.namespace.name:
        return []
    out = []
    if server.grpc_port != s.server.grpc_port:
        out.append(
            refused(
                "kiam:server.grpcPort",
                f"every running agent dials port {server.grpc_port} "
                f"({server.address(namespace.name)}), and a server listens on one port only "
                f"(`--bind`): the servers would roll to {s.server.grpc_port} before the agents, "
                "and once the last old server stopped no agent could reach a server until it "
                f"rolled too. Keep {server.grpc_port}",
            )
        )
        return out
    old = server.address(namespace.name)
    new = names.agent_server_address(
        s.server.service_name, s.namespace.name, s.cluster.cluster_domain, s.server.grpc_port
    )
    if old != new:
        key = (
            "kiam:server.serviceName"
            if server.service_name != s.server.service_name
            else "kiam:cluster.clusterDomain"
        )
        out.append(
            sequenced(
                key,
                f"the running agents dial {old} until each is rolled: this update's server "
                f"certificate names {old.rsplit(':', 1)[0]} too, the servers restart onto it "
                f"before the agents move to {new}, and the old name's Service stays until the "
                "end of the update; the next `pulumi up` re-issues the certificate without the "
                "old names",
            )
        )
    return out


def _agents(prev: Installed, s: KubernetesSide) -> list[Verdict]:
    agents = prev.agents
    if agents is None or not s.adoption_state.stack_owns_agents:
        return []
    if s.retire:
        keeps_rule = prev.kiam_installed and not agents.removes_rule_on_exit
        return _retiring_agents(agents, s) if keeps_rule else []
    out = []
    if agents.port != s.agent.port and not agents.removes_rule_on_exit:
        out.append(
            refused(
                "kiam:agent.port",
                f"every node's iptables rule sends pods' metadata requests to port {agents.port}, "
                "where the running agents listen, and they do not remove it when they stop "
                "(--no-iptables-remove); an agent on another port appends its own rule after it "
                "(kiam's AppendUnique), and the first rule wins, so every pod would get "
                f'"connection refused" from the metadata address. Keep {agents.port}, or: '
                + KEEP_RULE,
            )
        )
    if agents.host_interface != s.agent.host_interface and not agents.removes_rule_on_exit:
        out.append(
            refused(
                "kiam:agent.hostInterface",
                f"every node's iptables rule names interface {agents.host_interface} (`-i`), and "
                "the running agents do not remove it when they stop (--no-iptables-remove); an "
                f"agent on {s.agent.host_interface} adds a rule of its own beside it, and the rule "
                f"for {agents.host_interface} stays on every running node with no agent to take "
                "it away: a later port change, or the retirement, would leave it sending those "
                f"pods to a port nothing listens on. Keep {agents.host_interface}, or: "
                + KEEP_RULE,
            )
        )
    lost = [
        old
        for old in agents.tolerations
        if not any(covers(new, old) for new in s.agent.tolerations)
    ]
    if lost and not agents.removes_rule_on_exit:
        out.append(
            refused(
                "kiam:agent.tolerations",
                "the running agents tolerate "
                + ", ".join(describe(t) for t in lost)
                + ", which the new list does not: the DaemonSet controller would delete the "
                "agents on nodes tainted so without removing their iptables rule "
                '(--no-iptables-remove), and every pod there would get "connection refused" '
                "from the metadata address. To stop running agents there: " + KEEP_RULE,
            )
        )
    return out


def _retiring_agents(agents: InstalledAgents, s: KubernetesSide) -> list[Verdict]:
    """Running agents that keep their rule on exit: the retirement rolls them to remove *their*
    rule as they stop, and an agent removes exactly the rule text it added
    (contracts/agent_rule.py). Rolled onto another port or interface, each would add and remove
    a rule of its own, and leave the running agents' rule on every node, sending pods to an
    agent that is gone."""
    out = []
    for key, what, old, new in (
        ("port", "port", agents.port, s.agent.port),
        ("hostInterface", "interface", agents.host_interface, s.agent.host_interface),
    ):
        if old != new:
            out.append(
                refused(
                    f"kiam:agent.{key}",
                    f"the retirement rolls the running agents, whose rule on every node names "
                    f"{what} {old}, to remove that rule as they stop; on {what} {new} each would "
                    f"remove only a rule of its own, and leave theirs sending pods to an agent "
                    f"that is gone. Keep {old} while retiring",
                )
            )
    return out


def _adoption(prev: Installed, s: StackSettings) -> list[Verdict]:
    if prev.legacy or not prev.kiam_installed:
        return []
    before, after = prev.adoption, s.adoption
    if before is None and after is not None:
        return [
            refused(
                "kiam:adoption",
                "this stack installed kiam itself (its last update had no kiam:adoption); taking "
                "over a running install is a new stack's first update. Remove kiam:adoption",
            )
        ]
    if before is None:
        return []
    if after is None:
        return [
            refused(
                "kiam:adoption",
                f"the stack took over a running install (phase {before.phase}); without "
                "kiam:adoption it would issue a CA of its own, which no running agent or server "
                f"trusts, and replace the DaemonSet {before.agent_daemon_set_name} it took over. "
                "Keep kiam:adoption: phase complete is its end state (docs/migration.md)",
            )
        ]
    return _adoption_phases(before, s)


PHASES = ("servers", "takeover", "complete")


def _adoption_phases(before: InstalledAdoption, s: StackSettings) -> list[Verdict]:
    after = s.adoption
    assert after is not None
    out = []
    step = PHASES.index(after.phase) - PHASES.index(before.phase)
    if step == 2:
        out.append(
            refused(
                "kiam:adoption.phase",
                "servers to complete skips the takeover of the Service and the agents: one phase "
                "at a time, takeover first, with its runbook step (docs/migration.md, Phase 2)",
            )
        )
    elif step == -2:
        out.append(
            refused(
                "kiam:adoption.phase",
                "complete back to servers would delete the agent DaemonSet the stack owns "
                "since complete (no longer kept on delete) without removing its iptables rule: "
                "one phase at a time, takeover first (docs/migration.md, Phase 3)",
            )
        )
    for key, old, new in (
        ("agentDaemonSetName", before.agent_daemon_set_name, after.agent_daemon_set_name),
        ("agentPodLabels", before.agent_pod_labels, dict(after.agent_pod_labels)),
    ):
        if old != new:
            out.append(
                refused(
                    f"kiam:adoption.{key}",
                    f"is the taken-over agent DaemonSet's ({old}; its selector cannot change): "
                    "another value would replace the DaemonSet, whose agents would stop without "
                    f"removing their iptables rule. Keep {old}",
                )
            )
    certificate = after.ca_certificate.get_secret_value()
    pair = fingerprint(certificate + after.ca_private_key.get_secret_value())
    changed = (
        "caCertificate"
        if before.ca_fingerprint != fingerprint(certificate)
        else "caPrivateKey"
        if before.ca_pair_fingerprint != pair
        else None
    )
    if changed is not None:
        out.append(
            refused(
                f"kiam:adoption.{changed}",
                f"every running certificate is signed by the CA {before.ca_fingerprint} with "
                "its key; another CA or key would make servers and agents refuse each other "
                "until both sides had new certificates. Keep the running install's CA and key",
            )
        )
    if (
        before.phase == "servers"
        and after.phase == "servers"
        and before.server_pod_labels != dict(after.server_pod_labels)
    ):
        out.append(
            refused(
                "kiam:adoption.serverPodLabels",
                f"the running install's Service selects the new servers by "
                f"{before.server_pod_labels}: with other labels it would lose them. Keep them "
                "until phase takeover",
            )
        )
    return out


def _iam(prev: Installed, s: StackSettings) -> list[Verdict]:
    # The path is one of the arguments that replace a role (contracts/iam.py
    # `ROLE_REPLACE_FIELDS`): under another one, every role the stack keeps there is a new role,
    # of another ARN.
    moved = prev.kiam_role_path is not None and prev.kiam_role_path != s.iam.kiam_role_path
    # Still chained after this update: an application the new settings drop takes its chain
    # role with it whatever the path.
    chained = [app for app in prev.chain_roles() if app in s.applications]
    out = []
    if moved and chained:
        out.append(
            refused(
                "kiam:iam.kiamRolePath",
                f"the Pod Identity chain roles of {', '.join(chained)} live under "
                f"{prev.kiam_role_path}, and each role's owner in another account trusts exactly "
                "its chain role's ARN (the `trust` of the stack output `applications`); another "
                "path replaces them with roles of other ARNs, which no owner trusts, and Pod "
                f"Identity stops serving those applications. Keep {prev.kiam_role_path}",
            )
        )
    if not prev.kiam_installed or s.retire:
        return out
    if moved:
        out.append(
            refused(
                "kiam:iam.kiamRolePath",
                f"kiam's node and server roles live under {prev.kiam_role_path}; another path "
                "replaces both roles and the node group, and the application roles would trust "
                "the new server role before the running servers moved to it. Keep "
                f"{prev.kiam_role_path}",
            )
        )
    base = installed_by(s, prev).role_base_arn
    if prev.role_base_arn is not None and prev.role_base_arn != base:
        out.append(
            refused(
                "kiam:iam.applicationRolePath",
                f"kiam resolves every pod's role annotation against --role-base-arn "
                f"{prev.role_base_arn}; {base} would make every running pod's annotation name "
                f"another role. Keep {s_path(prev.role_base_arn)} and give new applications a path "
                "below it",
            )
        )
    return out


def s_path(role_base_arn: str) -> str:
    """The IAM path of a `--role-base-arn` (`arn:...:role/kiam-apps/` is `/kiam-apps/`)."""
    return "/" + role_base_arn.split(":role/", 1)[1]


def _applications(prev: Installed, s: StackSettings) -> list[Verdict]:
    after = installed_by(s, prev).applications
    out = []
    for app, old in sorted(prev.applications.items()):
        new = after.get(app)
        if new is None:
            continue
        out += _application(app, old, new, s)
    return out


def _application(
    app: str, old: InstalledApplication, new: InstalledApplication, s: StackSettings
) -> list[Verdict]:
    key = f"kiam:applications.{app}"
    move = (
        f"add the new one as another application, move the pods to it (recreate them), and "
        f"remove {key} once none runs on the old one"
    )
    if old.role_arn == new.role_arn and old.existing != new.existing:
        return [
            refused(
                key + ".roleArn",
                f"{old.role_arn} is the stack's own role (created by roleName): named by roleArn "
                "it would be deleted at the end of this update while pods still hold its "
                "credentials. To hand it over, take it out of the stack's state first (`pulumi "
                "state delete` of the role and its policies leaves them in AWS), then name it by "
                "roleArn"
                if not old.existing
                else f"{old.role_arn} existed before the stack (roleArn): roleName would create "
                "it again, and IAM refuses a second role of that name. To own it, import it "
                "(`pulumi import aws:iam/role:Role`) under the application's role; else keep "
                "roleArn",
            )
        ]
    if old.role_arn != new.role_arn:
        was, now = role_arn_parts(old.role_arn), role_arn_parts(new.role_arn)
        which = ".roleName" if was.name != now.name else ".path"
        if was.name == now.name and was.path == now.path:
            which = ""
        if old.existing or new.existing:
            which = ".roleArn"
        lost = (
            "the stack would stop serving the old one while pods still ask for it"
            if old.existing
            else "the old one would be deleted at the end of this update while pods still hold "
            "its credentials (for up to the session's length)"
        )
        return [
            refused(
                key + which,
                f"its role is {old.role_arn} (the stack's last update), and {new.role_arn} is "
                f"another role: {lost}. To move: " + move,
            )
        ]
    if old.namespace is not None and old.namespace != new.namespace:
        return [
            refused(
                key + ".namespace",
                f"its role is served to namespace {old.namespace}; moving it to {new.namespace} "
                f"takes it from the pods in {old.namespace} at once. To move: " + move,
            )
        ]
    out = []
    steps = served_by_steps(old.served_by, new.served_by)
    if len(steps) > 2:
        out.append(
            refused(
                key + ".servedBy",
                f"{old.served_by.value} to {new.served_by.value} skips "
                + ("a step" if len(steps) == 3 else "steps")
                + ": pods created in one state keep what it wired into them, and lose their "
                "credentials when the next state drops it. One step at a time, each a "
                "`pulumi up` (recreate the pods after each): "
                + " -> ".join(state.value for state in steps)
                + " (docs/leaving-kiam.md)",
            )
        )
    elif (
        old.service_account != new.service_account
        # Only where something serves the old one: an existing role may name its service
        # account while kiam alone serves it, and then moves with another.
        and old.served_by.successor
        and old.service_account is not None
        and new.service_account is not None
    ):
        out.append(
            refused(
                key + ".serviceAccount",
                f"{old.served_by.value} serves the role to service account {old.service_account}"
                f"; moving it to {new.service_account} takes it from the pods running as "
                f"{old.service_account} at once (one association, one trusted service account). "
                "To move: " + move,
            )
        )
    return out


_PATH = {
    ServedBy.KIAM: (),
    ServedBy.KIAM_AND_POD_IDENTITY: (ServedBy.KIAM,),
    ServedBy.POD_IDENTITY: (ServedBy.KIAM, ServedBy.KIAM_AND_POD_IDENTITY),
    ServedBy.KIAM_AND_IRSA: (ServedBy.KIAM,),
    ServedBy.IRSA: (ServedBy.KIAM, ServedBy.KIAM_AND_IRSA),
}


def served_by_steps(old: ServedBy, new: ServedBy) -> list[ServedBy]:
    """The states from `old` to `new`, one step at a time (both ends included): every path runs
    through `kiam`, each state next to the one before it."""
    up = [old, *reversed(_PATH[old])]
    down = [*_PATH[new], new]
    # The shared stem: walk back from `old` only as far as `new`'s path needs.
    for index, state in enumerate(up):
        if state in down:
            return up[: index + 1] + down[down.index(state) + 1 :]
    return up + down  # unreachable: every path starts at kiam


def _existing_permitted(prev: Installed, s: StackSettings) -> list[Verdict]:
    out = []
    for namespace, before in sorted(prev.existing_permitted.items()):
        if not before.holding:
            continue
        value = s.existing_permitted.get(namespace)
        give_back = (
            f"give the value back first: remove the stack's applications from {namespace} "
            f"(keep kiam:existingPermitted.{namespace}) and `pulumi up`, then change it"
        )
        if value is None:
            out.append(
                refused(
                    f"kiam:existingPermitted.{namespace}",
                    f"the stack holds {namespace}'s iam.amazonaws.com/permitted (the value it "
                    f"found, {before.value!r}, with its own roles); dropping the entry would take "
                    f"the found value's roles from {namespace}'s pods at once: " + give_back,
                )
            )
        elif value != before.value:
            out.append(
                refused(
                    f"kiam:existingPermitted.{namespace}",
                    f"the stack holds {namespace}'s annotation as the union of the value it found, "
                    f"{before.value!r}, and its own roles; {value!r} would drop what the found "
                    "value admits while the stack holds it: " + give_back,
                )
            )
    return out


def _retire(prev: Installed, s: StackSettings) -> list[Verdict]:
    leaving = leaving_kiam(prev, s)
    if s.retire and prev.kiam_installed and leaving:
        # Each alone is allowed: the move while kiam still runs (moving back is one `pulumi up`),
        # the retirement once nothing is served by kiam. Together, a pod the move leaves without
        # credentials has no kiam to move back to.
        moves = ", ".join(
            f"kiam:applications.{app}.servedBy ({old.value} to {new.value})"
            for app, old, new in leaving
        )
        return [
            refused(
                "kiam:retire",
                f"in the same update as {moves}: a pod still getting that role from kiam would "
                "lose it with kiam gone, and moving back would need kiam installed again. Leave "
                "kiam first, in an update of its own; check that no pod still uses it "
                "(python -m tools.kiam_usage); then retire",
            )
        ]
    if s.retire and prev.kiam_installed:
        return [
            sequenced(
                "kiam:retire",
                "the agents roll to --iptables-remove (kiam:agent.rollout), then kiam is deleted, "
                "agents first, so each removes its rule as it stops; the application roles stay",
            )
        ]
    if not s.retire and prev.retired:
        return [safe("kiam:retire", "kiam is installed again, as on a new cluster")]
    return []


def leaving_kiam(prev: Installed, s: StackSettings) -> list[tuple[str, ServedBy, ServedBy]]:
    """The applications kiam served at the last update and this one moves off it."""
    return [
        (app, old.served_by, s.applications[app].served_by)
        for app, old in sorted(prev.applications.items())
        if app in s.applications and old.served_by.kiam and not s.applications[app].served_by.kiam
    ]


def covers(new: TolerationSettings, old: TolerationSettings) -> bool:
    """Whether `new` tolerates every taint `old` tolerates (Kubernetes' toleration matching)."""
    if new.effect is not None and new.effect != old.effect:
        return False
    if new.key is None:
        return True  # `Exists` with no key: every taint (of its effect)
    if old.key != new.key:
        return False
    if new.operator == "Exists":
        return True
    return old.operator == "Equal" and (old.value or "") == (new.value or "")


def describe(t: TolerationSettings) -> str:
    """A toleration as the refusal names it: `nvidia.com/gpu (any value):NoSchedule`."""
    if t.key is None:
        what = "every taint"
    elif t.operator == "Exists":
        what = f"{t.key} (any value)"
    else:
        what = f"{t.key}={t.value or ''}"
    return what + (f":{t.effect}" if t.effect else "")


# --- the table -----------------------------------------------------------------------------------

SERVERS_ROLL = (
    "the servers roll one at a time behind their PodDisruptionBudget (a new one first with a spare "
    "node), and `pulumi up` waits until every one is updated and available"
)
AGENTS_ROLL = (
    "the agents roll, kiam:agent.rollout.maxUnavailable nodes at a time; each new agent, on the "
    "same port, holds the rule the one "
    "it replaces left (kiam's AppendUnique), so pods there are never sent elsewhere"
)
NODE_CHANGE = "see the node-change table (README, Operations): "

TABLE: tuple[Row, ...] = (
    Row(
        "kiam:cluster.name",
        (Kind.REFUSED,),
        "Another cluster: refused (one stack per cluster; retire kiam first, then give the other "
        "cluster a stack of its own).",
        _cluster,
    ),
    Row(
        "kiam:cluster.accountId",
        (Kind.REFUSED,),
        "Another account: refused, as for the cluster.",
        _cluster,
    ),
    Row(
        "kiam:cluster.region",
        (Kind.REFUSED,),
        "Another region: refused, as for the cluster.",
        _cluster,
    ),
    Row(
        "kiam:cluster.kubernetesVersion",
        (Kind.SAFE,),
        "Replaces the server node group: new nodes first, the servers Ready there, then the old "
        "nodes drained and deleted.",
    ),
    Row(
        "kiam:cluster.clusterDomain",
        (Kind.SEQUENCED,),
        "Changes the name agents dial: the server certificate names both the old and the new "
        "name for the update, the servers restart onto it before the agents move, and the next "
        "update drops the old names.",
        _server_address,
    ),
    Row(
        "kiam:cluster.kubernetesAuth",
        (Kind.SAFE,),
        "Only how Pulumi authenticates: the Kubernetes provider is updated, not replaced (it is "
        "replaced only when its clusterIdentifier, the cluster's name, changes).",
    ),
    Row(
        "kiam:kubeconfig",
        (Kind.SAFE,),
        "Only how Pulumi reaches the cluster, as kubernetesAuth; every update first checks that "
        "its current context is the EKS cluster kiam:cluster.name names (its certificate "
        "authority), and stops before changing anything if not.",
    ),
    Row(
        "kiam:nodeGroup.*",
        (Kind.SAFE,),
        NODE_CHANGE
        + "a replacement moves every server to new nodes before the old ones go; labels, sizes "
        "and maxUnavailable change the running group.",
    ),
    Row(
        "kiam:server.serviceName",
        (Kind.SEQUENCED,),
        "Changes the name agents dial: as clusterDomain; the new Service is created next to the "
        "old one, which goes at the end of the update.",
        _server_address,
    ),
    Row(
        "kiam:server.grpcPort",
        (Kind.REFUSED,),
        "Refused: agents dial the old port until they roll, after the servers, and a server "
        "listens on one port only.",
        _server_address,
    ),
    Row(
        "kiam:server.replicas",
        (Kind.SAFE,),
        "Adds or removes servers (never below two; the PodDisruptionBudget keeps one disruption).",
    ),
    Row(
        "kiam:server.rolloutTimeoutMinutes",
        (Kind.SAFE,),
        "Only how long `pulumi up` waits; no pod restarts.",
    ),
    Row("kiam:server.*", (Kind.SAFE,), SERVERS_ROLL + "."),
    Row(
        "kiam:agent.port",
        (Kind.REFUSED, Kind.SAFE),
        "Refused while the running agents keep their rule on exit (the default): the old rule, "
        "first in the chain, would send every pod to a port nothing listens on. Safe once they "
        "remove it (removeIptablesRuleOnExit: true), at the cost that setting always has. "
        "Refused too while retiring agents that keep their rule: the retirement must roll "
        "their own rule away.",
        _agents,
    ),
    Row(
        "kiam:agent.tolerations",
        (Kind.SAFE, Kind.REFUSED),
        "Tolerating more: agents start on the new nodes. Tolerating less: refused while the "
        "running agents keep their rule on exit, since the agents on nodes no longer tolerated "
        "would be deleted with their rule in place.",
        _agents,
    ),
    Row(
        "kiam:agent.hostInterface",
        (Kind.REFUSED, Kind.SAFE),
        "Refused while the running agents keep their rule on exit (the default): the rule for the "
        "old interfaces would stay on every running node with no agent to remove it, and a later "
        "port change or the retirement would leave it sending pods to a port nothing listens on. "
        "Safe once they remove it (removeIptablesRuleOnExit: true): each agent that stops takes "
        "its rule with it. Refused too while retiring agents that keep their rule: the retirement "
        "must roll their own rule away. A stack that changed it under an earlier version may "
        "still carry rules for the old interfaces on nodes started before: replace those nodes "
        "before changing the port or retiring.",
        _agents,
    ),
    Row(
        "kiam:agent.removeIptablesRuleOnExit",
        (Kind.SAFE,),
        AGENTS_ROLL + ". Turned off, the agents started with it remove their rule once more as "
        "they roll: pods on that node reach the node's own metadata service until the new agent "
        "starts, as on every restart while it was on.",
    ),
    Row(
        "kiam:agent.rollout",
        (Kind.SAFE,),
        "Only how many agents a later rollout restarts at once and how long `pulumi up` waits for "
        "it (the DaemonSet's update strategy and timeouts); no agent restarts.",
    ),
    Row("kiam:agent.*", (Kind.SAFE,), AGENTS_ROLL + "."),
    Row(
        "kiam:iam.applicationRolePath",
        (Kind.REFUSED,),
        "Refused while kiam runs: it is kiam's --role-base-arn, so every running pod's annotation "
        "would name another role.",
        _iam,
    ),
    Row(
        "kiam:iam.kiamRolePath",
        (Kind.REFUSED, Kind.SAFE),
        "Refused while kiam runs: both kiam roles and the node group would be replaced, and the "
        "application roles would stop trusting the running servers' role first. Refused too, "
        "retired or not, while a Pod Identity chain role lives there: another account trusts "
        "its ARN, which another path replaces. Safe once retired without one.",
        _iam,
    ),
    Row(
        "kiam:iam.managedPoliciesPerRole",
        (Kind.SAFE,),
        "Only how many customer managed policies the kiam-server role's exact permission may "
        "spread over (raise IAM's quota L-0DA4ABF3 first). Each role ARN stays in the document "
        "the last update put it in (the `installed` output); one that must move is added to its "
        "new document before the old one is detached, since the engine deletes only after every "
        "create and update, and the inline policy waits for every attachment: the permission "
        "never narrows mid-update.",
    ),
    Row(
        "kiam:iam.*",
        (Kind.SAFE,),
        "Changes what the servers may assume; every application role must still match (checked "
        "before anything is created). Roles no application names are not the stack's to judge: "
        "`python -m tools.kiam_usage` lists the pods that use them.",
    ),
    Row(
        "kiam:tls.*",
        (Kind.SAFE,),
        "Re-issues the certificates from the same CA key; the Secrets are updated in place and "
        "kiam reloads them.",
    ),
    Row(
        "kiam:namespace.name",
        (Kind.REFUSED,),
        "Refused while kiam runs: a second agent DaemonSet would need the ports the first holds, "
        "and the first would go with its rules in place; a retirement rolls the agents in the "
        "namespace they run in.",
        _namespace,
    ),
    Row(
        "kiam:namespace.create",
        (Kind.SEQUENCED, Kind.REFUSED),
        "true to false: the namespace the stack created stays, with everything in it (kept on "
        "delete by this update, forgotten by the next). false to true: refused, the namespace "
        "exists and is not the stack's.",
        _namespace,
    ),
    Row(
        "kiam:monitoring.*",
        (Kind.SAFE,),
        "ServiceMonitors, the agent metrics Service and the PrometheusRule are created, changed "
        "or deleted; switching scrape annotations rolls the servers and the agents.",
    ),
    Row(
        "kiam:adoption.phase",
        (Kind.SAFE, Kind.REFUSED),
        "One phase forward or back with its runbook step (docs/migration.md); skipping one is "
        "refused.",
        _adoption,
    ),
    Row(
        "kiam:adoption.serverPodLabels",
        (Kind.SAFE, Kind.REFUSED),
        "Refused in phase servers (the running Service selects the new servers by them); later, "
        "the servers roll.",
        _adoption,
    ),
    Row(
        "kiam:adoption",
        (Kind.REFUSED,),
        "Added to a stack that installed kiam itself, removed, or the taken-over DaemonSet's name, "
        "selector or the CA changed: refused (a new CA, or agents stopped with their rule).",
        _adoption,
    ),
    Row(
        "kiam:applications.<name>.servedBy",
        (Kind.SAFE, Kind.REFUSED),
        "One step along its path, forward or back, is one `pulumi up` (docs/leaving-kiam.md); a "
        "skipped step is refused with the steps to take. The last step off kiam reads the "
        "cluster's pods at preview and is refused while one gets its credentials from kiam alone, "
        "naming it and its rollout (program/live_cluster.py), or while the cluster cannot be read.",
        _applications,
    ),
    Row(
        "kiam:applications.<name>.managedPolicyArns",
        (Kind.SAFE,),
        "The role's policies change in place.",
    ),
    Row(
        "kiam:applications.<name>.inlinePolicies",
        (Kind.SAFE,),
        "The role's policies change in place.",
    ),
    Row(
        "kiam:applications",
        (Kind.SAFE, Kind.REFUSED),
        "Adding an application is safe; removing one revokes its role (check "
        "`python -m tools.kiam_usage` first). Another role name, path, role ARN, namespace or "
        "(while Pod Identity or IRSA serves it) service account is refused: the old role or "
        "binding would go before the pods moved; add the new one as another application "
        "instead. The stack's own role named by `roleArn`, or an existing one by `roleName`, is "
        "refused too: the first would delete the role, the second create it again.",
        _applications,
    ),
    Row(
        "kiam:applicationsFile",
        (Kind.SAFE,),
        "Only where the applications are listed: they are joined to kiam:applications before "
        "anything is judged, and each is judged by the rows above, wherever it is listed.",
    ),
    Row(
        "kiam:existingPermitted",
        (Kind.SAFE, Kind.REFUSED),
        "Adding an entry takes the namespace's annotation over; dropping or changing one the "
        "stack holds is refused until the value is given back (docs/migration.md).",
        _existing_permitted,
    ),
    Row(
        "kiam:podIdentityAgent.*",
        (Kind.SAFE,),
        "The add-on is installed or updated in place; one the stack drops is kept on the nodes.",
    ),
    Row(
        "kiam:retire",
        (Kind.SEQUENCED, Kind.SAFE, Kind.REFUSED),
        "true: the agents roll to remove their rule, then kiam is deleted, agents first "
        "(components/agent_retirement.py); refused in the same update as an application's last "
        "step off kiam (that step first, on its own), and while a live pod gets its credentials "
        "from kiam alone (read at preview: program/live_cluster.py). false after a retirement that stopped half "
        "way: the agents roll back to the stack's own command line. false once retired: a new "
        "install.",
        _retire,
    ),
)


def row_of(key: str) -> Row:
    """The most specific row covering a setting's key path (`kiam:applications.<name>.x` form)."""
    found = [r for r in TABLE if r.covers(key)]
    if not found:
        raise LookupError(f"no transition row covers {key}")
    return max(found, key=lambda r: len(r.setting.removesuffix(".*")))


# --- judging a change ----------------------------------------------------------------------------


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
    verdicts = [*_namespace(previous, settings), *_agents(previous, settings)]
    for moved in _server_address(previous, settings):
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


def changed_settings(verdicts: Sequence[Verdict], kind: Kind) -> list[str]:
    """The settings whose change is of `kind`, in order."""
    return [v.setting for v in verdicts if v.kind is kind]


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

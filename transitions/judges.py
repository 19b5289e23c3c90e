"""The judges: for each setting that can be anything but safe, what its change from the running
install is, from the facts the last update recorded (transitions/installed.py). `TABLE`
(transitions/table.py) names the judge of each row."""

from __future__ import annotations

from kiam_eks.contracts import names
from kiam_eks.contracts.iam import role_arn_parts
from kiam_eks.settings.agent import TolerationSettings
from kiam_eks.settings.applications import ServedBy
from kiam_eks.settings.kubernetes_side import KubernetesSide
from kiam_eks.settings.stack import StackSettings
from kiam_eks.transitions.installed import (
    Installed,
    InstalledAdoption,
    InstalledAgents,
    InstalledApplication,
    fingerprint,
    installed_by,
    namespace_owner,
)
from kiam_eks.transitions.verdicts import Verdict, refused, safe, sequenced

KEEP_RULE = (
    "set kiam:agent.removeIptablesRuleOnExit: true and `pulumi up` first (the agents roll one "
    "node at a time, each keeping the rule while it restarts), then make this change (each agent "
    "that stops takes its rule with it: pods there reach the node's own metadata service, as "
    "without kiam, until an agent serves them again), then set it back to false"
)


def cluster_change(prev: Installed, s: StackSettings) -> list[Verdict]:
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


def namespace_change(prev: Installed, s: KubernetesSide) -> list[Verdict]:
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


def server_address_change(prev: Installed, s: KubernetesSide) -> list[Verdict]:
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


def agents_change(prev: Installed, s: KubernetesSide) -> list[Verdict]:
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


def adoption_change(prev: Installed, s: StackSettings) -> list[Verdict]:
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


def iam_change(prev: Installed, s: StackSettings) -> list[Verdict]:
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


def applications_change(prev: Installed, s: StackSettings) -> list[Verdict]:
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


def existing_permitted_change(prev: Installed, s: StackSettings) -> list[Verdict]:
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


def retire_change(prev: Installed, s: StackSettings) -> list[Verdict]:
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

"""The sixteen guarantees, numbered in the order `CHECKS` runs them, after `presence`, which runs
first and is no guarantee of its own: it makes sure the parts the others judge exist, so none of
them passes vacuously. Each check returns violations; unknown values (preview) are never judged."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from kiam_eks.contracts.eks_node_group import REPLACE_ON_CHANGES
from kiam_eks.contracts.labels import HOSTNAME_TOPOLOGY, NODE_GROUP_LABEL
from kiam_eks.contracts.rollout_wait import (
    ROLLED_OUT_STATUS_COUNTS,
    SKIP_AWAIT_ANNOTATION,
    WAIT_FOR_ANNOTATION,
    rolled_out_wait_for,
)
from kiam_eks.contracts.tokens import CLUSTER_ROLE_BINDING, NODE_GROUP, PDB, ROLE, SECRET
from kiam_eks.invariants.applications import application_reachable, off_kiam
from kiam_eks.invariants.expected import Expected
from kiam_eks.invariants.iam_documents import as_list, document, statements
from kiam_eks.invariants.model import Resource, Violation, dig, is_unknown, labels_match
from kiam_eks.invariants.pod_identity import pod_identity, trusts_pod_identity
from kiam_eks.invariants.retirement import retired
from kiam_eks.invariants.transitions import change
from kiam_eks.invariants.view import (
    AGENT_CONTAINER,
    SERVER_CONTAINER,
    KiamView,
    ManagedPolicy,
    container,
    flag_values,
    pod_labels,
    pod_spec,
    tolerates,
)
from kiam_eks.settings.base import duration_seconds

Check = Callable[[KiamView], list[Violation]]
AGENT_CAPABILITIES = frozenset({"NET_ADMIN", "NET_RAW"})
NO_CAPABILITIES: frozenset[str] = frozenset()


def server_anti_affinity(view: KiamView) -> list[Violation]:
    """1. Server pods repel each other per host, by a selector that matches servers and no agent."""
    out = []
    for dep in view.servers:
        terms = dig(
            pod_spec(dep),
            "affinity",
            "podAntiAffinity",
            "requiredDuringSchedulingIgnoredDuringExecution",
            default=[],
        )
        agent_labels = [pod_labels(a) for a in view.agents]
        good = [
            t
            for t in terms or []
            if t.get("topologyKey") == HOSTNAME_TOPOLOGY
            and labels_match(
                dig(t, "labelSelector", "matchLabels", default={}) or {}, pod_labels(dep)
            )
            and dig(t, "labelSelector", "matchLabels")
            and not any(labels_match(t["labelSelector"]["matchLabels"], a) for a in agent_labels)
        ]
        if not good:
            out.append(
                Violation(
                    "server-anti-affinity",
                    dep.urn,
                    f"no required pod anti-affinity on {HOSTNAME_TOPOLOGY} selecting server pods only",
                )
            )
    return out


def server_tolerations(view: KiamView) -> list[Violation]:
    """2. Servers tolerate the dedicated taint and nothing that would stop drains; pinned to the group."""
    out = []
    taints = view.server_taints()
    for dep in view.servers:
        spec = pod_spec(dep)
        tolerations = spec.get("tolerations") or []

        def report(reason: str, dep: Resource = dep) -> None:
            out.append(Violation("server-tolerations", dep.urn, reason))

        for taint in taints:
            if not any(tolerates(t, taint) for t in tolerations):
                report(
                    f"does not tolerate the dedicated taint {taint['key']}={taint['value']}:{taint['effect']}"
                )
        for t in tolerations:
            if not t.get("key") and t.get("operator") == "Exists":
                report("tolerates every taint (operator Exists with no key)")
            if t.get("key") == "node.kubernetes.io/unschedulable":
                report("tolerates node.kubernetes.io/unschedulable, so drains would not move it")
        if NODE_GROUP_LABEL not in (spec.get("nodeSelector") or {}):
            report(f"is not pinned to the dedicated node group (nodeSelector {NODE_GROUP_LABEL})")
    return out


def server_disruption_budget(view: KiamView) -> list[Violation]:
    """3. A PDB selects exactly the server pods and allows one disruption, fewer than the replicas."""
    out = []
    for dep in view.servers:
        selector = dig(dep.inputs, "spec", "selector", "matchLabels", default={})
        replicas = dig(dep.inputs, "spec", "replicas", default=1)
        pdbs = [
            p
            for p in view.of_type(PDB)
            if dig(p.inputs, "spec", "selector", "matchLabels") == selector
        ]
        if not pdbs:
            out.append(
                Violation(
                    "server-disruption-budget",
                    dep.urn,
                    "no PodDisruptionBudget selects exactly its pods",
                )
            )
        for pdb in pdbs:
            spec = pdb.inputs.get("spec", {})
            if "maxUnavailable" in spec:
                allowed = spec["maxUnavailable"]
            elif "minAvailable" in spec and isinstance(replicas, (int, float)):
                allowed = replicas - spec["minAvailable"]
            else:
                allowed = None
            if not isinstance(allowed, (int, float)) or not 0 < allowed <= 1 or allowed >= replicas:
                out.append(
                    Violation(
                        "server-disruption-budget",
                        pdb.urn,
                        f"allows {_number(allowed)} disruptions of {_number(replicas)} servers; must be exactly 1 and fewer than the replicas",
                    )
                )
    return out


def _number(value: Any) -> str:
    """Numbers arrive as floats from the engine; print 3, not 3.0."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return repr(value)


def server_service(view: KiamView) -> list[Violation]:
    """4. Agents dial a headless Service of this stack that selects the servers."""
    out = []
    for agent in view.agents:
        host, service = view.dialed_service(agent)
        if host is None:
            out.append(Violation("server-service", agent.urn, "needs exactly one --server-address"))
            continue
        if service is None:
            out.append(
                Violation(
                    "server-service",
                    agent.urn,
                    f"--server-address host {host} is not a Service of this stack",
                )
            )
            continue
        if dig(service.inputs, "spec", "clusterIP") != "None":
            out.append(
                Violation("server-service", service.urn, "is not headless (clusterIP: None)")
            )
        selector = dig(service.inputs, "spec", "selector", default={}) or {}
        if not any(
            selector == dig(d.inputs, "spec", "selector", "matchLabels") for d in view.servers
        ):
            out.append(
                Violation(
                    "server-service", service.urn, "its selector is not the server pods' selector"
                )
            )
    return out


def server_certificate(view: KiamView) -> list[Violation]:
    """5. The certificate the servers mount names the host agents dial (judged on the certificate request it is signed from, else on the certificate itself).

    Whatever issues it: where the stack issues it (pulumi-tls), its request is known at every
    preview; a certificate issued outside the stack (the real-engine suite's local CA) is read
    from the Secret itself. Not judged while a certificate is unknown.
    """
    sans = view.server_certificate_names()
    out: list[Violation] = []
    if any(is_unknown(names) for names in sans):
        return out
    for agent in view.agents:
        host, _ = view.dialed_service(agent)
        if host is not None and not any(host in names for names in sans):
            out.append(
                Violation(
                    "server-certificate",
                    agent.urn,
                    f"dials {host}, which the server certificate does not name",
                )
            )
    return out


def agent_placement(view: KiamView) -> list[Violation]:
    """6. Agents can never land on server nodes: no toleration of their taint, affinity excluding them."""
    out = []
    for agent in view.agents:
        spec = pod_spec(agent)
        terms = (
            dig(
                spec,
                "affinity",
                "nodeAffinity",
                "requiredDuringSchedulingIgnoredDuringExecution",
                "nodeSelectorTerms",
                default=[],
            )
            or []
        )
        for taint in view.server_taints():
            if any(tolerates(t, taint) for t in spec.get("tolerations") or []):
                out.append(
                    Violation(
                        "agent-placement",
                        agent.urn,
                        f"tolerates the server taint {taint['key']}={taint['value']}",
                    )
                )
            excluded = terms and all(
                _term_excludes(term, taint["key"], taint["value"]) for term in terms
            )
            if not excluded:
                out.append(
                    Violation(
                        "agent-placement",
                        agent.urn,
                        f"no required node affinity keeps it off nodes labelled {taint['key']}={taint['value']}",
                    )
                )
    return out


def _term_excludes(term: Any, key: str, value: str) -> bool:
    for expression in term.get("matchExpressions") or []:
        if expression.get("key") != key:
            continue
        if expression.get("operator") == "DoesNotExist":
            return True
        if expression.get("operator") == "NotIn" and value in (expression.get("values") or []):
            return True
    return False


def server_args(view: KiamView) -> list[Violation]:
    """7. Server flags: assume-role and role-base ARNs, sessions within (15m, 60m] and refresh below, metrics."""
    out = []
    for dep in view.servers:
        args = dig(container(dep, SERVER_CONTAINER), "args")
        if is_unknown(args):
            continue

        def report(reason: str, dep: Resource = dep) -> None:
            out.append(Violation("server-args", dep.urn, reason))

        for flag in ("--assume-role-arn", "--role-base-arn", "--prometheus-listen-addr"):
            values = flag_values(args, flag)
            if len(values) != 1 or not values[0]:
                report(f"needs exactly one non-empty {flag}")
        if "--role-base-arn-autodetect" in (args or []):
            report(
                "autodetects --role-base-arn (needs the metadata API from the pod); set it explicitly"
            )
        durations = flag_values(args, "--session-duration")
        refreshes = flag_values(args, "--session-refresh")
        repeated = [
            flag
            for flag, values in (
                ("--session-duration", durations),
                ("--session-refresh", refreshes),
            )
            if len(values) > 1
        ]
        if repeated:
            # Which one a server would take is not this guarantee's to guess: one of each.
            report(f"repeats {' and '.join(repeated)}")
        else:
            # kiam's defaults: 15m sessions, refreshed every 5m.
            [duration] = durations or ["15m"]
            [refresh] = refreshes or ["5m"]
            seconds = duration_seconds(duration)
            if not 15 * 60 < seconds <= 60 * 60:
                report(
                    f"session duration {durations or ['15m (kiam default)']} is not above 15m and "
                    "at most 60m"
                )
            elif duration_seconds(refresh) >= seconds:
                report(f"session refresh {refresh} is not below the session duration {duration}")
    return out


def iam_least_privilege(view: KiamView) -> list[Violation]:
    """8. kiam's roles get only what each needs, by every way a role gets permissions: inline policies, attachments, the roles' own arguments (judged on the aws:iam resources).

    The node role: EKS's node policies, and assuming the kiam-server role, which only it may
    assume. The server role: assuming the application roles (by pattern, and a role that exists
    already by its exact ARN: never an ARN no application names), in its inline policy and, past
    IAM's quota for that, the managed policies the stack writes for it; no other managed policy.
    Each application role: exactly what its settings give, and trust in the server role, IRSA and
    EKS Pod Identity only (which of them each state needs: guarantees 12 to 14).

    Judged on the roles the stack creates, found by what they are: the node group's role, the
    role the servers are given, and the roles the applications' settings name. A cloud side
    whose roles live outside the stack (the real-engine suite's computed ARNs) creates none,
    and so has none to judge here; but where the stack creates roles at all, a node group or a
    server Deployment running as a role of no stack is reported, since it could not be judged.
    """
    expected = view.expected
    out = []

    def report(resource: Resource | str, reason: str) -> None:
        urn = resource if isinstance(resource, str) else resource.urn
        out.append(Violation("iam-least-privilege", urn, reason))

    creates_roles = bool(view.of_type(ROLE))
    for group in view.of_type(NODE_GROUP):
        if creates_roles and not view.roles_feeding([group], "nodeRoleArn"):
            report(group, "runs its nodes as a role that is not one of this stack's")
    for dep in view.servers:
        if creates_roles and not view.roles_feeding([dep], "spec"):
            report(dep, "is given a role (--assume-role-arn) that is not one of this stack's")

    server_arns = [r.outputs.get("arn") for r in view.server_roles]
    server_arn = server_arns[0] if len(server_arns) == 1 else None
    for node in view.node_roles:
        for policy in view.inline_policies_of(node):
            for statement in statements(document(policy.document)):
                _judge_assume_statement(statement, policy.source, expected, report)
                for resource in as_list(statement.get("Resource")):
                    if server_arn and resource != server_arn:
                        report(
                            policy.source,
                            f"lets the server nodes assume {resource}, not only the kiam-server role",
                        )
        _judge_managed(
            view.managed_policies_of(node),
            expected.node_managed_policy_arns,
            node,
            "the server node role",
            "beyond the EKS node policies",
            report,
        )

    for server in view.server_roles:
        trusted_from = server.property_dependencies.get("assumeRolePolicy", frozenset())
        if not any(n.urn in trusted_from for n in view.node_roles):
            report(server, "its trust policy is not built from the server node role")
        node_arns = [n.outputs.get("arn") for n in view.node_roles]
        for statement in statements(document(server.inputs.get("assumeRolePolicy")) or {}):
            if not _trusts_only(statement, node_arns[0] if len(node_arns) == 1 else None):
                report(
                    server,
                    f"trust admits {statement.get('Principal')!r}, not only the server node role",
                )
        named = {a.arn for a in expected.applications}
        # The permission past the inline policy continues in managed policies the stack writes
        # (settings/server_permission.py): judged statement by statement like the inline one.
        own = view.own_managed_policies_of(server)
        written = [(p.source, p.document) for p in view.inline_policies_of(server)] + [
            (policy, policy.inputs.get("policy")) for _, policy in own
        ]
        for source, text in written:
            for statement in statements(document(text)):
                _judge_assume_statement(statement, source, expected, report)
                for resource in as_list(statement.get("Resource")):
                    # A pattern is judged above; a role by its exact ARN must be an
                    # application's (`roleArn`), never any other role of any account.
                    if isinstance(resource, str) and "*" not in resource and resource not in named:
                        report(
                            source,
                            f"lets the kiam-server role assume {resource}, which no application "
                            "names",
                        )
        own_attachments = {managed.source.urn for managed, _ in own}
        _judge_managed(
            [m for m in view.managed_policies_of(server) if m.source.urn not in own_attachments],
            frozenset(),
            server,
            "the kiam-server role",
            "while it needs none",
            report,
        )

    for app in expected.applications:
        role = view.application_role(app)
        if role is None:
            continue  # `application-reachable` reports a missing role where the stack has roles
        for statement in statements(document(role.inputs.get("assumeRolePolicy")) or {}):
            principal = statement.get("Principal")
            irsa = (
                isinstance(principal, dict)
                and set(principal) == {"Federated"}
                and ":sub" in json.dumps(statement.get("Condition"))
            )
            # Which of these each state needs exactly: guarantees 12 to 14.
            pods = app.pod_identity and trusts_pod_identity(statement)
            if not irsa and not pods and not _trusts_only(statement, server_arn):
                report(
                    role,
                    f"trust admits {principal!r}: application roles trust the kiam-server role, "
                    "IRSA and EKS Pod Identity only",
                )
        _judge_managed(
            view.managed_policies_of(role),
            app.managed_policy_arns,
            role,
            f"application role {app.role_name}",
            "which its settings do not list",
            report,
        )
        inline = view.inline_policies_of(role)
        if not any(is_unknown(p.name) for p in inline):
            for missing in sorted(set(app.inline_policies) - {p.name for p in inline}):
                report(
                    role, f"application role {app.role_name} lacks the inline policy {missing!r}"
                )
        for policy in inline:
            name, text = policy.name, document(policy.document)
            if is_unknown(name) or text is None:
                continue
            if name not in app.inline_policies:
                report(
                    policy.source,
                    f"gives application role {app.role_name} the inline policy {name!r}, which its settings do not list",
                )
            elif text != app.inline_policies[name]:
                report(
                    policy.source,
                    f"gives application role {app.role_name} an inline policy {name!r} other than its settings give",
                )
    return out


def _judge_assume_statement(
    statement: Any,
    source: Resource,
    expected: Any,
    report: Callable[[Resource, str], None],
) -> None:
    """A statement of kiam's own roles: sts:AssumeRole only, never on every role unless asked."""
    actions = as_list(statement.get("Action"))
    if actions != ["sts:AssumeRole"]:
        report(source, f"grants {actions}; kiam's roles need only sts:AssumeRole")
    for resource in as_list(statement.get("Resource")):
        if resource == "*" or (resource.endswith(":role/*") and not expected.allow_any_role):
            report(source, f"sts:AssumeRole on {resource} without allowAnyRole: true")


def _judge_managed(
    policies: list[ManagedPolicy],
    allowed: frozenset[str],
    role: Resource,
    whose: str,
    why_not: str,
    report: Callable[[Resource, str], None],
) -> None:
    """Exactly the allowed managed policies: each other one is reported where it is granted,
    each missing one on the role (where every grant is known)."""
    arns = [p.arn for p in policies]
    for policy in policies:
        if not is_unknown(policy.arn) and policy.arn not in allowed:
            report(policy.source, f"gives {whose} the managed policy {policy.arn}, {why_not}")
    if not any(is_unknown(a) for a in arns):
        for missing in sorted(allowed - set(arns)):
            report(role, f"{whose} lacks the managed policy {missing}")


def _trusts_only(statement: Any, role_arn: str | None) -> bool:
    """Whether a trust statement admits exactly one role: never `*` or a whole account, and the
    given role where its ARN is known (it is not, for a new role, during a preview)."""
    principal = statement.get("Principal")
    arn = (
        principal.get("AWS") if isinstance(principal, dict) and set(principal) == {"AWS"} else None
    )
    if not isinstance(arn, str) or arn == "*" or arn.endswith(":root"):
        return False
    return role_arn is None or arn == role_arn


def node_group_replacement(view: KiamView) -> list[Violation]:
    """9. The group can be replaced create-first, is replaced (not rolled in place) on every change
    that touches the servers' nodes, carries exactly the taint asked for, and the servers follow
    its name and `pulumi up` waits until their rollout is done (contracts/rollout_wait.py)."""
    out = []
    for group in view.of_type(NODE_GROUP):
        if group not in view.node_groups:
            continue
        taints = group.inputs.get("taints")
        # Whole-stack only: which taint is right is the settings' to say.
        if (
            view.knows_settings
            and not is_unknown(taints)
            and [dict(t) for t in taints or []]
            != [dict(t) for t in view.expected.node_group_taints]
        ):
            out.append(
                Violation(
                    "node-group-replacement",
                    group.urn,
                    f"is tainted {taints}, not with the taint kiam:nodeGroup.taint asks for "
                    f"({list(view.expected.node_group_taints)})",
                )
            )
        replaced_on = group.replace_on_changes
        missing = [
            p for p in REPLACE_ON_CHANGES if replaced_on is not None and p not in replaced_on
        ]
        if missing:
            out.append(
                Violation(
                    "node-group-replacement",
                    group.urn,
                    f"is not replaced on a change of {', '.join(missing)}: EKS would roll it into "
                    "the running nodes, where a new NO_EXECUTE taint evicts every server at once",
                )
            )
    for group in view.node_groups:
        if group.inputs.get("nodeGroupName"):
            out.append(
                Violation(
                    "node-group-replacement",
                    group.urn,
                    "has a fixed nodeGroupName: a replacement would collide",
                )
            )
        if group.delete_before_replace:
            out.append(
                Violation(
                    "node-group-replacement",
                    group.urn,
                    "is delete-before-replace: servers would lose their nodes first",
                )
            )
    for dep in view.servers:
        if not any(
            g.urn in dep.property_dependencies.get("spec", frozenset()) for g in view.node_groups
        ):
            out.append(
                Violation(
                    "node-group-replacement",
                    dep.urn,
                    "its spec does not follow the node group's name",
                )
            )
        annotations = dig(dep.inputs, "metadata", "annotations", default={}) or {}
        replicas = dig(dep.inputs, "spec", "replicas")
        if str(annotations.get(SKIP_AWAIT_ANNOTATION, "false")).lower() == "true":
            out.append(
                Violation(
                    "node-group-replacement",
                    dep.urn,
                    f"skips the rollout wait ({SKIP_AWAIT_ANNOTATION})",
                )
            )
            continue
        wait_for = annotations.get(WAIT_FOR_ANNOTATION)
        if (
            isinstance(replicas, (int, float))
            and not is_unknown(wait_for)
            and wait_for != rolled_out_wait_for(int(replicas))
        ):
            out.append(
                Violation(
                    "node-group-replacement",
                    dep.urn,
                    f"is not held until its rollout is done: {WAIT_FOR_ANNOTATION} must wait for "
                    f"{', '.join(ROLLED_OUT_STATUS_COUNTS)} to reach {int(replicas)} (it is "
                    f"{wait_for}); the provider's own Deployment wait can return with one new "
                    "server Ready, and the old nodes go",
                )
            )
    return out


def ordering(view: KiamView) -> list[Violation]:
    """10. Agents wait for the server Deployment; servers for their TLS Secret, RBAC and Service."""
    out = []
    server_urns = {d.urn for d in view.servers}
    for agent in view.agents:
        if not server_urns & agent.dependencies:
            out.append(
                Violation(
                    "ordering", agent.urn, "is not created after the server Deployment is Ready"
                )
            )
    for dep in view.servers:
        needs: dict[str, list[Resource | None]] = {
            "TLS Secret": [
                view.by_name(SECRET, v.get("secret", {}).get("secretName"))
                for v in pod_spec(dep).get("volumes") or []
                if "secret" in v
            ],
            "ClusterRoleBinding": [
                b
                for b in view.of_type(CLUSTER_ROLE_BINDING)
                if dig(b.inputs, "metadata", "name") == dig(dep.inputs, "metadata", "name")
            ],
            "Service": [view.dialed_service(a)[1] for a in view.agents],
        }
        for what, found in needs.items():
            if what == "Service" and not view.agents:
                continue  # the running install's agents dial its own Service (migration phase `servers`)
            if not found or any(r is None or r.urn not in dep.dependencies for r in found):
                out.append(Violation("ordering", dep.urn, f"does not wait for its {what}"))
    return out


def container_privileges(view: KiamView) -> list[Violation]:
    """11. Least privilege: no escalation, all capabilities dropped but the agent's two, read-only root, requests."""
    out = []
    for workload, name, allowed in [
        *((d, SERVER_CONTAINER, NO_CAPABILITIES) for d in view.servers),
        *((a, AGENT_CONTAINER, AGENT_CAPABILITIES) for a in view.agents),
    ]:
        c = container(workload, name)
        ctx = c.get("securityContext") or {}

        def report(reason: str, workload: Resource = workload) -> None:
            out.append(Violation("container-privileges", workload.urn, reason))

        if ctx.get("privileged"):
            report("runs privileged")
        if ctx.get("allowPrivilegeEscalation") is not False:
            report("does not set allowPrivilegeEscalation: false")
        if ctx.get("readOnlyRootFilesystem") is not True:
            report("does not set readOnlyRootFilesystem: true")
        capabilities = ctx.get("capabilities") or {}
        if "ALL" not in (capabilities.get("drop") or []):
            report("does not drop ALL capabilities")
        extra = set(capabilities.get("add") or []) - allowed
        if extra:
            report(f"adds capabilities {sorted(extra)} beyond {sorted(allowed) or 'none'}")
        requests = dig(c, "resources", "requests", default={}) or {}
        if not {"cpu", "memory"} <= set(requests):
            report("has no CPU and memory requests")
        if not dig(c, "resources", "limits", "memory"):
            report("has no memory limit")
    return out


def presence(view: KiamView) -> list[Violation]:
    """The parts every other check judges must exist, or the others would pass vacuously; a
    retired stack has none of them (`retired` judges that)."""
    if view.expected.retire:
        return []
    # While a running install's agents serve (migration phase `servers`), the stack has none.
    own_agents = view.expected.own_agents
    missing = [
        what
        for what, found in (
            ("server Deployment", view.servers),
            ("agent DaemonSet", view.agents),
            ("node group", view.node_groups),
        )
        if not found
    ]
    return [
        Violation("presence", "stack", f"no kiam {what} found")
        for what in missing
        if what != "agent DaemonSet" or own_agents
    ]


# The order is the numbering: docstrings, README and docs cite the guarantees by these numbers.
CHECKS: dict[str, Check] = {
    "presence": presence,
    "server-anti-affinity": server_anti_affinity,
    "server-tolerations": server_tolerations,
    "server-disruption-budget": server_disruption_budget,
    "server-service": server_service,
    "server-certificate": server_certificate,
    "agent-placement": agent_placement,
    "server-args": server_args,
    "iam-least-privilege": iam_least_privilege,
    "node-group-replacement": node_group_replacement,
    "ordering": ordering,
    "container-privileges": container_privileges,
    "application-reachable": application_reachable,
    "pod-identity": pod_identity,
    "off-kiam": off_kiam,
    "retired": retired,
    "change": change,
}


def check_all(resources: Sequence[Resource], expected: Expected | None = None) -> list[Violation]:
    """Every violation of every check, judged against what the stack asked for, sorted so
    reports are stable.

    Without `expected`, the expectations of the stack whose program the Pulumi runtime just ran
    (`Expected.of_running_stack`): right for a caller that judges the run it made (the offline
    plan), wrong for one that judges resources recorded earlier, which must pass them."""
    view = KiamView(resources, expected if expected is not None else Expected.of_running_stack())
    return sorted(v for check in CHECKS.values() for v in check(view))

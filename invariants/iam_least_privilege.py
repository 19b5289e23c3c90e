"""Guarantee 8, `iam-least-privilege`: `iam_least_privilege` judges it (its docstring states the guarantee, and is the
policy pack's description of it)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from kiam_eks.contracts.tokens import NODE_GROUP, ROLE
from kiam_eks.invariants.iam_documents import as_list, document, statements
from kiam_eks.invariants.model import Resource, Violation, is_unknown
from kiam_eks.invariants.pod_identity import trusts_pod_identity
from kiam_eks.invariants.view import KiamView, ManagedPolicy


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

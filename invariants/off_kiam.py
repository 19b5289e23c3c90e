"""14. An application kiam no longer serves cannot be assumed through it (`off_kiam` states the
guarantee: the policy pack's description)."""

from __future__ import annotations

from kiam_eks.contracts import kiam
from kiam_eks.invariants.applications import names_exactly, server_statements, servers_of
from kiam_eks.invariants.iam_documents import document, known_arn, statements
from kiam_eks.invariants.model import Violation
from kiam_eks.invariants.view import KiamView

OFF_KIAM_ID = "off-kiam"


def off_kiam(view: KiamView) -> list[Violation]:
    """14. An application kiam no longer serves cannot be obtained through kiam: its namespace's iam.amazonaws.com/permitted annotation does not admit its role, and its role trusts no kiam-server role (judged on the namespace patches and the aws:iam roles).

    The namespace is matched as kiam matches it (`contracts.kiam`), as each server of the stack
    is started (strictly, unless `--disable-strict-namespace-regexp`), or strictly, kiam's
    default, where the stack runs none. The role's trust may name no AWS principal at all: the
    kiam-server role is the only one an application role ever trusts, and a stack that no longer
    runs kiam (retired) has no kiam-server ARN to compare with. A role that exists already
    (`roleArn`) keeps whatever trust its owner gave it: the server's permission no longer names
    its ARN instead.
    """
    out: set[Violation] = set()
    strictness = sorted({s.strict for s in servers_of(view)}) or [True]
    server_roles = view.server_roles
    assume = server_statements(view, server_roles[0] if len(server_roles) == 1 else None)
    for app in view.expected.applications:
        if app.kiam:
            continue
        role = view.application_role(app)
        where = role.urn if role is not None else "stack"
        arn = (known_arn(role) if role is not None else None) or app.arn
        state = app.served_by.value

        def report(reason: str, where: str = where, name: str = app.name) -> None:
            out.add(Violation(OFF_KIAM_ID, where, f"application {name}: {reason}"))

        for expression in view.permitted(app.namespace):
            if not isinstance(expression, str) or kiam.permitted_regexp_problem(expression):
                continue  # unknown until `up`, or reported by `application-reachable`
            if any(kiam.permits(expression, arn, strict=strict) for strict in strictness):
                report(
                    f"namespace {app.namespace} permits {expression!r}, which still admits "
                    f"{arn} though servedBy {state} is no longer kiam"
                )
        if not app.owned and assume and names_exactly(assume, app.arn):
            # Its trust is its owner's: the stack's side of "not through kiam" is the server's
            # permission, which names an existing role only while kiam serves it.
            report(
                f"the kiam-server role may still assume {app.arn} though servedBy {state} is no "
                "longer kiam"
            )
        trust = document(role.inputs.get("assumeRolePolicy")) if role is not None else None
        for statement in statements(trust) if trust is not None else []:
            principal = statement.get("Principal") if isinstance(statement, dict) else None
            aws = principal.get("AWS") if isinstance(principal, dict) else None
            if aws is not None:
                report(
                    f"its role still trusts the AWS principal {aws!r} though servedBy {state} is "
                    "no longer kiam: it must trust no kiam-server role"
                )
    return sorted(out)

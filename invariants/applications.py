"""12. Every application role kiam serves can really be assumed through kiam: the pieces the other
checks judge one by one (server permission, pod annotation, namespace regexp, trust) fit together
per application, the way IAM and kiam v4.2 themselves decide (`contracts.kiam`). How the servers
run and what their role may assume is read here for guarantee 14 too (invariants/off_kiam.py)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kiam_eks.contracts import kiam
from kiam_eks.contracts.labels import PERMITTED_ANNOTATION, ROLE_ANNOTATION
from kiam_eks.contracts.tokens import ROLE
from kiam_eks.invariants.expected import ExpectedApplication
from kiam_eks.invariants.iam_documents import allowing, as_list, document, known_arn, statements
from kiam_eks.invariants.model import Resource, Violation, dig, is_unknown
from kiam_eks.invariants.view import SERVER_CONTAINER, KiamView, container, flag_values

CHECK_ID = "application-reachable"


@dataclass(frozen=True)
class _Application:
    settings: ExpectedApplication
    role: Resource | None
    """The role of this stack; None where the cloud side's roles live outside the stack."""
    annotation: str | None
    """The pod annotation the stack tells pod authors (its `applications` output); None where
    the gate does not hand over the outputs or the value is not known yet."""
    arn: str | None
    """The role's ARN; None where it is unknown and cannot be derived (see `_role_arn`)."""

    @property
    def namespace(self) -> str:
        return self.settings.namespace


@dataclass(frozen=True)
class _Server:
    role_base_arn: str
    strict: bool


def application_reachable(view: KiamView) -> list[Violation]:
    """12. Each application role kiam serves is reachable: the server may assume it, its pod annotation resolves to it, only its namespace permits it, it trusts the server role; with IRSA it trusts exactly its one service account (judged on the aws:iam roles).

    As IAM and kiam decide each (`contracts.kiam`). Whatever serves it, the role exists, trusts
    exactly its one service account through IRSA while IRSA serves it (`servedBy` kiam+irsa or
    irsa), and no web identity otherwise. The applications are the ones the settings ask for;
    each is followed by the role its settings name, and by the pod annotation the stack's
    `applications` output tells pod authors to use while kiam serves it.
    """
    out: set[Violation] = set()
    server_roles = view.server_roles
    # Without exactly one server role, `iam-least-privilege` reports the stack already.
    server_role = server_roles[0] if len(server_roles) == 1 else None
    server_arn = known_arn(server_role) if server_role else None
    creates_roles = bool(view.of_type(ROLE))
    outputs = view.stack_outputs.get("applications") if view.stack_outputs else None
    apps: list[_Application] = []
    for expected in view.expected.applications:
        role = view.application_role(expected)
        if role is None and creates_roles and expected.owned:
            out.add(
                Violation(
                    CHECK_ID,
                    "stack",
                    f"application {expected.name}: no role {expected.role_name} at path "
                    f"{expected.path} in this stack",
                )
            )
            continue
        annotation = dig(outputs, expected.name, "podAnnotation", ROLE_ANNOTATION)
        apps.append(
            _Application(
                expected,
                role,
                annotation if isinstance(annotation, str) else None,
                # Where the roles live outside the stack, IAM's ARN format gives theirs.
                _role_arn(role, server_arn) if role is not None else expected.arn,
            )
        )
    servers = servers_of(view)
    assume = server_statements(view, server_role)
    assume_allows = allowing(assume, "sts:AssumeRole") if assume is not None else None
    admitted_elsewhere = _admitted_elsewhere(apps)
    for app in apps:
        where = app.role.urn if app.role is not None else "stack"

        def report(reason: str, app: _Application = app, where: str = where) -> None:
            prefix = "" if app.role is not None else f"application {app.settings.name}: "
            out.add(Violation(CHECK_ID, where, prefix + reason))

        if app.arn is not None and app.settings.kiam:
            if assume_allows is not None and not assume_allows(app.arn):
                report(f"the kiam-server role's policy does not allow sts:AssumeRole on {app.arn}")
            for server in servers:
                if app.annotation is None:
                    break
                resolved = kiam.resolve(app.annotation, server.role_base_arn)
                if resolved != app.arn:
                    report(
                        f"pod annotation {ROLE_ANNOTATION}: {app.annotation} resolves against "
                        f"{kiam.ROLE_BASE_ARN_FLAG}={server.role_base_arn} to {resolved}, "
                        f"not {app.arn}"
                    )
            for reason in _namespace_problems(view, app, app.arn, admitted_elsewhere, servers):
                report(reason)
        if app.role is not None:
            for reason in _trust_problems(app, app.role, server_arn):
                report(reason)
    return sorted(out)


def _role_arn(role: Resource, server_arn: str | None) -> str | None:
    """The application role's ARN: AWS's where the gate knows it. A new role has none during a
    preview; if the server role exists already (a preview of a deployed stack), the ARN follows
    from the role's own `path` and `name` inputs and the account and partition of the server
    role's ARN, since IAM's ARN format is fixed and the stack's roles share one account (its AWS
    provider is pinned to it). Otherwise the application is judged on `up`."""
    arn = known_arn(role)
    if arn is not None:
        return arn
    path, name = role.inputs.get("path"), role.inputs.get("name")
    # Unknown values are no strings.
    if server_arn is None or not isinstance(path, str) or not isinstance(name, str):
        return None
    account_prefix = server_arn.split(":role/", 1)[0]
    return f"{account_prefix}:role{path}{name}"


def servers_of(view: KiamView) -> list[_Server]:
    """How each server Deployment resolves and matches, where its flags are known and its
    `--role-base-arn` unambiguous (`server-args` reports it otherwise)."""
    found = []
    for dep in view.servers:
        args = dig(container(dep, SERVER_CONTAINER), "args")
        bases = flag_values(args, kiam.ROLE_BASE_ARN_FLAG)
        if len(bases) == 1 and bases[0]:
            found.append(_Server(bases[0], kiam.strict_namespace_regexp(args)))
    return found


def server_statements(view: KiamView, server_role: Resource | None) -> list[Any] | None:
    """Every statement of the server role's inline policies and of the managed policies the stack
    writes for it; None while one is unknown, or where
    the cloud side's roles live outside the stack (nothing of them to read)."""
    if server_role is None:
        return [] if view.of_type(ROLE) else None
    found: list[Any] = []
    texts = [p.document for p in view.inline_policies_of(server_role)] + [
        policy.inputs.get("policy") for _, policy in view.own_managed_policies_of(server_role)
    ]
    for text in texts:
        parsed = document(text)
        if parsed is None:
            return None
        found += statements(parsed)
    return found


def names_exactly(assume: list[Any], arn: str) -> bool:
    """Whether an Allow statement of the server's permission names `arn` itself as a resource."""
    return any(
        isinstance(s, dict) and s.get("Effect") == "Allow" and arn in as_list(s.get("Resource"))
        for s in assume
    )


def _admitted_elsewhere(
    apps: list[_Application],
) -> Callable[[str, str, bool], list[tuple[str, str]]]:
    """The other namespaces' roles (ARN, namespace) a namespace's expression admits: the same
    for every application of the namespace, so judged once per namespace and expression
    (against every other application it is linear in them; once per application it was their
    square)."""

    @functools.cache
    def admitted(namespace: str, expression: str, strict: bool) -> list[tuple[str, str]]:
        return [
            (o.arn, o.namespace)
            for o in apps
            if o.namespace != namespace and o.arn and kiam.permits(expression, o.arn, strict=strict)
        ]

    return admitted


def _namespace_problems(
    view: KiamView,
    app: _Application,
    arn: str,
    admitted_elsewhere: Callable[[str, str, bool], list[tuple[str, str]]],
    servers: list[_Server],
) -> list[str]:
    """The namespace's regexp admits the role and no role of another namespace's application,
    matched as each server matches (strictly or not); not judged while the flags are unknown."""
    permitted = view.permitted(app.namespace)
    if not permitted:
        return [f"namespace {app.namespace} has no {PERMITTED_ANNOTATION} annotation in this stack"]
    strictness = sorted({s.strict for s in servers})
    problems = []
    for expression in permitted:
        if is_unknown(expression):
            continue
        problem = (
            kiam.permitted_regexp_problem(expression)
            if isinstance(expression, str)
            else "it is not a string"
        )
        if problem is not None:
            problems.append(f"namespace {app.namespace} permits {expression!r}: {problem}")
            continue
        for strict in strictness:
            if not kiam.permits(expression, arn, strict=strict):
                problems.append(
                    f"namespace {app.namespace} permits {expression!r}, which does not admit {arn}"
                )
            problems += [
                f"namespace {app.namespace} permits {expression!r}, which also admits {other} "
                f"of namespace {namespace}"
                for other, namespace in admitted_elsewhere(app.namespace, expression, strict)
            ]
    return problems


def _trust_problems(app: _Application, role: Resource, server_arn: str | None) -> list[str]:
    """While kiam serves it, the role trusts the kiam-server role (judged where the server's ARN
    is known); with IRSA it trusts exactly its one service account through IRSA, and without,
    no web identity at all. Judged where the trust policy is known."""
    trust = document(role.inputs.get("assumeRolePolicy"))
    if trust is None:
        return []
    problems = []
    trusted = statements(trust)
    if (
        app.settings.kiam
        and server_arn is not None
        and not any(
            isinstance(s, dict)
            and s.get("Effect") == "Allow"
            and s.get("Principal") == {"AWS": server_arn}
            and "sts:AssumeRole" in as_list(s.get("Action"))
            and "Condition" not in s
            for s in trusted
        )
    ):
        problems.append(f"does not trust the kiam-server role {server_arn} with sts:AssumeRole")
    federated = [
        s for s in trusted if isinstance(s, dict) and "Federated" in (s.get("Principal") or {})
    ]
    service_account = app.settings.service_account
    if not app.settings.irsa or service_account is None:
        if federated:
            problems.append(
                f"trusts web identities (IRSA), which servedBy {app.settings.served_by.value} "
                "does not serve it through"
            )
    elif len(federated) != 1 or not _exactly_service_account(
        federated[0], app.namespace, service_account
    ):
        subject = f"system:serviceaccount:{app.namespace}:{service_account}"
        problems.append(f"does not trust exactly {subject} through IRSA")
    return problems


def _exactly_service_account(statement: dict[str, Any], namespace: str, account: str) -> bool:
    """One OIDC provider, one exact subject (StringEquals, no wildcard), STS as the audience."""
    provider = statement.get("Principal", {}).get("Federated")
    if not isinstance(provider, str) or ":oidc-provider/" not in provider:
        return False
    host = provider.split(":oidc-provider/", 1)[1]
    return (
        statement.get("Effect") == "Allow"
        and statement.get("Action") == "sts:AssumeRoleWithWebIdentity"
        and statement.get("Condition")
        == {
            "StringEquals": {
                f"{host}:sub": f"system:serviceaccount:{namespace}:{account}",
                f"{host}:aud": "sts.amazonaws.com",
            }
        }
    )

"""13. EKS Pod Identity serves an application's role to its one service account and to nothing else.

The facts below are AWS's; they are named here, in the guarantees, because the program's own
`contracts.pod_identity` was being written in parallel (issue 18): they belong there, once, and
move there when both land (each is spelled out by `tests/test_invariants.py`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from kiam_eks.contracts.pod_identity import CHAIN_ROLE_ACTIONS
from kiam_eks.contracts.tokens import ROLE
from kiam_eks.invariants.expected import ExpectedApplication
from kiam_eks.invariants.iam_documents import as_list, document, known_arn, statements
from kiam_eks.invariants.model import Resource, Violation, is_unknown
from kiam_eks.invariants.view import KiamView

# pulumi-aws 7.x: `aws.eks.PodIdentityAssociation` registers this type token
# (sdk/python/pulumi_aws/eks/pod_identity_association.py, `@pulumi.type_token`), with the inputs
# of EKS's CreatePodIdentityAssociation (EKS API reference): the cluster, the namespace, the
# service account and the role.
POD_IDENTITY_ASSOCIATION = "aws:eks/podIdentityAssociation:PodIdentityAssociation"
ASSOCIATION_FIELDS = ("clusterName", "namespace", "serviceAccount", "roleArn")
# EKS user guide, "Create IAM role with trust policy required by EKS Pod Identity" (pod-id-role):
# the role trusts the service principal `pods.eks.amazonaws.com` for `sts:AssumeRole` (to get
# the credentials) and `sts:TagSession` (to pass the session tags), and a trust policy narrows
# it with the session tags EKS sets (pod-id-abac, "Enable or disable session tags": among them
# eks-cluster-name, kubernetes-namespace, kubernetes-service-account) and `aws:SourceAccount`.
POD_IDENTITY_SERVICE = "pods.eks.amazonaws.com"
POD_IDENTITY_ACTIONS = ("sts:AssumeRole", "sts:TagSession")
SOURCE_ACCOUNT_KEY = "aws:SourceAccount"
CLUSTER_TAG_KEY = "aws:RequestTag/eks-cluster-name"
NAMESPACE_TAG_KEY = "aws:RequestTag/kubernetes-namespace"
SERVICE_ACCOUNT_TAG_KEY = "aws:RequestTag/kubernetes-service-account"

CHECK_ID = "pod-identity"


@dataclass(frozen=True)
class Association:
    """One Pod Identity association, whatever records it: the EKS resource's inputs, or the
    same four fields as the data of a Kubernetes object (the real-engine suite's stand-in)."""

    source: Resource
    cluster: Any
    namespace: Any
    service_account: Any
    role_arn: Any
    role_prop: str
    """The input its role ARN is given in: what its property dependencies name the role under."""
    target_role_arn: Any = None
    """`targetRoleArn`: the role EKS chains to from `role_arn`, whose credentials pods get."""

    def describe(self) -> str:
        return f"{self.cluster}/{self.namespace}/{self.service_account}"

    def is_for(self, cluster: str, namespace: str, service_account: str) -> bool | None:
        """Whether it associates exactly this service account of this cluster; None while a
        field is unknown (a preview)."""
        fields = (self.cluster, self.namespace, self.service_account)
        if any(is_unknown(f) for f in fields):
            return None
        return fields == (cluster, namespace, service_account)


def associations(view: KiamView) -> list[Association]:
    """Every association of the stack, found by what it is: its type, or its four fields."""
    found = []
    for r in view.resources:
        if r.type == POD_IDENTITY_ASSOCIATION:
            fields, prop = r.inputs, "roleArn"
        else:
            data = r.inputs.get("data") if isinstance(r.inputs, dict) else None
            if not isinstance(data, dict) or not set(ASSOCIATION_FIELDS) <= set(data):
                continue
            fields, prop = data, "data"
        cluster, namespace, service_account, role_arn = (fields.get(f) for f in ASSOCIATION_FIELDS)
        found.append(
            Association(
                r, cluster, namespace, service_account, role_arn, prop, fields.get("targetRoleArn")
            )
        )
    return found


def chain_roles(view: KiamView, association: Association) -> list[Resource]:
    """The roles of the stack an association with a target role names as its `roleArn`: the
    ones EKS assumes first (role chaining, contracts/pod_identity.py)."""
    if not association.target_role_arn:
        return []
    return view.roles_feeding([association.source], association.role_prop)


def names_role(association: Association, app: ExpectedApplication, role: Resource | None) -> bool:
    """Whether an association hands out the application's role: its target role is the role
    (pods get the target's credentials), or, without a target, its role ARN is built from the
    role, or is the role's ARN (as AWS knows it, or as IAM writes it from the settings)."""
    if association.target_role_arn:
        return bool(association.target_role_arn == app.arn)
    if role is not None and role.urn in association.source.property_dependencies.get(
        association.role_prop, frozenset()
    ):
        return True
    arn = association.role_arn
    return isinstance(arn, str) and arn in {app.arn, *([known_arn(role)] if role else [])}


def pod_identity(view: KiamView) -> list[Violation]:
    """13. An application served by Pod Identity has exactly one association, for its namespace and service account on its cluster, naming its role; no other association names its role; its role trusts pods.eks.amazonaws.com narrowed to its account, cluster, namespace and service account.

    An application not served by Pod Identity is named by no association and its role does not
    trust the Pod Identity service at all. The trust is judged where the stack holds the role
    (not on the real-engine suite's computed roles), once its policy is known. A role that exists
    already (`roleArn`) is the association's role itself in the cluster's account; one of another
    account is its `targetRoleArn`, reached through a role of the stack that Pod Identity alone
    obtains for that service account and that may only assume and tag the target (EKS User
    Guide, pod-id-assign-target-role). An existing role's own trust is its owner's, not judged.
    """
    expected = view.expected
    out: set[Violation] = set()
    found = associations(view)
    for app in expected.applications:
        role = view.application_role(app)
        where = role.urn if role is not None else "stack"

        def report(reason: str, where: str = where, app: ExpectedApplication = app) -> None:
            out.add(Violation(CHECK_ID, where, f"application {app.name}: {reason}"))

        naming = [a for a in found if names_role(a, app, role)]
        if app.pod_identity:
            fields = (expected.cluster_name, app.namespace, app.service_account or "")
            pair = "/".join(fields)
            own = [a for a in naming if a.is_for(*fields) is not False]
            if not own:
                report(f"no Pod Identity association of {pair} names its role")
            elif len(own) > 1:
                report(
                    f"{len(own)} Pod Identity associations of {pair} name its role; EKS allows one"
                )
            for a in naming:
                if a.is_for(*fields) is False:
                    report(
                        f"the association of {a.describe()} names its role, which only {pair} "
                        "may obtain",
                        a.source.urn,
                    )
            for a in found:
                other = _other_role(view, a) if a not in naming and a.is_for(*fields) else None
                if other is not None:
                    report(
                        f"the association of {pair} names {other}, not its role {app.arn}",
                        a.source.urn,
                    )
        else:
            for a in naming:
                report(
                    f"the association of {a.describe()} names its role, which servedBy "
                    f"{app.served_by.value} does not serve through Pod Identity",
                    a.source.urn,
                )
        if role is not None:
            for reason in _trust_problems(app, role, expected.cluster_name, expected.account_id):
                report(reason)
        if app.pod_identity:
            fields = (expected.cluster_name, app.namespace, app.service_account or "")
            for a in found:
                if a.is_for(*fields):
                    for reason in _chain_problems(view, app, a, expected):
                        report(reason, a.source.urn)
    return sorted(out)


def _chain_problems(
    view: KiamView, app: ExpectedApplication, association: Association, expected: Any
) -> list[str]:
    """The association of the application's service account: for a role in another account,
    through a role of this stack that Pod Identity alone obtains, for this service account, and
    that may only assume and tag the target; for a role in the cluster's account, to the role
    itself, with no target."""
    target = association.target_role_arn
    if not app.chained:
        if target:
            return [
                f"its association chains to {target}; a role of the cluster's account is "
                "associated directly"
            ]
        return []
    if not target:
        return [
            f"its association has no targetRoleArn: {app.arn} is in another account, which EKS "
            "reaches only by role chaining"
        ]
    chains = chain_roles(view, association)
    if not chains and view.of_type(ROLE):
        return [
            "its association's roleArn is no role of this stack, so what EKS assumes first "
            "cannot be judged"
        ]
    problems = []
    condition = narrowed_condition(app, expected.cluster_name, expected.account_id)
    for chain in chains:
        trust = document(chain.inputs.get("assumeRolePolicy"))
        found = statements(trust) if trust is not None else []
        if trust is not None and not any(trusts_pod_identity(s) for s in found):
            problems.append(f"the role it chains through does not trust {POD_IDENTITY_SERVICE}")
        for statement in found:
            if not trusts_pod_identity(statement) or not _exactly(statement, condition):
                problems.append(
                    f"the role it chains through is trusted by "
                    f"{json.dumps(statement, sort_keys=True)}: only {POD_IDENTITY_SERVICE} may "
                    f"obtain it, exactly Allow {' and '.join(POD_IDENTITY_ACTIONS)} under "
                    f"{json.dumps(condition)}"
                )
        for policy in view.inline_policies_of(chain):
            parsed = document(policy.document)
            for statement in statements(parsed) if parsed is not None else []:
                if (
                    statement.get("Effect") != "Allow"
                    or sorted(as_list(statement.get("Action"))) != sorted(CHAIN_ROLE_ACTIONS)
                    or as_list(statement.get("Resource")) != [app.arn]
                    or "Condition" in statement
                ):
                    problems.append(
                        "the role it chains through is granted "
                        f"{json.dumps(statement, sort_keys=True)}; it may only "
                        f"{' and '.join(CHAIN_ROLE_ACTIONS)} on {app.arn}"
                    )
        if view.managed_policies_of(chain):
            problems.append("the role it chains through has managed policies; it needs none")
    return problems


def _other_role(view: KiamView, association: Association) -> str | None:
    """What an association names instead: its role ARN, or, during a preview, the role it is
    built from; None where neither is known."""
    if isinstance(association.role_arn, str):
        return association.role_arn
    built_from = view.roles_feeding([association.source], association.role_prop)
    names = [r.inputs.get("name") for r in built_from]
    return ", ".join(f"the role {n}" for n in names if isinstance(n, str)) or None


def narrowed_condition(app: ExpectedApplication, cluster: str, account: str) -> dict[str, Any]:
    """The condition a Pod Identity trust statement carries for this application: its account,
    its cluster, its namespace and its service account, each exactly (StringEquals)."""
    return {
        "StringEquals": {
            SOURCE_ACCOUNT_KEY: account,
            CLUSTER_TAG_KEY: cluster,
            NAMESPACE_TAG_KEY: app.namespace,
            SERVICE_ACCOUNT_TAG_KEY: app.service_account,
        }
    }


def trusts_pod_identity(statement: Any) -> bool:
    """Whether a trust statement names the Pod Identity service among its principals."""
    principal = statement.get("Principal") if isinstance(statement, dict) else None
    return isinstance(principal, dict) and POD_IDENTITY_SERVICE in as_list(principal.get("Service"))


def _trust_problems(
    app: ExpectedApplication, role: Resource, cluster: str, account: str
) -> list[str]:
    trust = document(role.inputs.get("assumeRolePolicy"))
    if trust is None:
        return []
    pods = [s for s in statements(trust) if trusts_pod_identity(s)]
    if not app.pod_identity:
        if not pods:
            return []
        return [
            f"its role trusts {POD_IDENTITY_SERVICE}, though servedBy {app.served_by.value} is "
            "not Pod Identity"
        ]
    condition = narrowed_condition(app, cluster, account)
    want = f"exactly Allow {' and '.join(POD_IDENTITY_ACTIONS)} under {json.dumps(condition)}"
    if not pods:
        return [f"its role does not trust {POD_IDENTITY_SERVICE}"]
    return [
        f"its role trusts {POD_IDENTITY_SERVICE} by {json.dumps(s, sort_keys=True)}, not {want}"
        for s in pods
        if not _exactly(s, condition)
    ]


def _exactly(statement: dict[str, Any], condition: dict[str, Any]) -> bool:
    """Allow, the Pod Identity service alone, exactly its two actions, exactly the condition (a
    one-element list of values reads as that value, as IAM reads it)."""
    given = statement.get("Condition")
    operators = given if isinstance(given, dict) else {}
    plain = {
        op: {k: v[0] if isinstance(v, list) and len(v) == 1 else v for k, v in keys.items()}
        for op, keys in operators.items()
        if isinstance(keys, dict)
    }
    return (
        statement.get("Effect") == "Allow"
        and set(statement) <= {"Sid", "Effect", "Principal", "Action", "Condition"}
        and statement.get("Principal")
        in ({"Service": POD_IDENTITY_SERVICE}, {"Service": [POD_IDENTITY_SERVICE]})
        and sorted(as_list(statement.get("Action"))) == sorted(POD_IDENTITY_ACTIONS)
        and plain == condition
        and len(operators) == len(plain)
    )

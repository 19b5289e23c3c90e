"""Hand-built resource views of the way out of kiam (issue 18), for the guarantees' tests.

Each view starts from the mock engine's run of two kiam applications (billing at the base path;
search with its own path, also served by IRSA) and rewrites the resources as the program renders
an application in a later state: its role's trust, its namespace's annotation, its Pod Identity
association (`aws.eks.PodIdentityAssociation`, a child of the application's component), and,
retired, nothing of kiam's. They are the shapes agreed with the program side; the views are
judged against the settings of the same state (`*_CONFIG`).
"""

from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any

from kiam_eks.invariants import Resource
from tests.conftest import base_config

ROLE = "aws:iam/role:Role"
PATCH = "kubernetes:core/v1:NamespacePatch"
STACK = "pulumi:pulumi:Stack"
ASSOCIATION = "aws:eks/podIdentityAssociation:PodIdentityAssociation"
ACCOUNT, CLUSTER = "111122223333", "test"
BASE = f"arn:aws:iam::{ACCOUNT}:role/kiam-apps/"
BILLING, SEARCH = f"{BASE}app-billing", f"{BASE}team-a/app-search"
COMPONENT = "urn:pulumi:test::kiam::kiam:index:Kiam$kiam:index:ApplicationRole"
APPLICATIONS: dict[str, dict[str, Any]] = {
    "billing": {"namespace": "billing", "roleName": "app-billing"},
    "search": {
        "namespace": "search",
        "roleName": "app-search",
        "path": "/kiam-apps/team-a/",
        "servedBy": "kiam+irsa",
        "serviceAccount": "indexer",
    },
}
KIAM_CONFIG = base_config(
    iam={"applicationRoleNamePrefix": "app-"}, applications=copy.deepcopy(APPLICATIONS)
)


def config(retire: bool = False, **served_by: tuple[str, str | None]) -> dict[str, Any]:
    """The applications' config with some moved on: `billing=("podIdentity", "payer")`."""
    apps = copy.deepcopy(APPLICATIONS)
    for app, (state, account) in served_by.items():
        apps[app]["servedBy"] = state
        apps[app].pop("serviceAccount", None)
        if account is not None:
            apps[app]["serviceAccount"] = account
    return base_config(
        iam={"applicationRoleNamePrefix": "app-"},
        applications=apps,
        **({"retire": True} if retire else {}),  # type: ignore[arg-type]
    )


# billing moving to Pod Identity, then moved; search moved to IRSA; both moved and kiam retired.
MOVING_CONFIG = config(billing=("kiam+podIdentity", "payer"))
MOVED_CONFIG = config(billing=("podIdentity", "payer"))
IRSA_CONFIG = config(search=("irsa", "indexer"))
RETIRED_CONFIG = config(retire=True, billing=("podIdentity", "payer"), search=("irsa", "indexer"))


def find(resources: list[Resource], type_: str, name: str) -> Resource:
    return next(r for r in resources if r.type == type_ and r.name == name)


def replace(resources: list[Resource], old: Resource, new: Resource | None) -> list[Resource]:
    return [new if r is old else r for r in resources if r is not old or new is not None]


def with_inputs(resource: Resource, **inputs: Any) -> Resource:
    return dataclasses.replace(resource, inputs={**copy.deepcopy(dict(resource.inputs)), **inputs})


def pod_identity_statement(namespace: str, service_account: str) -> dict[str, Any]:
    """EKS Pod Identity's trust, narrowed as the program writes it (components/application_role.py)."""
    return {
        "Effect": "Allow",
        "Principal": {"Service": "pods.eks.amazonaws.com"},
        "Action": ["sts:AssumeRole", "sts:TagSession"],
        "Condition": {
            "StringEquals": {
                "aws:SourceAccount": ACCOUNT,
                "aws:RequestTag/eks-cluster-name": CLUSTER,
                "aws:RequestTag/kubernetes-namespace": namespace,
                "aws:RequestTag/kubernetes-service-account": service_account,
            }
        },
    }


def trust_of(role: Resource) -> list[Any]:
    statements: list[Any] = json.loads(role.inputs["assumeRolePolicy"])["Statement"]
    return statements


def set_trust(resources: list[Resource], app: str, statements: list[Any]) -> list[Resource]:
    role = find(resources, ROLE, f"kiam-app-{app}")
    policy = json.dumps({"Version": "2012-10-17", "Statement": statements})
    return replace(resources, role, with_inputs(role, assumeRolePolicy=policy))


def association(
    role: Resource,
    app: str,
    namespace: str,
    service_account: str,
    role_arn: str,
    name: str | None = None,
) -> Resource:
    """The association as the program registers it: under the application's component, its role
    ARN built from the role (a property dependency) and, once known, that ARN."""
    name = name or f"kiam-app-{app}-pod-identity"
    return Resource(
        urn=f"{COMPONENT}${ASSOCIATION}::{name}",
        type=ASSOCIATION,
        name=name,
        inputs={
            "clusterName": CLUSTER,
            "namespace": namespace,
            "serviceAccount": service_account,
            "roleArn": role_arn,
        },
        dependencies=frozenset({role.urn}),
        property_dependencies={
            "clusterName": frozenset(),
            "namespace": frozenset(),
            "serviceAccount": frozenset(),
            "roleArn": frozenset({role.urn}),
        },
        parent=f"{COMPONENT}::kiam-app-{app}",
    )


def without(resources: list[Resource], type_: str, name: str) -> list[Resource]:
    return replace(resources, find(resources, type_, name), None)


def set_output(resources: list[Resource], app: str, **values: Any) -> list[Resource]:
    stack = next(r for r in resources if r.type == STACK)
    outputs = copy.deepcopy(dict(stack.inputs))
    outputs["applications"][app].update(values)
    return replace(resources, stack, dataclasses.replace(stack, inputs=outputs))


def moving(kiam: list[Resource]) -> list[Resource]:
    """billing at kiam+podIdentity: trusted by the kiam-server role and by Pod Identity for
    billing/payer, still admitted by its namespace, associated."""
    role = find(kiam, ROLE, "kiam-app-billing")
    rs = set_trust(kiam, "billing", [*trust_of(role), pod_identity_statement("billing", "payer")])
    return [*rs, association(role, "billing", "billing", "payer", BILLING)]


def moved(kiam: list[Resource]) -> list[Resource]:
    """billing at podIdentity: trusted by Pod Identity alone, no longer in its namespace's
    annotation (no kiam application of billing is left, so the stack patches it no more)."""
    rs = set_trust(moving(kiam), "billing", [pod_identity_statement("billing", "payer")])
    return set_output(without(rs, PATCH, "kiam-permissions-billing"), "billing", podAnnotation={})


def irsa_only(kiam: list[Resource]) -> list[Resource]:
    """search at irsa: trusted through IRSA alone, no longer in its namespace's annotation."""
    role = find(kiam, ROLE, "kiam-app-search")
    rs = set_trust(kiam, "search", trust_of(role)[1:])
    return set_output(without(rs, PATCH, "kiam-permissions-search"), "search", podAnnotation={})


# What retirement keeps: the stack, its providers, the application roles (and their policies),
# the Pod Identity associations.
KEPT = ("pulumi:", "pulumi:providers:", ASSOCIATION)


def retired(kiam: list[Resource]) -> list[Resource]:
    """Both applications moved and kiam retired: nothing of kiam's is left."""
    rs = irsa_only(moved(kiam))
    return [
        r
        for r in rs
        if r.type.startswith(KEPT) or (r.type == ROLE and r.name.startswith("kiam-app-"))
    ]


# Roles that exist already (issue 24): ledger, a role of the cluster's account outside the
# application path; reports, a role of another account, which Pod Identity reaches by role
# chaining. reports names its service account from `kiam` on (allowed for an existing role).
LEDGER_ARN = f"arn:aws:iam::{ACCOUNT}:role/teams/ledger/ledger-api"
OTHER_ACCOUNT = "444455556666"
REPORTS_ARN = f"arn:aws:iam::{OTHER_ACCOUNT}:role/reports-reader"


def existing_config(
    ledger: str = "kiam", reports: str = "kiam", retire: bool = False
) -> dict[str, Any]:
    """Both existing roles, each in the state given."""
    apps: dict[str, dict[str, Any]] = {
        "ledger": {"namespace": "ledger", "roleArn": LEDGER_ARN},
        "reports": {"namespace": "reports", "roleArn": REPORTS_ARN, "serviceAccount": "reporter"},
    }
    if ledger != "kiam":
        apps["ledger"] |= {"servedBy": ledger, "serviceAccount": "api"}
    if reports != "kiam":
        apps["reports"]["servedBy"] = reports
    return base_config(applications=apps, **({"retire": True} if retire else {}))  # type: ignore[arg-type]


EXISTING_CONFIG = existing_config()
EXISTING_MOVED_CONFIG = existing_config("podIdentity", "podIdentity")

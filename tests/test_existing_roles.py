"""Roles that exist already (`roleArn`, issue 24), through the real program and the mock engine:
the stack creates none of them and serves each exactly (the server's permission on its ARN while
kiam serves it, its namespace's admission, its association, role chaining for a role of another
account), states what its owner must trust, keeps every guarantee in every state, and each new
way of breaking one is caught exactly."""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Callable
from typing import Any

import pytest

from kiam_eks.contracts import tokens
from kiam_eks.invariants import Resource, Violation, check_all
from kiam_eks.invariants.recorded import resources_from_recording
from kiam_eks.settings.loader import settings_from_values
from kiam_eks.settings.stack import StackSettings
from kiam_eks.transitions.installed import installed_by, read_installed
from kiam_eks.transitions.judge import judge
from kiam_eks.transitions.verdicts import RefusedChangeError
from tests import guarantee_views as g
from tests.conftest import base_config, expected_of, run_program
from tools.mock_engine import Recording

ROLE, ROLE_POLICY = tokens.ROLE, tokens.ROLE_POLICY
EXISTING = tokens.EXISTING_APPLICATION_ROLE
ASSOCIATION = tokens.POD_IDENTITY_ASSOCIATION
PATCH = tokens.NAMESPACE_PATCH
STATES = ["kiam", "kiam+podIdentity", "podIdentity", "kiam+irsa", "irsa"]
BASE_PATTERN = "arn:aws:iam::111122223333:role/kiam-apps/*"


@pytest.fixture(scope="module")
def runs() -> dict[str, Recording]:
    """Both applications in each state, and retired once both have moved to Pod Identity."""
    found = {state: run_program(g.existing_config(state, state)) for state in STATES}
    found["retired"] = run_program(g.existing_config("podIdentity", "podIdentity", retire=True))
    return found


@pytest.fixture(scope="module")
def without_applications() -> Recording:
    return run_program(base_config())


def named(run: Recording) -> set[tuple[str, str, str]]:
    urns = {r.urn: r.name for r in run.registrations}
    return {(r.type, r.name, urns.get(r.parent, "stack")) for r in run.registrations}


def chain_arn(run: Recording) -> str:
    return str(run.one(ROLE, "kiam-app-reports-chain").outputs["arn"])


def server_arn(run: Recording) -> str:
    return str(run.one(ROLE, "kiam-iam-server").outputs["arn"])


COMPONENTS = {
    (EXISTING, "kiam-app-ledger", "kiam"),
    (EXISTING, "kiam-app-reports", "kiam"),
}
CHAIN = {
    (ROLE, "kiam-app-reports-chain", "kiam-app-reports"),
    (ROLE_POLICY, "kiam-app-reports-chain-assume-target", "kiam-app-reports"),
}
PERMITS = {
    (tokens.NAMESPACE_PERMISSIONS, "kiam-permissions", "kiam"),
    (PATCH, "kiam-permissions-ledger", "kiam-permissions"),
    (PATCH, "kiam-permissions-reports", "kiam-permissions"),
}
ASSOCIATED = {
    (ASSOCIATION, "kiam-app-ledger-pod-identity", "kiam-app-ledger"),
    (ASSOCIATION, "kiam-app-reports-pod-identity", "kiam-app-reports"),
}
# What each state adds to a stack without applications: no IAM role for either application; the
# chain role on the Pod Identity path only, from `kiam` on, so its owner can trust it first.
ADDED = {
    "kiam": COMPONENTS | CHAIN | PERMITS,
    "kiam+podIdentity": COMPONENTS | CHAIN | PERMITS | ASSOCIATED,
    "podIdentity": COMPONENTS | CHAIN | ASSOCIATED,
    "kiam+irsa": COMPONENTS | PERMITS,
    "irsa": COMPONENTS,
}


@pytest.mark.parametrize("state", STATES)
def test_each_state_has_exactly_its_resources(
    state: str, runs: dict[str, Recording], without_applications: Recording
) -> None:
    run, base = runs[state], named(without_applications)
    assert base <= named(run)
    assert named(run) - base == ADDED[state]


def test_retiring_keeps_what_serves_the_applications_and_nothing_of_kiam(
    runs: dict[str, Recording],
) -> None:
    kept = {(t, n) for t, n, _ in named(runs["retired"]) if t.startswith(("aws:", "kiam:"))}
    assert kept == {
        (tokens.KIAM, "kiam"),
        # What rolls the agents off their iptables rule before they go (components/agent_retirement.py).
        (tokens.AGENT_RETIREMENT, "kiam-agent-retirement"),
        (EXISTING, "kiam-app-ledger"),
        (EXISTING, "kiam-app-reports"),
        (ROLE, "kiam-app-reports-chain"),
        (ROLE_POLICY, "kiam-app-reports-chain-assume-target"),
        (ASSOCIATION, "kiam-app-ledger-pod-identity"),
        (ASSOCIATION, "kiam-app-reports-pod-identity"),
    }


@pytest.mark.parametrize(
    ("state", "resources"),
    [
        ("kiam", [BASE_PATTERN, g.LEDGER_ARN, g.REPORTS_ARN]),
        ("kiam+podIdentity", [BASE_PATTERN, g.LEDGER_ARN, g.REPORTS_ARN]),
        ("kiam+irsa", [BASE_PATTERN, g.LEDGER_ARN, g.REPORTS_ARN]),
        # Off kiam, neither ARN: its trust is its owner's, so kiam's reach ends here. (One
        # resource stays a plain string, as a stack without existing roles has always had it.)
        ("podIdentity", BASE_PATTERN),
        ("irsa", BASE_PATTERN),
    ],
)
def test_the_server_may_assume_each_existing_role_by_its_exact_arn_while_kiam_serves_it(
    state: str, resources: list[str] | str, runs: dict[str, Recording]
) -> None:
    policy = runs[state].one(ROLE_POLICY, "kiam-iam-server-assume-applications")
    assert json.loads(policy.inputs["policy"]) == {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "AssumeApplicationRoles",
                "Effect": "Allow",
                "Action": "sts:AssumeRole",
                "Resource": resources,
            }
        ],
    }


def test_an_existing_role_an_application_pattern_covers_adds_no_exact_arn() -> None:
    covered = "arn:aws:iam::111122223333:role/kiam-apps/made-by-terraform"
    run = run_program(base_config(applications={"a": {"namespace": "a", "roleArn": covered}}))
    policy = json.loads(
        run.one(ROLE_POLICY, "kiam-iam-server-assume-applications").inputs["policy"]
    )
    assert policy["Statement"][0]["Resource"] == BASE_PATTERN


def pod_identity_trust(namespace: str, service_account: str | None) -> dict[str, Any]:
    tags = {
        "aws:SourceAccount": "111122223333",
        "aws:RequestTag/eks-cluster-name": "test",
        "aws:RequestTag/kubernetes-namespace": namespace,
    }
    if service_account is not None:
        tags["aws:RequestTag/kubernetes-service-account"] = service_account
    return {
        "Effect": "Allow",
        "Principal": {"Service": "pods.eks.amazonaws.com"},
        "Action": ["sts:AssumeRole", "sts:TagSession"],
        "Condition": {"StringEquals": tags},
    }


@pytest.mark.parametrize("state", ["kiam", "kiam+podIdentity", "podIdentity"])
def test_the_chain_role_is_pod_identitys_alone_and_may_only_assume_its_target(
    state: str, runs: dict[str, Recording]
) -> None:
    run = runs[state]
    chain = run.one(ROLE, "kiam-app-reports-chain")
    assert chain.inputs == {
        "namePrefix": "kiam-chain-reports-",
        "path": "/kiam/",
        "description": f"EKS Pod Identity chain to {g.REPORTS_ARN} for namespace reports of EKS "
        "cluster test",
        "maxSessionDuration": 3600,
        "assumeRolePolicy": json.dumps(
            {"Version": "2012-10-17", "Statement": [pod_identity_trust("reports", "reporter")]}
        ),
    }
    policy = run.one(ROLE_POLICY, "kiam-app-reports-chain-assume-target")
    assert json.loads(policy.inputs["policy"]) == {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "AssumeTargetRole",
                "Effect": "Allow",
                "Action": ["sts:AssumeRole", "sts:TagSession"],
                "Resource": g.REPORTS_ARN,
            }
        ],
    }
    assert policy.property_dependencies["role"] == (chain.urn,)


@pytest.mark.parametrize("state", ["kiam+podIdentity", "podIdentity"])
def test_the_associations_name_the_role_or_chain_to_it(
    state: str, runs: dict[str, Recording]
) -> None:
    run = runs[state]
    ledger = run.one(ASSOCIATION, "kiam-app-ledger-pod-identity")
    assert ledger.inputs == {
        "clusterName": "test",
        "namespace": "ledger",
        "serviceAccount": "api",
        "roleArn": g.LEDGER_ARN,
    }
    reports = run.one(ASSOCIATION, "kiam-app-reports-pod-identity")
    assert reports.inputs == {
        "clusterName": "test",
        "namespace": "reports",
        "serviceAccount": "reporter",
        "roleArn": chain_arn(run),
        "targetRoleArn": g.REPORTS_ARN,
    }
    assert reports.property_dependencies["roleArn"] == (
        run.one(ROLE, "kiam-app-reports-chain").urn,
    )
    assert reports.parent == run.one(EXISTING, "kiam-app-reports").urn


@pytest.mark.parametrize("state", STATES)
def test_the_namespaces_admit_the_exact_arns_only_while_kiam_serves_them(
    state: str, runs: dict[str, Recording]
) -> None:
    annotations = {
        r.inputs["metadata"]["name"]: r.inputs["metadata"]["annotations"]
        for r in runs[state].by_type(PATCH)
    }
    expected = {
        "ledger": {"iam.amazonaws.com/permitted": f"^({g.LEDGER_ARN})$"},
        "reports": {"iam.amazonaws.com/permitted": f"^({g.REPORTS_ARN})$"},
    }
    assert annotations == (expected if state.startswith("kiam") else {})


def kiam_trust(run: Recording) -> dict[str, Any]:
    return {"Effect": "Allow", "Principal": {"AWS": server_arn(run)}, "Action": "sts:AssumeRole"}


def chain_trust(run: Recording) -> dict[str, Any]:
    """pod-id-assign-target-role: the cluster account, pinned to the chain role, and here to the
    namespace and service account too."""
    return {
        "Effect": "Allow",
        "Principal": {"AWS": "arn:aws:iam::111122223333:root"},
        "Action": ["sts:AssumeRole", "sts:TagSession"],
        "Condition": {
            "ArnEquals": {"aws:PrincipalARN": chain_arn(run)},
            "StringEquals": {
                "aws:RequestTag/kubernetes-namespace": "reports",
                "aws:RequestTag/kubernetes-service-account": "reporter",
            },
        },
    }


def irsa_trust(
    run: Recording, account: str, namespace: str, service_account: str
) -> dict[str, Any]:
    host = "oidc.eks.eu-west-1.amazonaws.com/id/4D967A30111BF29F0EBA01C448B375C1"
    assert host in json.dumps(run.stack_outputs)
    return {
        "Effect": "Allow",
        "Principal": {"Federated": f"arn:aws:iam::{account}:oidc-provider/{host}"},
        "Action": "sts:AssumeRoleWithWebIdentity",
        "Condition": {
            "StringEquals": {
                f"{host}:sub": f"system:serviceaccount:{namespace}:{service_account}",
                f"{host}:aud": "sts.amazonaws.com",
            }
        },
    }


def test_at_kiam_the_outputs_say_what_each_owner_must_trust_now_and_before_each_move(
    runs: dict[str, Recording],
) -> None:
    run = runs["kiam"]
    apps = run.stack_outputs["applications"]
    # ledger names no service account yet: the next states' statements wait for it.
    assert apps["ledger"]["trust"] == {"required": [kiam_trust(run)], "next": {}}
    assert apps["ledger"]["podAnnotation"] == {"iam.amazonaws.com/role": g.LEDGER_ARN}
    # reports does: Pod Identity through the chain role, or IRSA through an OIDC provider of
    # the role's own account (EKS User Guide, cross-account IRSA).
    assert apps["reports"]["trust"] == {
        "required": [kiam_trust(run)],
        "next": {
            "kiam+podIdentity": [chain_trust(run)],
            "kiam+irsa": [irsa_trust(run, g.OTHER_ACCOUNT, "reports", "reporter")],
        },
    }
    assert apps["reports"]["serviceAccount"] is None  # nothing serves it to one yet


def test_moving_the_outputs_require_both_and_name_what_the_end_state_keeps(
    runs: dict[str, Recording],
) -> None:
    run = runs["kiam+podIdentity"]
    apps = run.stack_outputs["applications"]
    assert apps["ledger"]["trust"] == {
        "required": [kiam_trust(run), pod_identity_trust("ledger", "api")],
        "next": {"podIdentity": []},
    }
    assert apps["reports"]["trust"] == {
        "required": [kiam_trust(run), chain_trust(run)],
        "next": {"podIdentity": []},
    }
    irsa = runs["irsa"]
    assert irsa.stack_outputs["applications"]["reports"]["trust"] == {
        "required": [irsa_trust(irsa, g.OTHER_ACCOUNT, "reports", "reporter")],
        "next": {},
    }
    assert irsa.stack_outputs["applications"]["reports"]["serviceAccount"] == {
        "name": "reporter",
        "namespace": "reports",
        "annotations": {"eks.amazonaws.com/role-arn": g.REPORTS_ARN},
    }


def test_roles_the_stack_creates_have_no_trust_output(runs: dict[str, Recording]) -> None:
    run = run_program(g.KIAM_CONFIG)
    assert all("trust" not in app for app in run.stack_outputs["applications"].values())


@pytest.mark.parametrize("state", [*STATES, "retired"])
def test_every_state_keeps_every_guarantee(state: str, runs: dict[str, Recording]) -> None:
    config = (
        g.existing_config("podIdentity", "podIdentity", retire=True)
        if state == "retired"
        else g.existing_config(state, state)
    )
    assert check_all(resources_from_recording(runs[state]), expected_of(config)) == []


# Each new way of breaking what serves an existing role, caught exactly
# (tests/test_guarantee_messages.py holds every message to a case here or elsewhere).
IAM, POD_IDENTITY, OFF_KIAM = "iam-least-privilege", "pod-identity", "off-kiam"
STRANGER = "arn:aws:iam::999988887777:role/anything"


def find(rs: list[Resource], type_: str, name: str) -> Resource:
    return g.find(rs, type_, name)


def changed(rs: list[Resource], type_: str, name: str, **inputs: Any) -> list[Resource]:
    old = find(rs, type_, name)
    return g.replace(rs, old, g.with_inputs(old, **inputs))


def with_server_resources(rs: list[Resource], extra: str) -> list[Resource]:
    policy = find(rs, ROLE_POLICY, "kiam-iam-server-assume-applications")
    document = json.loads(policy.inputs["policy"])
    given = document["Statement"][0]["Resource"]
    document["Statement"][0]["Resource"] = [*([given] if isinstance(given, str) else given), extra]
    return changed(rs, ROLE_POLICY, policy.name, policy=json.dumps(document))


def urn(rs: list[Resource], type_: str, name: str) -> str:
    return find(rs, type_, name).urn


def without_target(rs: list[Resource]) -> list[Resource]:
    old = find(rs, ASSOCIATION, "kiam-app-reports-pod-identity")
    inputs = {k: v for k, v in old.inputs.items() if k != "targetRoleArn"}
    return g.replace(rs, old, dataclasses.replace(old, inputs=inputs))


def without_chain_dependency(rs: list[Resource]) -> list[Resource]:
    old = find(rs, ASSOCIATION, "kiam-app-reports-pod-identity")
    deps = {**old.property_dependencies, "roleArn": frozenset()}
    return g.replace(rs, old, dataclasses.replace(old, property_dependencies=deps))


def chain_trusted_by(statements: list[Any]) -> Callable[[list[Resource]], list[Resource]]:
    policy = json.dumps({"Version": "2012-10-17", "Statement": statements})
    return lambda rs: changed(rs, ROLE, "kiam-app-reports-chain", assumeRolePolicy=policy)


OTHER_SERVICE_ACCOUNT = copy.deepcopy(pod_identity_trust("reports", "other"))
ANY_ROLE_STATEMENT = {"Effect": "Allow", "Principal": {"AWS": STRANGER}, "Action": "sts:AssumeRole"}
NARROWED = json.dumps(
    {
        "StringEquals": {
            "aws:SourceAccount": "111122223333",
            "aws:RequestTag/eks-cluster-name": "test",
            "aws:RequestTag/kubernetes-namespace": "reports",
            "aws:RequestTag/kubernetes-service-account": "reporter",
        }
    }
)


def trusted_by(statement: dict[str, Any]) -> str:
    return (
        "application reports: the role it chains through is trusted by "
        f"{json.dumps(statement, sort_keys=True)}: only pods.eks.amazonaws.com may obtain it, "
        f"exactly Allow sts:AssumeRole and sts:TagSession under {NARROWED}"
    )


WIDE_GRANT = {"Effect": "Allow", "Action": ["sts:AssumeRole", "sts:TagSession"], "Resource": "*"}

# (description, baseline, the settings judged, the breakage, the exact violations)
ExistingCase = tuple[
    str,
    str,
    dict[str, Any],
    Callable[[list[Resource]], list[Resource]],
    Callable[[list[Resource]], list[tuple[str, str, str]]],
]
EXISTING_CASES: list[ExistingCase] = [
    (
        "8 the server may assume a role no application names",
        "existing",
        g.EXISTING_CONFIG,
        lambda rs: with_server_resources(rs, STRANGER),
        lambda rs: [
            (
                IAM,
                urn(rs, ROLE_POLICY, "kiam-iam-server-assume-applications"),
                f"lets the kiam-server role assume {STRANGER}, which no application names",
            )
        ],
    ),
    (
        "14 the server may still assume an existing role kiam no longer serves",
        "existing-moved",
        g.EXISTING_MOVED_CONFIG,
        lambda rs: with_server_resources(rs, g.REPORTS_ARN),
        lambda rs: [
            (
                OFF_KIAM,
                "stack",
                f"application reports: the kiam-server role may still assume {g.REPORTS_ARN} "
                "though servedBy podIdentity is no longer kiam",
            )
        ],
    ),
    (
        "13 a role of the cluster's account chained to",
        "existing-moved",
        g.EXISTING_MOVED_CONFIG,
        lambda rs: changed(
            rs, ASSOCIATION, "kiam-app-ledger-pod-identity", targetRoleArn=g.LEDGER_ARN
        ),
        lambda rs: [
            (
                POD_IDENTITY,
                urn(rs, ASSOCIATION, "kiam-app-ledger-pod-identity"),
                f"application ledger: its association chains to {g.LEDGER_ARN}; a role of the "
                "cluster's account is associated directly",
            )
        ],
    ),
    (
        "13 a role of another account associated without a target",
        "existing-moved",
        g.EXISTING_MOVED_CONFIG,
        without_target,
        lambda rs: [
            (
                POD_IDENTITY,
                "stack",
                "application reports: no Pod Identity association of test/reports/reporter "
                "names its role",
            ),
            (
                POD_IDENTITY,
                urn(rs, ASSOCIATION, "kiam-app-reports-pod-identity"),
                "application reports: the association of test/reports/reporter names "
                f"{find(rs, ROLE, 'kiam-app-reports-chain').outputs['arn']}, not its role "
                f"{g.REPORTS_ARN}",
            ),
            (
                POD_IDENTITY,
                urn(rs, ASSOCIATION, "kiam-app-reports-pod-identity"),
                f"application reports: its association has no targetRoleArn: {g.REPORTS_ARN} "
                "is in another account, which EKS reaches only by role chaining",
            ),
        ],
    ),
    (
        "13 the chained association's role is none of the stack's",
        "existing-moved",
        g.EXISTING_MOVED_CONFIG,
        without_chain_dependency,
        lambda rs: [
            (
                POD_IDENTITY,
                urn(rs, ASSOCIATION, "kiam-app-reports-pod-identity"),
                "application reports: its association's roleArn is no role of this stack, so "
                "what EKS assumes first cannot be judged",
            )
        ],
    ),
    (
        "13 the chain role trusts an AWS principal instead of Pod Identity",
        "existing-moved",
        g.EXISTING_MOVED_CONFIG,
        chain_trusted_by([ANY_ROLE_STATEMENT]),
        lambda rs: [
            (
                POD_IDENTITY,
                urn(rs, ASSOCIATION, "kiam-app-reports-pod-identity"),
                "application reports: the role it chains through does not trust "
                "pods.eks.amazonaws.com",
            ),
            (
                POD_IDENTITY,
                urn(rs, ASSOCIATION, "kiam-app-reports-pod-identity"),
                trusted_by(ANY_ROLE_STATEMENT),
            ),
        ],
    ),
    (
        "13 the chain role trusts another service account",
        "existing-moved",
        g.EXISTING_MOVED_CONFIG,
        chain_trusted_by([OTHER_SERVICE_ACCOUNT]),
        lambda rs: [
            (
                POD_IDENTITY,
                urn(rs, ASSOCIATION, "kiam-app-reports-pod-identity"),
                trusted_by(OTHER_SERVICE_ACCOUNT),
            )
        ],
    ),
    (
        "13 the chain role may assume any role",
        "existing-moved",
        g.EXISTING_MOVED_CONFIG,
        lambda rs: changed(
            rs,
            ROLE_POLICY,
            "kiam-app-reports-chain-assume-target",
            policy=json.dumps({"Version": "2012-10-17", "Statement": [WIDE_GRANT]}),
        ),
        lambda rs: [
            (
                POD_IDENTITY,
                urn(rs, ASSOCIATION, "kiam-app-reports-pod-identity"),
                "application reports: the role it chains through is granted "
                f"{json.dumps(WIDE_GRANT, sort_keys=True)}; it may only sts:AssumeRole and "
                f"sts:TagSession on {g.REPORTS_ARN}",
            )
        ],
    ),
    (
        "13 the chain role has a managed policy",
        "existing-moved",
        g.EXISTING_MOVED_CONFIG,
        lambda rs: changed(
            rs,
            ROLE,
            "kiam-app-reports-chain",
            managedPolicyArns=["arn:aws:iam::aws:policy/ReadOnlyAccess"],
        ),
        lambda rs: [
            (
                POD_IDENTITY,
                urn(rs, ASSOCIATION, "kiam-app-reports-pod-identity"),
                "application reports: the role it chains through has managed policies; it "
                "needs none",
            )
        ],
    ),
]


@pytest.fixture(scope="module")
def baselines() -> dict[str, list[Resource]]:
    return {
        "existing": resources_from_recording(run_program(g.EXISTING_CONFIG)),
        "existing-moved": resources_from_recording(run_program(g.EXISTING_MOVED_CONFIG)),
    }


@pytest.mark.parametrize(
    ("description", "baseline", "config", "breaks", "expected"),
    EXISTING_CASES,
    ids=[c[0] for c in EXISTING_CASES],
)
def test_each_breakage_of_what_serves_an_existing_role_is_caught_exactly(
    baselines: dict[str, list[Resource]],
    description: str,
    baseline: str,
    config: dict[str, Any],
    breaks: Callable[[list[Resource]], list[Resource]],
    expected: Callable[[list[Resource]], list[tuple[str, str, str]]],
) -> None:
    rs = baselines[baseline]
    assert check_all(breaks(rs), expected_of(config)) == sorted(Violation(*v) for v in expected(rs))


# --- changes: what the transitions judge says of an existing role ---------------------------------


def judged(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """The problems the judge refuses `after` with, having installed `before`; [] if it takes it."""
    previous = installed_by(settings_of(before), None)
    try:
        judge(settings_of(after), previous, {}, SOURCE)
    except RefusedChangeError as refusal:
        return list(refusal.problems)
    return []


SOURCE = "stacks/Pulumi.test.yaml"


def settings_of(config: dict[str, Any]) -> StackSettings:
    values = {k.removeprefix("kiam:"): v for k, v in config.items() if k.startswith("kiam:")}
    return settings_from_values(values, SOURCE)


def with_app(**app: Any) -> dict[str, Any]:
    return base_config(applications={"ledger": {"namespace": "ledger", **app}})


OWN_ARN = "arn:aws:iam::111122223333:role/kiam-apps/ledger-api"


def test_handing_the_stacks_own_role_over_by_arn_is_refused() -> None:
    assert judged(with_app(roleName="ledger-api"), with_app(roleArn=OWN_ARN)) == [
        f"kiam:applications.ledger.roleArn: {OWN_ARN} is the stack's own role (created by "
        "roleName): named by roleArn it would be deleted at the end of this update while pods "
        "still hold its credentials. To hand it over, take it out of the stack's state first "
        "(`pulumi state delete` of the role and its policies leaves them in AWS), then name it "
        "by roleArn"
    ]


def test_creating_an_existing_role_is_refused() -> None:
    assert judged(with_app(roleArn=OWN_ARN), with_app(roleName="ledger-api")) == [
        f"kiam:applications.ledger.roleArn: {OWN_ARN} existed before the stack (roleArn): "
        "roleName would create it again, and IAM refuses a second role of that name. To own "
        "it, import it (`pulumi import aws:iam/role:Role`) under the application's role; else "
        "keep roleArn"
    ]


def test_another_existing_role_is_refused_as_another_role() -> None:
    assert judged(with_app(roleArn=g.REPORTS_ARN), with_app(roleArn=g.LEDGER_ARN)) == [
        f"kiam:applications.ledger.roleArn: its role is {g.REPORTS_ARN} (the stack's last "
        f"update), and {g.LEDGER_ARN} is another role: the stack would stop serving the old one "
        "while pods still ask for it. To move: add the new one as another application, move the "
        "pods to it (recreate them), and remove kiam:applications.ledger once none runs on the "
        "old one"
    ]


def test_the_service_account_named_at_kiam_may_change_and_the_move_may_take_another() -> None:
    at_kiam = with_app(roleArn=g.REPORTS_ARN, serviceAccount="reporter")
    assert judged(at_kiam, with_app(roleArn=g.REPORTS_ARN, serviceAccount="other")) == []
    moving = with_app(roleArn=g.REPORTS_ARN, serviceAccount="other", servedBy="kiam+podIdentity")
    assert judged(at_kiam, moving) == []
    # Once Pod Identity serves one, another is refused, as for a role the stack creates.
    assert judged(
        moving, with_app(**{**moving["kiam:applications"]["ledger"], "serviceAccount": "x"})
    )


def test_the_installed_facts_record_an_existing_role_and_no_other_applications_facts_change(
    runs: dict[str, Recording],
) -> None:
    """`existing` is written only when true: a running install's `installed` output reads as it
    always has after the upgrade (tests/test_package.py holds its URNs the same too)."""
    owned = run_program(g.KIAM_CONFIG).stack_outputs["installed"]["applications"]
    assert all("existing" not in fact for fact in owned.values())
    facts = runs["kiam"].stack_outputs["installed"]["applications"]
    assert facts["ledger"] == {
        "namespace": "ledger",
        "roleArn": g.LEDGER_ARN,
        "servedBy": "kiam",
        "serviceAccount": None,
        "existing": True,
    }
    # Read back as the next update reads it.
    read = read_installed(runs["kiam"].stack_outputs)
    assert read is not None and read.applications["ledger"].existing


MOVES = [
    ("kiam", "kiam+podIdentity"),
    ("kiam+podIdentity", "podIdentity"),
    ("podIdentity", "kiam+podIdentity"),
    ("kiam+podIdentity", "kiam"),
    ("kiam", "kiam+irsa"),
    ("kiam+irsa", "irsa"),
    ("irsa", "kiam+irsa"),
    ("kiam+irsa", "kiam"),
]


@pytest.mark.parametrize("arn", [g.LEDGER_ARN, g.REPORTS_ARN])
@pytest.mark.parametrize(("old", "new"), MOVES)
def test_every_step_of_the_way_out_and_back_is_one_update(arn: str, old: str, new: str) -> None:
    # A role of this account and one of another: forward and rollback, each one `pulumi up`.
    app = {"roleArn": arn, "serviceAccount": "reporter"}
    assert judged(with_app(**app, servedBy=old), with_app(**app, servedBy=new)) == []

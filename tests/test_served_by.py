"""Every `servedBy` state of an application, through the real program and the mock engine: the
exact resources, trust documents, association, namespace annotation and outputs each state has,
the agent add-on managed or checked, and rollback (each state back is the earlier state exactly)."""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pytest

from kiam_eks.contracts import tokens
from tests.conftest import base_config, run_program
from tools.mock_engine import Recording, run_main

ROLE = "aws:iam/role:Role"
APP_ROLE = tokens.APPLICATION_ROLE
ASSOCIATION = "aws:eks/podIdentityAssociation:PodIdentityAssociation"
ADDON = "aws:eks/addon:Addon"
PERMISSIONS = tokens.NAMESPACE_PERMISSIONS
PATCH = "kubernetes:core/v1:NamespacePatch"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
ARN = "arn:aws:iam::111122223333:role/kiam-apps/billing-api"
STATES = ["kiam", "kiam+podIdentity", "podIdentity", "kiam+irsa", "irsa"]


def config(state: str, *, manage: bool = False, **app: Any) -> dict[str, Any]:
    billing: dict[str, Any] = {"namespace": "billing", "roleName": "billing-api", **app}
    if state != "kiam":
        billing |= {"servedBy": state, "serviceAccount": "api"}
    return base_config(applications={"billing": billing}, podIdentityAgent={"manageAddon": manage})


@pytest.fixture(scope="module")
def runs() -> dict[tuple[str, bool], Recording]:
    """One run per state, with the add-on checked and with it managed."""
    return {(s, m): run_program(config(s, manage=m)) for s in STATES for m in (False, True)}


@pytest.fixture(scope="module")
def without_applications() -> Recording:
    return run_program(base_config(podIdentityAgent={"manageAddon": True}))


def server_arn(run: Recording) -> str:
    return str(run.one(ROLE, "kiam-iam-server").outputs["arn"])


def issuer_host(run: Recording) -> str:
    """The OIDC provider host of the mock cluster (`aws.eks.get_cluster`'s issuer)."""
    statement = json.loads(run.one(ROLE, "kiam-app-billing").inputs["assumeRolePolicy"])[
        "Statement"
    ][-1]
    federated: str = statement["Principal"]["Federated"]
    host = federated.split("oidc-provider/", 1)[1]
    assert host.startswith("oidc.eks.eu-west-1.amazonaws.com/id/")
    return host


def kiam_statement(server: str) -> dict[str, Any]:
    return {"Effect": "Allow", "Principal": {"AWS": server}, "Action": "sts:AssumeRole"}


POD_IDENTITY_STATEMENT = {
    "Effect": "Allow",
    "Principal": {"Service": "pods.eks.amazonaws.com"},
    "Action": ["sts:AssumeRole", "sts:TagSession"],
    "Condition": {
        "StringEquals": {
            "aws:SourceAccount": "111122223333",
            "aws:RequestTag/eks-cluster-name": "test",
            "aws:RequestTag/kubernetes-namespace": "billing",
            "aws:RequestTag/kubernetes-service-account": "api",
        }
    },
}


def irsa_statement(host: str) -> dict[str, Any]:
    return {
        "Effect": "Allow",
        "Principal": {"Federated": f"arn:aws:iam::111122223333:oidc-provider/{host}"},
        "Action": "sts:AssumeRoleWithWebIdentity",
        "Condition": {
            "StringEquals": {
                f"{host}:sub": "system:serviceaccount:billing:api",
                f"{host}:aud": "sts.amazonaws.com",
            }
        },
    }


@pytest.mark.parametrize("state", STATES)
def test_the_trust_is_exactly_what_serves_the_role(
    state: str, runs: dict[tuple[str, bool], Recording]
) -> None:
    run = runs[(state, False)]
    role = run.one(ROLE, "kiam-app-billing")
    server = server_arn(run)
    expected = {
        "kiam": lambda: [kiam_statement(server)],
        "kiam+podIdentity": lambda: [kiam_statement(server), POD_IDENTITY_STATEMENT],
        "podIdentity": lambda: [POD_IDENTITY_STATEMENT],
        "kiam+irsa": lambda: [kiam_statement(server), irsa_statement(issuer_host(run))],
        "irsa": lambda: [irsa_statement(issuer_host(run))],
    }[state]()
    assert json.loads(role.inputs["assumeRolePolicy"]) == {
        "Version": "2012-10-17",
        "Statement": expected,
    }
    # The kiam-server role is an input of the trust only while kiam serves the role.
    server_urn = run.one(ROLE, "kiam-iam-server").urn
    assert role.property_dependencies["assumeRolePolicy"] == (
        (server_urn,) if state.startswith("kiam") else ()
    )


# What each state adds to a stack without applications, by (type, name), and the parent's name.
APP = {(APP_ROLE, "kiam-app-billing", "kiam"), (ROLE, "kiam-app-billing", "kiam-app-billing")}
KIAM_PERMITS = {
    (PERMISSIONS, "kiam-permissions", "kiam"),
    (PATCH, "kiam-permissions-billing", "kiam-permissions"),
}
ASSOCIATED = {(ASSOCIATION, "kiam-app-billing-pod-identity", "kiam-app-billing")}
AGENT = {(ADDON, "kiam-pod-identity-agent", "kiam")}
ADDED = {
    ("kiam", False): APP | KIAM_PERMITS,
    ("kiam", True): APP | KIAM_PERMITS,
    ("kiam+podIdentity", False): APP | KIAM_PERMITS | ASSOCIATED,
    ("kiam+podIdentity", True): APP | KIAM_PERMITS | ASSOCIATED | AGENT,
    ("podIdentity", False): APP | ASSOCIATED,
    ("podIdentity", True): APP | ASSOCIATED | AGENT,
    ("kiam+irsa", False): APP | KIAM_PERMITS,
    ("kiam+irsa", True): APP | KIAM_PERMITS,
    ("irsa", False): APP,
    ("irsa", True): APP,
}


def named(run: Recording) -> set[tuple[str, str, str]]:
    urns = {r.urn: r.name for r in run.registrations}
    return {(r.type, r.name, urns.get(r.parent, "stack")) for r in run.registrations}


@pytest.mark.parametrize(("state", "manage"), sorted(ADDED))
def test_each_state_has_exactly_its_resources(
    state: str,
    manage: bool,
    runs: dict[tuple[str, bool], Recording],
    without_applications: Recording,
) -> None:
    run, base = runs[(state, manage)], named(without_applications)
    assert base <= named(run)
    assert named(run) - base == ADDED[(state, manage)]


@pytest.mark.parametrize("state", ["kiam+podIdentity", "podIdentity"])
@pytest.mark.parametrize("manage", [False, True])
def test_the_association_names_the_service_account_and_waits_for_the_trusting_role(
    state: str, manage: bool, runs: dict[tuple[str, bool], Recording]
) -> None:
    run = runs[(state, manage)]
    association = run.one(ASSOCIATION)
    role = run.one(ROLE, "kiam-app-billing")
    assert association.inputs == {
        "clusterName": "test",
        "namespace": "billing",
        "serviceAccount": "api",
        "roleArn": ARN,
    }
    assert association.parent == run.one(APP_ROLE, "kiam-app-billing").urn
    # The role's ARN is an output of the role: created after the role with its Pod Identity trust.
    assert association.property_dependencies["roleArn"] == (role.urn,)
    # And after the managed agent, so no pod gets Pod Identity credentials before it is there.
    agent = [run.one(ADDON).urn] if manage else []
    assert sorted(association.dependencies) == sorted([role.urn, *agent])
    # Replaced (new namespace or service account) by creating the new one first: it names another
    # service account than the old one, so they cannot collide (components/pod_identity.py).
    assert association.delete_before_replace is False
    # The stack's explicit AWS provider (pinned to the account), never the ambient default.
    assert association.provider == run.one(ROLE, "kiam-app-billing").provider
    assert association.provider.startswith(
        "urn:pulumi:test::kiam::pulumi:pulumi:Stack$pulumi:providers:aws::aws::"
    )


@pytest.mark.parametrize("state", STATES)
def test_the_namespace_admits_the_role_only_while_kiam_serves_it(
    state: str, runs: dict[tuple[str, bool], Recording]
) -> None:
    annotations = {
        r.inputs["metadata"]["name"]: r.inputs["metadata"]["annotations"]
        for r in runs[(state, False)].by_type(PATCH)
    }
    expected = {"billing": {"iam.amazonaws.com/permitted": f"^({ARN})$"}}
    assert annotations == (expected if state.startswith("kiam") else {})


def test_a_namespace_keeps_admitting_the_roles_kiam_still_serves() -> None:
    run = run_program(
        base_config(
            applications={
                "billing": {
                    "namespace": "billing",
                    "roleName": "billing-api",
                    "servedBy": "podIdentity",
                    "serviceAccount": "api",
                },
                "ledger": {"namespace": "billing", "roleName": "ledger"},
            }
        )
    )
    assert [r.inputs["metadata"] for r in run.by_type(PATCH)] == [
        {
            "name": "billing",
            "annotations": {
                "iam.amazonaws.com/permitted": "^(arn:aws:iam::111122223333:role/kiam-apps/ledger)$"
            },
        }
    ]


def test_a_taken_over_namespace_is_given_back_once_kiam_serves_none_of_its_roles() -> None:
    """As when its last application is removed (components/namespace_permissions.py, step 3)."""
    found = "^arn:aws:iam::111122223333:role/legacy/.*$"
    moved = run_program(
        base_config(
            applications={
                "billing": {
                    "namespace": "billing",
                    "roleName": "billing-api",
                    "servedBy": "podIdentity",
                    "serviceAccount": "api",
                }
            },
            existingPermitted={"billing": found},
        )
    )
    removed = run_program(base_config(existingPermitted={"billing": found}))

    def patches(run: Recording) -> dict[str, Any]:
        return {
            r.name: (r.inputs["metadata"], r.dependencies, r.retain_on_delete)
            for r in run.by_type(PATCH)
        }

    assert patches(moved) == patches(removed)
    assert sorted(patches(moved)) == [
        "kiam-permissions-billing",
        "kiam-permissions-billing-existing",
        "kiam-permissions-billing-given-back",
    ]
    assert patches(moved)["kiam-permissions-billing"][0]["annotations"] == {
        "iam.amazonaws.com/permitted": found,
        "pulumi.com/patchForce": "true",
        "kiam.pulumi.io/existing-permitted": found,
    }


def _irsa_annotations() -> dict[str, str]:
    return {"eks.amazonaws.com/role-arn": ARN}


@pytest.mark.parametrize("state", STATES)
def test_the_outputs_say_what_the_pod_and_its_service_account_need(
    state: str, runs: dict[tuple[str, bool], Recording]
) -> None:
    run = runs[(state, False)]
    association = run.by_type(ASSOCIATION)
    assert len(association) == (1 if "podIdentity" in state else 0)
    association_id = association[0].id if association else None
    kiam_annotation = {"iam.amazonaws.com/role": "billing-api"}
    account = {"name": "api", "namespace": "billing"}
    expected = {
        "kiam": {
            "next": None,
            "podAnnotation": kiam_annotation,
            "serviceAccount": None,
            "podIdentityAssociationId": None,
        },
        "kiam+podIdentity": {
            "next": "podIdentity",
            "podAnnotation": kiam_annotation,
            "serviceAccount": {**account, "annotations": {}},
            "podIdentityAssociationId": association_id,
        },
        "podIdentity": {
            "next": None,
            "podAnnotation": {},
            "serviceAccount": {**account, "annotations": {}},
            "podIdentityAssociationId": association_id,
        },
        "kiam+irsa": {
            "next": "irsa",
            "podAnnotation": kiam_annotation,
            "serviceAccount": {**account, "annotations": _irsa_annotations()},
            "podIdentityAssociationId": None,
        },
        "irsa": {
            "next": None,
            "podAnnotation": {},
            "serviceAccount": {**account, "annotations": _irsa_annotations()},
            "podIdentityAssociationId": None,
        },
    }[state]
    assert run.stack_outputs["applications"] == {
        "billing": {"servedBy": state, "roleArn": ARN, **expected}
    }
    if association:
        # The association's id as EKS gives it (`a-` and 17 characters), not a placeholder.
        assert association[0].id.startswith("a-") and len(association[0].id) == 19


@pytest.mark.parametrize("state", STATES)
def test_the_servers_assume_permission_is_the_same_in_every_state(
    state: str, runs: dict[tuple[str, bool], Recording]
) -> None:
    """Moving an application never touches the kiam-server role: its pattern keeps the
    application's path (the role, no longer trusting the server, refuses it anyway)."""
    run, kiam = runs[(state, False)], runs[("kiam", False)]
    policy = run.one(ROLE_POLICY, "kiam-iam-server-assume-applications")
    assert policy.inputs == kiam.one(ROLE_POLICY, "kiam-iam-server-assume-applications").inputs
    assert json.loads(policy.inputs["policy"])["Statement"] == [
        {
            "Sid": "AssumeApplicationRoles",
            "Effect": "Allow",
            "Action": "sts:AssumeRole",
            "Resource": "arn:aws:iam::111122223333:role/kiam-apps/*",
        }
    ]
    assert run.stack_outputs["applicationRolePatterns"] == [
        "arn:aws:iam::111122223333:role/kiam-apps/*"
    ]


def snapshot(run: Recording) -> dict[tuple[str, str], tuple[Any, ...]]:
    """What the engine would act on, per resource."""
    return {
        (r.type, r.name): (
            r.parent,
            r.provider,
            r.inputs,
            tuple(sorted(r.dependencies)),
            # The engine records a property's dependencies in the order they resolved.
            {k: tuple(sorted(v)) for k, v in r.property_dependencies.items()},
            r.delete_before_replace,
            r.retain_on_delete,
        )
        for r in run.registrations
    }


def step(before: Recording, after: Recording) -> tuple[set[Any], set[Any], set[Any]]:
    """Resources added, removed and changed (any of `snapshot`'s parts) from one run to the next."""
    a, b = snapshot(before), snapshot(after)
    return (
        set(b) - set(a),
        set(a) - set(b),
        {key for key in set(a) & set(b) if a[key] != b[key]},
    )


ROLE_CHANGE = {(ROLE, "kiam-app-billing")}
PATCHES = {(PERMISSIONS, "kiam-permissions"), (PATCH, "kiam-permissions-billing")}
SERVED = {(ASSOCIATION, "kiam-app-billing-pod-identity")}
ADD_ON = {(ADDON, "kiam-pod-identity-agent")}


@pytest.mark.parametrize("manage", [False, True])
@pytest.mark.parametrize(
    ("path", "moves"),
    [
        (
            ["kiam", "kiam+podIdentity", "podIdentity"],
            [
                # kiam -> kiam+podIdentity: the trust gains Pod Identity, the association (and
                # its agent) appear; the namespace keeps admitting the role.
                (SERVED, set(), ROLE_CHANGE),
                # -> podIdentity: the trust loses the kiam-server, the namespace its entry.
                (set(), PATCHES, ROLE_CHANGE),
            ],
        ),
        (
            ["kiam", "kiam+irsa", "irsa"],
            [(set(), set(), ROLE_CHANGE), (set(), PATCHES, ROLE_CHANGE)],
        ),
    ],
)
def test_each_move_and_its_rollback(
    path: list[str],
    moves: list[tuple[set[Any], set[Any], set[Any]]],
    manage: bool,
    runs: dict[tuple[str, bool], Recording],
) -> None:
    agent = ADD_ON if manage and "podIdentity" in path else set()
    forward = [runs[(state, manage)] for state in path]
    # Each forward step changes exactly what the brief of that state asks for.
    for (added, removed, changed), before, after in zip(
        moves, forward[:-1], forward[1:], strict=True
    ):
        first = before is forward[0]
        assert step(before, after) == (
            added | (agent if first else set()),
            removed,
            changed,
        )
    # And each step back, one `pulumi up` with the previous state, is the earlier run exactly.
    back = [run_program(config(state, manage=manage)) for state in reversed(path[:-1])]
    for earlier, rolled_back in zip(reversed(forward[:-1]), back, strict=True):
        assert snapshot(rolled_back) == snapshot(earlier)
        assert rolled_back.stack_outputs == earlier.stack_outputs
    # The step back is the inverse of the step forward.
    for (added, removed, changed), before, after in zip(
        moves, forward[:-1], forward[1:], strict=True
    ):
        first = before is forward[0]
        assert step(after, before) == (removed, added | (agent if first else set()), changed)


def test_a_managed_agent_is_installed_once_for_every_pod_identity_application() -> None:
    run = run_program(
        base_config(
            applications={
                "billing": {
                    "namespace": "billing",
                    "roleName": "billing-api",
                    "servedBy": "kiam+podIdentity",
                    "serviceAccount": "api",
                },
                "search": {
                    "namespace": "search",
                    "roleName": "search",
                    "servedBy": "podIdentity",
                    "serviceAccount": "indexer",
                },
            },
            podIdentityAgent={"manageAddon": True, "addonVersion": "v1.3.4-eksbuild.1"},
        )
    )
    addon = run.one(ADDON)
    assert addon.inputs == {
        "addonName": "eks-pod-identity-agent",
        "clusterName": "test",
        "addonVersion": "v1.3.4-eksbuild.1",
        # Removing it leaves the agent running: pods given Pod Identity keep their agent.
        "preserve": True,
    }
    # A child of the install, not of kiam's parts: retiring kiam keeps it.
    assert addon.parent == run.one(tokens.KIAM).urn
    assert addon.delete_before_replace is False
    assert {a.name: addon.urn in a.dependencies for a in run.by_type(ASSOCIATION)} == {
        "kiam-app-billing-pod-identity": True,
        "kiam-app-search-pod-identity": True,
    }


def test_without_pod_identity_nothing_is_installed_or_checked() -> None:
    """A cluster without the agent is fine while no application is served by Pod Identity."""
    for state in ("kiam", "kiam+irsa", "irsa"):
        for manage in (False, True):
            run = run_main(config(state, manage=manage), stack="test", cluster_addons=())
            assert run.by_type(ADDON) == []
            assert run.by_type(ASSOCIATION) == []


def test_an_unmanaged_agent_present_on_the_cluster_is_only_checked() -> None:
    run = run_main(
        config("podIdentity"), stack="test", cluster_addons=["eks-pod-identity-agent", "vpc-cni"]
    )
    assert run.by_type(ADDON) == []
    assert [a.name for a in run.by_type(ASSOCIATION)] == ["kiam-app-billing-pod-identity"]


@pytest.mark.parametrize("addons", [(), ("vpc-cni", "coredns")])
def test_a_missing_agent_stops_the_plan_before_anything_but_the_providers(
    addons: tuple[str, ...], registered_types: list[str]
) -> None:
    apps = {
        "billing": {
            "namespace": "billing",
            "roleName": "billing-api",
            "servedBy": "kiam+podIdentity",
            "serviceAccount": "api",
        },
        "search": {
            "namespace": "search",
            "roleName": "search",
            "servedBy": "podIdentity",
            "serviceAccount": "indexer",
        },
        "ledger": {"namespace": "ledger", "roleName": "ledger"},
    }
    with pytest.raises(pulumi.RunError) as caught:
        run_main(base_config(applications=apps), stack="test", cluster_addons=addons)
    assert str(caught.value) == (
        "kiam:podIdentityAgent.manageAddon is false, so EKS cluster test must already run the "
        "eks-pod-identity-agent add-on for kiam:applications.billing (servedBy kiam+podIdentity), "
        "kiam:applications.search (servedBy podIdentity), and looking it up failed: invoke of "
        "aws:eks/getAddon:getAddon failed: reading EKS Add-On (test:eks-pod-identity-agent): "
        "couldn't find resource (). Set kiam:podIdentityAgent.manageAddon: true to install it "
        "with the stack, or install it (aws eks create-addon --cluster-name test --addon-name "
        "eks-pod-identity-agent)"
    )
    assert registered_types == ["pulumi:pulumi:Stack", "pulumi:providers:aws"]


def test_an_agent_installed_outside_the_stack_stops_a_stack_that_would_create_it(
    registered_types: list[str],
) -> None:
    """EKS refuses to create an add-on the cluster has (contracts/pod_identity.py): the plan
    stops before anything but the providers, naming the way out, instead of every `pulumi up`
    failing half way."""
    with pytest.raises(pulumi.RunError) as caught:
        run_main(
            config("kiam+podIdentity", manage=True),
            stack="test",
            cluster_addons=["eks-pod-identity-agent"],
        )
    assert str(caught.value) == (
        "kiam:podIdentityAgent.manageAddon is true and this stack has not installed the "
        "eks-pod-identity-agent add-on, but EKS cluster test already runs it (v1.3.4-eksbuild.1), "
        "installed outside this stack: EKS refuses to create it again, so `pulumi up` would fail "
        "after changing other resources. Set kiam:podIdentityAgent.manageAddon: false (the stack "
        "then checks that the add-on is there and leaves it to its owner), or bring it into this "
        "stack before setting it: pulumi import aws:eks/addon:Addon kiam-pod-identity-agent "
        "test:eks-pod-identity-agent --parent 'kiam=<URN of the Kiam component>' --provider "
        "'aws=<URN of the stack's aws provider>' (`pulumi stack --show-urns` lists both)"
    )
    assert registered_types == ["pulumi:pulumi:Stack", "pulumi:providers:aws"]


def test_an_agent_lookup_that_fails_otherwise_stops_a_stack_that_would_create_it(
    registered_types: list[str],
) -> None:
    """Only EKS's not-found answer says the add-on is absent; any other failure cannot."""
    refusal = (
        "reading EKS Add-On (test:eks-pod-identity-agent): operation error EKS: DescribeAddon, "
        "AccessDeniedException: not authorized to perform: eks:DescribeAddon"
    )
    with pytest.raises(pulumi.RunError) as caught:
        run_main(
            config("podIdentity", manage=True),
            stack="test",
            refused_lookups={"aws:eks/getAddon:getAddon": refusal},
        )
    assert str(caught.value) == (
        "kiam:podIdentityAgent.manageAddon is true and this stack has not installed the "
        "eks-pod-identity-agent add-on, so EKS cluster test must not run one already (EKS "
        "refuses to create it again), and looking it up failed: invoke of "
        f"aws:eks/getAddon:getAddon failed: {refusal} (). Allow eks:DescribeAddon on the cluster "
        "to the credentials `pulumi up` uses, then run it again"
    )
    assert registered_types == ["pulumi:pulumi:Stack", "pulumi:providers:aws"]


def test_an_agent_the_stack_installed_is_not_looked_up_again() -> None:
    """Once the state holds the add-on (even after an update that stopped before recording its
    facts), the next update updates it: the cluster having it is no news."""
    managed = config("kiam+podIdentity", manage=True)
    first = run_main(managed, stack="test")
    addon_urn = first.one(ADDON).urn
    for last in (
        {"last_run": first},
        {"last_resources": {addon_urn: ADDON}},  # stopped before `installed` was recorded
    ):
        again = run_main(
            managed,
            stack="test",
            cluster_addons=["eks-pod-identity-agent"],
            **last,  # type: ignore[arg-type]
        )
        assert again.one(ADDON).urn == addon_urn
        assert [i.token for i in again.invokes if i.token == "aws:eks/getAddon:getAddon"] == []


def test_a_stack_that_would_create_the_agent_looks_it_up_once_and_creates_it() -> None:
    run = run_main(config("podIdentity", manage=True), stack="test", cluster_addons=["vpc-cni"])
    assert [i.token for i in run.invokes if i.token == "aws:eks/getAddon:getAddon"] == [
        "aws:eks/getAddon:getAddon"
    ]
    assert [a.name for a in run.by_type(ADDON)] == ["kiam-pod-identity-agent"]


def test_every_state_registers_the_same_kiam_install(
    runs: dict[tuple[str, bool], Recording], without_applications: Recording
) -> None:
    """Moving an application changes nothing of kiam itself (servers, agents, IAM chain)."""
    kiam_parts = snapshot(without_applications)
    for (state, manage), run in runs.items():
        mine = snapshot(run)
        assert {k: mine[k] for k in kiam_parts} == kiam_parts, (state, manage)


def test_the_offline_plan_says_what_each_applications_pods_need(
    tmp_stack: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from tools.plan import main

    apps = {
        "billing": {
            "namespace": "billing",
            "roleName": "billing-api",
            "servedBy": "kiam+podIdentity",
            "serviceAccount": "api",
        },
        "ledger": {"namespace": "billing", "roleName": "ledger"},
        "search": {
            "namespace": "search",
            "roleName": "search",
            "servedBy": "irsa",
            "serviceAccount": "indexer",
        },
    }
    main(["--config-file", str(tmp_stack(base_config(applications=apps))), "--no-validate"])
    assert (
        "  applications  billing: pods in billing annotate iam.amazonaws.com/role: billing-api; "
        "pods in billing run as service account api (servedBy kiam+podIdentity, next podIdentity)\n"
        "                ledger: pods in billing annotate iam.amazonaws.com/role: ledger\n"
        "                search: pods in search run as service account indexer (servedBy irsa)\n"
    ) in capsys.readouterr().out

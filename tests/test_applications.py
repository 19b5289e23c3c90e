"""Application roles: exact trust (kiam-server, and IRSA when asked), patterns, namespace permissions.

Every `servedBy` state, the association, the agent add-on and rollback: tests/test_served_by.py."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kiam_eks.components.namespace_permissions import permitted_regexp
from kiam_eks.contracts import tokens
from kiam_eks.settings import SettingsError
from kiam_eks.settings.loader import settings_from_values
from tests.conftest import base_config, expected_of, run_program
from tools.mock_engine import Recording

ROLE = "aws:iam/role:Role"
ISSUER_HOST = "oidc.eks.eu-west-1.amazonaws.com/id/"
APPS = {
    "billing": {
        "namespace": "billing",
        "roleName": "billing-api",
        "managedPolicyArns": ["arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess"],
        "inlinePolicies": {
            "queue": {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Action": "sqs:SendMessage",
                        "Resource": "arn:aws:sqs:eu-west-1:111122223333:billing",
                    }
                ],
            }
        },
        "servedBy": "kiam+irsa",
        "serviceAccount": "api",
    },
    "worker": {"namespace": "billing", "roleName": "billing.worker"},
    "search": {"namespace": "search", "roleName": "search", "path": "/kiam-apps/search/"},
}


APPS_CONFIG = base_config(applications=APPS)


@pytest.fixture(scope="module")
def apps_run() -> Recording:
    return run_program(APPS_CONFIG)


def test_children_and_parentage(apps_run: Recording) -> None:
    component = apps_run.one(tokens.APPLICATION_ROLE, "kiam-app-billing")
    assert component.parent == apps_run.one(tokens.KIAM).urn
    assert {(r.type, r.name) for r in apps_run.children_of(component.urn)} == {
        (ROLE, "kiam-app-billing"),
        (
            "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
            "kiam-app-billing-AmazonS3ReadOnlyAccess",
        ),
        ("aws:iam/rolePolicy:RolePolicy", "kiam-app-billing-queue"),
    }
    permissions = apps_run.one(tokens.NAMESPACE_PERMISSIONS)
    assert {(r.type, r.name) for r in apps_run.children_of(permissions.urn)} == {
        ("kubernetes:core/v1:NamespacePatch", "kiam-permissions-billing"),
        ("kubernetes:core/v1:NamespacePatch", "kiam-permissions-search"),
    }
    assert apps_run.by_type("kubernetes:core/v1:Namespace") == [
        apps_run.one("kubernetes:core/v1:Namespace", "kiam-namespace")
    ]


def test_kiam_only_trust(apps_run: Recording) -> None:
    server = apps_run.one(ROLE, "kiam-iam-server")
    worker = apps_run.one(ROLE, "kiam-app-worker")
    assert json.loads(worker.inputs["assumeRolePolicy"]) == {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"AWS": server.outputs["arn"]},
                "Action": "sts:AssumeRole",
            }
        ],
    }
    assert (worker.inputs["name"], worker.inputs["path"]) == ("billing.worker", "/kiam-apps/")
    # Nothing written for the checker: they follow each application by its settings.
    assert "tags" not in worker.inputs
    assert "tags" not in apps_run.one(ROLE, "kiam-app-billing").inputs
    assert worker.property_dependencies["assumeRolePolicy"] == (server.urn,)


def test_irsa_trust_for_one_service_account(apps_run: Recording) -> None:
    server = apps_run.one(ROLE, "kiam-iam-server")
    statements = json.loads(apps_run.one(ROLE, "kiam-app-billing").inputs["assumeRolePolicy"])[
        "Statement"
    ]
    assert statements[0] == {
        "Effect": "Allow",
        "Principal": {"AWS": server.outputs["arn"]},
        "Action": "sts:AssumeRole",
    }
    federated = statements[1]["Principal"]["Federated"]
    assert federated.startswith(f"arn:aws:iam::111122223333:oidc-provider/{ISSUER_HOST}")
    provider = federated.split("oidc-provider/", 1)[1]
    assert statements[1] == {
        "Effect": "Allow",
        "Principal": {"Federated": f"arn:aws:iam::111122223333:oidc-provider/{provider}"},
        "Action": "sts:AssumeRoleWithWebIdentity",
        "Condition": {
            "StringEquals": {
                f"{provider}:sub": "system:serviceaccount:billing:api",
                f"{provider}:aud": "sts.amazonaws.com",
            }
        },
    }
    assert len(statements) == 2


def test_policies_reach_the_role(apps_run: Recording) -> None:
    role = apps_run.one(ROLE, "kiam-app-billing")
    attachment = apps_run.one(
        "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
        "kiam-app-billing-AmazonS3ReadOnlyAccess",
    )
    assert (attachment.inputs["role"], attachment.inputs["policyArn"]) == (
        role.outputs["name"],
        "arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess",
    )
    inline = apps_run.one("aws:iam/rolePolicy:RolePolicy", "kiam-app-billing-queue")
    assert inline.inputs["name"] == "queue"
    assert json.loads(inline.inputs["policy"]) == APPS["billing"]["inlinePolicies"]["queue"]  # type: ignore[index]


def test_namespace_annotations_admit_exactly_the_namespaces_roles(apps_run: Recording) -> None:
    annotations = {
        r.inputs["metadata"]["name"]: r.inputs["metadata"]["annotations"]
        for r in apps_run.by_type("kubernetes:core/v1:NamespacePatch")
    }
    assert annotations == {
        "billing": {
            "iam.amazonaws.com/permitted": "^(arn:aws:iam::111122223333:role/kiam-apps/billing-api"
            "|arn:aws:iam::111122223333:role/kiam-apps/billing\\.worker)$"
        },
        "search": {
            "iam.amazonaws.com/permitted": "^(arn:aws:iam::111122223333:role/kiam-apps/search/search)$"
        },
    }


def test_outputs_per_application(apps_run: Recording) -> None:
    """What a pod author writes: the pod annotation is the role's ARN relative to roleBaseArn;
    the service account and its IRSA annotation only where IRSA serves the role."""
    base = "arn:aws:iam::111122223333:role/kiam-apps/"
    assert apps_run.stack_outputs["roleBaseArn"] == base
    assert apps_run.stack_outputs["applications"] == {
        "billing": {
            "servedBy": "kiam+irsa",
            "next": "irsa",
            "roleArn": f"{base}billing-api",
            "podAnnotation": {"iam.amazonaws.com/role": "billing-api"},
            "serviceAccount": {
                "name": "api",
                "namespace": "billing",
                "annotations": {"eks.amazonaws.com/role-arn": f"{base}billing-api"},
            },
            "podIdentityAssociationId": None,
        },
        "search": {
            "servedBy": "kiam",
            "next": None,
            "roleArn": f"{base}search/search",
            "podAnnotation": {"iam.amazonaws.com/role": "search/search"},
            "serviceAccount": None,
            "podIdentityAssociationId": None,
        },
        "worker": {
            "servedBy": "kiam",
            "next": None,
            "roleArn": f"{base}billing.worker",
            "podAnnotation": {"iam.amazonaws.com/role": "billing.worker"},
            "serviceAccount": None,
            "podIdentityAssociationId": None,
        },
    }


def test_the_checks_follow_the_exported_pod_annotation(apps_run: Recording) -> None:
    """The application-reachable check reads the pod annotation where pod authors read it: the
    stack output, handed to the checks as the root stack's outputs."""
    from kiam_eks.invariants.recorded import resources_from_recording
    from kiam_eks.invariants.view import KiamView

    view = KiamView(resources_from_recording(apps_run), expected_of(APPS_CONFIG))
    assert view.stack_outputs == apps_run.stack_outputs
    assert view.stack_outputs["applications"]["worker"]["podAnnotation"] == {
        "iam.amazonaws.com/role": "billing.worker"
    }


# The issue #11 scenario: a name prefix, and applications with their own path below the base.
PREFIXED_APPS = {
    "billing": {"namespace": "billing", "roleName": "app-billing"},
    "search": {
        "namespace": "search",
        "roleName": "app-search",
        "path": "/kiam-apps/team-a/",
        "servedBy": "kiam+irsa",
        "serviceAccount": "indexer",
    },
    "ranking": {"namespace": "search", "roleName": "app-ranking", "path": "/kiam-apps/team-a/ml/"},
}


PREFIXED_CONFIG = base_config(iam={"applicationRoleNamePrefix": "app-"}, applications=PREFIXED_APPS)


@pytest.fixture(scope="module")
def prefixed_run() -> Recording:
    return run_program(PREFIXED_CONFIG)


def test_the_server_may_assume_roles_below_each_application_path(prefixed_run: Recording) -> None:
    base = "arn:aws:iam::111122223333:role/kiam-apps/"
    patterns = [f"{base}app-*", f"{base}team-a/app-*", f"{base}team-a/ml/app-*"]
    policy = prefixed_run.one(
        "aws:iam/rolePolicy:RolePolicy", "kiam-iam-server-assume-applications"
    )
    assert json.loads(policy.inputs["policy"])["Statement"] == [
        {
            "Sid": "AssumeApplicationRoles",
            "Effect": "Allow",
            "Action": "sts:AssumeRole",
            "Resource": patterns,
        }
    ]
    assert prefixed_run.stack_outputs["applicationRolePatterns"] == patterns


def test_pods_annotate_the_path_below_the_base(prefixed_run: Recording) -> None:
    base = "arn:aws:iam::111122223333:role/kiam-apps/"
    outputs: dict[str, Any] = prefixed_run.stack_outputs["applications"]
    assert {app: (o["roleArn"], o["podAnnotation"]) for app, o in outputs.items()} == {
        "billing": (f"{base}app-billing", {"iam.amazonaws.com/role": "app-billing"}),
        "search": (f"{base}team-a/app-search", {"iam.amazonaws.com/role": "team-a/app-search"}),
        "ranking": (
            f"{base}team-a/ml/app-ranking",
            {"iam.amazonaws.com/role": "team-a/ml/app-ranking"},
        ),
    }
    annotations = {
        r.inputs["metadata"]["name"]: r.inputs["metadata"]["annotations"]
        for r in prefixed_run.by_type("kubernetes:core/v1:NamespacePatch")
    }
    assert annotations == {
        "billing": {"iam.amazonaws.com/permitted": f"^({base}app-billing)$"},
        "search": {
            "iam.amazonaws.com/permitted": f"^({base}team-a/app-search|{base}team-a/ml/app-ranking)$"
        },
    }


def test_every_application_with_a_path_and_a_prefix_is_reachable(prefixed_run: Recording) -> None:
    from kiam_eks.invariants import check_all
    from kiam_eks.invariants.recorded import resources_from_recording

    assert check_all(resources_from_recording(prefixed_run), expected_of(PREFIXED_CONFIG)) == []


@pytest.mark.parametrize(
    ("arn", "base", "annotation"),
    [
        ("arn:aws:iam::1:role/kiam-apps/a", "arn:aws:iam::1:role/kiam-apps/", "a"),
        ("arn:aws:iam::1:role/kiam-apps/t/a", "arn:aws:iam::1:role/kiam-apps/", "t/a"),
        ("arn:aws:iam::1:role/a", "arn:aws:iam::1:role/", "a"),
        # Outside the base (possible only with allowAnyRole): the full ARN, which kiam keeps as is.
        (
            "arn:aws:iam::1:role/other/a",
            "arn:aws:iam::1:role/kiam-apps/",
            "arn:aws:iam::1:role/other/a",
        ),
    ],
)
def test_pod_role_annotation(arn: str, base: str, annotation: str) -> None:
    from kiam_eks.contracts.kiam import resolve
    from kiam_eks.specs.iam_policies import pod_role_annotation

    assert pod_role_annotation(arn, base) == annotation
    assert resolve(annotation, base) == arn


def test_every_guarantee_still_holds(apps_run: Recording) -> None:
    from kiam_eks.invariants import check_all
    from kiam_eks.invariants.recorded import resources_from_recording

    assert check_all(resources_from_recording(apps_run), expected_of(APPS_CONFIG)) == []


@pytest.mark.parametrize(
    ("iam", "app", "message"),
    [
        (
            {},
            {"namespace": "a", "roleName": "a", "path": "/other/"},
            "kiam:applications.a.path '/other/' is outside kiam:iam.applicationRolePath '/kiam-apps/': "
            "the kiam server could not assume the role",
        ),
        (
            {"applicationRoleNamePrefix": "app-"},
            {"namespace": "a", "roleName": "billing"},
            "kiam:applications.a.roleName 'billing' does not start with "
            "kiam:iam.applicationRoleNamePrefix 'app-': the kiam server could not assume the role",
        ),
    ],
)
def test_a_role_outside_the_servers_pattern_is_refused(
    iam: dict[str, Any], app: dict[str, Any], message: str
) -> None:
    config = base_config(iam=iam, applications={"a": app})
    values = {k.removeprefix("kiam:"): v for k, v in config.items()}
    with pytest.raises(SettingsError) as caught:
        settings_from_values(values, "stacks/Pulumi.x.yaml")
    assert caught.value.problems == [message]


def test_role_names_are_unique() -> None:
    config = base_config(
        applications={
            "a": {"namespace": "a", "roleName": "same"},
            "b": {"namespace": "b", "roleName": "same"},
        }
    )
    values = {k.removeprefix("kiam:"): v for k, v in config.items()}
    with pytest.raises(SettingsError) as caught:
        settings_from_values(values, "stacks/Pulumi.x.yaml")
    assert caught.value.problems == ["kiam:applications use the role name same more than once"]


def test_an_application_role_trusting_more_is_a_violation(apps_run: Recording) -> None:
    import dataclasses

    from kiam_eks.invariants import Violation, check_all
    from kiam_eks.invariants.recorded import resources_from_recording

    resources = resources_from_recording(apps_run)
    worker = next(r for r in resources if r.name == "kiam-app-worker" and r.type == ROLE)
    broad = json.dumps(
        {"Statement": [{"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "sts:AssumeRole"}]}
    )
    broken = [
        dataclasses.replace(r, inputs={**r.inputs, "assumeRolePolicy": broad}) if r is worker else r
        for r in resources
    ]
    server = apps_run.one(ROLE, "kiam-iam-server").outputs["arn"]
    assert check_all(broken, expected_of(APPS_CONFIG)) == [
        Violation(
            "application-reachable",
            worker.urn,
            f"does not trust the kiam-server role {server} with sts:AssumeRole",
        ),
        Violation(
            "iam-least-privilege",
            worker.urn,
            "trust admits {'AWS': '*'}: application roles trust the kiam-server role, "
            "IRSA and EKS Pod Identity only",
        ),
    ]


@pytest.mark.parametrize(
    ("arns", "expected"),
    [
        (["arn:aws:iam::1:role/a"], "^(arn:aws:iam::1:role/a)$"),
        (
            ["arn:aws:iam::1:role/b", "arn:aws:iam::1:role/a+b.c"],
            "^(arn:aws:iam::1:role/a\\+b\\.c|arn:aws:iam::1:role/b)$",
        ),
    ],
)
def test_permitted_regexp(arns: list[str], expected: str) -> None:
    assert permitted_regexp(arns) == expected


def test_the_offline_plan_shows_what_pods_annotate_and_judges_it(
    tmp_stack: Callable[[Any], Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kiam_eks.specs import iam_policies
    from tools.plan import main

    apps = {k: v for k, v in PREFIXED_APPS.items() if "servedBy" not in v}
    path = tmp_stack(base_config(iam={"applicationRoleNamePrefix": "app-"}, applications=apps))
    assert main(["--config-file", str(path)]) == 0
    out = capsys.readouterr().out
    assert (
        "  applications  billing: pods in billing annotate iam.amazonaws.com/role: app-billing\n"
        "                ranking: pods in search annotate iam.amazonaws.com/role: team-a/ml/app-ranking\n"
    ) in out
    assert "✓ all invariants hold" in out
    # The annotation before issue 11: the bare role name. The plan now refuses it.
    monkeypatch.setattr(
        iam_policies, "pod_role_annotation", lambda arn, base: arn.rsplit("/", 1)[1]
    )
    assert main(["--config-file", str(path), "--no-validate"]) == 1
    assert (
        "✗ [application-reachable] urn:pulumi:case::kiam::kiam:index:ApplicationRole$"
        "aws:iam/role:Role::kiam-app-ranking: pod annotation iam.amazonaws.com/role: app-ranking "
        "resolves against --role-base-arn=arn:aws:iam::111122223333:role/kiam-apps/ to "
        "arn:aws:iam::111122223333:role/kiam-apps/app-ranking, not "
        "arn:aws:iam::111122223333:role/kiam-apps/team-a/ml/app-ranking"
    ) in capsys.readouterr().out

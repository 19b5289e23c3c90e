"""What each example stack renders, validated independently and snapshotted for review.

A change to a manifest or IAM document fails here until it is accepted deliberately with
`python -m pytest tests/test_rendered.py --snapshot-update`, and the snapshot diff shows in the PR.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from syrupy.assertion import SnapshotAssertion

from kiam_eks.settings.cluster import ClusterSettings
from kiam_eks.settings.loader import settings_from_values
from kiam_eks.settings.stack import StackSettings
from tests.conftest import EXAMPLE_STACKS, example_config, run_program
from tools.mock_engine import PROJECT_DIR
from tools.plan_diff import diff_plans, read_plan_dir, report
from tools.render import Plan, render
from tools.validate import Finding, iam_findings, kubernetes_findings, nearest_schema_version

# What kiam itself renders for every stack; an application adds its role and, per namespace, a
# patch of the namespace's permitted-roles annotation (production has one, trusted through IRSA).
KIAM_MANIFESTS = 11
KIAM_ROLES = 2


def rendered(stack: str) -> Plan:
    return render(run_program(example_config(stack), stack=stack))


def example_settings(stack: str) -> StackSettings:
    config = example_config(stack)
    return settings_from_values({k.removeprefix("kiam:"): v for k, v in config.items()}, stack)


@pytest.fixture(scope="module", params=EXAMPLE_STACKS)
def stack_plan(request: pytest.FixtureRequest) -> tuple[str, Plan]:
    return request.param, rendered(request.param)


def test_every_manifest_is_valid_against_the_clusters_kubernetes_schema(
    stack_plan: tuple[str, Plan],
) -> None:
    stack, plan = stack_plan
    settings = example_settings(stack)
    namespaces = {a.namespace for a in settings.applications.values()}
    assert len(plan.manifests) == KIAM_MANIFESTS + len(namespaces)
    assert kubernetes_findings(plan.manifests, settings.cluster.kubernetes_version) == []


def test_every_iam_document_lints_clean(stack_plan: tuple[str, Plan]) -> None:
    stack, plan = stack_plan
    settings = example_settings(stack)
    assert len(plan.iam) == KIAM_ROLES + len(settings.applications)
    assert iam_findings(plan.iam, settings.cluster) == []


def test_an_example_stack_trusts_an_application_through_irsa() -> None:
    """So the IRSA trust policy is linted on every run of the suite and of `make plans`."""
    assert any(
        a.served_by.irsa for s in EXAMPLE_STACKS for a in example_settings(s).applications.values()
    )


def test_the_example_stacks() -> None:
    """Every test over `stack_plan` runs once per example stack: none is left out unnoticed."""
    assert EXAMPLE_STACKS == ["dev", "production"]


# kiam's own roles in every example stack, each with its one inline policy.
KIAM_INLINE_POLICIES = {
    "kiam-iam-server-node.json": ["kiam-iam-server-node-assume-server"],
    "kiam-iam-server.json": ["kiam-iam-server-assume-applications"],
}


def test_iam_documents_are_least_privilege(stack_plan: tuple[str, Plan]) -> None:
    stack, plan = stack_plan
    kiam_path = example_settings(stack).iam.kiam_role_path
    # kiam's own chain; application roles carry what their stack file grants them.
    kiam_roles = {name: r for name, r in plan.iam.items() if r["path"] == kiam_path}
    assert len(kiam_roles) == KIAM_ROLES
    assert {name: sorted(r["inlinePolicies"]) for name, r in kiam_roles.items()} == (
        KIAM_INLINE_POLICIES
    )
    for name, role in kiam_roles.items():
        for document in [role["trustPolicy"], *role["inlinePolicies"].values()]:
            assert len(document["Statement"]) == 1, name
            for statement in document["Statement"]:
                assert statement["Action"] == "sts:AssumeRole"
                assert statement.get("Resource") != "*"
                assert not str(statement.get("Resource", "")).endswith(":role/*")
                assert statement.get("Principal") != {"AWS": "*"}


def test_the_rendered_plan_matches_its_snapshot(
    stack_plan: tuple[str, Plan], snapshot: SnapshotAssertion
) -> None:
    files = {path: text for path, text in stack_plan[1].files().items() if path != "resources.json"}
    assert files == snapshot


# The schema versions kubernetes-validate 1.37 ships (kubernetes_validate/kubernetes-json-schema).
SHIPPED = [f"1.{minor}.0" for minor in range(25, 38)]


@pytest.mark.parametrize(
    ("kubernetes_version", "available", "schemas"),
    [
        ("1.33", SHIPPED, "1.33.0"),
        ("1.37", SHIPPED, "1.37.0"),
        # EKS ran 1.38 before the validator had its schemas: the newest it has, not a refusal.
        ("1.38", SHIPPED, "1.37.0"),
        ("1.99", SHIPPED, "1.37.0"),
        ("1.25", SHIPPED[3:], "1.28.0"),
        # A gap: the nearer one, and the older of two as near.
        ("1.31", ["1.30.0", "1.33.0"], "1.30.0"),
        ("1.32", ["1.30.0", "1.33.0"], "1.33.0"),
        ("1.31", ["1.30.0", "1.32.0"], "1.30.0"),
    ],
)
def test_manifests_are_validated_against_the_nearest_schemas_the_validator_ships(
    kubernetes_version: str, available: list[str], schemas: str
) -> None:
    assert nearest_schema_version(kubernetes_version, available) == schemas


def test_a_version_newer_than_the_schemas_is_validated_against_the_newest_and_named() -> None:
    from kubernetes_validate.utils import latest_version

    deployment: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "x"},
        "spec": {"selector": {}, "template": {}, "replica": 3},
    }
    assert kubernetes_findings({"broken.yaml": deployment}, "1.99") == [
        Finding(
            "broken.yaml",
            f"kubernetes-validate {latest_version()} strict",
            "spec: Additional properties are not allowed ('replica' was unexpected)",
        )
    ]


def test_the_kubernetes_validator_can_fail() -> None:
    deployment: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "x"},
        "spec": {"selector": {}, "template": {}, "replica": 3},
    }
    assert kubernetes_findings({"broken.yaml": deployment}, "1.33") == [
        Finding(
            "broken.yaml",
            "kubernetes-validate 1.33.0 strict",
            "spec: Additional properties are not allowed ('replica' was unexpected)",
        )
    ]


def test_the_iam_linter_can_fail() -> None:
    role = {
        "trustPolicy": {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"Service": "ec2.amazonaws.com"},
                    "Action": "sts:AssumeRole",
                }
            ],
        },
        "inlinePolicies": {
            "broad": {
                "Version": "2012-10-17",
                "Statement": [{"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*"}],
            }
        },
    }
    assert iam_findings({"r.json": role}) == [
        Finding("r.json inlinePolicies.broad", "parliament", "RESOURCE_STAR: ['s3:GetObject']")
    ]


CLUSTER = ClusterSettings(
    name="test", account_id="111122223333", region="eu-west-1", kubernetes_version="1.33"
)
PROVIDER_HOST = "oidc.eks.eu-west-1.amazonaws.com/id/0123456789ABCDEF0123456789ABCDEF"
PROVIDER = f"arn:aws:iam::111122223333:oidc-provider/{PROVIDER_HOST}"


def irsa_role(provider: str = PROVIDER, **changes: Any) -> dict[str, Any]:
    statement: dict[str, Any] = {
        "Effect": "Allow",
        "Principal": {"Federated": provider},
        "Action": "sts:AssumeRoleWithWebIdentity",
        "Condition": {
            "StringEquals": {
                f"{PROVIDER_HOST}:sub": "system:serviceaccount:billing:api",
                f"{PROVIDER_HOST}:aud": "sts.amazonaws.com",
            }
        },
        **changes,
    }
    trust = {"Version": "2012-10-17", "Statement": [statement]}
    return {"trustPolicy": trust, "inlinePolicies": {}}


def test_the_clusters_irsa_trust_lints_clean() -> None:
    assert iam_findings({"r.json": irsa_role()}, CLUSTER) == []


@pytest.mark.parametrize(
    ("role", "reason"),
    [
        (
            irsa_role(PROVIDER.replace("111122223333", "444455556666")),
            "the federated principal is not this cluster's OIDC provider",
        ),
        (
            irsa_role(PROVIDER.replace("eu-west-1", "us-east-1")),
            "the federated principal is not this cluster's OIDC provider",
        ),
        (
            irsa_role(
                "arn:aws:iam::111122223333:oidc-provider/token.actions.githubusercontent.com"
            ),
            "the federated principal is not this cluster's OIDC provider",
        ),
        (
            irsa_role(Condition={"StringEquals": {f"{PROVIDER_HOST}:aud": "sts.amazonaws.com"}}),
            f"no StringEquals {PROVIDER_HOST}:sub naming one service account",
        ),
        (
            irsa_role(
                Condition={
                    "StringLike": {f"{PROVIDER_HOST}:sub": "system:serviceaccount:*"},
                    "StringEquals": {f"{PROVIDER_HOST}:aud": "sts.amazonaws.com"},
                }
            ),
            "its only condition must be StringEquals",
        ),
        (
            irsa_role(
                Condition={
                    "StringEquals": {f"{PROVIDER_HOST}:sub": "system:serviceaccount:billing:api"}
                }
            ),
            f"no StringEquals {PROVIDER_HOST}:aud sts.amazonaws.com",
        ),
        (
            irsa_role(Action="sts:AssumeRole"),
            "the statement must Allow exactly sts:AssumeRoleWithWebIdentity",
        ),
    ],
    ids=[
        "other-account",
        "other-region",
        "other-issuer",
        "no-sub",
        "sub-wildcard",
        "no-aud",
        "action",
    ],
)
def test_a_federated_trust_that_is_not_the_clusters_irsa_still_fails(
    role: dict[str, Any], reason: str
) -> None:
    provider = role["trustPolicy"]["Statement"][0]["Principal"]["Federated"]
    assert iam_findings({"r.json": role}, CLUSTER) == [
        Finding(
            "r.json trustPolicy",
            "parliament",
            f"UNKNOWN_FEDERATION_SOURCE: {provider} (not this cluster's IRSA trust: {reason})",
        )
    ]


def test_one_irsa_statement_does_not_excuse_another_for_the_same_provider() -> None:
    role = irsa_role()
    loose = dict(role["trustPolicy"]["Statement"][0], Condition={})
    role["trustPolicy"]["Statement"].append(loose)
    assert [f.message for f in iam_findings({"r.json": role}, CLUSTER)] == [
        f"UNKNOWN_FEDERATION_SOURCE: {PROVIDER} (not this cluster's IRSA trust: its only "
        "condition must be StringEquals)"
    ] * 2


def test_irsa_findings_are_kept_without_a_cluster_to_compare_with() -> None:
    assert [f.message for f in iam_findings({"r.json": irsa_role()})] == [
        f"UNKNOWN_FEDERATION_SOURCE: {PROVIDER} (not this cluster's IRSA trust: no cluster to "
        "compare it with)"
    ]


def test_the_plan_reports_validator_failures_per_object_and_exits_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tools import plan as plan_command
    from tools import validate

    def broken(
        manifests: dict[str, Any], iam: dict[str, Any], version: str, patches: Any = ()
    ) -> list[Finding]:
        return [Finding("deployment-kiam-kiam-server.yaml", "kubernetes-validate", "spec: bad")]

    monkeypatch.setattr(validate, "validate_plan", broken)
    monkeypatch.setattr(plan_command.multiprocessing, "get_all_start_methods", lambda: ["spawn"])
    assert plan_command.main(["--stack", "dev"]) == 1
    assert (
        "✗ deployment-kiam-kiam-server.yaml: kubernetes-validate: spec: bad"
        in capsys.readouterr().out
    )


def test_plan_diff_shows_each_changed_object_and_a_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tools.plan import main

    assert main(["--stack", "dev", "--out", str(tmp_path), "--no-validate"]) == 0
    capsys.readouterr()
    assert main(["--stack", "dev", "--diff", str(tmp_path), "--no-validate"]) == 0
    assert capsys.readouterr().out == "0 objects added, 0 changed, 0 removed\n"

    deployment = tmp_path / "manifests" / "deployment-kiam-kiam-server.yaml"
    deployment.write_text(deployment.read_text().replace("replicas: 2", "replicas: 5"))
    (tmp_path / "manifests" / "configmap-kiam-old.yaml").write_text("kind: ConfigMap\n")
    (tmp_path / "iam" / "kiam-iam-server.json").unlink()
    assert main(["--stack", "dev", "--diff", str(tmp_path), "--no-validate"]) == 1
    out = capsys.readouterr().out
    assert (
        "--- base/manifests/deployment-kiam-kiam-server.yaml\n+++ head/manifests/deployment-kiam-kiam-server.yaml\n"
        in out
    )
    assert "-  replicas: 5\n+  replicas: 2\n" in out
    assert "--- base/manifests/configmap-kiam-old.yaml\n+++ /dev/null\n" in out
    assert "--- /dev/null\n+++ head/iam/kiam-iam-server.json\n" in out
    assert out.endswith("1 objects added, 1 changed, 1 removed\n")


def test_plan_diff_between_two_folders(tmp_path: Path) -> None:
    from tools.plan import write

    write(rendered("dev"), tmp_path / "base")
    write(rendered("production"), tmp_path / "head")
    result = diff_plans(read_plan_dir(tmp_path / "base"), read_plan_dir(tmp_path / "head"))
    # Production's application roles and namespace patches are its own, and so are payments'
    # Pod Identity association and the agent add-on.
    assert result.added == [
        "aws/addon-kiam-pod-identity-agent.json",
        "aws/podidentityassociation-kiam-app-payments-pod-identity.json",
        "iam/kiam-app-orders.json",
        "iam/kiam-app-payments.json",
        "manifests/namespace-orders.yaml",
        "manifests/namespace-payments.yaml",
    ]
    assert result.removed == []
    assert result.changed == [
        "aws/launchtemplate-kiam-server-nodes-launch-template.json",
        "aws/nodegroup-kiam-server-nodes.json",
        "iam/kiam-iam-server-node.json",
        "iam/kiam-iam-server.json",
        "manifests/daemonset-kiam-kiam-agent.yaml",
        "manifests/deployment-kiam-kiam-server.yaml",
        # Production's certificates live 4380 hours, not the default 8760.
        "tls/locallysignedcert-kiam-tls-agent.json",
        "tls/locallysignedcert-kiam-tls-server.json",
    ]
    assert report(result).endswith("6 objects added, 8 changed, 0 removed")
    assert (
        json.loads((tmp_path / "head" / "iam" / "kiam-iam-server.json").read_text())["path"]
        == "/kiam/"
    )


def _stack_file(tmp_path: Path, **sections: dict[str, Any]) -> Path:
    config = yaml.safe_load((PROJECT_DIR / "stacks" / "Pulumi.dev.yaml").read_text())["config"]
    for key, values in sections.items():
        config[f"kiam:{key}"] = {**config.get(f"kiam:{key}", {}), **values}
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(yaml.safe_dump({"config": config}))
    return path


def test_plan_diff_judges_the_change_from_the_base_and_says_what_it_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tools.plan import main

    base = tmp_path / "base"
    assert main(["--stack", "dev", "--out", str(base), "--no-validate"]) == 0
    assert json.loads((base / "outputs.json").read_text())["installed"]["server"][
        "serviceName"
    ] == ("kiam-server")
    capsys.readouterr()
    renamed = _stack_file(tmp_path, server={"serviceName": "kiam-grpc"})
    assert main(["--config-file", str(renamed), "--diff", str(base), "--no-validate"]) == 1
    out = capsys.readouterr().out
    assert out.startswith(
        "sequenced change: kiam:server.serviceName: the running agents dial "
        "kiam-server.kiam.svc.cluster.local:9610 until each is rolled"
    )
    assert "--- base/tls/certrequest-kiam-tls-server.json" in out
    assert out.endswith(
        "What it does:\n"
        "  - the agents restart (DaemonSet kiam-agent's pod template changes), 10 of 100 nodes at "
        "a time (maxUnavailable 10%): 10 restarts of about 30s, about 5 min; `pulumi up` waits "
        "up to 10 min\n"
        "  - the servers restart (Deployment kiam-server's pod template changes), one server at a "
        "time\n"
        "  - certificates change (certrequest-kiam-tls-server): the TLS Secrets holding them are "
        "updated in place\n"
        "1 objects added, 3 changed, 1 removed\n"
    )


def test_plan_diff_refuses_what_pulumi_up_would_refuse_from_the_base(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tools.plan import main

    base = tmp_path / "base"
    assert main(["--stack", "dev", "--out", str(base), "--no-validate"]) == 0
    capsys.readouterr()
    moved = _stack_file(tmp_path, agent={"port": 9000})
    assert main(["--config-file", str(moved), "--diff", str(base), "--no-validate"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        f"{moved}: refused: this change from what the stack's last update installed would take "
        "credentials away (1 problem):\n  - kiam:agent.port: every node's iptables rule sends"
    )


def test_plan_diff_says_a_namespace_goes_with_everything_in_it_and_a_group_is_replaced() -> None:
    from tools.plan_diff import consequences

    namespace = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: kiam\n"
    group = '{"instanceTypes": ["t3.small"], "labels": {}}'
    base = {
        "manifests/namespace-kiam.yaml": namespace,
        "aws/nodegroup-kiam-server-nodes.json": group,
    }
    head = {"aws/nodegroup-kiam-server-nodes.json": group.replace("t3.small", "m6i.large")}
    assert consequences(base, head) == [
        "namespace kiam is deleted, and with it every object in it",
        "the server node group is replaced (instanceTypes): new nodes first, the servers Ready "
        "there, then the old nodes drained",
    ]

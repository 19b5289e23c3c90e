"""`tools.role_trust` and `kiam_usage --check-trust`: each role that exists already is checked
against what the stack's outputs ask of its trust, read from IAM as GetRole returns it. IAM here
is moto's (its GetRole and GetCallerIdentity, through boto3 as the tool calls them), not a fake
written for the test."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from moto import mock_aws

from kiam_eks.settings.loader import settings_from_values
from kiam_eks.settings.stack import StackSettings
from tests import guarantee_views as g
from tests.conftest import run_program
from tools import kiam_usage
from tools.role_trust import Boto3Iam, holds, trust_checks

MOVING = g.existing_config("kiam+podIdentity", "kiam+podIdentity")


def settings_of(config: dict[str, Any]) -> StackSettings:
    values = {k.removeprefix("kiam:"): v for k, v in config.items() if k.startswith("kiam:")}
    return settings_from_values(values, "stacks/Pulumi.test.yaml")


@pytest.fixture(scope="module")
def outputs() -> dict[str, Any]:
    """The outputs the stack's last update left, as `pulumi stack output --json` prints them."""
    return dict(run_program(MOVING).stack_outputs)


@pytest.fixture
def iam(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """moto's IAM, the caller in the cluster's account, ledger's role as its owner made it."""
    for key, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "eu-west-1",
        "MOTO_ACCOUNT_ID": g.ACCOUNT,
    }.items():
        monkeypatch.setenv(key, value)
    with mock_aws():
        client = boto3.client("iam")
        client.create_role(
            RoleName="ledger-api",
            Path="/teams/ledger/",
            AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": []}),
        )
        yield client


def set_trust(iam: Any, statements: list[Any]) -> None:
    document = {"Version": "2012-10-17", "Statement": statements}
    iam.update_assume_role_policy(RoleName="ledger-api", PolicyDocument=json.dumps(document))


def test_a_role_lacking_a_statement_it_needs_now_is_reported_with_the_statement(
    iam: Any, outputs: dict[str, Any]
) -> None:
    asked = outputs["applications"]["ledger"]["trust"]
    kiam_statement, pod_identity_statement = asked["required"]
    set_trust(iam, [kiam_statement])
    ledger, reports = trust_checks(settings_of(MOVING), outputs, Boto3Iam())
    assert ledger.application == "ledger" and ledger.checked
    assert ledger.missing == [pod_identity_statement]
    assert ledger.missing_for_next == {"podIdentity": []}
    assert ledger.notes() == [
        f"its owner must add 1 statement(s) to the trust of {g.LEDGER_ARN} (trust.missing) "
        "before pods are recreated"
    ]
    # Another account's role is never looked up by its name in the caller's account.
    assert not reports.checked
    assert reports.reason == (
        f"the role is in account {g.OTHER_ACCOUNT} and the caller's credentials in {g.ACCOUNT}: "
        f"run again with credentials of {g.OTHER_ACCOUNT}"
    )
    assert reports.required == outputs["applications"]["reports"]["trust"]["required"]


def test_a_role_holding_each_statement_however_it_is_written_passes(
    iam: Any, outputs: dict[str, Any]
) -> None:
    kiam_statement, pod_identity_statement = outputs["applications"]["ledger"]["trust"]["required"]
    # As an owner may write them: a Sid, one action as a list, another order, another statement.
    rewritten = {
        "Sid": "KiamServer",
        **kiam_statement,
        "Action": ["sts:AssumeRole"],
    }
    reordered = {**pod_identity_statement, "Action": ["sts:TagSession", "sts:AssumeRole"]}
    other = {
        "Effect": "Allow",
        "Principal": {"Service": "ec2.amazonaws.com"},
        "Action": "sts:AssumeRole",
    }
    set_trust(iam, [other, reordered, rewritten])
    ledger = trust_checks(settings_of(MOVING), outputs, Boto3Iam())[0]
    assert ledger.holds_required and ledger.notes() == []


def test_a_statement_with_another_condition_value_is_not_held() -> None:
    wanted = {
        "Effect": "Allow",
        "Principal": {"Service": "pods.eks.amazonaws.com"},
        "Action": ["sts:AssumeRole", "sts:TagSession"],
        "Condition": {"StringEquals": {"aws:RequestTag/kubernetes-namespace": "ledger"}},
    }
    wider = {**wanted, "Condition": {"StringEquals": {"aws:RequestTag/kubernetes-namespace": "*"}}}
    assert holds([wanted], wanted)
    assert not holds([wider], wanted)
    assert not holds([{k: v for k, v in wanted.items() if k != "Condition"}], wanted)


def test_a_role_iam_does_not_have_is_not_checked(iam: Any, outputs: dict[str, Any]) -> None:
    iam.delete_role(RoleName="ledger-api")
    ledger = trust_checks(settings_of(MOVING), outputs, Boto3Iam())[0]
    assert (ledger.checked, ledger.reason) == (False, "IAM has no role ledger-api")


def test_before_the_first_update_there_is_nothing_to_check(iam: Any) -> None:
    ledger, _ = trust_checks(settings_of(MOVING), {}, Boto3Iam())
    assert (ledger.checked, ledger.reason) == (
        False,
        "the stack's outputs have no trust for it yet (run `pulumi up` first, then pass its "
        "outputs)",
    )


def test_kiam_usage_check_trust_prints_each_check_and_exits_1_while_a_role_lacks_one(
    iam: Any,
    outputs: dict[str, Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    stack = tmp_path / "Pulumi.usage.yaml"
    stack.write_text(yaml.safe_dump({"config": MOVING}))
    saved = tmp_path / "outputs.json"
    saved.write_text(json.dumps(outputs))
    # No pod yet, and the applications' namespaces (a missing one makes its application not
    # ready, whatever its trust says).
    namespaces = [
        {"metadata": {"name": app["namespace"]}} for app in MOVING["kiam:applications"].values()
    ]
    monkeypatch.setattr(kiam_usage, "read_cluster", lambda kubeconfig: ([], namespaces))
    args = ["--config-file", str(stack), "--kubeconfig", str(tmp_path / "k"), "--json"]
    required = outputs["applications"]["ledger"]["trust"]["required"]

    set_trust(iam, required[:1])
    assert kiam_usage.main([*args, "--check-trust", str(saved)]) == 1
    printed = json.loads(capsys.readouterr().out)["applications"]
    assert printed["ledger"]["trust"] == {
        "roleArn": g.LEDGER_ARN,
        "checked": True,
        "reason": None,
        "required": required,
        "next": {"podIdentity": []},
        "missing": required[1:],
        "missingForNext": {"podIdentity": []},
    }
    assert printed["reports"]["trust"]["checked"] is False

    set_trust(iam, required)
    assert kiam_usage.main([*args, "--check-trust", str(saved)]) == 0
    capsys.readouterr()

    saved.write_text("not json")
    assert kiam_usage.main([*args, "--check-trust", str(saved)]) == 2
    assert capsys.readouterr().err.startswith(
        f"{saved}: cannot read the stack's outputs (Expecting value: line 1 column 1 (char 0)): "
        "write them with `pulumi stack output --json > FILE`"
    )

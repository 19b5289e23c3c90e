"""The kiam-server role's permission within IAM's quotas (settings/server_permission.py): exact,
spread over its inline policy and customer managed policies, refused past them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kiam_eks.contracts.iam_quotas import MANAGED_POLICY_CHARACTERS, ROLE_INLINE_POLICY_CHARACTERS
from kiam_eks.contracts.pulumi_config import MAX_ARG_STRLEN, config_environment_bytes
from kiam_eks.settings import SettingsError
from kiam_eks.settings.loader import settings_from_values
from kiam_eks.settings.policy_document import policy_characters
from kiam_eks.settings.server_permission import (
    PermissionTooLargeError,
    documents,
    place,
)
from tools import plan, scale_stack, validate

PATTERN = "arn:aws:iam::111122223333:role/kiam-apps/*"


def arns(count: int, start: int = 0) -> list[str]:
    return [
        f"arn:aws:iam::111122223333:role/teams/team-{i % 20:02d}/team-{i % 20:02d}-app-{i:04d}"
        for i in range(start, start + count)
    ]


def test_a_thousand_exact_arns_fit_the_default_quotas_each_document_within_its_own() -> None:
    resources = [PATTERN, *arns(1000)]
    placement = place(resources, 10)
    assert [r for p in placement for r in p] == resources  # every one, once, in order
    sizes = [policy_characters(d) for d in documents(placement)]
    assert len(sizes) <= 11
    assert sizes[0] <= ROLE_INLINE_POLICY_CHARACTERS
    assert all(size <= MANAGED_POLICY_CHARACTERS for size in sizes[1:])
    # Filled, not scattered: each document but the last could not take the next resource.
    assert sizes[0] > ROLE_INLINE_POLICY_CHARACTERS - 70


def test_a_small_stack_keeps_its_one_inline_document() -> None:
    assert place([PATTERN, *arns(3)], 10) == [[PATTERN, *arns(3)]]
    assert documents([[PATTERN]])[0]["Statement"][0]["Resource"] == PATTERN


def test_an_update_moves_no_resource_from_one_document_to_another() -> None:
    before = place([PATTERN, *arns(400)], 10)
    added = sorted([*arns(400), "arn:aws:iam::111122223333:role/teams/a-new-one"])
    after = place([PATTERN, *added], 10, before)
    for old, new in zip(before, after, strict=False):
        assert new[: len(old)] == old  # kept where it was; the new one went to the first room
    assert "arn:aws:iam::111122223333:role/teams/a-new-one" in after[-1]
    removed = [PATTERN, *arns(400)[5:]]
    shrunk = place(removed, 10, before)
    assert shrunk[0] == [r for r in before[0] if r in removed]
    assert shrunk[1:] == before[1:]


def test_past_every_document_the_permission_is_refused_naming_the_quota_and_the_ways_out() -> None:
    long = [arn + "-with-a-much-longer-name" for arn in arns(1000)]
    with pytest.raises(PermissionTooLargeError) as raised:
        place([PATTERN, *long], 10)
    message = str(raised.value)
    assert "1000 roles by exact ARN" in message
    assert "kiam:iam.managedPoliciesPerRole (10)" in message
    assert "L-0DA4ABF3" in message
    assert len(place([PATTERN, *long], 20)) > 11  # the raised quota takes it


def test_a_stack_past_the_quotas_is_refused_before_anything_is_registered(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = scale_stack.scale_stack(1400)["config"]
    with pytest.raises(SettingsError) as raised:
        settings_from_values({k.removeprefix("kiam:"): v for k, v in config.items()}, "scale")
    assert "1120 roles by exact ARN" in str(raised.value)
    # A stack file of 1,400 applications is past what Pulumi can hand a program at all
    # (contracts/pulumi_config.py); one of 600 roles with long names is past IAM's quotas first.
    long_named = {
        **scale_stack.scale_stack(10)["config"],
        "kiam:applications": {
            f"app-{i:04d}": {
                "namespace": f"team-{i % 20:02d}",
                "roleArn": f"arn:aws:iam::444455556666:role/teams/{'long-path-' * 9}/app-{i:04d}",
            }
            for i in range(600)
        },
    }
    stack = tmp_path / "Pulumi.big.yaml"
    stack.write_text(yaml.safe_dump({"config": long_named}))
    assert config_environment_bytes(long_named) < MAX_ARG_STRLEN
    assert plan.main(["--config-file", str(stack), "--no-validate"]) == plan.EXIT_INVALID_SETTINGS
    assert "LimitExceeded" in capsys.readouterr().err


def test_the_validator_names_a_document_past_its_quota() -> None:
    big = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": arns(200)}],
    }
    role = {
        "trustPolicy": {"Version": "2012-10-17", "Statement": []},
        "inlinePolicies": {"a": big},
        "managedPolicies": {"m": big},
    }
    findings = validate.quota_findings("r.json", role)
    assert [(f.document, f.validator) for f in findings] == [
        ("r.json inlinePolicies together", "iam-quotas"),
        ("r.json managedPolicies.m", "iam-quotas"),
    ]
    assert "IAM allows 6,144" in findings[1].message


def _settings(applications: int, extra: dict[str, dict[str, str]] | None = None):  # type: ignore[no-untyped-def]
    config = scale_stack.scale_stack(applications)["config"]
    config["kiam:applications"].update(extra or {})
    return settings_from_values({k.removeprefix("kiam:"): v for k, v in config.items()}, "s")


def test_the_installed_facts_carry_the_layout_to_the_next_update_which_moves_nothing() -> None:
    from kiam_eks.transitions.installed import installed_by

    before = installed_by(_settings(300), None)
    assert before.server_permission is not None and len(before.server_permission) == 2
    assert "serverPermission" in before.to_output()
    # A role whose ARN sorts before every other: a fresh layout would push the inline policy's
    # last ARN into the managed one; the installed layout keeps it where it was.
    first = "arn:aws:iam::111122223333:role/teams/aaa/first"
    after = installed_by(
        _settings(300, {"aaa-first": {"namespace": "team-00", "roleArn": first}}), before
    )
    assert after.server_permission is not None
    for old, new in zip(before.server_permission, after.server_permission, strict=True):
        assert new[: len(old)] == old
    assert first in after.server_permission[-1]
    assert "serverPermission" not in installed_by(_settings(10), None).to_output()


def _long_named_roles(count: int) -> dict[str, Any]:
    """A stack serving `count` roles made elsewhere, each ARN about 100 characters: 110 of them
    are past the inline policy's 10,240 characters and well inside one managed policy more,
    with few resources to plan (an existing role adds none of its own)."""
    config = scale_stack.scale_stack(0)
    config["config"]["kiam:applications"] = {
        f"app-{i:03d}": {
            "namespace": f"team-{i % 4}",
            "roleArn": "arn:aws:iam::111122223333:role/teams/a-team-with-a-long-path-name/"
            f"an-application-role-with-a-long-name-{i:03d}",
        }
        for i in range(count)
    }
    return config


def _assert_written_exactly(config: dict[str, Any], plan_dir: Path, printed: str) -> None:
    """The server role's documents hold the pattern and every role kiam serves by ARN, nothing
    else; the guarantees read them all and hold; each document is within its quota."""
    assert "✓ all invariants hold" in printed
    role = json.loads((plan_dir / "iam" / "kiam-iam-server.json").read_text())
    assert sorted(role["managedPolicies"]) == ["kiam-iam-server-assume-applications-1"]
    assert len(role["managedPolicyArns"]) == 1
    written = [r for document in _server_documents(plan_dir) for r in document]
    apps = config["config"]["kiam:applications"].values()
    existing = {a["roleArn"] for a in apps if "roleArn" in a}
    assert len(written) == len(set(written)) == len(existing) + 1
    assert set(written) == existing | {PATTERN}
    assert validate.quota_findings("kiam-iam-server.json", role) == []


def _server_documents(plan_dir: Path) -> list[list[str]]:
    role = json.loads((plan_dir / "iam" / "kiam-iam-server.json").read_text())
    documents = [*role["inlinePolicies"].values(), *role.get("managedPolicies", {}).values()]
    resource = [d["Statement"][0]["Resource"] for d in documents]
    return [[r] if isinstance(r, str) else r for r in resource]


def test_the_program_keeps_the_last_updates_layout_and_writes_the_new_role_where_there_is_room(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Through the program: the permission over the inline and one managed policy, every
    guarantee holding; then the base plan's `installed` output is the last update's (as
    `--diff` reads it), and the next update's documents keep every ARN where it was."""
    base_config = _long_named_roles(110)
    base_stack, base_dir = tmp_path / "Pulumi.s.yaml", tmp_path / "base"
    base_stack.write_text(yaml.safe_dump(base_config))
    assert (
        plan.main(["--config-file", str(base_stack), "--no-validate", "--out", str(base_dir)]) == 0
    )
    _assert_written_exactly(base_config, base_dir, capsys.readouterr().out)
    first = "arn:aws:iam::111122223333:role/teams/a-first/first"  # sorts before every other
    base_config["config"]["kiam:applications"]["aaa-first"] = {
        "namespace": "team-00",
        "roleArn": first,
    }
    next_stack, next_dir = tmp_path / "next" / "Pulumi.s.yaml", tmp_path / "next-plan"
    next_stack.parent.mkdir()
    next_stack.write_text(yaml.safe_dump(base_config))
    code = plan.main(
        ["--config-file", str(next_stack), "--diff", str(base_dir), "--out", str(next_dir)]
    )
    assert code == plan.EXIT_FAILED  # the plans differ: one ARN more
    capsys.readouterr()
    before, after = _server_documents(base_dir), _server_documents(next_dir)
    assert len(before) == len(after) == 2
    assert after[0] == before[0]  # a fresh layout would have pushed its last ARN out
    assert after[1] == [*before[1], first]

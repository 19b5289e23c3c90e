"""The GitHub workflows users run: valid against the workflow schema, and wired as the README says."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tools.mock_engine import PROJECT_DIR

WORKFLOWS = PROJECT_DIR / ".github" / "workflows"
CHECK = [
    str(Path(sys.executable).parent / "check-jsonschema"),
    "--builtin-schema",
    "vendor.github-workflows",
]


def load(name: str) -> dict[Any, Any]:
    document: dict[Any, Any] = yaml.safe_load((WORKFLOWS / name).read_text())
    return document


def steps_using(job: dict[str, Any], action: str) -> list[dict[str, Any]]:
    return [s for s in job["steps"] if str(s.get("uses", "")).startswith(action)]


def test_every_workflow_validates_against_the_github_schema() -> None:
    files = sorted(str(p) for p in WORKFLOWS.glob("*.yml"))
    assert [Path(f).name for f in files] == ["ci.yml", "deploy.yml", "preview.yml"]
    result = subprocess.run([*CHECK, *files], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_schema_check_can_fail(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yml"
    broken.write_text("name: x\non: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    stepz: []\n")
    result = subprocess.run([*CHECK, str(broken)], capture_output=True, text=True, check=False)
    assert result.returncode == 1


def test_ci_tests_and_plans_every_stack_and_uploads_the_plans() -> None:
    ci = load("ci.yml")
    assert ci[True] == {
        "push": {"branches": ["main"]},
        "pull_request": None,
    }  # YAML reads `on` as True
    assert [s.get("run") for s in ci["jobs"]["test"]["steps"] if "run" in s] == ["make test"]
    plan = ci["jobs"]["plan"]
    assert [s.get("run") for s in plan["steps"] if "run" in s] == ["make plans"]
    assert steps_using(plan, "actions/upload-artifact")[0]["with"]["path"] == "plan/"


@pytest.mark.parametrize(
    ("workflow", "job", "command"),
    [("preview.yml", "preview", "preview"), ("deploy.yml", "up", "up")],
)
def test_pulumi_runs_with_oidc_credentials_a_self_managed_backend_and_the_policy_pack(
    workflow: str, job: str, command: str
) -> None:
    spec = load(workflow)["jobs"][job]
    assert spec["permissions"]["id-token"] == "write"
    aws = steps_using(spec, "aws-actions/configure-aws-credentials")[0]["with"]
    assert "role-to-assume" in aws
    assert not {"aws-access-key-id", "aws-secret-access-key"} & set(aws)
    pulumi = steps_using(spec, "pulumi/actions")[0]
    assert pulumi["with"]["command"] == command
    assert pulumi["with"]["cloud-url"] == "${{ vars.PULUMI_BACKEND_URL }}"
    assert pulumi["with"]["policyPacks"] == "policy"
    assert pulumi["env"] == {"PULUMI_CONFIG_PASSPHRASE": "${{ secrets.PULUMI_CONFIG_PASSPHRASE }}"}


def test_previews_comment_on_the_pull_request() -> None:
    preview = load("preview.yml")
    inputs = steps_using(preview["jobs"]["preview"], "pulumi/actions")[0]["with"]
    assert (inputs["comment-on-pr"], inputs["edit-pr-comment"], inputs["diff"]) == (
        True,
        True,
        True,
    )
    plan_diff = preview["jobs"]["plan-diff"]
    assert "id-token" not in plan_diff["permissions"]
    assert not steps_using(plan_diff, "aws-actions")
    assert "tools.plan --stack" in "\n".join(s.get("run", "") for s in plan_diff["steps"])


def test_deploys_one_environment_per_stack_never_two_runs_at_once() -> None:
    up = load("deploy.yml")["jobs"]["up"]
    assert up["environment"] == "${{ matrix.stack }}"
    assert up["concurrency"] == {"group": "deploy-${{ matrix.stack }}", "cancel-in-progress": False}
    assert up["strategy"]["max-parallel"] == 1


def test_deploys_only_a_push_to_main_that_passed_ci_and_exactly_the_commit_tested() -> None:
    deploy = load("deploy.yml")
    assert deploy[True] == {
        "workflow_run": {
            "workflows": [load("ci.yml")["name"]],
            "types": ["completed"],
            "branches": ["main"],
        }
    }  # no push or manual trigger: either would deploy without CI
    jobs = deploy["jobs"]
    assert jobs["stacks"]["if"] == (
        "github.event.workflow_run.conclusion == 'success' && github.event.workflow_run.event == 'push'"
    )
    assert jobs["up"]["needs"] == "stacks"  # skipped with it when CI did not pass
    for job in jobs.values():
        checkout = steps_using(job, "actions/checkout")
        assert [s["with"]["ref"] for s in checkout] == ["${{ github.event.workflow_run.head_sha }}"]


def test_deploy_installs_the_program_and_the_policy_pack_only() -> None:
    """`make install` installs requirements.txt alone (tests/test_requirements.py), so the job
    that holds the deploy role runs no test, lint or validator package."""
    up = load("deploy.yml")["jobs"]["up"]
    assert [s["run"] for s in up["steps"] if "run" in s] == [
        "make install && python -m venv policy/venv && policy/venv/bin/pip install -r policy/requirements.txt"
    ]

"""The GitHub workflows users run: valid against the workflow schema, and wired as docs/pull-requests.md says."""

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
    ("workflow", "job", "role", "command"),
    [
        ("preview.yml", "preview", "AWS_PREVIEW_ROLE_ARN", "tools.fleet preview"),
        ("deploy.yml", "up", "AWS_DEPLOY_ROLE_ARN", "tools.fleet up"),
    ],
)
def test_the_fleet_tool_runs_with_oidc_credentials_and_a_self_managed_backend(
    workflow: str, job: str, role: str, command: str
) -> None:
    spec = load(workflow)["jobs"][job]
    assert spec["permissions"]["id-token"] == "write"
    aws = steps_using(spec, "aws-actions/configure-aws-credentials")[0]["with"]
    assert aws["role-to-assume"] == f"${{{{ vars.{role} }}}}"
    assert not {"aws-access-key-id", "aws-secret-access-key"} & set(aws)
    # The Pulumi action only installs the CLI (no command); the fleet tool runs it.
    assert [s.get("with") for s in steps_using(spec, "pulumi/actions")] == [None]
    runs = [s for s in spec["steps"] if command in s.get("run", "")]
    assert len(runs) == 1
    assert runs[0]["env"]["PULUMI_BACKEND_URL"] == "${{ vars.PULUMI_BACKEND_URL }}"
    assert runs[0]["env"]["PULUMI_CONFIG_PASSPHRASE"] == "${{ secrets.PULUMI_CONFIG_PASSPHRASE }}"


def test_the_fleet_file_names_the_policy_pack_the_workflows_install() -> None:
    assert yaml.safe_load((PROJECT_DIR / "fleet.yaml").read_text())["policyPack"] == "policy"
    for workflow, job in (("preview.yml", "preview"), ("deploy.yml", "up")):
        install = next(s["run"] for s in load(workflow)["jobs"][job]["steps"] if "run" in s)
        assert install == "make install policy-pack"


def test_the_fleet_preview_comments_one_table_on_the_pull_request_and_fails_after() -> None:
    preview = load("preview.yml")
    job = preview["jobs"]["preview"]
    assert "strategy" not in job  # one job previews every affected stack
    run = next(s for s in job["steps"] if s.get("id") == "preview")
    assert run["env"]["STACKS"] == "${{ join(fromJSON(needs.stacks.outputs.stacks), ' ') }}"
    assert (
        ".venv/bin/python -m tools.fleet preview --stacks $STACKS --parallel 4 --markdown "
        "fleet-preview.md" in run["run"]
    )
    comment = steps_using(job, "marocchino/sticky-pull-request-comment")[0]
    assert comment["with"] == {"header": "fleet-preview", "path": "fleet-preview.md"}
    # The comment is posted first; then the job fails with the tool's exit code.
    names = [s.get("uses", s.get("name")) for s in job["steps"]]
    assert names[-2:] == [
        "marocchino/sticky-pull-request-comment@v2",
        "Fail when a stack's preview failed",
    ]
    assert job["steps"][-1]["run"] == 'exit "${{ steps.preview.outputs.status }}"'
    plan_diff = preview["jobs"]["plan-diff"]
    assert "id-token" not in plan_diff["permissions"]
    assert not steps_using(plan_diff, "aws-actions")
    assert "tools.plan --stack" in "\n".join(s.get("run", "") for s in plan_diff["steps"])


def test_deploys_wave_by_wave_one_environment_per_wave_never_two_runs_at_once() -> None:
    deploy = load("deploy.yml")
    assert deploy["concurrency"] == {"group": "deploy", "cancel-in-progress": False}
    assert "tools.fleet waves" in deploy["jobs"]["waves"]["steps"][-1]["run"]
    up = deploy["jobs"]["up"]
    assert up["environment"] == "${{ matrix.wave }}"
    assert up["strategy"] == {
        "fail-fast": True,
        "max-parallel": 1,
        "matrix": {"wave": "${{ fromJSON(needs.waves.outputs.waves) }}"},
    }
    run = next(s for s in up["steps"] if "tools.fleet up" in s.get("run", ""))
    assert run["run"] == UP


# `exec`: the runner's SIGINT on a cancel goes to the step's entry process only, and bash passes
# it on to no child (actions/runner ProcessInvoker.cs); the fleet tool must be that process.
UP = 'exec .venv/bin/python -m tools.fleet up --waves "${{ matrix.wave }}"'


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
    assert jobs["waves"]["if"] == (
        "github.event.workflow_run.conclusion == 'success' && github.event.workflow_run.event == 'push'"
    )
    assert jobs["up"]["needs"] == "waves"  # skipped with it when CI did not pass
    for job in jobs.values():
        checkout = steps_using(job, "actions/checkout")
        assert [s["with"]["ref"] for s in checkout] == ["${{ github.event.workflow_run.head_sha }}"]


def test_deploy_installs_the_program_and_the_policy_pack_only() -> None:
    """`make install` installs requirements.txt alone (tests/test_requirements.py), so the job
    that holds the deploy role runs no test, lint or validator package."""
    up = load("deploy.yml")["jobs"]["up"]
    assert [s["run"] for s in up["steps"] if "run" in s] == ["make install policy-pack", UP]

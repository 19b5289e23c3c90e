"""The pure parts of `python -m e2e.scale_tools` (the pods it makes of the stack's outputs, how it
judges the tools' answers, how it measures) and `python -m e2e.bench --applications`'s choice of
stack; nothing here starts a control plane."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from pulumi.runtime import rpc

from e2e import bench, scale_tools
from e2e.harness import toolchain
from e2e.harness.app_pods import Workload
from e2e.harness.process_cpu import CLI, KINDS, PROGRAM
from kiam_eks.contracts.labels import ROLE_ANNOTATION
from kiam_eks.contracts.pulumi_config import MAX_ARG_STRLEN, config_environment_bytes
from tools.scale_stack import scale_config

OUTPUTS = {
    "team-00-app-0000": {
        "servedBy": "kiam",
        "podAnnotation": {ROLE_ANNOTATION: "team-00/team-00-app-0000"},
        "serviceAccount": None,
    },
    "team-01-app-0009": {
        "servedBy": "kiam+irsa",
        "podAnnotation": {ROLE_ANNOTATION: "arn:aws:iam::111122223333:role/teams/x"},
        "serviceAccount": {
            "name": "team-01-app-0009",
            "namespace": "team-01",
            "annotations": {"eks.amazonaws.com/role-arn": "arn:aws:iam::111122223333:role/teams/x"},
        },
    },
}


def test_each_application_runs_under_its_annotation_and_its_service_account() -> None:
    assert scale_tools.workloads_of(OUTPUTS) == [
        Workload("team-00-app-0000", "team-00", "default", "team-00/team-00-app-0000"),
        Workload(
            "team-01-app-0009",
            "team-01",
            "team-01-app-0009",
            "arn:aws:iam::111122223333:role/teams/x",
        ),
    ]
    assert scale_tools.service_accounts(OUTPUTS) == [
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {
                "name": "team-01-app-0009",
                "namespace": "team-01",
                "annotations": {
                    "eks.amazonaws.com/role-arn": "arn:aws:iam::111122223333:role/teams/x"
                },
            },
        }
    ]


def test_pods_go_round_the_applications_with_one_in_25_not_kiams() -> None:
    workloads = scale_tools.workloads_of(OUTPUTS)
    planned = scale_tools.plan_pods(workloads, 100)
    names = [name for name, _ in planned]
    assert len(set(names)) == 100
    assert all(len(n) <= 63 for n in names)
    plain = [w for _, w in planned if w.app == scale_tools.PLAIN_APP]
    assert len(plain) == 4
    assert all(w.role_annotation is None and w.service_account == "default" for w in plain)
    kiams = [w for _, w in planned if w.app != scale_tools.PLAIN_APP]
    assert {w.app for w in kiams} == set(OUTPUTS)
    # Both namespaces get pods of both kinds of workload.
    assert {w.namespace for w in plain} == {w.namespace for w in kiams} == {"team-00", "team-01"}


def _usage(*pods: tuple[str, str], ready: bool = True) -> dict[str, object]:
    return {
        "ready": ready,
        "applications": {
            "a": {"ready": ready, "pods": [{"namespace": ns, "name": n} for ns, n in pods]}
        },
        "otherKiamPods": [],
    }


def test_the_usage_answer_must_claim_every_kiam_pod_in_every_namespace() -> None:
    answer = _usage(("team-00", "p0"), ("team-01", "p1"))
    assert scale_tools.check_usage(answer, {"team-00", "team-01"}, 2) == []
    assert scale_tools.check_usage(answer, {"team-00", "team-01", "team-02"}, 3) == [
        "kiam_usage claimed 2 pods, 3 are kiam's",
        "kiam_usage has no pod in namespaces ['team-02']",
    ]
    assert scale_tools.check_usage(_usage(("team-00", "p0"), ready=False), {"team-00"}, 1) == [
        "kiam_usage: 1 applications not ready: ['a']"
    ]


def test_a_tool_that_fails_or_answers_wrong_fails_its_step() -> None:
    draft = {"config": {"kiam:applications": {"x": {"namespace": "team-00"}}}, "problems": []}
    ok = scale_tools.ToolRun(0, 1.0, 80.0, json.dumps(draft), "")
    assert scale_tools.judge_tool("tools.kiam_draft", ok, {"team-00"}, 1) == []
    assert scale_tools.judge_tool("tools.kiam_draft", ok, {"team-00", "team-01"}, 1) == [
        "kiam_draft drafted nothing in namespaces ['team-01']"
    ]
    bad = scale_tools.ToolRun(2, 1.0, 80.0, "", "cannot reach the cluster\n")
    assert scale_tools.judge_tool("tools.kiam_usage", bad, {"team-00"}, 1) == [
        "exit 2",
        "stderr: cannot reach the cluster\n",
        "no JSON on stdout: ''",
    ]


def test_list_requests_are_told_by_collection() -> None:
    paths = [
        "/api/v1/pods?limit=500",
        "/api/v1/pods?limit=500&continue=x",
        "/api/v1/namespaces?limit=500",
    ]
    assert scale_tools.describe_lists(paths) == "3 (pods 2, namespaces 1)"


def test_the_table_marks_a_failed_step() -> None:
    steps = [
        scale_tools.Step("up", 12.34, "160"),
        scale_tools.Step("tools.kiam_usage", 1.0, "90", "7 (pods 6, namespaces 1)", ok=False),
    ]
    assert scale_tools.table(steps).splitlines() == [
        "| step | seconds | peak MiB | list requests |",
        "|---|---|---|---|",
        "| up | 12.3 | 160 | - |",
        "| tools.kiam_usage (FAILED) | 1.0 | 90 | 7 (pods 6, namespaces 1) |",
    ]


def test_workload_nodes_hold_the_pods() -> None:
    assert scale_tools.workers_for(200) == 3
    assert scale_tools.workers_for(3000) == 31


@pytest.mark.skipif(not scale_tools.TIME.exists(), reason="no /usr/bin/time")
def test_the_wrapped_pulumi_records_its_peak_memory(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / "pulumi").write_text('#!/bin/sh\necho "pulumi $*"\n')
    (real / "pulumi").chmod(0o755)
    (real / "pulumi-resource-kubernetes").write_text("")
    measured = scale_tools.measured_bin_dir(real, tmp_path / "root")
    assert measured is not None
    wrapped, peaks = measured
    assert (wrapped / "pulumi-resource-kubernetes").resolve() == real / "pulumi-resource-kubernetes"
    done = subprocess.run(
        [str(wrapped / "pulumi"), "up", "--yes"], capture_output=True, text=True, check=True
    )
    assert done.stdout == "pulumi up --yes\n"
    step = scale_tools.Step("up")
    with scale_tools.pulumi_step(step, peaks):
        pass
    assert step.peak_mib.isdigit()


def test_the_bench_runs_the_dev_stack_or_the_scale_stack(tmp_path: Path) -> None:
    label, config = bench.bench_config(None, bench.DEFAULT_NAMESPACES, tmp_path)
    assert label == "dev stack"
    assert not any("-app-" in name for name in config.get("kiam:applications", {}))
    label, config = bench.bench_config(40, 4, tmp_path)
    assert label == "scale stack (40 apps, 4 ns)"
    assert len(config["kiam:applications"]) == 40
    assert {a["namespace"] for a in config["kiam:applications"].values()} == {
        f"team-0{i}" for i in range(4)
    }


@pytest.mark.parametrize("argv", [["--namespaces", "5"], ["--applications", "-1"], ["--runs", "0"]])
def test_the_bench_refuses_arguments_it_cannot_use_before_starting_anything(
    argv: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_toolchain() -> Path:
        raise AssertionError("the toolchain must not be looked for")

    monkeypatch.setattr(toolchain, "bin_dir", no_toolchain)
    with pytest.raises(SystemExit) as exit_:
        bench.main(argv)
    assert exit_.value.code == 2


class _Timed:
    """A stand-in for `PulumiStack` that records the commands it was asked for, in order."""

    def __init__(self, name: str, log: list[str]) -> None:
        self.name, self.log = name, log

    def _run(self, step: str) -> Any:
        self.log.append(f"{self.name} {step}")
        return SimpleNamespace(seconds=float(len(self.log)))

    def preview(self, *extra: str) -> Any:
        return self._run("preview " + " ".join(extra))

    def up(self, *extra: str) -> Any:
        return self._run("up " + " ".join(extra))

    def destroy(self) -> Any:
        return self._run("destroy")


def test_the_bench_times_no_change_steps_with_every_stack_installed_taking_turns() -> None:
    log: list[str] = []
    stacks: dict[str, Any] = {name: _Timed(name, log) for name in ("kiam", "floor")}
    times, cpu = bench.measure(stacks, 1, lambda: log.append("settle"))
    assert [entry.strip() for entry in log] == [
        "kiam preview", "kiam up", "floor preview", "floor up",
        "kiam preview --expect-no-changes", "kiam up --expect-no-changes",
        "floor preview --expect-no-changes", "floor up --expect-no-changes",
        "kiam destroy", "floor destroy", "settle",
    ]  # fmt: skip
    assert times["floor"] == {
        "preview": [3.0], "up": [4.0], "preview (no change)": [7.0], "up (no change)": [8.0],
        "destroy": [10.0],
    }  # fmt: skip
    # Every step's CPU, one entry per run, by kind of process and in all (these stand-ins start
    # no process, so each is zero).
    assert list(cpu["kiam"]) == list(bench.STEPS)
    assert cpu["kiam"]["up (no change)"] == [
        {**{kind: 0.0 for kind in KINDS}, bench.ALL_PROCESSES: 0.0}
    ]


def test_the_cpu_table_gives_medians_by_process_for_the_no_change_steps() -> None:
    def runs(*values: dict[str, float]) -> list[dict[str, float]]:
        return list(values)

    none: dict[str, float] = {}
    cpu: bench.Cpu = {
        "kiam": {
            "preview (no change)": runs(
                {CLI: 1.5, PROGRAM: 1.25, bench.ALL_PROCESSES: 3.0},
                {CLI: 1.0, PROGRAM: 1.0, bench.ALL_PROCESSES: 2.5},
                {CLI: 2.0, PROGRAM: 2.0, bench.ALL_PROCESSES: 4.0},
            ),
            "up (no change)": runs(none, none, {CLI: 9.0}),
        },
        "floor": {
            "preview (no change)": runs(
                {CLI: 0.5, bench.ALL_PROCESSES: 1.0},
                {CLI: 0.75, bench.ALL_PROCESSES: 1.5},
                {CLI: 0.25, bench.ALL_PROCESSES: 0.5},
            ),
            "up (no change)": runs(none, none, none),
        },
    }
    assert bench.cpu_table(cpu, [("kiam", "scale stack"), ("floor", "floor")]) == [
        "| step | process | scale stack | floor |",
        "|---|---|---|---|",
        "| `preview (no change)` | the CLI | 1.50 | 0.50 |",
        "| `preview (no change)` | the program | 1.25 | 0.00 |",
        "| `preview (no change)` | all, exact | 3.00 | 1.00 |",
        "| `up (no change)` | all, exact | 0.00 | 0.00 |",
    ]


def test_a_failed_pulumi_step_keeps_its_time() -> None:
    step = scale_tools.Step("up")
    with pytest.raises(RuntimeError), scale_tools.pulumi_step(step, None):
        raise RuntimeError("refused")
    assert step.seconds >= 0 and step.peak_mib == "-"


def test_a_scale_stack_past_the_configuration_s_size_lists_its_applications_in_a_file(
    tmp_path: Path,
) -> None:
    """What e2e.bench and e2e.scale_tools run: 700 applications inline (131,068 bytes at 50
    namespaces was measured to run), 1,000 from `kiam:applicationsFile`."""
    small = scale_config(700, 50, tmp_path / "small")
    assert "kiam:applications" in small and "kiam:applicationsFile" not in small
    assert not (tmp_path / "small").exists()
    large = scale_config(1000, 50, tmp_path / "large")
    assert "kiam:applications" not in large
    assert large["kiam:applicationsFile"] == str(
        (tmp_path / "large" / "applications.yaml").resolve()
    )
    assert config_environment_bytes(large) <= MAX_ARG_STRLEN
    listed = yaml.safe_load((tmp_path / "large" / "applications.yaml").read_text())
    assert len(listed["applications"]) == 1000


def test_the_floor_with_outputs_records_what_each_component_of_the_benched_stack_records() -> None:
    """The floor's components record the benched stack's components' outputs, in state order,
    with each resource reference or secret (the engine's signature key) as one plain value."""
    reference = {
        rpc._special_sig_key: "5cf8f73096256a8f31e491e813e4eb8e",
        "id": "kiam/kiam-agent",
        "urn": "urn:pulumi:scale::kiam::kiam:index:Agent$kubernetes:apps/v1:DaemonSet::kiam-agent",
    }
    secret = {rpc._special_sig_key: "1b47061264138c4ac30d75fd1eb44270", "ciphertext": "v1:abc"}
    resources: list[dict[str, Any]] = [
        {"type": "pulumi:pulumi:Stack", "outputs": {"applications": {"a": {}}}},
        {"type": "pulumi:providers:kubernetes", "custom": True, "outputs": {"x": 1}},
        {"type": "kiam:index:Kiam", "outputs": {"installed": {"agents": {"port": 8181}}}},
        {"type": "kiam:index:Agent", "outputs": {"daemon_set": reference}},
        {"type": "kiam:index:Tls", "outputs": {"keys": [secret]}},
        {"type": "kubernetes:apps/v1:DaemonSet", "custom": True, "outputs": {"y": 2}},
        {"type": "kiam:index:NamespacePermissions"},
    ]
    # The floor registers as many of each kind as it records outputs for.
    assert bench.resource_counts(resources) == (1, 4)
    assert bench.component_outputs(resources) == [
        {"installed": {"agents": {"port": 8181}}},
        {"daemon_set": reference["urn"]},
        {"keys": ["v1:abc"]},
        {},
    ]

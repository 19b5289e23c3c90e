"""The rollout: waves in order, the first failure stops it with the later stacks untouched, the
state file records where, `--resume` goes on from there; the adoption phase moves stack by stack
and refuses a stack not at the phase before."""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fleet_fakes import FakeEngine, project, summary
from tools.fleet import cli
from tools.fleet.adoption import previous_phase, refusal
from tools.fleet.fleet_file import load_fleet_file
from tools.fleet.gate import GateResult
from tools.fleet.rollout import Outcome, RolloutState, roll_out
from tools.fleet.waves import plan_waves
from tools.mock_engine import PROJECT_DIR

STACKS = ["a", "b", "c", "d"]
WAVES = [
    {"name": "canary", "stacks": ["a"]},
    {"name": "rest", "stacks": ["b", "c", "d"], "parallel": 1, "soak": "1m"},
]


def planned(tmp_path: Path, waves: list[dict[str, Any]] = WAVES) -> Any:
    fleet = load_fleet_file(project(tmp_path, STACKS, {"waves": waves}))
    return plan_waves(fleet, STACKS, "fleet.yaml")


def gate_failing(*unhealthy: str) -> Callable[[str, Callable[[str], None]], tuple[bool, str]]:
    def gate(stack: str, progress: Callable[[str], None]) -> tuple[bool, str]:
        progress("soaking")
        return (False, "1 of 2 servers Ready") if stack in unhealthy else (True, "")

    return gate


def roll(
    tmp_path: Path,
    engine: FakeEngine,
    gate: Any,
    state: RolloutState | None = None,
    prepare: Callable[[str], None] = lambda stack: None,
    **kw: Any,
) -> tuple[Outcome, RolloutState, list[str], list[str]]:
    state = state or RolloutState()
    saved: list[str] = []
    lines: list[str] = []
    outcome = roll_out(
        engine,
        planned(tmp_path, **kw),
        gate,
        state,
        lambda s: saved.append(s.to_json()),
        lines.append,
        prepare,
    )
    return outcome, state, lines, saved


def test_every_wave_in_order_each_stack_behind_its_gate(tmp_path: Path) -> None:
    engine = FakeEngine(ups={"a": [summary(update=2, same=8)], "b": [summary(same=10)]})
    outcome, _state, lines, _ = roll(tmp_path, engine, gate_failing())
    assert outcome == Outcome(done=STACKS, failed={}, untouched=[])
    assert engine.calls == [("up", "a"), ("up", "b"), ("up", "c"), ("up", "d")]
    assert lines[:6] == [
        "wave 1/2 canary: a",
        "[canary] a: up",
        "[canary] a: up done (2 updated); health gate",
        "[canary] a: soaking",
        "[canary] a: healthy",
        "wave 2/2 rest: b, c, d",
    ]
    assert lines[7] == "[rest] b: up done (no changes); health gate"
    assert outcome.render() == "Rollout complete:\n  done: a, b, c, d\n  never touched: none"


def test_the_first_unhealthy_cluster_stops_the_rollout(tmp_path: Path) -> None:
    engine = FakeEngine()
    outcome, _state, lines, saved = roll(tmp_path, engine, gate_failing("b"))
    assert outcome == Outcome(
        done=["a"], failed={"b": "health gate: 1 of 2 servers Ready"}, untouched=["c", "d"]
    )
    assert engine.calls == [("up", "a"), ("up", "b")]
    assert "[rest] b: health gate failed: 1 of 2 servers Ready" in lines
    assert json.loads(saved[-1]) == {
        "adoptionPhase": None,
        "stacks": {
            "a": {"status": "done"},
            "b": {"status": "failed", "reason": "health gate: 1 of 2 servers Ready"},
        },
    }
    assert outcome.render() == (
        "Rollout stopped:\n"
        "  done: a\n"
        "  failed: b: health gate: 1 of 2 servers Ready\n"
        "  never touched: c, d\n"
        "Fix the cause, then run `python -m tools.fleet up --resume`."
    )

    # Resumed from the saved state: a is skipped, b is tried again, then c and d.
    resumed = RolloutState.load(_written(tmp_path / "state.json", saved[-1]))
    engine = FakeEngine()
    outcome, _, lines, _ = roll(tmp_path / "again", engine, gate_failing(), resumed)
    assert outcome == Outcome(done=STACKS, failed={}, untouched=[])
    assert engine.calls == [("up", "b"), ("up", "c"), ("up", "d")]
    assert lines[0] == "wave 1/2 canary: nothing left (already done: a)"


def _written(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_a_failed_up_stops_the_rollout_with_the_engine_error(tmp_path: Path) -> None:
    engine = FakeEngine(failing={"a": "error: update failed"})
    outcome, _, _, _ = roll(tmp_path, engine, gate_failing())
    assert outcome == Outcome(
        done=[], failed={"a": "pulumi up failed: error: update failed"}, untouched=["b", "c", "d"]
    )


def test_stacks_running_at_once_finish_but_no_new_one_starts(tmp_path: Path) -> None:
    waves = [{"name": "all", "stacks": ["*"], "parallel": 2}]
    b_started, a_recorded = threading.Event(), threading.Event()

    class Engine(FakeEngine):
        def up(self, stack: str, on_event: Any) -> None:
            super().up(stack, on_event)
            if stack == "b":
                b_started.set()

    def gate(stack: str, progress: Callable[[str], None]) -> tuple[bool, str]:
        if stack == "a":  # a fails once b runs beside it; b's gate ends after a's failure
            assert b_started.wait(10)
            return False, "1 of 2 servers Ready"
        assert a_recorded.wait(10)
        return True, ""

    def save(state: RolloutState) -> None:
        if state.status("a") == "failed":
            a_recorded.set()

    engine = Engine()
    state = RolloutState()
    outcome = roll_out(engine, planned(tmp_path, waves), gate, state, save, lambda line: None)
    # a fails; b, already running beside it, finishes; c and d never start.
    assert outcome == Outcome(
        done=["b"], failed={"a": "health gate: 1 of 2 servers Ready"}, untouched=["c", "d"]
    )
    assert sorted(engine.calls) == [("up", "a"), ("up", "b")]


# --- a step that raises --------------------------------------------------------------------------
# Whatever prepare, up or the gate raise (an exec plugin failing, `aws eks update-kubeconfig`
# failing, an API read raising, a bug) is that stack's failure: recorded, stopping the rollout.

STOPPED_AT_B = (
    "Rollout stopped:\n"
    "  done: a\n"
    "  failed: b: {reason}\n"
    "  never touched: c, d\n"
    "Fix the cause, then run `python -m tools.fleet up --resume`."
)


def assert_stopped_at_b(outcome: Outcome, saved: list[str], reason: str) -> None:
    assert outcome == Outcome(done=["a"], failed={"b": reason}, untouched=["c", "d"])
    assert outcome.render() == STOPPED_AT_B.format(reason=reason)
    assert json.loads(saved[-1]) == {
        "adoptionPhase": None,
        "stacks": {"a": {"status": "done"}, "b": {"status": "failed", "reason": reason}},
    }


def test_a_gate_that_raises_is_the_stacks_failure_and_stops_the_rollout(tmp_path: Path) -> None:
    def gate(stack: str, progress: Callable[[str], None]) -> tuple[bool, str]:
        if stack == "b":
            raise RuntimeError("GET /api/v1/nodes: 500 Internal Server Error")
        return True, ""

    engine = FakeEngine()
    outcome, _, lines, saved = roll(tmp_path, engine, gate)
    reason = "health gate raised RuntimeError: GET /api/v1/nodes: 500 Internal Server Error"
    assert_stopped_at_b(outcome, saved, reason)
    assert engine.calls == [("up", "a"), ("up", "b")]  # c and d never started
    assert lines[-1] == f"[rest] b: {reason}"


def test_an_up_that_raises_something_else_than_an_engine_error_stops_the_rollout(
    tmp_path: Path,
) -> None:
    engine = FakeEngine(raising={("up", "b"): FileNotFoundError("no such file: 'pulumi'")})
    outcome, _, lines, saved = roll(tmp_path, engine, gate_failing())
    reason = "pulumi up raised FileNotFoundError: no such file: 'pulumi'"
    assert_stopped_at_b(outcome, saved, reason)
    assert engine.calls == [("up", "a"), ("up", "b")]
    assert lines[-2:] == ["[rest] b: up", f"[rest] b: {reason}"]


def test_a_prepare_that_raises_something_else_than_a_value_error_stops_the_rollout(
    tmp_path: Path,
) -> None:
    def prepare(stack: str) -> None:
        if stack == "b":
            raise KeyError("kiam:adoption")

    engine = FakeEngine()
    outcome, _, lines, saved = roll(tmp_path, engine, gate_failing(), prepare=prepare)
    reason = "prepare raised KeyError: 'kiam:adoption'"
    assert_stopped_at_b(outcome, saved, reason)
    assert engine.calls == [("up", "a")]  # b's up never ran, nor anything after it
    assert lines[-2:] == ["wave 2/2 rest: b, c, d", f"[rest] b: {reason}"]


def test_an_exception_without_a_message_is_named_by_its_type(tmp_path: Path) -> None:
    engine = FakeEngine(raising={("up", "b"): RuntimeError()})
    outcome, _, _, saved = roll(tmp_path, engine, gate_failing())
    assert_stopped_at_b(outcome, saved, "pulumi up raised RuntimeError")


def test_stacks_running_beside_one_that_raises_finish(tmp_path: Path) -> None:
    waves = [{"name": "all", "stacks": ["*"], "parallel": 2}]
    b_started, a_recorded = threading.Event(), threading.Event()

    class Engine(FakeEngine):
        def up(self, stack: str, on_event: Any) -> None:
            super().up(stack, on_event)
            if stack == "b":
                b_started.set()

    def gate(stack: str, progress: Callable[[str], None]) -> tuple[bool, str]:
        if stack == "a":
            assert b_started.wait(10)
            raise ConnectionResetError("connection reset by peer")
        assert a_recorded.wait(10)
        return True, ""

    def save(state: RolloutState) -> None:
        if state.status("a") == "failed":
            a_recorded.set()

    engine = Engine()
    outcome = roll_out(
        engine, planned(tmp_path, waves), gate, RolloutState(), save, lambda line: None
    )
    assert outcome == Outcome(
        done=["b"],
        failed={"a": "health gate raised ConnectionResetError: connection reset by peer"},
        untouched=["c", "d"],
    )
    assert sorted(engine.calls) == [("up", "a"), ("up", "b")]


def _healthy_gate(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI's gate without a live cluster: every cluster healthy."""
    monkeypatch.setattr(cli, "run_gate", lambda *a, **k: GateResult(True))
    monkeypatch.setattr(cli, "kubeconfig_for", lambda *a: Path("kubeconfig"))
    monkeypatch.setattr(cli, "KubeApi", lambda path: None)


UPDATE_KUBECONFIG = ["aws", "eks", "update-kubeconfig", "--name", "kiam-dev"]


def _update_kubeconfig_fails_for_b(
    fleet: Any, engine: Any, stack: str, settings: Any, folder: Path
) -> Path:
    if stack == "b":
        raise subprocess.CalledProcessError(254, UPDATE_KUBECONFIG)
    return Path("kubeconfig")


@pytest.mark.parametrize(
    ("raising", "gate_kubeconfig", "reason"),
    [
        pytest.param(
            {},
            _update_kubeconfig_fails_for_b,
            f"health gate raised CalledProcessError: Command '{UPDATE_KUBECONFIG}' returned "
            "non-zero exit status 254.",
            id="gate",
        ),
        pytest.param(
            {("outputs", "b"): ValueError("stack outputs: not JSON")},
            None,
            "health gate raised ValueError: stack outputs: not JSON",
            id="gate-reading-outputs",
        ),
        pytest.param(
            {("up", "b"): OSError("exec plugin aws: not found")},
            None,
            "pulumi up raised OSError: exec plugin aws: not found",
            id="up",
        ),
    ],
)
def test_the_command_reports_a_step_that_raised_as_the_stopped_rollout(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    raising: dict[tuple[str, str], Exception],
    gate_kubeconfig: Any,
    reason: str,
) -> None:
    path = project(tmp_path, STACKS, {"waves": WAVES})
    engine = FakeEngine(raising=raising)
    _healthy_gate(monkeypatch)
    if gate_kubeconfig is not None:
        monkeypatch.setattr(cli, "kubeconfig_for", gate_kubeconfig)
    code = cli.main(["--fleet", str(path), "up"], engine_factory=lambda f: engine)
    assert code == 1
    # Each stack's checkpoint is read for pending operations before its up; c and d never started.
    assert engine.calls == [("export", "a"), ("up", "a"), ("export", "b"), ("up", "b")]
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    assert captured.err == ""
    assert captured.out.endswith(STOPPED_AT_B.format(reason=reason) + "\n")
    assert f"[rest] b: {reason}\n" in captured.out
    assert json.loads((tmp_path / ".fleet" / "rollout-state.json").read_text()) == {
        "adoptionPhase": None,
        "stacks": {"a": {"status": "done"}, "b": {"status": "failed", "reason": reason}},
    }


def test_the_command_reports_a_prepare_that_raised_as_the_stopped_rollout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = project(tmp_path, STACKS, {"waves": WAVES, "adoption": {"gate": "wave"}})
    for stack in ("a", "b"):
        with_phase(tmp_path / "stacks" / f"Pulumi.{stack}.yaml", "servers")
    engine = FakeEngine(raising={("set-config", "b"): PermissionError(13, "Permission denied")})
    _healthy_gate(monkeypatch)
    code = cli.main(
        ["--fleet", str(path), "up", "--adoption-phase", "takeover"],
        engine_factory=lambda f: engine,
    )
    assert code == 1
    assert engine.calls == [
        ("set-config", "a kiam:adoption.phase=takeover"),
        ("export", "a"),
        ("up", "a"),
        ("set-config", "b kiam:adoption.phase=takeover"),
    ]
    reason = "prepare raised PermissionError: [Errno 13] Permission denied"
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    assert captured.err == ""
    assert captured.out.endswith(STOPPED_AT_B.format(reason=reason) + "\n")
    assert json.loads((tmp_path / ".fleet" / "rollout-state.json").read_text()) == {
        "adoptionPhase": "takeover",
        "stacks": {"a": {"status": "done"}, "b": {"status": "failed", "reason": reason}},
    }


# --- adoption phases -----------------------------------------------------------------------------


MIGRATION = yaml.safe_load(
    (PROJECT_DIR / "docs" / "migration" / "Pulumi.migrate-1-servers.yaml").read_text()
)["config"]


def with_phase(stack_file: Path, phase: str) -> None:
    """The stack file with the migration example's `kiam:adoption` (and the running install's
    namespace it needs), at `phase`."""
    document = yaml.safe_load(stack_file.read_text())
    document["config"]["kiam:namespace"] = MIGRATION["kiam:namespace"]
    document["config"]["kiam:adoption"] = {**MIGRATION["kiam:adoption"], "phase": phase}
    stack_file.write_text(yaml.safe_dump(document))


def test_the_phase_before_each_phase() -> None:
    assert [previous_phase(p) for p in ("servers", "takeover", "complete")] == [
        None,
        "servers",
        "takeover",
    ]


def test_a_stack_must_stand_at_the_phase_before(tmp_path: Path) -> None:
    stack_file = tmp_path / "Pulumi.a.yaml"
    stack_file.write_text("config: {}\n")  # no kiam:adoption
    assert refusal("a", stack_file, "takeover") == (
        f"a: {stack_file} has kiam:adoption.phase unset; moving to takeover needs servers first"
    )
    assert refusal("a", stack_file, "servers") == (
        f"a: {stack_file} has kiam:adoption.phase unset; phase servers is written by hand with "
        "the rest of kiam:adoption (docs/migration.md), then rolled out"
    )
    with_phase(stack_file, "servers")
    assert refusal("a", stack_file, "servers") is None
    assert refusal("a", stack_file, "takeover") is None
    assert refusal("a", stack_file, "complete") == (
        f"a: {stack_file} has kiam:adoption.phase servers; moving to complete needs takeover first"
    )
    with_phase(stack_file, "takeover")
    assert refusal("a", stack_file, "takeover") is None  # a resumed rollout


def test_a_fleet_wide_phase_refuses_to_start_unless_every_stack_is_ready(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = project(tmp_path, STACKS, {"waves": WAVES})
    for stack in ("a", "b", "c"):
        with_phase(tmp_path / "stacks" / f"Pulumi.{stack}.yaml", "servers")
    engine = FakeEngine()
    code = cli.main(
        ["--fleet", str(path), "up", "--adoption-phase", "takeover"],
        engine_factory=lambda f: engine,
    )
    assert code == 1
    assert engine.calls == []
    assert capsys.readouterr().err == (
        "Not every stack is ready for this phase:\n"
        f"d: {tmp_path / 'stacks' / 'Pulumi.d.yaml'} has kiam:adoption.phase unset; moving to "
        "takeover needs servers first\n"
    )


def test_a_per_wave_phase_sets_each_stack_as_its_wave_comes_and_stops_at_a_stack_not_ready(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = project(tmp_path, STACKS, {"waves": WAVES, "adoption": {"gate": "wave"}})
    for stack in ("a", "b"):
        with_phase(tmp_path / "stacks" / f"Pulumi.{stack}.yaml", "servers")
    engine = FakeEngine()
    # The gate reads live clusters; here every cluster is healthy.
    monkeypatch.setattr(cli, "run_gate", lambda *a, **k: GateResult(True))
    monkeypatch.setattr(cli, "kubeconfig_for", lambda *a: Path("kubeconfig"))
    monkeypatch.setattr(cli, "KubeApi", lambda path: None)
    code = cli.main(
        ["--fleet", str(path), "up", "--adoption-phase", "takeover"],
        engine_factory=lambda f: engine,
    )
    assert code == 1
    assert engine.calls == [
        ("set-config", "a kiam:adoption.phase=takeover"),
        ("export", "a"),
        ("up", "a"),
        ("set-config", "b kiam:adoption.phase=takeover"),
        ("export", "b"),
        ("up", "b"),
    ]
    out = capsys.readouterr().out
    assert (
        f"  failed: c: c: {tmp_path / 'stacks' / 'Pulumi.c.yaml'} has kiam:adoption.phase unset"
        in out
    )
    assert "  never touched: d" in out
    state = json.loads((tmp_path / ".fleet" / "rollout-state.json").read_text())
    assert state["adoptionPhase"] == "takeover"
    assert {s: v["status"] for s, v in state["stacks"].items()} == {
        "a": "done",
        "b": "done",
        "c": "failed",
    }

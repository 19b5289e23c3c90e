"""A signal to the fleet reaches each running `pulumi` once, as SIGINT (the CLI's graceful
cancel), and the rollout records the stacks it was changing as interrupted and exits 128 + the
signal's number (tools/fleet/cancellation.py)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from pulumi import automation as auto

from tests.fleet_fakes import FakeEngine, summary
from tests.test_fleet_rollout import STACKS, WAVES, _healthy_gate, project
from tools.fleet import cli, recovery
from tools.fleet.cancellation import CancellableCommand, Cancellation, Cancelled
from tools.fleet.engine import EngineError
from tools.fleet.rollout import running_elsewhere
from tools.interrupted.pending import Finding

# A stand-in for the CLI's signal handling (pkg/backend/cancellation_scope.go): the first SIGINT
# or SIGTERM cancels (it says so and ends 255 once its step is done), a second terminates.
FAKE_PULUMI = textwrap.dedent(
    """\
    import os, signal, sys, time
    if sys.argv[1:] == ["version"]:
        print("v3.276.0")
        sys.exit(0)
    got = []
    def on(number, frame):
        got.append(signal.Signals(number).name)
        if len(got) > 1:
            print("terminating", flush=True)
            sys.exit(254)
    signal.signal(signal.SIGINT, on)
    signal.signal(signal.SIGTERM, on)
    print(f"session {os.getsid(0)}", flush=True)
    deadline = time.monotonic() + 30
    while not got and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.5)  # the steps in flight finish; a second signal would land here
    print("signals " + ",".join(got), flush=True)
    print("error: update canceled", file=sys.stderr, flush=True)
    sys.exit(255)
    """
)


def fake_cli(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "bin").mkdir(parents=True)
    script = root / "bin" / "pulumi"
    script.write_text(f"#!{sys.executable}\n{FAKE_PULUMI}")
    script.chmod(0o755)
    return root


def test_the_first_signal_reaches_the_running_cli_once_as_sigint(tmp_path: Path) -> None:
    cancellation = Cancellation()
    command = CancellableCommand(cancellation, str(fake_cli(tmp_path)), skip_version_check=True)
    lines: list[str] = []
    raised: list[BaseException] = []

    def run() -> None:
        try:
            command.run(["up", "--yes"], str(tmp_path), {}, on_output=lines.append)
        except BaseException as error:  # kept for the assertion
            raised.append(error)

    worker = threading.Thread(target=run)
    worker.start()
    deadline = time.monotonic() + 20
    while not lines and time.monotonic() < deadline:
        time.sleep(0.01)
    cancellation.cancel(signal.SIGINT)  # the runner's SIGINT
    cancellation.cancel(signal.SIGTERM)  # its SIGTERM 7.5 s later, not passed on
    worker.join(30)
    assert lines[0] != f"session {os.getsid(0)}"  # a session of its own: no terminal ^C reaches it
    assert lines[-1] == "signals SIGINT"
    assert len(raised) == 1 and isinstance(raised[0], auto.errors.CommandError)
    assert "error: update canceled" in str(raised[0])
    assert cancellation.signal_name == "SIGINT"


def test_no_cli_starts_after_the_signal(tmp_path: Path) -> None:
    cancellation = Cancellation()
    command = CancellableCommand(cancellation, str(fake_cli(tmp_path)), skip_version_check=True)
    cancellation.cancel(signal.SIGTERM)
    lines: list[str] = []
    with pytest.raises(Cancelled, match="cancelled by SIGTERM"):
        command.run(["up"], str(tmp_path), {}, on_output=lines.append)
    assert lines == []


def test_the_handlers_are_those_before_once_the_command_ends() -> None:
    before = signal.getsignal(signal.SIGINT)
    cancellation = Cancellation()
    with cancellation.installed():
        assert signal.getsignal(signal.SIGINT) == cancellation._on_signal
        assert signal.getsignal(signal.SIGTERM) == cancellation._on_signal
    assert signal.getsignal(signal.SIGINT) == before


def test_a_wait_ends_at_the_signal() -> None:
    cancellation = Cancellation()
    threading.Timer(0.2, cancellation.cancel, (signal.SIGINT,)).start()
    started = time.monotonic()
    with pytest.raises(Cancelled, match="cancelled by SIGINT"):
        cancellation.sleep(30)
    assert time.monotonic() - started < 5


class CancelledDuringUp(FakeEngine):
    """The signal arrives while `up` of `during` runs; the CLI then fails as a cancelled one."""

    def __init__(self, cancellation: Cancellation, during: str) -> None:
        super().__init__()
        self.cancellation = cancellation
        self.during = during

    def up(self, stack: str, on_event: object) -> None:
        self.calls.append(("up", stack))
        if stack == self.during:
            self.cancellation.cancel(signal.SIGTERM)
            raise EngineError("error: update canceled")
        on_event(summary(update=1))  # type: ignore[operator]


def test_a_signal_during_an_up_records_it_as_interrupted_and_exits_143(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = project(tmp_path, STACKS, {"waves": WAVES})
    cancellation = Cancellation()
    engine = CancelledDuringUp(cancellation, "b")
    _healthy_gate(monkeypatch)
    code = cli.main(
        ["--fleet", str(path), "up"], engine_factory=lambda f: engine, cancellation=cancellation
    )
    assert code == 128 + signal.SIGTERM
    out = capsys.readouterr().out
    assert "[rest] b: cancelled by SIGTERM during pulumi up: error: update canceled" in out
    assert out.endswith(
        "Rollout cancelled by SIGTERM:\n"
        "  done: a\n"
        "  interrupted: b: cancelled by SIGTERM during pulumi up: error: update canceled\n"
        "  never touched: c, d\n"
        "Run `python -m tools.fleet up --resume` to go on: each interrupted stack is checked "
        "for a lock and pending operations first.\n"
    )
    state = json.loads((tmp_path / ".fleet" / "rollout-state.json").read_text())
    assert state["stacks"]["b"] == {
        "status": "interrupted",
        "reason": "cancelled by SIGTERM during pulumi up: error: update canceled",
    }
    assert [c for c in engine.calls if c[0] == "up"] == [("up", "a"), ("up", "b")]


def test_a_stack_is_running_in_the_state_file_before_its_up_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = project(tmp_path, STACKS, {"waves": WAVES})
    seen: dict[str, object] = {}

    class Looking(FakeEngine):
        def up(self, stack: str, on_event: object) -> None:
            document = json.loads((tmp_path / ".fleet" / "rollout-state.json").read_text())
            seen[stack] = document["stacks"][stack]
            super().up(stack, on_event)  # type: ignore[arg-type]

    _healthy_gate(monkeypatch)
    assert cli.main(["--fleet", str(path), "up"], engine_factory=lambda f: Looking()) == 0
    running = seen["a"]
    assert isinstance(running, dict)
    assert running["status"] == "running"
    assert running["pid"] == str(os.getpid())
    assert set(running) == {"status", "host", "pid", "started"}
    assert not list((tmp_path / ".fleet").glob(".rollout-state.json.*"))  # no temporary left


def test_resume_goes_on_from_an_interrupted_or_running_stack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = project(tmp_path, STACKS, {"waves": WAVES})
    state = tmp_path / ".fleet" / "rollout-state.json"
    state.parent.mkdir()
    state.write_text(
        json.dumps(
            {
                "adoptionPhase": None,
                "stacks": {
                    "a": {"status": "done"},
                    "b": {"status": "running", "host": "h", "pid": "1", "started": "t"},
                },
            }
        )
    )
    engine = FakeEngine()
    _healthy_gate(monkeypatch)
    assert cli.main(["--fleet", str(path), "up", "--resume"], engine_factory=lambda f: engine) == 0
    assert [c for c in engine.calls if c[0] == "up"] == [("up", "b"), ("up", "c"), ("up", "d")]


def test_a_killed_stack_is_recovered_before_its_up(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = project(tmp_path, STACKS, {"waves": WAVES})
    daemon_set = {
        "resource": {
            "urn": "urn:pulumi:b::kiam::kubernetes:apps/v1:DaemonSet::kiam-agent",
            "type": "kubernetes:apps/v1:DaemonSet",
            "inputs": {"metadata": {"name": "kiam-agent", "namespace": "kiam"}},
        },
        "type": "creating",
    }
    engine = FakeEngine(pending={"b": [daemon_set]})
    _healthy_gate(monkeypatch)

    class Exists:
        def __init__(self, api: object) -> None:
            pass

        def find(self, op: object) -> Finding:
            return Finding("exists", id="kiam/kiam-agent")

    monkeypatch.setattr(recovery, "KubernetesObjects", Exists)
    assert cli.main(["--fleet", str(path), "up"], engine_factory=lambda f: engine) == 0
    assert engine.calls[2:8] == [
        ("export", "b"),
        ("export", "b"),
        ("stack import", "b"),
        ("refresh", "b"),
        ("export", "b"),
        ("up", "b"),
    ]
    assert engine.imported["b"]["deployment"]["resources"][-1]["id"] == "kiam/kiam-agent"
    out = capsys.readouterr().out
    assert (
        "[rest] b: 1 pending operation(s) from an interrupted update: kiam-agent (creating)\n"
        in out
    )
    assert "[rest] b: recovered: imported kiam-agent\n" in out


def test_a_second_rollout_with_the_same_state_file_refuses_while_the_first_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = project(tmp_path, STACKS, {"waves": WAVES})
    state = tmp_path / ".fleet" / "rollout-state.json"
    state.parent.mkdir()
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        entry = {"status": "running", "host": socket.gethostname(), "started": "t"}
        state.write_text(
            json.dumps({"stacks": {"b": {**entry, "pid": str(alive.pid)}}, "adoptionPhase": None})
        )
        engine = FakeEngine()
        assert cli.main(["--fleet", str(path), "up"], engine_factory=lambda f: engine) == 1
        assert engine.calls == []
        assert f"another rollout is running b (pid {alive.pid})" in capsys.readouterr().err
    finally:
        alive.kill()
        alive.wait()
    # Once that process is gone, the entry is a killed rollout's: --resume picks it up.
    assert running_elsewhere(state) == []

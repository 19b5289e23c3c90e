"""`up` wave by wave: each stack's `pulumi up`, then its health gate; the first failure stops the
rollout, and a state file records what was done so `--resume` goes on from there.

A stack is `running` in the state file from just before its step starts, so a rollout that was
killed says which stacks it was changing; a cancelled one (SIGINT, SIGTERM) records them as
`interrupted`. Both are picked up by `--resume` like a failed stack, through the recovery of what
an interrupted update leaves (tools/interrupted/)."""

from __future__ import annotations

import json
import os
import socket
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tools.fleet.cancellation import Cancelled
from tools.fleet.engine import Engine, EngineError
from tools.fleet.preview import EventSummary
from tools.fleet.waves import PlannedWave
from tools.interrupted.recover import NeedsOperator

DONE, FAILED, RUNNING, INTERRUPTED = "done", "failed", "running", "interrupted"


@dataclass
class RolloutState:
    """What a rollout did to each stack, kept in the state file between runs."""

    stacks: dict[str, dict[str, str]] = field(default_factory=dict)
    adoption_phase: str | None = None

    def status(self, stack: str) -> str | None:
        return self.stacks.get(stack, {}).get("status")

    def to_json(self) -> str:
        return json.dumps(
            {"adoptionPhase": self.adoption_phase, "stacks": self.stacks}, indent=2, sort_keys=True
        )

    def save(self, path: Path) -> None:
        """Written whole or not at all (a temporary file renamed over the old one, which POSIX
        `rename` replaces atomically), so a kill never leaves half a state file."""
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        try:
            with os.fdopen(handle, "w") as out:
                out.write(self.to_json() + "\n")
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    @classmethod
    def load(cls, path: Path) -> RolloutState:
        document: dict[str, Any] = json.loads(path.read_text())
        return cls(
            stacks=document.get("stacks") or {}, adoption_phase=document.get("adoptionPhase")
        )


@dataclass(frozen=True)
class Outcome:
    """Where a rollout ended."""

    done: list[str]
    failed: dict[str, str]
    untouched: list[str]
    interrupted: dict[str, str] = field(default_factory=dict)
    cancelled_by: str | None = None

    @property
    def ok(self) -> bool:
        return not self.failed and not self.interrupted and not self.cancelled_by

    def render(self) -> str:
        verdict = "complete" if self.ok else "stopped"
        if self.cancelled_by:
            verdict = f"cancelled by {self.cancelled_by}"
        lines = [f"Rollout {verdict}:", f"  done: {', '.join(self.done) or 'none'}"]
        lines += [f"  failed: {stack}: {why}" for stack, why in self.failed.items()]
        lines += [f"  interrupted: {stack}: {why}" for stack, why in self.interrupted.items()]
        lines.append(f"  never touched: {', '.join(self.untouched) or 'none'}")
        if self.cancelled_by and not self.failed:
            lines.append(
                "Run `python -m tools.fleet up --resume` to go on: each interrupted stack is "
                "checked for a lock and pending operations first."
            )
        elif not self.ok:
            lines.append("Fix the cause, then run `python -m tools.fleet up --resume`.")
        return "\n".join(lines)


def running_elsewhere(
    path: Path, this_host: str | None = None, alive: Callable[[int], bool] | None = None
) -> list[str]:
    """The stacks the state file says another live rollout on this host is running (`stack (pid
    N)`): a second rollout with the same state file would write over its record. A `running`
    entry of a process that is gone (a killed rollout) is what `--resume` picks up."""
    if not path.exists():
        return []
    host = this_host or socket.gethostname()
    is_alive = alive or _alive
    found = []
    for stack, entry in RolloutState.load(path).stacks.items():
        pid = entry.get("pid", "")
        if (
            entry.get("status") == RUNNING
            and entry.get("host") == host
            and pid.isdigit()
            and int(pid) != os.getpid()
            and is_alive(int(pid))
        ):
            found.append(f"{stack} (pid {pid})")
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


Gate = Callable[[str, Callable[[str], None]], tuple[bool, str]]
"""(stack, progress) -> (healthy, why not): the health gate after a stack's up."""
Prepare = Callable[[str], None]
"""Run before a stack's up (the adoption phase is set here); raises ValueError to refuse it."""
Recover = Callable[[str, Callable[[str], None]], None]
"""(stack, progress): before a stack's up, what an interrupted update left is recovered (or
NeedsOperator raised, naming what was found and the commands for a person)."""


def raised(step: str, error: Exception) -> str:
    """A step's unexpected exception as the stack's failure: `health gate raised RuntimeError: x`."""
    message = str(error)
    return f"{step} raised {type(error).__name__}" + (f": {message}" if message else "")


def roll_out(
    engine: Engine,
    planned: list[PlannedWave],
    gate: Gate,
    state: RolloutState,
    save: Callable[[RolloutState], None],
    progress: Callable[[str], None],
    prepare: Prepare = lambda stack: None,
    recover: Recover = lambda stack, progress: None,
    cancelled: Callable[[], str | None] = lambda: None,
) -> Outcome:
    """Wave by wave, `parallel` stacks at once; a stack already done (a resumed rollout) is
    skipped. Once a stack fails, no further stack starts (those running finish). Any exception
    from `prepare`, `recover`, `engine.up` or `gate` is that stack's failure (recorded, with the
    step, the exception's type and message), never one escaping the rollout. Once `cancelled`
    names a signal, no stack starts and each running one is recorded as interrupted, with the step
    it was in."""
    lock = threading.Lock()
    stop = threading.Event()
    started_at = {"host": socket.gethostname(), "pid": str(os.getpid())}

    def say(line: str) -> None:
        with lock:
            progress(line)

    def record(stack: str, status: str, reason: str = "", **extra: str) -> None:
        with lock:
            state.stacks[stack] = {
                "status": status,
                **({"reason": reason} if reason else {}),
                **extra,
            }
            save(state)

    def interrupted(stack: str, said: Callable[[str], None], step: str, detail: str = "") -> None:
        by = cancelled() or "cancel"
        reason = f"cancelled by {by} during {step}" + (f": {detail}" if detail else "")
        said(reason)
        record(stack, INTERRUPTED, reason)
        stop.set()

    def one(wave: str, stack: str) -> None:
        if stop.is_set() or cancelled():
            return
        record(
            stack,
            RUNNING,
            started=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            **started_at,
        )

        def said(line: str) -> None:
            say(f"[{wave}] {stack}: {line}")

        def fail(reason: str, line: str | None = None) -> None:
            said(line or reason)
            record(stack, FAILED, reason)
            stop.set()

        try:
            prepare(stack)
        except ValueError as refused:
            fail(str(refused), f"refused: {refused}")
            return
        except Exception as error:  # anything else is the stack's failure too, never lost
            fail(raised("prepare", error))
            return

        def attempt(
            step: str, action: Callable[[], None], why: Callable[[EngineError], str]
        ) -> bool:
            """One step of the stack; False once its failure or interruption is recorded."""
            try:
                action()
                return True
            except NeedsOperator as needed:
                fail(f"needs a person: {needed}", f"stopped, needs a person: {needed}")
            except Cancelled:
                interrupted(stack, said, step)
            except EngineError as error:
                if cancelled():
                    interrupted(stack, said, step, why(error))
                else:
                    fail(f"{step} failed: {why(error)}")
            except Exception as error:  # anything else is the stack's failure too, never lost
                fail(raised(step, error))
            return False

        if not attempt("recovery", lambda: recover(stack, said), str):
            return
        if cancelled():
            interrupted(stack, said, "its start")
            return
        said("up")
        summary = EventSummary(stack)
        if not attempt(
            "pulumi up",
            lambda: engine.up(stack, summary),
            lambda error: summary.finish(str(error)).error or "",
        ):
            return
        changes = summary.result.changes
        said(
            "up done ("
            + ", ".join(f"{n} {op}d" for op, n in changes.items() if n)
            + ("" if any(changes.values()) else "no changes")
            + "); health gate"
        )
        try:
            healthy, why = gate(stack, said)
        except Cancelled:
            interrupted(stack, said, "its health gate", "the update finished; the gate did not")
            return
        except Exception as error:
            fail(raised("health gate", error))
            return
        if not healthy:
            fail(f"health gate: {why}", f"health gate failed: {why}")
            return
        said("healthy")
        record(stack, DONE)

    for number, p in enumerate(planned, 1):
        if stop.is_set() or cancelled():
            break
        pending = [s for s in p.stacks if state.status(s) != DONE]
        skipped = [s for s in p.stacks if s not in pending]
        say(
            f"wave {number}/{len(planned)} {p.wave.name}: {', '.join(pending) or 'nothing left'}"
            + (f" (already done: {', '.join(skipped)})" if skipped else "")
        )
        with ThreadPoolExecutor(max_workers=p.wave.parallel) as pool:
            list(pool.map(lambda s, w=p.wave.name: one(w, s), pending))

    everything = [s for p in planned for s in p.stacks]

    def reasons(status: str) -> dict[str, str]:
        return {
            s: state.stacks[s].get("reason", "") for s in everything if state.status(s) == status
        }

    return Outcome(
        done=[s for s in everything if state.status(s) == DONE],
        failed=reasons(FAILED),
        untouched=[s for s in everything if state.status(s) is None],
        interrupted={**reasons(INTERRUPTED), **reasons(RUNNING)},
        cancelled_by=cancelled(),
    )

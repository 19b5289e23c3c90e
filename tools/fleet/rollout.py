"""`up` wave by wave: each stack's `pulumi up`, then its health gate; the first failure stops the
rollout, and a state file records what was done so `--resume` goes on from there."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tools.fleet.engine import Engine, EngineError
from tools.fleet.preview import EventSummary
from tools.fleet.waves import PlannedWave

DONE, FAILED = "done", "failed"


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

    @property
    def ok(self) -> bool:
        return not self.failed

    def render(self) -> str:
        lines = [
            "Rollout " + ("complete" if self.ok else "stopped") + ":",
            f"  done: {', '.join(self.done) or 'none'}",
        ]
        lines += [f"  failed: {stack}: {why}" for stack, why in self.failed.items()]
        lines.append(f"  never touched: {', '.join(self.untouched) or 'none'}")
        if not self.ok:
            lines.append("Fix the cause, then run `python -m tools.fleet up --resume`.")
        return "\n".join(lines)


Gate = Callable[[str, Callable[[str], None]], tuple[bool, str]]
"""(stack, progress) -> (healthy, why not): the health gate after a stack's up."""
Prepare = Callable[[str], None]
"""Run before a stack's up (the adoption phase is set here); raises ValueError to refuse it."""


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
) -> Outcome:
    """Wave by wave, `parallel` stacks at once; a stack already done (a resumed rollout) is
    skipped. Once a stack fails, no further stack starts (those running finish). Any exception
    from `prepare`, `engine.up` or `gate` is that stack's failure (recorded, with the step, the
    exception's type and message), never one escaping the rollout."""
    lock = threading.Lock()
    stop = threading.Event()

    def say(line: str) -> None:
        with lock:
            progress(line)

    def record(stack: str, status: str, reason: str = "") -> None:
        with lock:
            state.stacks[stack] = {"status": status, **({"reason": reason} if reason else {})}
            save(state)

    def one(wave: str, stack: str) -> None:
        if stop.is_set():
            return

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
        said("up")
        summary = EventSummary(stack)
        try:
            engine.up(stack, summary)
        except EngineError as error:
            fail(f"pulumi up failed: {summary.finish(str(error)).error}")
            return
        except Exception as error:
            fail(raised("pulumi up", error))
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
        except Exception as error:
            fail(raised("health gate", error))
            return
        if not healthy:
            fail(f"health gate: {why}", f"health gate failed: {why}")
            return
        said("healthy")
        record(stack, DONE)

    for number, p in enumerate(planned, 1):
        if stop.is_set():
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
    return Outcome(
        done=[s for s in everything if state.status(s) == DONE],
        failed={
            s: state.stacks[s].get("reason", "") for s in everything if state.status(s) == FAILED
        },
        untouched=[s for s in everything if state.status(s) is None],
    )

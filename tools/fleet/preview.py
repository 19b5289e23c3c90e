"""The fleet preview: every selected stack previewed with the policy pack, with bounded
parallelism, each summarised from the engine's event stream into one row."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from pulumi.automation import events as ev

from kiam_eks.contracts import tokens
from kiam_eks.contracts.names import SERVER_NODES
from kiam_eks.contracts.rollouts import (
    MANDATORY_ENFORCEMENT,
    POD_TEMPLATE_PATH,
    REPLACE_OPS,
    STEP_INPUTS,
)
from tools.fleet.engine import Engine, EngineError

# Columns of the summary counts, as the engine's SummaryEvent names the operations.
COUNTED_OPS = ("create", "update", "replace", "delete")
# How the program says in the engine's log what it sequences (program/stack.py `judge_change`).
SEQUENCED = "sequenced change: "


@dataclass
class StackPreview:
    """What one stack's preview would do, read from its events."""

    stack: str
    changes: dict[str, int] = field(default_factory=dict)
    node_group_replaced: bool = False
    servers: str = "-"
    """`restart` (the Deployment's pod template changes), `new`, `deleted` or `-`."""
    agents: str = "-"
    notes: list[str] = field(default_factory=list)
    """What review must not miss: Secrets, namespaces and certificates replaced or deleted, and
    every change the program sequences (its `sequenced change:` diagnostics)."""
    policy_packs: dict[str, str] = field(default_factory=dict)
    mandatory: list[str] = field(default_factory=list)
    advisory: list[str] = field(default_factory=list)
    error: str | None = None
    invalid_settings: bool = False

    @property
    def policy(self) -> str:
        if self.mandatory:
            return f"failed: {', '.join(sorted(set(self.mandatory)))}"
        if not self.policy_packs:
            return "not run" if self.error is None else "-"
        # The engine keys the packs that ran by `name|kind|location` (a local pack's path)
        names = ", ".join(sorted({key.split("|", 1)[0] for key in self.policy_packs}))
        if self.advisory:
            return f"passed ({names}), {len(self.advisory)} warnings"
        return f"passed ({names})"

    @property
    def failed(self) -> bool:
        return self.error is not None or bool(self.mandatory)


class EventSummary:
    """Folds one stack's engine events into a `StackPreview` (also used for `up`'s progress)."""

    def __init__(self, stack: str) -> None:
        self.result = StackPreview(stack)
        self._errors: list[str] = []

    def __call__(self, event: ev.EngineEvent) -> None:
        if event.resource_pre_event is not None:
            self._step(event.resource_pre_event.metadata)
        elif event.summary_event is not None:
            changes = event.summary_event.resource_changes or {}
            self.result.changes = {op: int(changes.get(op, 0)) for op in COUNTED_OPS}  # type: ignore[call-overload]
            self.result.policy_packs = dict(event.summary_event.policy_packs or {})
        elif event.policy_event is not None:
            policy = event.policy_event
            target = (
                self.result.mandatory
                if policy.enforcement_level == MANDATORY_ENFORCEMENT
                else self.result.advisory
            )
            target.append(policy.policy_name)
        elif event.diagnostic_event is not None:
            message = " ".join(event.diagnostic_event.message.split())
            if event.diagnostic_event.severity == "error":
                self._errors.append(message)
            elif message.startswith(SEQUENCED):
                setting = message.removeprefix(SEQUENCED).split(": ", 1)[0]
                self._note(f"sequenced: {setting}")

    def _note(self, note: str) -> None:
        if note not in self.result.notes:
            self.result.notes.append(note)

    def _step(self, step: ev.StepEventMetadata) -> None:
        op = str(step.op.value if hasattr(step.op, "value") else step.op)
        state = step.new or step.old
        parent = state.parent if state is not None else ""
        if op in REPLACE_OPS and parent.endswith(f"::{SERVER_NODES}"):
            self.result.node_group_replaced = True
        kind = step.type.rsplit(":", 1)[-1]
        name = step.urn.rsplit("::", 1)[-1]
        noted = step.type in (tokens.SECRET, tokens.NAMESPACE) or step.type.startswith("tls:")
        if noted and (op in REPLACE_OPS or op == "delete"):
            verb = "replaces" if op in REPLACE_OPS else "deletes"
            self._note(f"{verb} {kind} {name}")
            if step.type == tokens.NAMESPACE and op == "delete" and not _retained(step):
                # Everything in it goes with it, whatever else the preview shows.
                self.result.servers = self.result.agents = "deleted"
        if step.type == tokens.DEPLOYMENT:
            self.result.servers = _workload_change(op, step, self.result.servers)
        elif step.type == tokens.DAEMON_SET:
            self.result.agents = _workload_change(op, step, self.result.agents)

    def finish(self, error: str | None) -> StackPreview:
        if error is not None:
            self.result.error = self._errors[-1] if self._errors else error.splitlines()[-1]
        return self.result


def _retained(step: ev.StepEventMetadata) -> bool:
    """A delete the engine only forgets (`retainOnDelete` in the old state)."""
    return bool(getattr(step.old, "retain_on_delete", False))


def _workload_change(op: str, step: ev.StepEventMetadata, before: str) -> str:
    """What a step of the server Deployment or agent DaemonSet does to its pods."""
    if op == "create":
        return "new" if before == "-" else before
    if op == "delete":
        return "deleted" if before == "-" else before
    if op in REPLACE_OPS:
        return "restart"
    if op == "update" and _template(step.old) != _template(step.new):
        return "restart"
    return before


def _template(state: ev.StepEventStateMetadata | None) -> Any:
    value: Any = getattr(state, STEP_INPUTS, None) or {}
    for key in POD_TEMPLATE_PATH:
        value = value.get(key) if isinstance(value, dict) else None
    return value


Progress = Callable[[str], None]


def preview_fleet(
    engine: Engine,
    stacks: list[str],
    parallel: int,
    invalid: dict[str, str],
    progress: Progress,
) -> list[StackPreview]:
    """Every stack previewed, at most `parallel` at once; stacks whose settings are invalid
    (`invalid`: stack -> message) are reported, never previewed. Rows in `stacks` order."""
    lock = threading.Lock()

    def say(line: str) -> None:
        with lock:
            progress(line)

    def one(stack: str) -> StackPreview:
        if stack in invalid:
            row = StackPreview(stack, error=invalid[stack], invalid_settings=True)
            say(f"{stack}: invalid settings")
            return row
        say(f"{stack}: previewing")
        summary = EventSummary(stack)
        try:
            engine.preview(stack, summary)
            row = summary.finish(None)
        except EngineError as error:
            row = summary.finish(str(error))
        except Exception as error:  # a kubeconfig, an exec plugin: the row says, never a traceback
            row = summary.finish(f"preview raised {type(error).__name__}: {error}")
        say(f"{stack}: {'failed' if row.failed else 'previewed'}")
        return row

    with ThreadPoolExecutor(max_workers=max(1, parallel)) as pool:
        return list(pool.map(one, stacks))

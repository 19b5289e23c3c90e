"""The Pulumi operations the fleet runs, behind a small interface (`Engine`), so the unit tests can
fake them; `AutomationEngine` runs them with Pulumi's Automation API (`pulumi.automation`: a
`LocalWorkspace` per stack in the stack's project directory, the stack files as they are)."""

from __future__ import annotations

import json
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pulumi import automation as auto
from pulumi.automation import events as ev

from tools.fleet.cancellation import CancellableCommand, Cancellation
from tools.fleet.fleet_file import FleetFile
from tools.interrupted.lock_files import lock_files
from tools.interrupted.locks import Lock, is_locked

OnEvent = Callable[[ev.EngineEvent], None]


class EngineError(RuntimeError):
    """A Pulumi command failed; the message is its last error lines."""


class LockedError(EngineError):
    """A locking command (up, refresh, state import) was refused: the stack is locked. The
    message is the CLI's, naming each lock (tools/interrupted/locks.py reads it)."""


class Engine(Protocol):
    def preview(self, stack: str, on_event: OnEvent) -> None:
        """Preview the stack with the policy pack, streaming the engine's events."""

    def up(self, stack: str, on_event: OnEvent) -> None:
        """Update the stack with the policy pack, streaming the engine's events."""

    def outputs(self, stack: str) -> dict[str, Any]:
        """The stack's outputs (secrets in clear)."""

    def config_value(self, stack: str, key: str) -> str | None:
        """A config value (decrypted), or None when the stack has none."""

    def set_config_path(self, stack: str, key_path: str, value: str) -> None:
        """Set one config value by path (`kiam:adoption.phase`) in the stack's file."""

    def export(self, stack: str) -> dict[str, Any]:
        """`pulumi stack export`: the checkpoint, pending operations included (takes no lock)."""

    def import_state(self, stack: str, document: dict[str, Any]) -> None:
        """`pulumi stack import`: the checkpoint replaced (takes the lock; raises LockedError)."""

    def refresh(self, stack: str) -> None:
        """`pulumi refresh`: the state read back from the cloud (takes the lock)."""

    def release_locks(self, stack: str) -> None:
        """`pulumi cancel`: removes every lock file of the stack (stops nothing)."""

    def locks(self, stack: str) -> list[Lock] | None:
        """The stack's lock files in its backend (None: a backend not listed here)."""


@dataclass
class AutomationEngine:
    """The Automation API over the stacks of a fleet file."""

    fleet: FleetFile
    cancellation: Cancellation = field(default_factory=Cancellation)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._command: auto.PulumiCommand | None = None

    def _stack(self, name: str) -> auto.Stack:
        target = self.fleet.stacks.get(name)
        work_dir = target.work_dir if target and target.work_dir else self.fleet.project
        with self._lock:  # PulumiCommand runs `pulumi version` once; stacks start in parallel
            if self._command is None:
                root = self.fleet.pulumi_root
                self._command = CancellableCommand(
                    self.cancellation,
                    root=str(root) if root else None,
                    skip_version_check=root is not None,
                )
        workspace = auto.LocalWorkspace(
            work_dir=str(work_dir),
            env_vars=dict(target.env) if target else None,
            pulumi_command=self._command,
        )
        return auto.Stack.select(name, workspace)

    def _packs(self) -> list[str] | None:
        pack = self.fleet.policy_pack
        return [str(pack)] if pack is not None else None

    def preview(self, stack: str, on_event: OnEvent) -> None:
        try:
            self._stack(stack).preview(on_event=on_event, policy_packs=self._packs(), color="never")
        except auto.errors.CommandError as error:
            raise EngineError(_last_errors(str(error))) from None

    def up(self, stack: str, on_event: OnEvent) -> None:
        try:
            self._stack(stack).up(on_event=on_event, policy_packs=self._packs(), color="never")
        except auto.errors.CommandError as error:
            raise _error(str(error)) from None

    def _run(self, stack: str, *args: str) -> str:
        """A CLI command on the stack, as the Automation API runs its own (same command, working
        directory and environment), for what the API has no method for."""
        selected = self._stack(stack)
        workspace = selected.workspace
        assert isinstance(workspace, auto.LocalWorkspace) and self._command is not None
        try:
            result = self._command.run(
                [*args, "--stack", stack, "--color", "never"],
                str(workspace.work_dir),
                dict(workspace.env_vars or {}),
            )
        except auto.errors.CommandError as error:
            raise _error(str(error)) from None
        return result.stdout

    def export(self, stack: str) -> dict[str, Any]:
        document: dict[str, Any] = json.loads(self._run(stack, "stack", "export"))
        return document

    def import_state(self, stack: str, document: dict[str, Any]) -> None:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "state.json"
            path.write_text(json.dumps(document))
            self._run(stack, "stack", "import", "--file", str(path))

    def refresh(self, stack: str) -> None:
        self._run(stack, "refresh", "--yes", "--skip-preview")

    def release_locks(self, stack: str) -> None:
        self._run(stack, "cancel", "--yes")

    def locks(self, stack: str) -> list[Lock] | None:
        workspace = self._stack(stack).workspace
        url = workspace.who_am_i().url
        project = workspace.project_settings().name
        return lock_files(url, project, stack) if url else None

    def outputs(self, stack: str) -> dict[str, Any]:
        return {k: v.value for k, v in self._stack(stack).outputs().items()}

    def config_value(self, stack: str, key: str) -> str | None:
        try:
            return self._stack(stack).get_config(key).value
        except auto.errors.CommandError:
            return None

    def set_config_path(self, stack: str, key_path: str, value: str) -> None:
        selected = self._stack(stack)
        selected.workspace.set_config(stack, key_path, auto.ConfigValue(value), path=True)


def _error(text: str) -> EngineError:
    # A refusal for a lock keeps every lock's line (the recovery reads them); other failures
    # their last lines.
    if is_locked(text):
        return LockedError("\n".join(line for line in text.splitlines() if line.strip()))
    return EngineError(_last_errors(text))


def _last_errors(text: str, lines: int = 6) -> str:
    """The end of a failed command's output, where the CLI puts what went wrong."""
    kept = [line.rstrip() for line in text.splitlines() if line.strip()]
    return "\n".join(kept[-lines:])


def stack_work_dir(fleet: FleetFile, stack: str) -> Path:
    target = fleet.stacks.get(stack)
    return target.work_dir if target and target.work_dir else fleet.project

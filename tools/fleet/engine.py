"""The Pulumi operations the fleet runs, behind a small interface (`Engine`), so the unit tests can
fake them; `AutomationEngine` runs them with Pulumi's Automation API (`pulumi.automation`: a
`LocalWorkspace` per stack in the stack's project directory, the stack files as they are)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from pulumi import automation as auto
from pulumi.automation import events as ev

from tools.fleet.fleet_file import FleetFile

OnEvent = Callable[[ev.EngineEvent], None]


class EngineError(RuntimeError):
    """A Pulumi command failed; the message is its last error lines."""


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


@dataclass
class AutomationEngine:
    """The Automation API over the stacks of a fleet file."""

    fleet: FleetFile

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._command: auto.PulumiCommand | None = None

    def _stack(self, name: str) -> auto.Stack:
        target = self.fleet.stacks.get(name)
        work_dir = target.work_dir if target and target.work_dir else self.fleet.project
        with self._lock:  # PulumiCommand runs `pulumi version` once; stacks start in parallel
            if self._command is None:
                root = self.fleet.pulumi_root
                self._command = auto.PulumiCommand(
                    root=str(root) if root else None, skip_version_check=root is not None
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
            raise EngineError(_last_errors(str(error))) from None

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


def _last_errors(text: str, lines: int = 6) -> str:
    """The end of a failed command's output, where the CLI puts what went wrong."""
    kept = [line.rstrip() for line in text.splitlines() if line.strip()]
    return "\n".join(kept[-lines:])


def stack_work_dir(fleet: FleetFile, stack: str) -> Path:
    target = fleet.stacks.get(stack)
    return target.work_dir if target and target.work_dir else fleet.project

"""Fakes for the fleet's unit tests: engine events as the engine writes them (apitype JSON, parsed
by the Automation API's own `EngineEvent.from_json`), an engine that replays them, and a project."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pulumi.automation.events import EngineEvent

from tools.fleet.engine import EngineError, OnEvent
from tools.mock_engine import PROJECT_DIR

KIAM = "urn:pulumi:s::kiam::kiam:index:Kiam::kiam"
SERVER_NODES_URN = "urn:pulumi:s::kiam::kiam:index:Kiam$kiam:aws:ServerNodes::kiam-server-nodes"


def event(**body: Any) -> EngineEvent:
    return EngineEvent.from_json({"sequence": 1, "timestamp": 1, **body})


def state(urn: str, parent: str, inputs: dict[str, Any], retain: bool = False) -> dict[str, Any]:
    return {
        "type": "t",
        "urn": urn,
        "id": "",
        "parent": parent,
        "provider": "",
        "inputs": inputs,
        "retainOnDelete": retain,
    }


def step(
    op: str,
    type_: str,
    name: str,
    parent: str = KIAM,
    old: Any = None,
    new: Any = None,
    retain: bool = False,
) -> EngineEvent:
    urn = f"{parent}${type_}::{name}"
    metadata = {
        "op": op,
        "urn": urn,
        "type": type_,
        "provider": "",
        "old": None if old is None else state(urn, parent, old, retain),
        "new": None if new is None else state(urn, parent, new, retain),
        "detailedDiff": None,
    }
    return event(resourcePreEvent={"metadata": metadata})


def summary(packs: dict[str, str] | None = None, **changes: int) -> EngineEvent:
    return event(
        summaryEvent={
            "maybeCorrupt": False,
            "durationSeconds": 1,
            "resourceChanges": changes,
            "PolicyPacks": packs or {},
            "isPreview": True,
        }
    )


def violation(policy: str, level: str = "mandatory") -> EngineEvent:
    return event(
        policyEvent={
            "message": "m",
            "color": "never",
            "policyName": policy,
            "policyPackName": "kiam",
            "policyPackVersion": "0.0.1",
            "enforcementLevel": level,
        }
    )


def error(message: str) -> EngineEvent:
    return event(diagnosticEvent={"message": message, "color": "never", "severity": "error"})


def info(message: str) -> EngineEvent:
    return event(diagnosticEvent={"message": message, "color": "never", "severity": "info"})


def template(image: str) -> dict[str, Any]:
    return {"spec": {"replicas": 2, "template": {"spec": {"containers": [{"image": image}]}}}}


@dataclass
class FakeEngine:
    """Replays each stack's events; a stack in `failing` raises as a failed command does, and
    `raising[(operation, stack)]` is raised as it is by that operation (`up`, `set-config`, ...):
    what no Pulumi command failing looks like (an exec plugin, a bug)."""

    previews: dict[str, list[EngineEvent]] = field(default_factory=dict)
    ups: dict[str, list[EngineEvent]] = field(default_factory=dict)
    failing: dict[str, str] = field(default_factory=dict)
    outputs_of: dict[str, dict[str, Any]] = field(default_factory=dict)
    calls: list[tuple[str, str]] = field(default_factory=list)
    config: dict[tuple[str, str], str] = field(default_factory=dict)
    raising: dict[tuple[str, str], Exception] = field(default_factory=dict)
    pending: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Each stack's pending operations, as `pulumi stack export` writes them."""
    imported: dict[str, dict[str, Any]] = field(default_factory=dict)

    def _raise(self, operation: str, stack: str) -> None:
        if (operation, stack) in self.raising:
            raise self.raising[(operation, stack)]

    def _replay(self, kind: str, stack: str, events: list[EngineEvent], on_event: OnEvent) -> None:
        self.calls.append((kind, stack))
        self._raise(kind, stack)
        for e in events:
            on_event(e)
        if stack in self.failing:
            raise EngineError(self.failing[stack])

    def preview(self, stack: str, on_event: OnEvent) -> None:
        self._replay("preview", stack, self.previews.get(stack, [summary(same=10)]), on_event)

    def up(self, stack: str, on_event: OnEvent) -> None:
        self._replay("up", stack, self.ups.get(stack, [summary(update=2, same=8)]), on_event)

    def export(self, stack: str) -> dict[str, Any]:
        self.calls.append(("export", stack))
        self._raise("export", stack)
        return {"deployment": {"pending_operations": self.pending.get(stack, [])}}

    def import_state(self, stack: str, document: dict[str, Any]) -> None:
        self.calls.append(("stack import", stack))
        self._raise("stack import", stack)
        self.imported[stack] = document
        self.pending.pop(stack, None)

    def refresh(self, stack: str) -> None:
        self.calls.append(("refresh", stack))
        self._raise("refresh", stack)

    def release_locks(self, stack: str) -> None:
        self.calls.append(("cancel", stack))

    def locks(self, stack: str) -> list[Any] | None:
        return []

    def outputs(self, stack: str) -> dict[str, Any]:
        self._raise("outputs", stack)
        return self.outputs_of.get(stack, {"nodeGroupName": "kiam-server-abc"})

    def config_value(self, stack: str, key: str) -> str | None:
        return self.config.get((stack, key))

    def set_config_path(self, stack: str, key_path: str, value: str) -> None:
        self.calls.append(("set-config", f"{stack} {key_path}={value}"))
        self._raise("set-config", stack)


def project(tmp_path: Path, stacks: list[str], fleet: dict[str, Any]) -> Path:
    """A project folder with the dev example's settings under each stack name, and a fleet file."""
    (tmp_path / "stacks").mkdir(parents=True)
    (tmp_path / "Pulumi.yaml").write_text("name: kiam\nruntime: python\nstackConfigDir: stacks\n")
    for stack in stacks:
        shutil.copy(
            PROJECT_DIR / "stacks" / "Pulumi.dev.yaml", tmp_path / "stacks" / f"Pulumi.{stack}.yaml"
        )
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump(fleet, sort_keys=False))
    return path

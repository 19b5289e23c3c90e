"""The operations a killed update left in flight (`pulumi stack export`'s
`deployment.pending_operations`), and what to do with each.

The engine marks every step pending before it calls the provider and saves the checkpoint after
each step (pulumi/pulumi v3.276.0 `pkg/backend/snapshot.go`), so a kill leaves one pending
operation per step in flight. The next `up` warns and goes on: pending updates, deletes and reads
are redone or dropped, but pending **creates** are carried forward until a person resolves them
(`snapshot.go`: "these must require user intervention"; `pulumi refresh` with
`--clear-pending-creates` or `--import-pending-creates URN ID`, `cmd/pulumi/operations/refresh.go`).
A create may have finished after the kill: then the object exists and the state does not know it.
Clearing it would make the next `up` create it again, which pulumi-kubernetes 4.29 and later refuse
(`AlreadyExists`), and which for an auto-named object or a name prefix (the server node group)
creates a second one beside the first; so an object that exists is imported, and only one that
does not is cleared.

The import is a state edit (`pulumi stack export`, the resource added with its ID, `pulumi stack
import`, then `pulumi refresh` to read its outputs), Pulumi's documented manual resolution. The
CLI's `refresh --import-pending-creates URN ID` does not import in v3.276.0: measured on the real
CLI, it turns the operation into an `importing` one that nothing consumes (`snapshot.go` carries
forward only `creating` ones), the object stays untracked and the next `up` creates another.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

CREATING = "creating"


@dataclass(frozen=True)
class PendingOperation:
    urn: str
    type: str
    operation: str
    """creating, updating, deleting, reading, importing (`pkg/resource/operation.go`)."""
    inputs: dict[str, Any]
    id: str = ""

    @property
    def name(self) -> str:
        return self.urn.rsplit("::", 1)[-1]


def pending_operations(exported: dict[str, Any]) -> list[PendingOperation]:
    """The pending operations of a `pulumi stack export` document."""
    deployment = exported.get("deployment") or {}
    found = []
    for op in deployment.get("pending_operations") or []:
        resource = op.get("resource") or {}
        found.append(
            PendingOperation(
                urn=resource.get("urn", ""),
                type=resource.get("type", ""),
                operation=op.get("type", ""),
                inputs=resource.get("inputs") or {},
                id=resource.get("id") or "",
            )
        )
    return found


@dataclass(frozen=True)
class Finding:
    """Whether a pending create's object exists: `exists` with its provider ID, `absent`, or
    `unknown` with why nothing here can tell (a person decides)."""

    state: Literal["exists", "absent", "unknown"]
    id: str = ""
    why: str = ""
    outputs: dict[str, Any] = field(default_factory=dict)
    """What the provider's own bookkeeping of an existing object needs beyond its inputs (for
    pulumi-kubernetes, the field manager its create applied with)."""


Lookup = Callable[[PendingOperation], Finding]


@dataclass
class Resolution:
    imports: list[tuple[str, str]] = field(default_factory=list)
    """(URN, ID) of each pending create whose object exists."""
    outputs: dict[str, dict[str, Any]] = field(default_factory=dict)
    """URN -> what its Finding said the state needs beyond the inputs."""
    clears: list[str] = field(default_factory=list)
    """URNs of pending creates whose object does not exist."""
    redone: list[PendingOperation] = field(default_factory=list)
    """Updates, deletes and reads: the refresh reads what is there and the next `up` redoes them."""
    unresolved: list[tuple[PendingOperation, str]] = field(default_factory=list)

    def summary(self) -> str:
        parts = []
        if self.imports:
            parts.append("imported " + ", ".join(_name(urn) for urn, _ in self.imports))
        if self.clears:
            parts.append("cleared " + ", ".join(_name(urn) for urn in self.clears))
        if self.redone:
            parts.append(
                "refreshed " + ", ".join(f"{op.name} ({op.operation})" for op in self.redone)
            )
        return "; ".join(parts) or "nothing pending"


def resolve(operations: list[PendingOperation], lookup: Lookup) -> Resolution:
    resolution = Resolution()
    for op in operations:
        if op.operation != CREATING:
            resolution.redone.append(op)
            continue
        finding = lookup(op)
        if finding.state == "exists":
            resolution.imports.append((op.urn, finding.id))
            if finding.outputs:
                resolution.outputs[op.urn] = finding.outputs
        elif finding.state == "absent":
            resolution.clears.append(op.urn)
        else:
            resolution.unresolved.append((op, finding.why))
    return resolution


def resolved_state(exported: dict[str, Any], resolution: Resolution) -> dict[str, Any]:
    """The export with every pending operation resolved: each create whose object exists added to
    the resources with its ID (its outputs its inputs until the refresh reads them; appended last,
    which keeps the resources in dependency order: nothing was created on top of an unfinished
    create), every other operation dropped (`stack import` drops them all; the refresh reads back
    what updates, deletes and reads left)."""
    document = copy.deepcopy(exported)
    deployment = document["deployment"]
    ids = dict(resolution.imports)
    for op in deployment.get("pending_operations") or []:
        resource = op.get("resource") or {}
        if op.get("type") == CREATING and resource.get("urn") in ids:
            deployment.setdefault("resources", []).append(
                {
                    **resource,
                    "id": ids[resource["urn"]],
                    "outputs": {
                        **copy.deepcopy(resource.get("inputs") or {}),
                        **resolution.outputs.get(resource["urn"], {}),
                    },
                }
            )
    deployment["pending_operations"] = []
    return document


def _name(urn: str) -> str:
    return urn.rsplit("::", 1)[-1]

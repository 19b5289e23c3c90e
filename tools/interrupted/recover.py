"""Recover one stack from an interrupted update, or say exactly what a person must do.

What is automatic, and why:
- **A dead lock is removed** (`pulumi cancel`), only when every lock of the stack is provably dead
  (tools/interrupted/locks.py: taken on this host by a process that is gone). A lock of another
  host, or of a live process, is always respected: the recovery stops and names it. The locks are
  read from the backend first (lock_files.py), before anything is edited; the checkpoint is read
  again just before the edit is written, and a change in between (an update that was running)
  stops the recovery instead of overwriting it.
- **Pending operations are resolved by a state edit and a refresh**: each pending create is
  imported when its object exists and cleared when it does not (tools/interrupted/pending.py);
  updates, deletes and reads are read back from the cluster by the refresh. A pending create
  whose object cannot be looked up here (not a Kubernetes object) stops the recovery with the
  commands.
- **Nothing is deleted or changed in the cluster or the cloud**: a refresh only reads, an import
  only records. Whatever must still change is done by the stack's next `up`, which runs the whole
  program, its change judge included, as any other update does.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar

from tools.interrupted.locks import (
    Lock,
    ProcessTable,
    is_locked,
    linux_process,
    locks_in,
    owner_gone,
)
from tools.interrupted.pending import (
    Lookup,
    Resolution,
    pending_operations,
    resolve,
    resolved_state,
)

T = TypeVar("T")
Progress = Callable[[str], None]


class NeedsOperator(Exception):  # noqa: N818 (an outcome, not a fault)
    """What an interrupted update left cannot be recovered safely here: the message names the
    stack, what was found and the commands a person runs."""


class StackCommands(Protocol):
    """The Pulumi commands the recovery runs on one stack."""

    def export(self) -> dict[str, Any]: ...

    def import_state(self, document: dict[str, Any]) -> None: ...

    def refresh(self) -> object: ...

    def release_locks(self) -> None: ...

    def locks(self) -> list[Lock] | None:
        """The stack's lock files, or None when its backend cannot be listed here."""


def _released(
    stack: str,
    locks: list[Lock],
    commands: StackCommands,
    progress: Progress,
    then: str,
    this_host: str | None,
    process: ProcessTable,
    now: datetime,
    message: str = "",
) -> None:
    """Remove the stack's locks if every one is dead; otherwise raise NeedsOperator naming the
    live ones (or all, when the refusal named none)."""
    alive = [lock for lock in locks if not owner_gone(lock, this_host, process)]
    if alive or not locks:
        found = "; ".join(lock.describe(now) for lock in (alive or locks)) or message
        raise NeedsOperator(
            f"{stack} is locked by an update that may still run: {found}. Wait for it to end. "
            f"If it has (its host is gone, or no `pulumi` with that pid runs there): "
            f"`pulumi cancel --stack {stack} --yes`, then {then}"
        )
    progress(
        "removing "
        + ", ".join(f"the dead lock of pid {lock.pid} ({lock.taken.isoformat()})" for lock in locks)
    )
    commands.release_locks()


def unlocked(
    stack: str,
    run: Callable[[], T],
    commands: StackCommands,
    progress: Progress,
    *,
    then: str,
    this_host: str | None = None,
    process: ProcessTable = linux_process,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> T:
    """`run` (a locking command); if the stack is locked and every lock is dead, the locks are
    removed and `run` runs once more; a live or unknown lock raises NeedsOperator."""
    try:
        return run()
    except Exception as error:
        message = str(error)
        if not is_locked(message):
            raise
        _released(
            stack, locks_in(message), commands, progress, then, this_host, process, now(), message
        )
        return run()


def recover(
    stack: str,
    commands: StackCommands,
    lookup: Lookup,
    progress: Progress,
    *,
    then: str,
    this_host: str | None = None,
    process: ProcessTable = linux_process,
) -> Resolution | None:
    """Resolve the stack's pending operations (removing dead locks first); None when it had none.
    `then` is the command that goes on afterwards, for the messages."""
    listed = commands.locks()
    if listed:
        now = datetime.now(UTC)
        _released(stack, listed, commands, progress, then, this_host, process, now)
    exported = commands.export()
    operations = pending_operations(exported)
    if not operations:
        return None
    progress(
        f"{len(operations)} pending operation(s) from an interrupted update: "
        + ", ".join(f"{op.name} ({op.operation})" for op in operations)
    )
    resolution = resolve(operations, lookup)
    if resolution.unresolved:
        lines = [f"{op.urn} ({op.type}): {why}" for op, why in resolution.unresolved]
        raise NeedsOperator(
            f"{stack} has pending creates nothing here can look up: {'; '.join(lines)}. "
            "For each one whose object exists (an orphan the state does not know): "
            f"`pulumi import --stack {stack}` it under that URN's type, name and parent, or "
            "delete the object; then "
            f"`pulumi refresh --stack {stack} --yes --clear-pending-creates`; then {then}"
        )
    if commands.export() != exported:
        raise NeedsOperator(
            f"{stack}: its checkpoint changed while its recovery read it: another update of it "
            f"is running. Wait for it to end, then {then}"
        )
    edited = resolved_state(exported, resolution)
    for step in (lambda: commands.import_state(edited), commands.refresh):
        unlocked(stack, step, commands, progress, then=then, this_host=this_host, process=process)
    left = pending_operations(commands.export())
    if left:
        raise NeedsOperator(
            f"{stack}: the refresh left {len(left)} pending operation(s): "
            + ", ".join(f"{op.urn} ({op.operation})" for op in left)
            + f". Resolve them with `pulumi refresh --stack {stack}` (interactive), then {then}"
        )
    progress(f"recovered: {resolution.summary()}")
    return resolution

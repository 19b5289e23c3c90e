"""A stack's update locks, read from the CLI's own refusal, and whether each lock's owner is gone.

On the self-managed backends (file, S3) a lock is a JSON file `{pid, username, hostname,
timestamp}` that an update, a refresh, a destroy and a state import write and remove when they end
(pulumi/pulumi v3.276.0 `pkg/backend/diy/lock.go`: `Lock`, `Unlock`, `newLockContent`). It has no
expiry and no liveness check: a SIGKILL skips the removal and every later locking command is
refused with the message `checkForLock` writes, one line per lock:

    error: the stack is currently locked by 1 lock(s). Either wait for the other process(es) to end
    or delete the lock file with `pulumi cancel`.
      file:///state/.pulumi/locks/organization/kiam/dev/0b7c….json: created by runner@fv-az12 (pid 4123) at 2026-12-03T19:02:11Z

That message is what this module reads, for every backend alike (`preview` and `stack export` take
no lock, so nothing else shows one). A lock is taken as **gone** only when that is provable here: it
was written on this host and no `pulumi` process with its pid has run since before its time. A
lock of another host is never taken as gone: nothing here can tell whether that host still runs
the update, and removing a live lock lets two engines write one checkpoint (`pulumi cancel`'s own
warning). Those stop the recovery with the lock, its age and the commands for a person.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from tools.proc_stat import CLOCK_TICKS_PER_SECOND, PROC, boot_time, read_stat

# `checkForLock`'s first sentence, and each lock's line (`%v: created by %v@%v (pid %v) at %v`,
# the time as RFC 3339).
LOCKED = "the stack is currently locked by"
_LINE = re.compile(
    r"^\s*(?P<url>\S+): created by (?P<user>.*)@(?P<host>[^@\s]+) \(pid (?P<pid>\d+)\) "
    r"at (?P<time>\S+)\s*$"
)


@dataclass(frozen=True)
class Lock:
    """One lock file, as the CLI describes it."""

    url: str
    user: str
    host: str
    pid: int
    taken: datetime

    def age_seconds(self, now: datetime) -> float:
        return max(0.0, (now - self.taken).total_seconds())

    def describe(self, now: datetime) -> str:
        return (
            f"{self.user}@{self.host} pid {self.pid}, taken {self.taken.isoformat()} "
            f"({_age(self.age_seconds(now))} ago): {self.url}"
        )


def is_locked(message: str) -> bool:
    return LOCKED in message


def locks_in(message: str) -> list[Lock]:
    """Every lock the CLI's refusal names (none when the message is another error)."""
    if not is_locked(message):
        return []
    found = []
    for line in message.splitlines():
        match = _LINE.match(line)
        if match:
            found.append(
                Lock(
                    url=match["url"],
                    user=match["user"],
                    host=match["host"],
                    pid=int(match["pid"]),
                    taken=datetime.fromisoformat(match["time"].replace("Z", "+00:00")),
                )
            )
    return found


@dataclass(frozen=True)
class Process:
    """A running process, as far as the owner check needs it."""

    name: str
    started: datetime


ProcessTable = Callable[[int], Process | None]


def linux_process(pid: int, proc: Path = PROC) -> Process | None:
    """The running process with this pid from /proc (its command name and start time), or None
    (no such process, or one that has exited and is not yet reaped: seen on the real engine, a
    killed CLI whose parent was killed too stayed a zombie, nothing reaped it, and its lock looked
    alive). Its start is counted from the machine's boot (tools/proc_stat.py)."""
    stat, boot = read_stat(pid, proc), boot_time(proc)
    if stat is None or boot is None or stat.exited:
        return None
    started = boot + stat.start_ticks / CLOCK_TICKS_PER_SECOND
    return Process(name=stat.name, started=datetime.fromtimestamp(started, UTC))


def owner_gone(
    lock: Lock,
    this_host: str | None = None,
    process: ProcessTable = linux_process,
) -> bool:
    """Whether the update that took `lock` has provably ended: it ran on this host and its pid is
    not a `pulumi` process that started before the lock was taken (a pid reused by any other
    process, or by a later one, is not the owner)."""
    if lock.host != (this_host or socket.gethostname()):
        return False
    running = process(lock.pid)
    if running is None:
        return True
    # Two seconds of slack: the CLI writes its lock a moment after it starts, and /proc's start
    # time is in clock ticks.
    return not (
        running.name == "pulumi" and running.started.timestamp() <= lock.taken.timestamp() + 2
    )


def _age(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"

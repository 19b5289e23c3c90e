"""A Linux process's line of `/proc/PID/stat`, read by what each field means (proc(5)).

The line is `pid (comm) state ppid ...`: the command name is the text between the first `(` and
the last `)` (it may itself hold spaces and parentheses), and the fields after it are counted from
the third, the state. The times are in clock ticks (`sysconf(_SC_CLK_TCK)`): the CPU the process
spent in user and in kernel mode (fields 14 and 15), and its start since boot (field 22).

Its readers: whether a lock's owner still runs (tools/interrupted/locks.py), how much CPU each
process of a timed command spent (e2e/harness/process_cpu.py), and the whole tree of a process
the real-engine tests kill (e2e/tests/test_interrupted.py).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
CLOCK_TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK")

# A process in these states (field 3) has exited: a zombie waits only for its parent to read its
# status.
EXITED_STATES = ("Z", "X", "x")


@dataclass(frozen=True)
class ProcStat:
    """The fields of one process's stat line the readers use."""

    name: str
    state: str
    parent: int
    user_ticks: int
    system_ticks: int
    start_ticks: int

    @property
    def exited(self) -> bool:
        return self.state in EXITED_STATES

    @property
    def cpu_seconds(self) -> float:
        return (self.user_ticks + self.system_ticks) / CLOCK_TICKS_PER_SECOND


def read_stat(pid: int, proc: Path = PROC) -> ProcStat | None:
    """The process's stat line, or None when there is no such process (or it went while read)."""
    try:
        line = (proc / str(pid) / "stat").read_text()
    except OSError:
        return None
    try:
        fields = line[line.rindex(")") + 2 :].split()
        return ProcStat(
            name=line[line.index("(") + 1 : line.rindex(")")],
            state=fields[0],
            parent=int(fields[1]),
            user_ticks=int(fields[11]),
            system_ticks=int(fields[12]),
            start_ticks=int(fields[19]),
        )
    except (ValueError, IndexError):
        return None


def boot_time(proc: Path = PROC) -> int | None:
    """When the machine booted, in seconds since the epoch (`btime` in /proc/stat)."""
    try:
        return next(
            int(line.split()[1])
            for line in (proc / "stat").read_text().splitlines()
            if line.startswith("btime ")
        )
    except (OSError, StopIteration, ValueError, IndexError):
        return None


def command_line(pid: int, proc: Path = PROC) -> list[str]:
    """The process's arguments (`/proc/PID/cmdline`, NUL-separated); empty when gone."""
    try:
        raw = (proc / str(pid) / "cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def all_pids(proc: Path = PROC) -> list[int]:
    return [int(entry.name) for entry in proc.iterdir() if entry.name.isdigit()]


def parents(proc: Path = PROC) -> dict[int, int]:
    """Every process's parent pid (field 4), by pid."""
    stats = {pid: read_stat(pid, proc) for pid in all_pids(proc)}
    return {pid: stat.parent for pid, stat in stats.items() if stat is not None}


def descendants(root: int, parent_of: Mapping[int, int]) -> list[int]:
    """Every process below `root` in the tree `parent_of` (pid to parent pid) describes, nearest
    first: each generation before the next."""
    children: dict[int, list[int]] = {}
    for pid, parent in parent_of.items():
        children.setdefault(parent, []).append(pid)
    found: list[int] = []
    generation = children.get(root, [])
    while generation:
        found += generation
        generation = [child for pid in generation for child in children.get(pid, [])]
    return found

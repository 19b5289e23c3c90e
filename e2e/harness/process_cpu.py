"""The CPU a command costs, by the kind of process that spent it: the Pulumi CLI (the engine), the
language host, the program, the language host's `pip`, a resource provider.

`python -m e2e.bench` times whole commands; this says which process the difference between two
programs is in (on a machine of two cores, the engine, the program and the provider compete for
them). While a block runs, a thread reads `/proc/PID/stat` (tools/proc_stat.py) of every
descendant of this process every `INTERVAL_SECONDS`; each process counts the CPU it spent
between the block's start (or its own) and its last sample, the one after it exited if its parent
had not reaped it yet. A process reaped at once loses at most its last interval, so the sampled
parts are a lower bound; `total` is exact: the CPU of every child process waited for during the
block (`getrusage(RUSAGE_CHILDREN)`, which holds the descendants of each as long as every one
between waited for its own: getrusage(2)), which for a command run in the foreground is its
whole process tree. The control plane is in neither: kwokctl starts each of its components in a
session of its own and exits (sigs.k8s.io/kwok v0.8.0 pkg/utils/exec/cmd_other.go
`startProcess`), so they are no descendants of this process.
"""

from __future__ import annotations

import os
import resource
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tools.proc_stat import PROC, all_pids, command_line, descendants, read_stat

INTERVAL_SECONDS = 0.05

CLI, LANGUAGE_HOST, PROGRAM, PIP, PROVIDER, OTHER = (
    "the CLI",
    "the language host",
    "the program",
    "pip",
    "providers",
    "other",
)
KINDS = (CLI, PROGRAM, LANGUAGE_HOST, PIP, PROVIDER, OTHER)


def kind_of(arguments: list[str]) -> str:
    """What a process is, from its command line. The Python language host the toolchain builds
    runs the program as `python <its folder>/pulumi-language-python-exec --monitor ...` and lists
    the program's packages with `python -m pip list` (pulumi/pulumi v3.68.0
    sdk/python/cmd/pulumi-language-python/main.go: `pythonDefaultExec`, `constructArguments`,
    `runPythonCommand`); plugins are binaries named `pulumi-language-<runtime>` (here the
    adapter and the host behind it, e2e/toolchain/README.md) and `pulumi-resource-<package>`."""
    if not arguments:
        return OTHER
    binary = Path(arguments[0]).name
    if any(Path(a).name == "pulumi-language-python-exec" for a in arguments[1:3]):
        return PROGRAM
    if binary == "pulumi":
        return CLI
    if binary.startswith("pulumi-language-"):
        return LANGUAGE_HOST
    if binary.startswith("pulumi-resource-"):
        return PROVIDER
    if binary.startswith("python") and "pip" in arguments[1:4]:
        return PIP
    return OTHER


class CpuByKind:
    """The samples of one block: for each process seen, its kind, its CPU when first seen and
    when last seen; `by_kind` sums what each kind spent."""

    def __init__(self) -> None:
        self.total = 0.0
        self._kinds: dict[int, str] = {}
        self._first: dict[int, float] = {}
        self._last: dict[int, float] = {}

    def seen(self, pid: int, kind: str, cpu_seconds: float, *, before_block: bool) -> None:
        """A sample: a process found when the block started counts from there, one started
        during the block from nothing."""
        if pid not in self._kinds:
            self._kinds[pid] = kind
            self._first[pid] = cpu_seconds if before_block else 0.0
        self._last[pid] = cpu_seconds

    def kind(self, pid: int) -> str | None:
        """The kind of a process already seen (its command line is read once)."""
        return self._kinds.get(pid)

    def by_kind(self) -> dict[str, float]:
        spent = {kind: 0.0 for kind in KINDS}
        for pid, kind in self._kinds.items():
            spent[kind] += self._last[pid] - self._first[pid]
        return spent


def _sample(root: int, into: CpuByKind, *, before_block: bool, proc: Path) -> None:
    stats = {pid: stat for pid in all_pids(proc) if (stat := read_stat(pid, proc)) is not None}
    for pid in descendants(root, {pid: stat.parent for pid, stat in stats.items()}):
        stat = stats[pid]
        kind = into.kind(pid)
        if kind is None:
            if stat.exited:
                continue  # gone before its command line was read: its kind is unknown
            kind = kind_of(command_line(pid, proc))
        # An exited process not yet reaped still reports all the CPU it spent (proc(5)).
        into.seen(pid, kind, stat.cpu_seconds, before_block=before_block)


@contextmanager
def cpu_by_kind(proc: Path = PROC) -> Iterator[CpuByKind]:
    """Samples this process's descendants while the block runs (see the module)."""
    found = CpuByKind()
    root = os.getpid()
    _sample(root, found, before_block=True, proc=proc)
    waited = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = threading.Event()

    def sample() -> None:
        while not done.wait(INTERVAL_SECONDS):
            _sample(root, found, before_block=False, proc=proc)

    sampler = threading.Thread(target=sample, name="cpu-by-kind", daemon=True)
    sampler.start()
    try:
        yield found
    finally:
        done.set()
        sampler.join()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        found.total = (after.ru_utime - waited.ru_utime) + (after.ru_stime - waited.ru_stime)

"""The bench's CPU by kind of process (e2e/harness/process_cpu.py) and the /proc reader under it
(tools/proc_stat.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from e2e.harness.process_cpu import (
    CLI,
    INTERVAL_SECONDS,
    LANGUAGE_HOST,
    OTHER,
    PIP,
    PROGRAM,
    PROVIDER,
    CpuByKind,
    cpu_by_kind,
    kind_of,
)
from tools.proc_stat import CLOCK_TICKS_PER_SECOND, descendants, parents, read_stat

# A child that spends about `burn` seconds of CPU, says so on stdout, then sleeps `rest` seconds.
BURNER = """
import sys, time
burn, rest = float(sys.argv[1]), float(sys.argv[2])
end = time.process_time() + burn
while time.process_time() < end:
    pass
print("burnt", flush=True)
time.sleep(rest)
"""


def test_each_process_of_a_pulumi_command_has_its_kind() -> None:
    bin_dir = "/cache/e2e/pulumi-abc/bin"
    assert kind_of([f"{bin_dir}/pulumi", "up", "--yes"]) == CLI
    assert kind_of([f"{bin_dir}/pulumi-language-python", "127.0.0.1:4001"]) == LANGUAGE_HOST
    assert kind_of([f"{bin_dir}/pulumi-language-python-v3.68", "-root", "/x"]) == LANGUAGE_HOST
    program = ["/repo/.venv-e2e/bin/python", f"{bin_dir}/pulumi-language-python-exec", "--monitor"]
    assert kind_of(program) == PROGRAM
    assert kind_of(["/repo/.venv-e2e/bin/python", "-m", "pip", "list", "--format=json"]) == PIP
    assert kind_of(["/p/pulumi-resource-kubernetes", "127.0.0.1:4001"]) == PROVIDER
    assert kind_of(["/cache/kube-1/bin/kube-apiserver", "--etcd-servers=x"]) == OTHER
    assert kind_of(["/usr/bin/python3", "-c", "pass"]) == OTHER
    # A process gone before its command line was read.
    assert kind_of([]) == OTHER


def test_descendants_are_the_whole_subtree_and_nothing_else() -> None:
    tree = {10: 1, 11: 10, 12: 11, 13: 10, 20: 1, 21: 20}
    # Nearest first, each generation before the next (a tree killed in this order loses its
    # parents before they can start anything more).
    assert descendants(10, tree) == [11, 13, 12]
    assert descendants(12, tree) == []
    assert descendants(1, tree) == [10, 20, 11, 13, 21, 12]


def test_parents_and_descendants_read_the_live_tree() -> None:
    child = subprocess.Popen([sys.executable, "-c", BURNER, "0", "30"], stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdout.readline() == b"burnt\n"
        live = parents()
        assert live[child.pid] == os.getpid()
        assert child.pid in descendants(os.getpid(), live)
    finally:
        child.kill()
        child.wait()


def test_a_process_counts_only_what_it_spent_during_the_block() -> None:
    found = CpuByKind()
    # Running before the block with 5 s spent: only what it spends after counts.
    found.seen(7, CLI, 5.0, before_block=True)
    found.seen(7, CLI, 5.5, before_block=False)
    # Started during the block: all it spent counts, up to its last sample.
    found.seen(8, PROGRAM, 0.2, before_block=False)
    found.seen(8, PROGRAM, 1.25, before_block=False)
    found.seen(9, PROGRAM, 0.5, before_block=False)
    spent = found.by_kind()
    assert spent[CLI] == 0.5
    assert spent[PROGRAM] == 1.75
    assert spent[PROVIDER] == 0.0
    assert found.kind(8) == PROGRAM and found.kind(99) is None


def test_read_stat_reads_cpu_and_parent_by_field(tmp_path: Path) -> None:
    (tmp_path / "42").mkdir()
    # proc(5): pid (comm) state ppid, then utime and stime as fields 14 and 15, starttime 22.
    after_comm = ["S", "7", *["0"] * 9, "300", "200", *["0"] * 6, "250", "0", "0"]
    (tmp_path / "42" / "stat").write_text(f"42 (a (b) c) {' '.join(after_comm)}\n")
    stat = read_stat(42, tmp_path)
    assert stat is not None
    assert (stat.name, stat.state, stat.parent) == ("a (b) c", "S", 7)
    assert (stat.user_ticks, stat.system_ticks, stat.start_ticks) == (300, 200, 250)
    assert stat.cpu_seconds == 500 / CLOCK_TICKS_PER_SECOND
    assert not stat.exited
    assert read_stat(43, tmp_path) is None


def test_a_child_run_in_the_block_is_counted_sampled_and_exactly() -> None:
    with cpu_by_kind() as found:
        subprocess.run(
            [sys.executable, "-c", BURNER, "0.6", "0.5"], check=True, capture_output=True
        )
    # Exact: the waited-for child's whole CPU (its interpreter's start included).
    assert 0.6 <= found.total < 3.0
    # Sampled: a lower bound, short of the exact total by at most about one interval.
    sampled = found.by_kind()[OTHER]
    assert 0.4 <= sampled <= found.total + 0.05


def test_what_a_running_process_spent_before_the_block_is_left_out() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", BURNER, "0.5", "30"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "burnt\n"
        stat = read_stat(child.pid)
        assert stat is not None and stat.cpu_seconds >= 0.4
        with cpu_by_kind() as found:
            time.sleep(0.3)
        assert found.kind(child.pid) == OTHER
        assert found.by_kind()[OTHER] < 0.1
        assert found.total == 0.0  # nothing was waited for
    finally:
        child.kill()
        child.wait()


def test_a_child_that_exited_unreaped_counts_all_it_spent() -> None:
    """Its parent has not waited for it yet, so only its exited stat line can say what it spent."""
    with cpu_by_kind() as found:
        child = subprocess.Popen([sys.executable, "-c", BURNER, "0.4", "0"])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            stat = read_stat(child.pid)
            if stat is not None and stat.exited:
                break
            time.sleep(0.01)
        time.sleep(3 * INTERVAL_SECONDS)  # sampled at least once since it exited
    try:
        assert found.kind(child.pid) == OTHER
        assert found.by_kind()[OTHER] >= 0.4
        assert found.total == 0.0  # not waited for in the block
    finally:
        child.wait()

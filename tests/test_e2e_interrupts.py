"""The e2e harness starts Pulumi commands with SIGINT at its default even when the harness itself
was started with it ignored, as a shell's background job is (`make e2e &`): otherwise the CLI
waits 5 s for each plugin that ignores its SIGINT at the end of every command
(e2e/harness/pulumi.py `deliver_interrupts`)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from e2e.harness.toolchain import REPO

# What a process started by the harness reports: whether it ignores SIGINT (signal 2, bit 1 of
# the SigIgn mask in /proc/<pid>/status, proc(5)).
_CHILD_IGNORES_SIGINT = textwrap.dedent(
    """
    import signal, subprocess, sys
    from e2e.harness.pulumi import deliver_interrupts

    def child_ignores_sigint():
        status = subprocess.run(
            ["cat", "/proc/self/status"], capture_output=True, text=True, check=True
        ).stdout
        mask = next(line for line in status.splitlines() if line.startswith("SigIgn:"))
        return bool(int(mask.split()[1], 16) & (1 << (signal.SIGINT - 1)))

    signal.signal(signal.SIGINT, {start})
    before = child_ignores_sigint()
    deliver_interrupts()
    print(before, child_ignores_sigint(), signal.getsignal(signal.SIGINT) is {start})
    """
)


def _run(start: str) -> list[str]:
    code = _CHILD_IGNORES_SIGINT.format(start=start)
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    return done.stdout.split()


def test_a_harness_started_with_sigint_ignored_starts_commands_with_it_delivered() -> None:
    # Before: the child inherits the ignored signal; after: exec reset the handled one.
    assert _run("signal.SIG_IGN") == ["True", "False", "False"]


def test_a_handler_of_the_harness_own_is_left_alone() -> None:
    assert _run("signal.default_int_handler") == ["False", "False", "True"]

"""SIGINT and SIGTERM reach every running `pulumi`, once, so each cancels gracefully.

The CLI handles both signals the same way: the first cancels (no new step starts, the providers
are told to cancel, the steps in flight finish, the checkpoint is saved and the lock removed); a
second terminates at once, leaving the lock and the steps in flight as pending operations
(pulumi/pulumi v3.276.0 `pkg/backend/cancellation_scope.go`). pulumi-kubernetes' `Cancel` ends its
await of a rollout at once; pulumi-aws' bridge does not, so an EKS node group create in flight is
waited out.

Nothing passes a signal on by itself. A GitHub Actions cancel, or a job's `timeout-minutes`, sends
SIGINT to the step's entry process only, SIGTERM 7.5 s later, and kills the whole tree 2.5 s after
that (actions/runner `src/Runner.Sdk/ProcessInvoker.cs`); the Automation API starts the CLI with a
plain `subprocess.Popen` and installs no handler (`pulumi/automation/_cmd.py`). So the fleet
starts every CLI in a session of its own (a terminal's ^C then reaches the fleet alone, never the
CLI twice) and, on the first signal, sends each running CLI one SIGINT. Later signals are not
passed on: a second one would turn the CLI's graceful cancel into termination, which is what a
kill does anyway, and the runner's SIGTERM comes while the cancel is still finishing its steps.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from types import FrameType

from pulumi import automation as auto
from pulumi.automation._cmd import CommandResult, OnOutput
from pulumi.automation.errors import create_command_error

HANDLED = (signal.SIGINT, signal.SIGTERM)


class Cancelled(Exception):  # noqa: N818 (a state, as asyncio.CancelledError is not)
    """The fleet was asked to stop (a signal) while this step waited."""


class Cancellation:
    """The first SIGINT or SIGTERM the fleet gets, passed on once to every running CLI."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: set[subprocess.Popen[str]] = set()
        self._event = threading.Event()
        self.signal: int | None = None

    @contextlib.contextmanager
    def installed(self) -> Iterator[Cancellation]:
        """SIGINT and SIGTERM handled by this cancellation inside the block (the handlers before
        it restored after)."""
        before = {number: signal.signal(number, self._on_signal) for number in HANDLED}
        try:
            yield self
        finally:
            for number, handler in before.items():
                signal.signal(number, handler)

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    @property
    def signal_name(self) -> str:
        return signal.Signals(self.signal).name if self.signal else "cancel"

    def cancel(self, number: int) -> None:
        with self._lock:
            first = self.signal is None
            if first:
                self.signal = number
                self._event.set()
            running = list(self._running)
        name = signal.Signals(number).name
        if not first:
            print(
                f"{name} received; still cancelling {len(running)} update(s) gracefully "
                "(a kill now leaves a lock and pending operations: `up --resume` recovers them)",
                file=sys.stderr,
                flush=True,
            )
            return
        print(
            f"{name} received: cancelling {len(running)} running pulumi command(s) gracefully; "
            "no further stack starts",
            file=sys.stderr,
            flush=True,
        )
        for process in running:
            _interrupt(process)

    def _on_signal(self, number: int, frame: FrameType | None) -> None:
        self.cancel(number)

    def sleep(self, seconds: float) -> None:
        """A wait the first signal ends early (raising Cancelled)."""
        if self._event.wait(max(0.0, seconds)):
            raise Cancelled(f"cancelled by {self.signal_name}")

    def check(self) -> None:
        if self.cancelled:
            raise Cancelled(f"cancelled by {self.signal_name}")

    def started(self, process: subprocess.Popen[str]) -> None:
        with self._lock:
            self._running.add(process)
            late = self.cancelled
        if late:  # started as the signal came: it gets its SIGINT too (it may not have set its
            # handler yet, and then ends at once, before it has taken any lock)
            _interrupt(process)

    def ended(self, process: subprocess.Popen[str]) -> None:
        with self._lock:
            self._running.discard(process)


def _interrupt(process: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
        process.send_signal(signal.SIGINT)


class CancellableCommand(auto.PulumiCommand):
    """The Pulumi CLI as the Automation API runs it (the same arguments, environment and output
    streaming as `PulumiCommand.run`), started in a session of its own and known to a
    Cancellation while it runs."""

    def __init__(
        self, cancellation: Cancellation, root: str | None, skip_version_check: bool
    ) -> None:
        super().__init__(root=root, skip_version_check=skip_version_check)
        self.cancellation = cancellation

    def run(
        self,
        args: list[str],
        cwd: str,
        additional_env: Mapping[str, str],
        on_output: OnOutput | None = None,
        on_error: OnOutput | None = None,
    ) -> CommandResult:
        self.cancellation.check()  # no command starts once the fleet was asked to stop
        if "--non-interactive" not in args:
            args = ["--non-interactive", *args]
        env = {**os.environ, **additional_env, "PULUMI_AUTOMATION_API": "true"}
        if os.path.isabs(self.command):
            folder = os.path.dirname(self.command)
            env["PATH"] = os.pathsep.join([folder, env.get("PATH", "")])
        out: list[str] = []
        err: list[str] = []
        with subprocess.Popen(
            [self.command, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
            encoding="utf-8",
            start_new_session=True,
        ) as process:
            self.cancellation.started(process)
            try:
                readers = [
                    threading.Thread(target=_drain, args=(process.stdout, on_output, out)),
                    threading.Thread(target=_drain, args=(process.stderr, on_error, err)),
                ]
                for reader in readers:
                    reader.start()
                for reader in readers:
                    reader.join()
                code = process.wait()
            finally:
                self.cancellation.ended(process)
        result = CommandResult(stdout="\n".join(out), stderr="\n".join(err), code=code)
        if code != 0:
            raise create_command_error(result)
        return result


def _drain(stream: object, callback: OnOutput | None, lines: list[str]) -> None:
    for line in iter(stream.readline, ""):  # type: ignore[attr-defined]
        text = line.rstrip()
        if callback:
            callback(text)
        lines.append(text)

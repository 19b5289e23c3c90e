"""The real Pulumi CLI on the e2e program: one project directory per stack, a local backend, the
toolchain's engine, language host and Kubernetes provider, nothing fetched."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from e2e.harness import stack_yaml
from e2e.harness.toolchain import PROVIDER_VERSION_KEY, REPO, pinned
from tools.interrupted.lock_files import lock_files
from tools.interrupted.locks import Lock

PROGRAM_DIR = REPO / "e2e" / "program"
PASSPHRASE = "kiam-e2e"  # only protects throwaway local state
DEFAULT_TIMEOUT_SECONDS = 1800


@dataclass(frozen=True)
class Result:
    """One CLI command: its exit code, output and wall time."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def __str__(self) -> str:
        return f"pulumi {' '.join(self.args)} -> {self.returncode} in {self.seconds:.1f} s\n{self.output}"


class PulumiCommandError(RuntimeError):
    def __init__(self, result: Result) -> None:
        super().__init__(str(result))
        self.result = result


def deliver_interrupts() -> None:
    """Let the Pulumi commands this process starts receive SIGINT, as they do from a terminal or
    a CI runner: call it on the main thread before the first one.

    A process started in the background of a shell (`make e2e &`, `setsid ... &`) inherits
    SIGINT ignored, and so does every process it starts: an ignored signal stays ignored across
    exec (POSIX execve), and a Go program started with SIGINT ignored keeps it ignored unless it
    asks for it (Go, os/signal package documentation). The CLI asks for it; the Kubernetes
    provider does not. When a command ends, the CLI stops each plugin by sending SIGINT to its
    process group and kills it only after 5 seconds (pulumi/pulumi v3.276.0,
    sdk/go/common/resource/plugin/plugin.go, the plugin's `kill`): with SIGINT ignored, every
    command that loads the provider took those 5 s more (measured 2026-12-07: a no-change `up`
    of the floor, 8.7 s from a terminal, 13.5 s with SIGINT ignored). With a handler of Python's
    own installed instead, the commands start with SIGINT at its default, since exec resets a
    handled signal to its default."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def install_provider(home: Path, bin_dir: Path) -> None:
    """Register the toolchain's Kubernetes provider once per PULUMI_HOME (no download)."""
    version = pinned(PROVIDER_VERSION_KEY)
    if (home / "plugins" / f"resource-kubernetes-v{version}").exists():
        return
    home.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [str(bin_dir / "pulumi"), "plugin", "install", "resource", "kubernetes", version,
         "--file", str(bin_dir / "pulumi-resource-kubernetes")],
        env=_base_env(home, bin_dir),
        check=True,
        capture_output=True,
        text=True,
    )  # fmt: skip


def _base_env(home: Path, bin_dir: Path) -> dict[str, str]:
    # The 2023 language host ignores Pulumi.yaml's `virtualenv` option and runs the first
    # `python3` on PATH: the e2e environment's interpreter must come first.
    venv_bin = Path(sys.executable).parent
    return {
        **os.environ,
        "PATH": os.pathsep.join([str(venv_bin), str(bin_dir), os.environ.get("PATH", "")]),
        "PULUMI_HOME": str(home),
        "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
        "PULUMI_SKIP_UPDATE_CHECK": "true",
        "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
        # Only the plugins installed into PULUMI_HOME and the language host beside the CLI.
        "PULUMI_IGNORE_AMBIENT_PLUGINS": "true",
        "PULUMI_SKIP_CONFIRMATIONS": "true",
        # `--event-log` is hidden behind this in v3.276; the tests read step times from it.
        "PULUMI_DEBUG_COMMANDS": "true",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


@dataclass
class PulumiStack:
    """One stack of the e2e program, in `project_dir`, with state in `backend_dir`."""

    stack: str
    project_dir: Path
    backend_dir: Path
    home: Path
    bin_dir: Path
    kubeconfig: Path
    state_dir: Path
    program_dir: Path = PROGRAM_DIR
    extra_env: dict[str, str] = field(default_factory=dict)
    history: list[Result] = field(default_factory=list)

    @property
    def stack_file(self) -> Path:
        return self.project_dir / f"Pulumi.{self.stack}.yaml"

    @property
    def temp_dir(self) -> Path:
        """Where this stack's CLI, program and providers write their temporary files (`TMPDIR`):
        a folder of its own, so that a test sees what a run leaves behind, and the machine's
        temporary directory none of it."""
        return self.backend_dir.parent / "tmp" / self.stack

    def env(self) -> dict[str, str]:
        self.temp_dir.mkdir(parents=True, exist_ok=True)
        return {
            **_base_env(self.home, self.bin_dir),
            "TMPDIR": str(self.temp_dir),
            "PULUMI_BACKEND_URL": f"file://{self.backend_dir}",
            "KIAM_E2E_KUBECONFIG": str(self.kubeconfig),
            "KIAM_E2E_STATE": str(self.state_dir),
            **self.extra_env,
        }

    def run(
        self, *args: str, check: bool = True, timeout: float = DEFAULT_TIMEOUT_SECONDS
    ) -> Result:
        started = time.monotonic()
        done = subprocess.run(
            [str(self.bin_dir / "pulumi"), *args, "--non-interactive", "--color", "never"],
            cwd=self.project_dir,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        result = Result(
            list(args), done.returncode, done.stdout, done.stderr, time.monotonic() - started
        )
        self.history.append(result)
        if check and done.returncode != 0:
            raise PulumiCommandError(result)
        return result

    def set_config(self, key: str, value: str, *, secret: bool = False) -> None:
        """`pulumi config set`, the value on standard input (a PEM starts with dashes, which the
        command line would take for a flag), kept exactly (`--raw`)."""
        flags = ["--secret"] if secret else ["--plaintext"]
        done = subprocess.run(
            [str(self.bin_dir / "pulumi"), "config", "set", key, "--raw", *flags,
             "--stack", self.stack, "--non-interactive"],
            cwd=self.project_dir,
            env=self.env(),
            input=value,
            capture_output=True,
            text=True,
        )  # fmt: skip
        if done.returncode != 0:
            raise PulumiCommandError(
                Result(["config", "set", key], done.returncode, done.stdout, done.stderr, 0.0)
            )

    def start(self, *args: str) -> tuple[subprocess.Popen[str], Path]:
        """A CLI command started in the background (to be interrupted, as an operator's ^C or a
        CI job's timeout does): its output goes to a file beside the stack's state."""
        log = self.state_dir / f"{args[0]}-{len(self.history)}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        process = subprocess.Popen(
            [str(self.bin_dir / "pulumi"), *args, "--non-interactive", "--color", "never"],
            cwd=self.project_dir,
            env=self.env(),
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
            text=True,
        )
        return process, log

    def create(self, stack_file: Path) -> None:
        """The project directory, the stack, and its settings from `stack_file`."""
        self.project_dir.mkdir(parents=True, exist_ok=True)
        self.backend_dir.mkdir(parents=True, exist_ok=True)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        (self.project_dir / "Pulumi.yaml").write_text(
            yaml.safe_dump(
                {
                    "name": "kiam",
                    "runtime": "python",
                    "description": "kiam on the real engine, with stand-ins for AWS and pulumi-tls",
                    # Relative: the CLI joins `main` to the project directory.
                    "main": os.path.relpath(self.program_dir, self.project_dir),
                },
                sort_keys=False,
            )
        )
        if self.run("stack", "select", self.stack, check=False).returncode != 0:
            self.run("stack", "init", self.stack, "--secrets-provider", "passphrase")
        self.use_settings(stack_file)

    def use_settings(self, stack_file: Path) -> None:
        """Replace the stack's settings by those of `stack_file`, keeping the stack's own salt."""
        salt = self._stack_document().get("encryptionsalt")
        document = yaml.safe_load(stack_file.read_text()) or {}
        if salt:
            document["encryptionsalt"] = salt
        self.stack_file.write_text(stack_yaml.dump(document))

    def _stack_document(self) -> dict[str, Any]:
        if not self.stack_file.exists():
            return {}
        return yaml.safe_load(self.stack_file.read_text()) or {}

    def preview(self, *extra: str, check: bool = True) -> Result:
        return self.run("preview", "--stack", self.stack, *extra, check=check)

    def up(
        self,
        *extra: str,
        check: bool = True,
        event_log: Path | None = None,
        skip_preview: str | None = None,
    ) -> Result:
        """`pulumi up` as the README and the deploy workflow run it: the engine previews the
        change first (and a refusal or a policy violation stops it there), then applies it.
        `skip_preview` (why) runs the update alone, as `--skip-preview` does."""
        log = ["--event-log", str(event_log)] if event_log else []
        skip = ["--skip-preview"] if skip_preview is not None else []
        return self.run("up", "--stack", self.stack, "--yes", *skip, *log, *extra, check=check)

    def destroy(self, check: bool = True) -> Result:
        # A destroy previews nothing worth judging (every resource goes); the suite destroys
        # only to leave the control plane clean.
        return self.run("destroy", "--stack", self.stack, "--yes", "--skip-preview", check=check)

    def outputs(self) -> dict[str, Any]:
        text = self.run("stack", "output", "--stack", self.stack, "--json", "--show-secrets").stdout
        return dict(json.loads(text))

    # The commands an interrupted update's recovery runs (tools.interrupted.recover.StackCommands).

    def export(self) -> dict[str, Any]:
        """`pulumi stack export`: the checkpoint, pending operations included."""
        return dict(json.loads(self.run("stack", "export", "--stack", self.stack).stdout))

    def import_state(self, document: dict[str, Any]) -> None:
        path = self.state_dir / "recovered-state.json"
        path.write_text(json.dumps(document))
        self.run("stack", "import", "--stack", self.stack, "--file", str(path))

    def refresh(self, *extra: str, check: bool = True) -> Result:
        return self.run(
            "refresh", "--stack", self.stack, "--yes", "--skip-preview", *extra, check=check
        )

    def release_locks(self) -> None:
        self.run("cancel", "--stack", self.stack, "--yes")

    def locks(self) -> list[Lock] | None:
        return lock_files(f"file://{self.backend_dir}", "kiam", self.stack)

    def lock_files(self) -> list[Path]:
        """The stack's lock files in the file backend (pkg/backend/diy/lock.go: `.pulumi/locks/
        <org>/<project>/<stack>/<uuid>.json`)."""
        folder = self.backend_dir / ".pulumi" / "locks"
        return sorted(folder.glob(f"*/*/{self.stack}/*.json"))

    def resources(self) -> list[dict[str, Any]]:
        """The stack's resources as the engine recorded them (`pulumi stack export`)."""
        text = self.run("stack", "export", "--stack", self.stack).stdout
        return list(json.loads(text)["deployment"].get("resources") or [])

    def remove(self) -> None:
        """Forget the stack (after `destroy`) and its project directory."""
        self.run("stack", "rm", self.stack, "--yes", "--force", check=False)
        shutil.rmtree(self.project_dir, ignore_errors=True)


def read_event_log(path: Path) -> list[dict[str, Any]]:
    """The engine's JSON event stream, one event per line."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def type_and_name(urn: str) -> tuple[str, str]:
    """The resource type and name a URN ends with (`urn:pulumi:STACK::PROJECT::PARENTS$TYPE::NAME`)."""
    _, _, types, name = urn.split("::", 3)
    return types.rsplit("$", 1)[-1], name

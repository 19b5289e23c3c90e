"""The repository's command-line tools run as a user runs them: their own process, the cluster
from `KUBECONFIG`, JSON on stdout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from e2e.harness.environment import Environment
from e2e.harness.toolchain import REPO

TIMEOUT_SECONDS = 120


def run_tool(
    env: Environment, module: str, stack_file: Path, *args: str, via: str = "KUBECONFIG"
) -> tuple[int, dict[str, Any]]:
    """`python -m <module> --config-file <stack_file> --json <args>` against the environment's
    control plane (`via`: `KUBECONFIG`, or `flag` for `--kubeconfig`); its exit code and JSON.
    A tool that writes to stderr fails the caller: a JSON answer carries everything."""
    kubeconfig = str(env.plane.kubeconfig)
    extra = ["--kubeconfig", kubeconfig] if via == "flag" else []
    environ = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    if via == "KUBECONFIG":
        environ["KUBECONFIG"] = kubeconfig
    done = subprocess.run(
        [sys.executable, "-m", module, "--config-file", str(stack_file), "--json", *extra, *args],
        cwd=REPO,
        env=environ,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_SECONDS,
    )
    assert done.stderr == "", done.stderr
    return done.returncode, json.loads(done.stdout)

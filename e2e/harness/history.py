"""Commits of this repository's own history, unpacked: what a running install was made with
before an upgrade (e2e/tests/test_upgrade.py, test_consumers.py)."""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path

from e2e.harness.toolchain import REPO


def checkout_of(commit: str, into: Path) -> Path:
    """The files of `commit` (git archive), unpacked into `into`."""
    archive = subprocess.run(
        ["git", "archive", "--format=tar", commit],
        cwd=REPO,
        capture_output=True,
        check=False,
    )
    assert archive.returncode == 0, (
        f"this test needs the repository's history (commit {commit}): " + archive.stderr.decode()
    )
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    return into

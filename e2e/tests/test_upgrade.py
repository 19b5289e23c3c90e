"""The upgrade to the kiam_eks package disturbs no running install: the dev stack installed by the
program as it was before its modules moved into the package (commit BEFORE_PACKAGE, taken from this
repository's own history), then previewed with today's program, shows no change at all. The mock
engine shows the same for every state's URNs (tests/test_package.py); this is the real engine,
provider and state file saying it."""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path

from e2e.harness.environment import Environment
from e2e.harness.pulumi import PROGRAM_DIR
from e2e.harness.toolchain import REPO
from e2e.tests.conftest import deploy, example_config

# The last commit of main before the package (its e2e program imports `components`, `program`...
# from its own checkout, which it puts on sys.path).
BEFORE_PACKAGE = "8075fbc65cb9799cc2c7de9a16a3aca3383c13a2"


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


def test_the_package_upgrades_a_running_install_with_no_change(env: Environment) -> None:
    before = checkout_of(BEFORE_PACKAGE, env.root / "before-package")
    stack, _ = deploy(env, "dev", example_config("dev"))
    stack.program_dir = before / "e2e" / "program"
    stack.create(stack.stack_file)
    stack.up()
    installed = sorted(r["urn"] for r in stack.resources())

    stack.program_dir = PROGRAM_DIR
    stack.create(stack.stack_file)
    stack.preview("--expect-no-changes", "--diff")
    stack.up("--expect-no-changes")
    assert sorted(r["urn"] for r in stack.resources()) == installed
    stack.destroy()

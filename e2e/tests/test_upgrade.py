"""The upgrades to the kiam_eks package and to its public `Kiam` disturb no running install: the
dev stack installed by the program as it was before its modules moved into the package (commit
BEFORE_PACKAGE, taken from this repository's own history), updated by the program as it was
before `Kiam` took public arguments (BEFORE_PUBLIC_KIAM), then previewed with today's program,
shows no change at either step but one: the agents' update strategy (10% of the nodes at a
time, where they rolled one), updated in place with no agent restarted. The mock engine shows the same for every state's URNs
(tests/test_package.py); this is the real engine, provider and state file saying it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from e2e.harness.environment import Environment
from e2e.harness.history import checkout_of
from e2e.harness.pulumi import PROGRAM_DIR, type_and_name
from e2e.tests.conftest import deploy, example_config

# The last commit of main before the package (its e2e program imports `components`, `program`...
# from its own checkout, which it puts on sys.path).
BEFORE_PACKAGE = "8075fbc65cb9799cc2c7de9a16a3aca3383c13a2"
# The last commit of main before `Kiam` took public arguments (its program builds `Kiam` from the
# stack settings directly). Its e2e program imports `kiam_eks`, so that checkout's package is
# installed into a folder of its own and put first on the program's PYTHONPATH.
BEFORE_PUBLIC_KIAM = "76cbdfe122d5b67dfc70beac127c0da3fcaca62e"


def installed_package(checkout: Path, into: Path) -> Path:
    """`checkout`'s kiam_eks, installed (without its dependencies, which are this suite's) into
    `into`, for a PYTHONPATH."""
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(into),
         str(checkout)],
        capture_output=True,
        text=True,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    # What the program will import from that PYTHONPATH is that checkout's, not this suite's.
    probe = subprocess.run(
        [sys.executable, "-c", "import kiam_eks.components.kiam as k; print(k.__file__)"],
        env={**os.environ, "PYTHONPATH": str(into)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(probe.stdout.strip()).is_relative_to(into), probe.stdout
    return into


def test_the_package_upgrades_a_running_install_with_no_change(env: Environment) -> None:
    before = checkout_of(BEFORE_PACKAGE, env.root / "before-package")
    stack, _ = deploy(env, "dev", example_config("dev"))
    stack.program_dir = before / "e2e" / "program"
    stack.create(stack.stack_file)
    stack.up()
    installed = sorted(r["urn"] for r in stack.resources())

    before_public = checkout_of(BEFORE_PUBLIC_KIAM, env.root / "before-public-kiam")
    package = installed_package(before_public, env.root / "before-public-kiam-package")
    stack.program_dir = before_public / "e2e" / "program"
    stack.extra_env["PYTHONPATH"] = str(package)
    stack.create(stack.stack_file)
    stack.up("--expect-no-changes")
    assert sorted(r["urn"] for r in stack.resources()) == installed

    del stack.extra_env["PYTHONPATH"]
    stack.program_dir = PROGRAM_DIR
    stack.create(stack.stack_file)
    # Today's program changes one thing of a running install: the agents now roll 10% of the
    # nodes at a time (kiam:agent.rollout) where they rolled one: the DaemonSet's update strategy,
    # updated in place, its pod template untouched, so no agent restarts.
    agents = sorted(p["metadata"]["name"] for p in env.pods("kiam", "agent"))
    steps = json.loads(stack.preview("--json").stdout).get("steps") or []
    changed = [s for s in steps if s["op"] not in ("same", "read")]
    assert [(type_and_name(s["urn"]), s["op"]) for s in changed] == [
        (("kubernetes:apps/v1:DaemonSet", "kiam-agent"), "update")
    ]
    old, new = (changed[0][state]["inputs"]["spec"] for state in ("oldState", "newState"))
    assert old["template"] == new["template"]
    assert (old["updateStrategy"], new["updateStrategy"]) == (
        {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
        {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "10%"}},
    )
    stack.up()
    stack.preview("--expect-no-changes", "--diff")
    stack.up("--expect-no-changes")
    assert sorted(r["urn"] for r in stack.resources()) == installed
    assert sorted(p["metadata"]["name"] for p in env.pods("kiam", "agent")) == agents
    stack.destroy()

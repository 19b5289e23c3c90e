"""Scenario: a fleet of three clusters, each its own control plane and stack. `tools.fleet preview`
previews a change across them (a golden table), `tools.fleet up` rolls it out in two waves behind
the health gates; a cluster made unhealthy on purpose during its soak stops the rollout with the
later stack untouched, and `up --resume` finishes it. Measured: the fleet preview against the same
previews one after another, and the memory of each control plane."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from e2e.harness.environment import Environment
from e2e.harness.golden import check_golden
from e2e.harness.kube import is_ready, selector
from e2e.harness.pulumi import PulumiStack
from e2e.harness.toolchain import REPO
from e2e.tests.conftest import (
    REPORT,
    deploy,
    example_config,
    fresh_environment,
    set_settings,
    with_changes,
)
from kiam_eks.contracts.labels import selector_labels
from tools.proc_stat import command_line

BUMPED_IMAGE = "quay.io/uswitch/kiam:v4.2-fleet"
STACKS = ("fleet-a", "fleet-b", "fleet-c")
LAUNCHER = REPO / "policy" / "pack-launcher"
NAMESPACE = "kiam"
SOAK = "8s"


@dataclass
class Member:
    """One cluster of the fleet: its control plane and its stack."""

    env: Environment
    stack: PulumiStack

    def images(self) -> tuple[str, str]:
        deployment = self.env.kube.get(
            f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/kiam-server"
        )
        daemon_set = self.env.kube.get(
            f"/apis/apps/v1/namespaces/{NAMESPACE}/daemonsets/kiam-agent"
        )
        return (
            deployment["spec"]["template"]["spec"]["containers"][0]["image"],
            daemon_set["spec"]["template"]["spec"]["containers"][0]["image"],
        )


def changed_config(name: str) -> dict[str, Any]:
    """The change rolled out: new images everywhere; fleet-c also moves its servers to another
    instance type, which replaces its node group."""
    config = with_changes(
        example_config("dev"), server={"image": BUMPED_IMAGE}, agent={"image": BUMPED_IMAGE}
    )
    if name == "fleet-c":
        config = with_changes(config, nodeGroup={"instanceTypes": ["t3.medium"]})
    return config


@pytest.fixture(scope="module")
def fleet(
    bin_dir: Path, session_root: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[dict[str, Member], Path]]:
    """Three control planes, each running the dev stack under its own name, and a fleet file."""
    with ExitStack() as stack_of_planes:
        members: dict[str, Member] = {}
        for name in STACKS:
            env = stack_of_planes.enter_context(fresh_environment(session_root, bin_dir, name))
            stack, _ = deploy(env, name, example_config("dev"))
            stack.up()
            members[name] = Member(env, stack)
        folder = tmp_path_factory.mktemp("fleet")
        document = {
            "policyPack": str(LAUNCHER),
            "pulumiRoot": str(bin_dir.parent),
            "stateFile": str(folder / "state" / "rollout-state.json"),
            # Healthy clusters pass at once (`up` has awaited the rollout); the broken one fails
            # after this long.
            "gate": {"timeout": "15s", "poll": "1s"},
            "stacks": {
                name: {
                    "workDir": str(m.stack.project_dir),
                    "kubeconfig": str(m.env.plane.kubeconfig),
                    # What the stack's CLI runs with beyond this process's environment.
                    "env": {k: v for k, v in m.stack.env().items() if os.environ.get(k) != v},
                }
                for name, m in members.items()
            },
            "waves": [
                {"name": "canary", "stacks": ["fleet-a"], "parallel": 1, "soak": SOAK},
                {"name": "rest", "stacks": ["fleet-[bc]"], "parallel": 1, "soak": SOAK},
            ],
        }
        fleet_file = folder / "fleet.yaml"
        fleet_file.write_text(yaml.safe_dump(document, sort_keys=False))
        for name, m in members.items():
            set_settings(m.env, m.stack, changed_config(name))
        yield members, fleet_file
        for m in members.values():
            m.stack.destroy()


def fleet_tool(fleet_file: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tools.fleet", "--fleet", str(fleet_file), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=1800,
    )


def test_the_fleet_preview_shows_every_cluster_in_one_table(
    fleet: tuple[dict[str, Member], Path], request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    members, fleet_file = fleet
    markdown = tmp_path / "preview.md"
    started = time.monotonic()
    done = fleet_tool(fleet_file, "preview", "--parallel", "3", "--markdown", str(markdown))
    fleet_seconds = time.monotonic() - started
    assert done.returncode == 0, done.stdout + done.stderr
    check_golden("fleet-preview.txt", done.stdout, request.config.getoption("--update-golden"))
    check_golden(
        "fleet-preview.md", markdown.read_text(), request.config.getoption("--update-golden")
    )
    # Nothing was applied: every cluster still runs the old images.
    assert not {BUMPED_IMAGE} & {image for m in members.values() for image in m.images()}

    REPORT.append(f"fleet preview of {len(members)} stacks, 3 at once: {fleet_seconds:.1f} s")
    if os.environ.get("KIAM_E2E_FLEET_BENCH"):
        # The comparisons docs/performance.md records (`make e2e-fleet-bench`), which CI's suite
        # does not pay for: the same previews one at a time (the table must not depend on the
        # parallelism: tests/test_fleet.py holds the rows to the fleet order at any), and through
        # the CLI one after another.
        started = time.monotonic()
        one_at_a_time = fleet_tool(fleet_file, "preview", "--parallel", "1")
        REPORT.append(f"the same, one at a time: {time.monotonic() - started:.1f} s")
        assert one_at_a_time.stdout == done.stdout
        started = time.monotonic()
        for m in members.values():
            m.stack.preview("--policy-pack", str(LAUNCHER))
        REPORT.append(
            f"the same {len(members)} `pulumi preview --policy-pack` in a row: "
            f"{time.monotonic() - started:.1f} s"
        )
    for name, m in members.items():
        REPORT.append(f"control plane {name}: {rss_report(m.env.root)}")


def rss_report(root: Path) -> str:
    """Resident memory of the control plane's processes (those whose command line names its
    folder), in all and by binary."""
    by_binary: dict[str, float] = {}
    pids = subprocess.run(["pgrep", "-f", str(root)], capture_output=True, text=True).stdout.split()
    for pid in pids:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            arguments = command_line(int(pid))
        except OSError:
            continue
        if not arguments:
            continue  # gone meanwhile
        binary = Path(arguments[0]).name
        kib = next((int(x.split()[1]) for x in status.splitlines() if x.startswith("VmRSS:")), 0)
        by_binary[binary] = by_binary.get(binary, 0) + kib / 1024
    parts = ", ".join(f"{b} {mib:.0f}" for b, mib in sorted(by_binary.items(), key=lambda i: -i[1]))
    return f"{sum(by_binary.values()):.0f} MiB RSS ({parts})"


def mark_a_server_not_ready(env: Environment) -> str:
    """One server pod's Ready condition set to False, as a server failing its readiness probe."""
    query = selector(selector_labels("server"))
    pod = next(
        p
        for p in env.kube.items(f"/api/v1/namespaces/{NAMESPACE}/pods?labelSelector={query}")
        if is_ready(p)
    )
    name = str(pod["metadata"]["name"])
    conditions = [
        {**c, "status": "False"} if c["type"] in ("Ready", "ContainersReady") else c
        for c in pod["status"]["conditions"]
    ]
    statuses = [{**c, "ready": False} for c in pod["status"].get("containerStatuses") or []]
    env.kube.request(
        "PATCH",
        f"/api/v1/namespaces/{NAMESPACE}/pods/{name}/status",
        {"status": {"conditions": conditions, "containerStatuses": statuses}},
        content_type="application/strategic-merge-patch+json",
    )
    return name


def test_the_rollout_stops_at_an_unhealthy_cluster_and_resumes(
    fleet: tuple[dict[str, Member], Path],
) -> None:
    members, fleet_file = fleet
    old = members["fleet-c"].images()

    dry = fleet_tool(fleet_file, "up", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout == (
        "Rollout plan: 2 waves, 3 stacks\n"
        f"  1. canary: fleet-a (1 at once, soak {SOAK})\n"
        f"  2. rest: fleet-b, fleet-c (1 at once, soak {SOAK})\n"
    )

    # The rollout, watched line by line: once fleet-b's up is done, one of its servers stops
    # being Ready, before or during its soak.
    process = subprocess.Popen(
        [sys.executable, "-m", "tools.fleet", "--fleet", str(fleet_file), "up"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    lines: list[str] = []
    broken: list[str] = []
    for line in process.stdout:
        lines.append(line.rstrip())
        if line.startswith("[rest] fleet-b: up done") and not broken:
            broken.append(mark_a_server_not_ready(members["fleet-b"].env))
    assert process.wait(timeout=60) == 1, "\n".join(lines)
    output = "\n".join(lines)
    assert broken, output
    assert "  done: fleet-a" in output, output
    assert "  failed: fleet-b: health gate: " in output, output
    assert broken[0] in output, output
    assert "  never touched: fleet-c" in output, output
    REPORT.extend(lines[lines.index("Rollout stopped:") :])
    assert members["fleet-a"].images() == (BUMPED_IMAGE, BUMPED_IMAGE)
    assert members["fleet-b"].images() == (BUMPED_IMAGE, BUMPED_IMAGE)
    assert members["fleet-c"].images() == old  # untouched
    state = json.loads(Path(yaml.safe_load(fleet_file.read_text())["stateFile"]).read_text())
    assert {s: v["status"] for s, v in state["stacks"].items()} == {
        "fleet-a": "done",
        "fleet-b": "failed",
    }

    # The cause goes (the pod is replaced and Ready again); the rollout resumes where it stopped.
    env_b = members["fleet-b"].env
    env_b.kube.request("DELETE", f"/api/v1/namespaces/{NAMESPACE}/pods/{broken[0]}")
    resumed = fleet_tool(fleet_file, "up", "--resume")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "wave 1/2 canary: nothing left (already done: fleet-a)" in resumed.stdout
    assert "  done: fleet-a, fleet-b, fleet-c" in resumed.stdout
    assert "  never touched: none" in resumed.stdout
    assert {m.images() for m in members.values()} == {(BUMPED_IMAGE, BUMPED_IMAGE)}


def inline_kubeconfig(path: Path) -> str:
    """The control plane's kubeconfig with its CA inline (`certificate-authority-data`), as
    `aws eks update-kubeconfig` writes one for an EKS cluster."""
    document = yaml.safe_load(path.read_text())
    for entry in document["clusters"]:
        cluster = entry["cluster"]
        if "certificate-authority" in cluster:
            ca = Path(cluster.pop("certificate-authority")).read_bytes()
            cluster["certificate-authority-data"] = base64.b64encode(ca).decode()
    return yaml.safe_dump(document)


def test_a_kubeconfig_reaching_another_control_plane_is_refused_naming_both(
    fleet: tuple[dict[str, Member], Path],
) -> None:
    """fleet-a's `kiam:kubeconfig` set to fleet-b's control plane: `preview` and `up` stop before
    anything is registered, naming the cluster reached and the one the stack names; nothing of
    either changes. Its own control plane's kubeconfig is accepted."""
    members, _ = fleet
    a, b = members["fleet-a"], members["fleet-b"]
    settled = a.stack.resources(), b.stack.resources(), a.images(), b.images()
    config = changed_config("fleet-a")
    set_settings(
        a.env, a.stack, {**config, "kiam:kubeconfig": inline_kubeconfig(b.env.plane.kubeconfig)}
    )
    preview = a.stack.preview(check=False)
    up = a.stack.up(check=False)
    reached = yaml.safe_load(b.env.plane.kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
    own = yaml.safe_load(a.env.plane.kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
    context = yaml.safe_load(b.env.plane.kubeconfig.read_text())["current-context"]
    refusal = (
        f"kiam:kubeconfig: its current context {context} reaches {reached}, whose certificate "
        f"authority is not EKS cluster dev's (at {own}): this update's changes and deletions "
        "would run against another cluster."
    )
    for result in (preview, up):
        assert result.returncode != 0
        assert refusal in " ".join(result.output.split()), result.output
        assert "Traceback" not in result.output
    assert (a.stack.resources(), b.stack.resources(), a.images(), b.images()) == settled
    # The stack's own control plane, named the same way: accepted.
    set_settings(
        a.env, a.stack, {**config, "kiam:kubeconfig": inline_kubeconfig(a.env.plane.kubeconfig)}
    )
    assert a.stack.preview(check=False).returncode == 0
    set_settings(a.env, a.stack, config)

"""Scenario: deploys cancelled and killed half way, then recovered by `tools.fleet up --resume`.

One control plane whose pods take seconds to start and stop, one stack rolled out by the fleet
tool (one wave), watched throughout. The fleet tool, the Pulumi CLI it runs and every plugin of
that CLI are killed with SIGKILL:

(b) during the first install, once the agent DaemonSet exists (its create in flight);
(c) during an agent rollout (`kiam:agent.logLevel`), some nodes rolled and some not;
(a) during a node group replacement, once the servers are Ready on the new group's nodes and the
    old group is not yet gone;

and then (d) the deploy step is signalled as the GitHub runner cancels it: SIGINT to its entry
process (the workflow `exec`s the fleet tool, so that is the tool), SIGTERM 7.5 s later, the whole
tree killed 2.5 s after that (actions/runner `ProcessInvoker.cs`).

What must hold:
- after each kill, the stack is locked and has pending operations, its `installed` output is
  still the one before the change; `up --resume` removes the dead lock, imports what exists,
  refreshes and applies (exit 0);
- after each recovery nothing is lost: no lock file and no pending operation; `pulumi preview
  --expect-no-changes` and `pulumi refresh --expect-no-changes` pass; the cluster's kiam
  DaemonSets, Deployments, Services, Secrets, the stand-in's node group ConfigMaps and its Nodes
  are exactly those in the state (no orphan); the recovery's `up` creates exactly what the state
  lacked, never an object it imported (so pulumi-kubernetes 4.29's `AlreadyExists` for a create
  of an existing object is never met: the e2e's 4.25 shows the same because no such create is
  issued at all);
- watched throughout, once serving: never zero ready endpoints behind the Service, never fewer
  than one Ready server, and no workload node without a Ready agent for longer than one agent
  restart (the rollout's own moment);
- (d): the tool ends by itself within the runner's 7.5 s, exit 130, the stack recorded
  `interrupted`, and no lock is left.
"""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from e2e.harness import waiting
from e2e.harness.cluster import PodTiming
from e2e.harness.environment import Environment
from e2e.harness.kube import is_ready
from e2e.harness.pulumi import PulumiStack
from e2e.harness.toolchain import REPO
from e2e.harness.watcher import Watcher
from e2e.tests.conftest import (
    REPORT,
    deploy,
    example_config,
    fresh_environment,
    set_settings,
    with_changes,
)
from kiam_eks.contracts.labels import NODE_GROUP_LABEL
from tools import proc_stat

STACK = "interrupted"
NAMESPACE = "kiam"
GROUP_NAMESPACE = "kube-system"
# Pods take this long to start and to stop, so that a rollout is long enough to be caught half
# way; eight workload nodes, one agent restarted at a time (a rollout of about 30 s).
TIMING = PodTiming(start_seconds=2, stop_seconds=1)
WORKERS = 8
# An agent's restart seen from its node: the old pod's stop, the new one's scheduling and start,
# and a sample period on either side.
AGENT_RESTART_BOUND_SECONDS = 10
DEADLINE_SECONDS = 600
LAUNCHER = REPO / "policy" / "pack-launcher"
# The runner's cancel (actions/runner ProcessInvoker.cs): SIGINT, SIGTERM after 7.5 s, the tree
# killed 2.5 s later.
RUNNER_SIGTERM_AFTER, RUNNER_KILL_AFTER = 7.5, 2.5
# What each kind the one-to-one check compares lists (the cluster's side).
COMPARED = {
    "kubernetes:apps/v1:DaemonSet": f"/apis/apps/v1/namespaces/{NAMESPACE}/daemonsets",
    "kubernetes:apps/v1:Deployment": f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments",
    "kubernetes:core/v1:Service": f"/api/v1/namespaces/{NAMESPACE}/services",
    "kubernetes:core/v1:Secret": f"/api/v1/namespaces/{NAMESPACE}/secrets",
    "kubernetes:core/v1:Node": f"/api/v1/nodes?labelSelector={NODE_GROUP_LABEL}",
}


def wait_for(what: str, condition: Callable[[], bool], seconds: float = DEADLINE_SECONDS) -> None:
    waiting.wait_for(what, condition, seconds)


def descendants(root: int) -> list[int]:
    """`root` and every process below it (from /proc's parent pids), leaves last."""
    return [root, *proc_stat.descendants(root, proc_stat.parents())]


def kill_tree(root: int) -> list[int]:
    """SIGKILL to the process and everything it started (the CLI runs in a session of its own and
    its plugins in process groups of their own: only a walk of the tree reaches them all)."""
    pids = descendants(root)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):  # ended meanwhile
            os.kill(pid, signal.SIGKILL)
    return pids


@dataclass
class Fleet:
    env: Environment
    stack: PulumiStack
    file: Path
    state_file: Path
    logs: Path

    def start(
        self, label: str, *args: str, entry: str = "python"
    ) -> tuple[subprocess.Popen[str], Path]:
        log = self.logs / f"{label}.log"
        command = [sys.executable, "-m", "tools.fleet", "--fleet", str(self.file), "up", *args]
        if entry == "bash":  # the workflow's step: bash, which `exec`s the tool
            command = ["bash", "-c", "exec " + " ".join(command)]
        process = subprocess.Popen(
            command,
            cwd=REPO,
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        return process, log

    def resume(self, label: str) -> tuple[int, str]:
        process, log = self.start(label, "--resume")
        code = process.wait(timeout=DEADLINE_SECONDS)
        return code, log.read_text()

    def outputs(self) -> dict[str, Any]:
        return self.stack.outputs()


def make_fleet(env: Environment, stack: PulumiStack, name: str = "fleet") -> Fleet:
    folder = env.root / name
    folder.mkdir(parents=True, exist_ok=True)
    state_file = folder / "state" / "rollout-state.json"
    document = {
        "policyPack": str(LAUNCHER),
        "pulumiRoot": str(env.bin_dir.parent),
        "stateFile": str(state_file),
        "gate": {"timeout": "5m", "poll": "1s"},
        "stacks": {
            STACK: {
                "workDir": str(stack.project_dir),
                "kubeconfig": str(env.plane.kubeconfig),
                "env": {k: v for k, v in stack.env().items() if os.environ.get(k) != v},
            }
        },
        "waves": [{"name": "all", "stacks": [STACK]}],
    }
    path = folder / "fleet.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    # The fleet file's stack files are the project's own (stackConfigDir): the stack's settings
    # live in its project directory, as `set_settings` writes them.
    return Fleet(env, stack, path, state_file, folder)


@dataclass
class Interruption:
    """One change killed (or cancelled) half way, and its recovery."""

    label: str
    locks_after_kill: int = 0
    pending_after_kill: list[tuple[str, str]] = field(default_factory=list)
    installed_before: Any = None
    installed_after_kill: Any = None
    installed_after_recovery: Any = None
    resources_after_kill: int = 0
    resume_code: int | None = None
    resume_log: str = ""
    created_by_recovery: int | None = None
    resources_after_recovery: int = 0
    locks_after_recovery: int = 0
    pending_after_recovery: int = 0
    preview_code: int | None = None
    preview_output: str = ""
    refresh_code: int | None = None
    refresh_output: str = ""
    cluster_not_in_state: dict[str, list[str]] = field(default_factory=dict)
    state_not_in_cluster: dict[str, list[str]] = field(default_factory=dict)
    zero_endpoints: list[float] = field(default_factory=list)
    fewest_ready_servers: int = 0
    worst_agent_gap: tuple[float, str] = (0.0, "")
    kill_seconds: float = 0.0
    second_code: int | None = None
    second_log: str = ""
    """Another rollout of the same stack started while this update ran (its own state file)."""
    groups_after_kill: list[str] = field(default_factory=list)
    groups_after_recovery: list[str] = field(default_factory=list)
    marked_for_deletion_after_kill: list[str] = field(default_factory=list)
    """Resources the state holds as replaced and still to delete (`delete: true`)."""
    # (d) only
    exit_code: int | None = None
    exited_within: float | None = None
    log: str = ""
    state: dict[str, Any] = field(default_factory=dict)


def _pending(stack: PulumiStack) -> list[tuple[str, str]]:
    ops = stack.export()["deployment"].get("pending_operations") or []
    return [(op["resource"]["urn"].rsplit("::", 1)[-1], op["type"]) for op in ops]


def _installed(stack: PulumiStack) -> Any:
    return stack.outputs().get("installed")


def _one_to_one(
    env: Environment, stack: PulumiStack
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Names in the cluster but not the state, and in the state but not the cluster, per kind;
    the stand-in's groups are the ConfigMaps of kube-system holding its arguments."""
    in_state: dict[str, set[str]] = {}
    for r in stack.resources():
        name = ((r.get("outputs") or {}).get("metadata") or {}).get("name")
        namespace = ((r.get("outputs") or {}).get("metadata") or {}).get("namespace")
        if r["type"] in COMPARED and name:
            in_state.setdefault(r["type"], set()).add(name)
        if r["type"] == "kubernetes:core/v1:ConfigMap" and namespace == GROUP_NAMESPACE and name:
            in_state.setdefault("group", set()).add(name)
    in_cluster = {
        kind: {o["metadata"]["name"] for o in env.kube.items(path)}
        for kind, path in COMPARED.items()
    }
    in_cluster["group"] = set(_groups(env))
    extra = {k: sorted(v - in_state.get(k, set())) for k, v in in_cluster.items()}
    missing = {k: sorted(v - in_cluster.get(k, set())) for k, v in in_state.items()}
    return {k: v for k, v in extra.items() if v}, {k: v for k, v in missing.items() if v}


def _groups(env: Environment) -> list[str]:
    """The stand-in node groups in the cluster: the ConfigMaps holding a group's arguments."""
    return sorted(
        o["metadata"]["name"]
        for o in env.kube.items(f"/api/v1/namespaces/{GROUP_NAMESPACE}/configmaps")
        if "instanceTypes" in (o["metadata"].get("annotations") or {})
    )


def _created(log: str) -> int | None:
    """The recovery's `up` creates, as the fleet prints the engine's own count."""
    for line in log.splitlines():
        if "up done (" in line:
            counts = line.split("up done (", 1)[1].split(")", 1)[0]
            for part in counts.split(", "):
                if part.endswith(" created"):
                    return int(part.split()[0])
            return 0
    return None


def _imported(log: str) -> list[str]:
    """The names the recovery imported (`recovered: imported a, b; cleared ...`)."""
    for line in log.splitlines():
        if "recovered: imported " in line:
            return line.split("recovered: imported ", 1)[1].split(";", 1)[0].split(", ")
    return []


def worst_agent_gap(watcher: Watcher, since: float) -> tuple[float, str]:
    """The longest time a node went without a Ready agent after it first had one (so nodes the
    agents never run on, the server nodes and an untolerated pool, and a first install's wait for
    its first agents do not count), and which node."""
    timeline = [s for s in watcher.timeline if s.t >= since]
    worst, where = 0.0, ""
    nodes = {n for s in timeline for n, pods in s.agents.items() if any(pods)}
    for node in sorted(nodes):
        served_since: float | None = None
        gap_start: float | None = None
        for s in timeline:
            ready = any(s.agents.get(node, []))
            if ready:
                if gap_start is not None and s.t - gap_start > worst:
                    worst, where = s.t - gap_start, node
                gap_start, served_since = None, served_since if served_since is not None else s.t
            elif served_since is not None and gap_start is None:
                gap_start = s.t
        if gap_start is not None and timeline[-1].t - gap_start > worst:
            worst, where = timeline[-1].t - gap_start, node
    return worst, where


def _judge(
    env: Environment, fleet: Fleet, watcher: Watcher, story: Interruption, serving_from: float
) -> None:
    stack = fleet.stack
    story.resume_code, story.resume_log = fleet.resume(story.label.replace(" ", "-") + "-resume")
    story.installed_after_recovery = _installed(stack)
    story.created_by_recovery = _created(story.resume_log)
    story.resources_after_recovery = len(stack.resources())
    story.locks_after_recovery = len(stack.lock_files())
    story.pending_after_recovery = len(_pending(stack))
    preview = stack.preview("--expect-no-changes", check=False)
    story.preview_code, story.preview_output = preview.returncode, preview.output
    refresh = stack.refresh("--expect-no-changes", check=False)
    story.refresh_code, story.refresh_output = refresh.returncode, refresh.output
    story.cluster_not_in_state, story.state_not_in_cluster = _one_to_one(env, stack)
    story.groups_after_recovery = _groups(env)
    watcher.samples.append(watcher.sample())
    timeline = [s for s in watcher.timeline if s.t >= serving_from]
    story.zero_endpoints = [round(s.t, 1) for s in timeline if s.ready_endpoints == 0]
    story.fewest_ready_servers = min(s.ready_servers for s in timeline)
    story.worst_agent_gap = worst_agent_gap(watcher, serving_from)


def _killed(
    env: Environment,
    fleet: Fleet,
    label: str,
    config: dict[str, Any],
    when: str,
    condition: Callable[[], bool],
    first_install: bool = False,
    second: Fleet | None = None,
) -> Interruption:
    stack = fleet.stack
    story = Interruption(label)
    story.installed_before = None if first_install else _installed(stack)
    set_settings(env, stack, config)
    watcher = Watcher(env.kube, NAMESPACE, "kiam-server")
    with watcher.running():
        process, _ = fleet.start(label)
        wait_for(when, condition)
        if second is not None:
            # A second rollout of the stack while the first still runs: the live lock is
            # respected before anything is read or written.
            other, log = second.start(label + "-second")
            story.second_code = other.wait(timeout=DEADLINE_SECONDS)
            story.second_log = log.read_text()
        started = time.monotonic()
        kill_tree(process.pid)
        process.wait(timeout=30)
        story.kill_seconds = time.monotonic() - started
        story.locks_after_kill = len(stack.lock_files())
        story.pending_after_kill = _pending(stack)
        story.resources_after_kill = len(stack.resources())
        story.installed_after_kill = _installed(stack)
        story.groups_after_kill = _groups(env)
        story.marked_for_deletion_after_kill = [
            r["urn"].rsplit("::", 1)[-1] for r in stack.resources() if r.get("delete")
        ]
        serving_from = 0.0
        if first_install:
            wait_for("a ready endpoint", lambda: watcher.sample().ready_endpoints > 0)
            serving_from = watcher.now()
        _judge(env, fleet, watcher, story, serving_from)
    assert not watcher.errors, watcher.errors
    return story


def _agents_rolling(env: Environment, level: str) -> Callable[[], bool]:
    """Some agents run with `level` and Ready, some still without it: the rollout half done."""

    def check() -> bool:
        pods = env.pods(NAMESPACE, "agent")
        new = [
            p
            for p in pods
            if f"--level={level}" in " ".join(p["spec"]["containers"][0].get("args") or [])
        ]
        return bool(new) and any(is_ready(p) for p in new) and len(new) < len(pods) - 1

    return check


@dataclass
class Story:
    killed: dict[str, Interruption] = field(default_factory=dict)
    cancelled: Interruption | None = None


@pytest.fixture(scope="module")
def story(bin_dir: Path, session_root: Path) -> Iterator[Story]:
    with fresh_environment(session_root, bin_dir, "interrupted", TIMING) as env:
        s = Story()
        config = example_config("dev")
        stack, _ = deploy(env, STACK, config, workers=WORKERS)
        fleet = make_fleet(env, stack)

        # (b) the first install, killed once the agent DaemonSet exists.
        daemon_set = f"/apis/apps/v1/namespaces/{NAMESPACE}/daemonsets/kiam-agent"
        s.killed["first install"] = _killed(
            env, fleet, "first-install", config, "the agent DaemonSet created",
            lambda: env.kube.get_or_none(daemon_set) is not None, first_install=True,
        )  # fmt: skip

        # (c) an agent rollout, killed half way.
        config = with_changes(config, agent={"logLevel": "debug"})
        s.killed["agent rollout"] = _killed(
            env, fleet, "agent-rollout", config, "the agent rollout half done",
            _agents_rolling(env, "debug"), second=make_fleet(env, stack, "second-fleet"),
        )  # fmt: skip

        # (a) a node group replacement, killed once the servers run on the new group.
        old_nodes = set(env.dedicated_nodes())
        replicas = 2

        def servers_moved() -> bool:
            new = set(env.dedicated_nodes()) - old_nodes
            ready_on_new = [
                p for p in env.pods(NAMESPACE, "server")
                if p["spec"].get("nodeName") in new and is_ready(p)
            ]  # fmt: skip
            return len(ready_on_new) == replicas and bool(old_nodes & set(env.dedicated_nodes()))

        config = with_changes(config, nodeGroup={"instanceTypes": ["t3.medium"]})
        s.killed["node group replacement"] = _killed(
            env, fleet, "node-group", config, "servers Ready on the new group", servers_moved
        )

        # (d) the deploy step cancelled as the runner cancels it.
        config = with_changes(config, agent={"logLevel": "info"})
        s.cancelled = _cancelled(env, fleet, config)
        REPORT.extend(_report(s))
        yield s
        stack.destroy()


def _cancelled(env: Environment, fleet: Fleet, config: dict[str, Any]) -> Interruption:
    stack = fleet.stack
    story = Interruption("runner cancel")
    story.installed_before = _installed(stack)
    set_settings(env, stack, config)
    watcher = Watcher(env.kube, NAMESPACE, "kiam-server")
    with watcher.running():
        process, log = fleet.start("runner-cancel", entry="bash")
        wait_for("the agent rollout half done", _agents_rolling(env, "info"))
        signalled = time.monotonic()
        os.kill(process.pid, signal.SIGINT)  # the entry process only, as the runner does
        try:
            story.exit_code = process.wait(timeout=RUNNER_SIGTERM_AFTER)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGTERM)
            try:
                story.exit_code = process.wait(timeout=RUNNER_KILL_AFTER)
            except subprocess.TimeoutExpired:
                kill_tree(process.pid)
                process.wait(timeout=30)
        story.exited_within = time.monotonic() - signalled
        story.log = log.read_text()
        story.state = json.loads(fleet.state_file.read_text())
        story.locks_after_kill = len(stack.lock_files())
        story.pending_after_kill = _pending(stack)
        story.installed_after_kill = _installed(stack)
        _judge(env, fleet, watcher, story, 0.0)
    assert not watcher.errors, watcher.errors
    return story


def _report(s: Story) -> list[str]:
    lines = []
    for label, k in [*s.killed.items(), ("runner cancel", s.cancelled)]:
        assert k is not None
        lines.append(
            f"interrupted: {label}: {k.locks_after_kill} lock(s) and pending "
            f"{k.pending_after_kill or 'none'} after the kill; resume exit {k.resume_code}, "
            f"{k.created_by_recovery} created; fewest Ready servers {k.fewest_ready_servers}, "
            f"worst agent gap {k.worst_agent_gap[0]:.1f} s; groups {k.groups_after_kill} -> "
            f"{k.groups_after_recovery}, to delete after the kill {k.marked_for_deletion_after_kill}"
            + (
                f"; exit {k.exit_code} {k.exited_within:.1f} s after SIGINT"
                if k.exited_within
                else ""
            )
        )
    return lines


KILLED = ["first install", "agent rollout", "node group replacement"]


@pytest.mark.parametrize("label", KILLED)
def test_a_killed_update_leaves_a_lock_and_pending_operations(story: Story, label: str) -> None:
    k = story.killed[label]
    assert k.locks_after_kill == 1, k
    assert k.pending_after_kill, k
    if label == "first install":
        assert ("kiam-agent", "creating") in k.pending_after_kill


@pytest.mark.parametrize("label", KILLED)
def test_installed_changes_only_with_the_recoverys_up(story: Story, label: str) -> None:
    k = story.killed[label]
    assert k.installed_after_kill == k.installed_before
    assert k.installed_after_recovery is not None


@pytest.mark.parametrize("label", KILLED)
def test_resume_recovers_the_killed_stack(story: Story, label: str) -> None:
    k = story.killed[label]
    assert k.resume_code == 0, k.resume_log
    assert "removing the dead lock of pid" in k.resume_log, k.resume_log
    assert "recovered: " in k.resume_log, k.resume_log
    assert "Rollout complete:" in k.resume_log, k.resume_log


@pytest.mark.parametrize("label", [*KILLED, "runner cancel"])
def test_nothing_is_lost(story: Story, label: str) -> None:
    k = story.cancelled if label == "runner cancel" else story.killed[label]
    assert k is not None
    assert k.locks_after_recovery == 0
    assert k.pending_after_recovery == 0
    assert k.preview_code == 0, k.preview_output
    assert k.refresh_code == 0, k.refresh_output
    assert k.cluster_not_in_state == {}, k.cluster_not_in_state
    assert k.state_not_in_cluster == {}, k.state_not_in_cluster


def test_the_recoverys_up_creates_only_what_the_state_lacked(story: Story) -> None:
    """The first install killed: the agent DaemonSet the kill left behind is imported, and the
    recovery's `up` creates exactly the resources the state still lacked (the engine's own count;
    nothing is deleted in a first install): never the DaemonSet again."""
    k = story.killed["first install"]
    imported = _imported(k.resume_log)
    assert "kiam-agent" in imported, k.resume_log
    assert k.created_by_recovery == (
        k.resources_after_recovery - k.resources_after_kill - len(imported)
    ), k.resume_log


def test_a_live_lock_is_respected_never_two_updates_at_once(story: Story) -> None:
    k = story.killed["agent rollout"]
    assert k.second_code == 1, k.second_log
    assert (
        f"failed: {STACK}: needs a person: {STACK} is locked by an update that may still run: "
        f"{getpass.getuser()}@{socket.gethostname()} pid "
    ) in k.second_log
    assert "recovered" not in k.second_log and "up done" not in k.second_log


def test_a_killed_replacement_leaves_no_orphan_group(story: Story) -> None:
    """Killed with the servers on the new group and the old one not yet deleted: after the
    recovery one group runs, the new one."""
    k = story.killed["node group replacement"]
    assert len(k.groups_after_kill) == 2, k.groups_after_kill
    assert len(k.groups_after_recovery) == 1, k
    assert k.groups_after_recovery[0] in k.groups_after_kill


@pytest.mark.parametrize("label", [*KILLED, "runner cancel"])
def test_kiam_kept_serving_throughout(story: Story, label: str) -> None:
    k = story.cancelled if label == "runner cancel" else story.killed[label]
    assert k is not None
    assert k.zero_endpoints == []
    assert k.fewest_ready_servers >= 1
    assert k.worst_agent_gap[0] <= AGENT_RESTART_BOUND_SECONDS, k.worst_agent_gap


def test_a_runner_cancel_ends_the_update_gracefully(story: Story) -> None:
    k = story.cancelled
    assert k is not None
    assert k.exit_code == 128 + signal.SIGINT, k.log
    assert k.exited_within is not None and k.exited_within < RUNNER_SIGTERM_AFTER, k.log
    assert "SIGINT received: cancelling 1 running pulumi command(s) gracefully" in k.log
    assert "Rollout cancelled by SIGINT:" in k.log
    assert k.state["stacks"][STACK]["status"] == "interrupted"
    assert k.locks_after_kill == 0
    assert k.installed_after_kill == k.installed_before
    assert k.resume_code == 0, k.resume_log

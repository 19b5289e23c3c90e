"""Scenario: agent rollouts on a cluster of many nodes whose pods take seconds to start, watched.

Issue 39 saw it on the real engine: with one agent at a time and no timeout of its own, an agent
change on 73 nodes, each agent Ready about 10 s after it starts, failed `pulumi up` after the
provider's 10 minutes with 61 agents rolled. Here the cluster has `SIZE.workers` workload nodes
and kwok makes every pod take `SIZE.start` seconds to turn Ready and `SIZE.stop` to go
(e2e/harness/cluster.py, `PodTiming`). The dev stack is installed with `kiam:agent.rollout` sized
for that cluster, and each change below is one `pulumi up`, watched change by change:

- an agent change (`logLevel`), rolled 10% of the nodes at a time (the default): `pulumi up`
  exits 0, returns only once every node runs a Ready new agent, and never are more nodes without
  a serving agent than the setting allows (nor fewer at the worst moment: the setting is used);
- an agent change rolled by a count: at full size, one at a time on 100 nodes, a rollout of about
  20 minutes, twice the provider's own 10-minute wait, which `pulumi up` now waits for;
- the retirement: the agents rolled to `--iptables-remove` within the setting, then deleted, in
  one `pulumi up`.

`make e2e` runs the CI shape (30 nodes, 3 s); `make e2e-scale` the full one (100 nodes, 10 s), its
time in docs/performance.md.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from e2e.harness.cluster import PodTiming
from e2e.harness.environment import Environment
from e2e.harness.pod_record import Moment, Recorder
from e2e.harness.pulumi import PulumiStack, Result
from e2e.tests.conftest import (
    REPORT,
    deploy,
    example_config,
    fresh_environment,
    set_settings,
    with_changes,
)
from kiam_eks.contracts import kiam
from kiam_eks.settings.agent_rollout import PROVIDER_DEFAULT_WAIT_MINUTES, AgentRolloutSettings

NAMESPACE = "kiam"  # the dev stack's


@dataclass(frozen=True)
class Size:
    workers: int
    start: int
    stop: int
    count: int
    """The count the second scenario rolls by."""


SIZES = {
    # 30 nodes, 3 at a time: 10 restarts of about 4 s per rollout; 15 at 2 at a time.
    "ci": Size(workers=30, start=3, stop=1, count=2),
    # 100 nodes: 10 restarts of about 12 s at 10%; 100 of them one at a time, about 20 minutes,
    # twice the provider's own wait (2 at a time took 608 s, too close to it to tell).
    "full": Size(workers=100, start=10, stop=2, count=1),
}
SIZE = SIZES[os.environ.get("KIAM_E2E_SCALE", "ci")]
# One agent's stop, start and readiness here, with a margin for a loaded machine: the stack
# declares it as an operator declares their cluster's.
RESTART_SECONDS = SIZE.start + SIZE.stop + 2
APPLICATION = {
    # Served without kiam, so the stack may retire it (kiam:retire refuses while kiam serves one).
    "billing": {
        "namespace": "billing",
        "roleName": "billing-api",
        "servedBy": "irsa",
        "serviceAccount": "api",
    }
}


@dataclass
class Scaled:
    env: Environment
    stack: PulumiStack
    config: dict[str, Any]
    agent_nodes: set[str]


def agent_config(config: dict[str, Any], **agent: Any) -> dict[str, Any]:
    return with_changes(config, agent=agent)


@pytest.fixture(scope="module")
def scaled(bin_dir: Path, session_root: Path) -> Iterator[Scaled]:
    timing = PodTiming(start_seconds=SIZE.start, stop_seconds=SIZE.stop)
    with fresh_environment(session_root, bin_dir, "scale", timing) as env:
        config = agent_config(
            {**example_config("dev"), "kiam:applications": APPLICATION},
            rollout={"nodes": SIZE.workers, "restartSeconds": RESTART_SECONDS},
        )
        stack, shape = deploy(env, "dev", config, workers=SIZE.workers)
        installed = stack.up()
        agent_nodes = {p["spec"]["nodeName"] for p in env.pods(NAMESPACE, "agent")}
        workers = {n for n in shape.node_names if n.startswith("worker-")}
        assert workers <= agent_nodes and len(workers) == SIZE.workers
        REPORT.append(
            f"scale ({SIZE.workers} workers, pods {SIZE.start} s to start, {SIZE.stop} s to stop): "
            f"install `pulumi up` {installed.seconds:.1f} s, {len(agent_nodes)} agents"
        )
        yield Scaled(env, stack, config, agent_nodes)


def watched_up(scaled: Scaled, config: dict[str, Any]) -> tuple[Result, list[Moment]]:
    set_settings(scaled.env, scaled.stack, config)
    recorder = Recorder(scaled.env.kube, NAMESPACE)
    with recorder.running():
        result = scaled.stack.up()
    assert not recorder.errors, recorder.errors
    return result, recorder.moments


def assert_every_node_runs_a_ready_agent_with(scaled: Scaled, flag: str) -> None:
    """What `pulumi up` returning means: the rollout has ended, not only begun."""
    pods = scaled.env.pods(NAMESPACE, "agent")
    serving = [
        p
        for p in pods
        if not p["metadata"].get("deletionTimestamp")
        and any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"]["conditions"])
    ]
    assert sorted(p["spec"]["nodeName"] for p in serving) == sorted(scaled.agent_nodes)
    assert len(pods) == len(scaled.agent_nodes)
    assert all(flag in p["spec"]["containers"][0]["args"] for p in pods)


def rollout_seconds(moments: list[Moment], nodes: set[str]) -> float:
    """From the first agent asked to stop to the last moment a node was without a serving
    agent: the rollout as the cluster lived it."""
    began = next(m.t for m in moments if any(p.stopping for p in m.agents()))
    ended = max(m.t for m in moments if m.without_agent(nodes))
    return ended - began


def rollout_of(config: dict[str, Any]) -> AgentRolloutSettings:
    return AgentRolloutSettings.model_validate(config["kiam:agent"]["rollout"])


def report(what: str, result: Result, moments: list[Moment], rollout: AgentRolloutSettings) -> None:
    REPORT.append(
        f"scale ({SIZE.workers} workers): {what}: `pulumi up` {result.seconds:.1f} s, "
        f"estimated {rollout.estimate_seconds} s, waited up to {rollout.wait_minutes} min; "
        f"{len(moments)} watched changes"
    )


def test_an_agent_change_rolls_a_tenth_of_the_nodes_at_a_time_in_one_up(scaled: Scaled) -> None:
    config = agent_config(scaled.config, logLevel="debug")
    rollout = rollout_of(config)
    preview = scaled.stack.preview()
    # The preview says how long the rollout it is about to start takes on this cluster.
    assert f"agent rollout: {rollout.describe()}" in preview.output
    result, moments = watched_up(scaled, config)
    assert result.returncode == 0
    assert_every_node_runs_a_ready_agent_with(scaled, "--level=debug")
    at_once = rollout.at_once(len(scaled.agent_nodes))
    assert at_once == math.ceil(len(scaled.agent_nodes) / 10)
    # Never more nodes without a serving agent than the setting allows, and that many at the
    # worst moment: the rollout went as wide as it was allowed to.
    assert max(m.without_agent(scaled.agent_nodes) for m in moments) == at_once
    report("agent change at 10%", result, moments, rollout)
    scaled.config = config


def test_an_agent_change_rolled_by_a_count_completes_in_one_up(scaled: Scaled) -> None:
    config = agent_config(
        scaled.config,
        logLevel="info",
        rollout={
            "maxUnavailable": SIZE.count,
            "nodes": SIZE.workers,
            "restartSeconds": RESTART_SECONDS,
        },
    )
    rollout = rollout_of(config)
    result, moments = watched_up(scaled, config)
    assert result.returncode == 0
    assert_every_node_runs_a_ready_agent_with(scaled, "--level=info")
    assert max(m.without_agent(scaled.agent_nodes) for m in moments) == SIZE.count
    rolling = rollout_seconds(moments, scaled.agent_nodes)
    if rollout.estimate_seconds > 1.5 * PROVIDER_DEFAULT_WAIT_MINUTES * 60:
        # At full size the rollout itself, from the first agent stopped to the last new one
        # Ready, outlasts the provider's own wait, which would have failed the update.
        assert rolling > PROVIDER_DEFAULT_WAIT_MINUTES * 60
        assert rollout.wait_minutes * 60 > rolling
    REPORT.append(f"scale ({SIZE.workers} workers): the rollout itself took {rolling:.1f} s")
    report(f"agent change {SIZE.count} at a time", result, moments, rollout)
    scaled.config = config


def test_the_retirement_rolls_within_the_setting_and_deletes_in_one_up(scaled: Scaled) -> None:
    config = {
        **agent_config(
            scaled.config, rollout={"nodes": SIZE.workers, "restartSeconds": RESTART_SECONDS}
        ),
        "kiam:retire": True,
    }
    rollout = rollout_of(config)
    result, moments = watched_up(scaled, config)
    assert result.returncode == 0
    assert scaled.env.pods(NAMESPACE, "agent") == []
    began = next(m.t for m in moments if m.daemon_set_deleting)
    rolling = [m for m in moments if m.t < began]
    at_once = rollout.at_once(len(scaled.agent_nodes))
    assert max(m.without_agent(scaled.agent_nodes) for m in rolling) == at_once
    # Every agent stopped once the deletion began had been rolled to remove its rule.
    stopped = {p.name: p for m in moments if m.t >= began for p in m.agents() if p.stopping}
    assert len(stopped) == len(scaled.agent_nodes)
    assert all(kiam.AGENT_REMOVE_RULE_FLAG in p.args for p in stopped.values())
    report("retirement", result, moments, rollout)

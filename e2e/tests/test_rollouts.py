"""Scenarios 3, 4 and 6, watched every half second: a node group replacement and a kiam upgrade,
with and without a spare node.

- Replacement: the new nodes exist before any server moves; the old nodes go only once every
  server is Ready on the new ones, and `pulumi up` returns only after that; the Service the
  agents dial never has zero ready endpoints.
- Capacity: with a spare node (desiredSize > replicas) Ready servers never drop below `replicas`;
  without one they drop to `replicas - 1` and no lower (a surge pod with nowhere to go would
  wedge the rollout).
- Upgrade: servers roll first and are awaited; agents roll after, one node at a time.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from e2e.harness.environment import Environment
from e2e.harness.pulumi import PulumiStack, read_event_log, type_and_name
from e2e.harness.watcher import Sample, Watcher
from e2e.tests.conftest import (
    REPORT,
    installed_dev_with_capacity,
    set_settings,
    with_changes,
)

NAMESPACE = "kiam"
NEW_IMAGE = "quay.io/uswitch/kiam:v4.2-e2e"
REPLICAS = 2


@dataclass
class Rollout:
    """One watched `pulumi up`."""

    watcher: Watcher
    returned_at: float
    at_return: Sample
    """The cluster read from the API right after `pulumi up` returned."""
    events: list[dict[str, Any]]
    old_nodes: set[str]
    new_nodes: set[str]


@dataclass
class Rolled:
    spare: bool
    replacement: Rollout
    upgrade: Rollout
    env: Environment
    stack: PulumiStack


def _watched_up(env: Environment, stack: PulumiStack, config: dict[str, Any], log: Path) -> Rollout:
    old = set(env.dedicated_nodes())
    set_settings(env, stack, config)
    watcher = Watcher(env.kube, NAMESPACE, "kiam-server")
    with watcher.running():
        watcher.samples.append(watcher.sample())
        stack.up(event_log=log)
        returned_at = watcher.now()
        at_return = watcher.sample()
        watcher.samples.append(at_return)
    assert not watcher.errors, watcher.errors
    new = set(env.dedicated_nodes()) - old
    return Rollout(watcher, returned_at, at_return, read_event_log(log), old, new)


@pytest.fixture(scope="module", params=[False, True], ids=["no-spare-node", "spare-node"])
def rolled(bin_dir: Path, session_root: Path, request: pytest.FixtureRequest) -> Iterator[Rolled]:
    spare = request.param
    with installed_dev_with_capacity(session_root, bin_dir, "rollouts", spare=spare) as (
        env,
        stack,
        config,
    ):
        replaced = with_changes(config, nodeGroup={"instanceTypes": ["t3.medium"]})
        replacement = _watched_up(env, stack, replaced, env.root / "replacement.jsonl")
        upgraded = with_changes(replaced, server={"image": NEW_IMAGE}, agent={"image": NEW_IMAGE})
        upgrade = _watched_up(env, stack, upgraded, env.root / "upgrade.jsonl")
        rolled = Rolled(spare, replacement, upgrade, env, stack)
        REPORT.extend(summary(rolled))
        yield rolled
        stack.destroy()


def summary(rolled: Rolled) -> list[str]:
    """The replacement's timeline and both rollouts' minimums, as `make e2e` prints them."""
    r, w = rolled.replacement, rolled.replacement.watcher
    label = "with a spare node" if rolled.spare else "without a spare node"

    def at(condition: str, predicate: Any) -> str:
        try:
            return f"{w.first(condition, predicate).t:.1f}s"
        except AssertionError:
            return "never"

    return [
        f"replacement {label}: new nodes at "
        + at("new nodes", lambda s: r.new_nodes <= s.nodes)
        + ", first server on them at "
        + at("moved", lambda s: s.servers_on(r.new_nodes) > 0)
        + ", all Ready there at "
        + at("all", lambda s: s.ready_servers_on(r.new_nodes) == REPLICAS)
        + ", old nodes gone at "
        + at("gone", lambda s: not (r.old_nodes & s.nodes))
        + f", `pulumi up` returned at {r.returned_at:.1f}s",
        f"min Ready servers {label} (of {REPLICAS}): replacement "
        f"{r.watcher.min_ready_servers()}, upgrade {rolled.upgrade.watcher.min_ready_servers()}; "
        f"{len(r.watcher.samples) + len(rolled.upgrade.watcher.samples)} samples, "
        f"{len(r.watcher.events) + len(rolled.upgrade.watcher.events)} watched changes",
    ]


def test_new_nodes_exist_before_any_server_moves(rolled: Rolled) -> None:
    r = rolled.replacement
    assert len(r.new_nodes) == REPLICAS + rolled.spare
    nodes_up = r.watcher.first("every new node", lambda s: r.new_nodes <= s.nodes)
    first_move = r.watcher.first("a server on a new node", lambda s: s.servers_on(r.new_nodes) > 0)
    assert nodes_up.t <= first_move.t


def test_old_nodes_go_only_after_every_server_is_ready_on_the_new_ones(rolled: Rolled) -> None:
    r = rolled.replacement
    all_moved = r.watcher.first(
        "every server Ready on the new nodes", lambda s: s.ready_servers_on(r.new_nodes) == REPLICAS
    )
    old_gone = r.watcher.first("an old node deleted", lambda s: not r.old_nodes <= s.nodes)
    assert all_moved.t <= old_gone.t
    # `pulumi up` returned only after that: read from the API once it had returned, the old nodes
    # are gone and every server is Ready on the new ones. (When a sample first *sees* the old
    # nodes gone is no bound on when `up` returned: a deletion in the last half second before it
    # returns is first seen by this very read.)
    assert r.at_return.t >= r.returned_at
    assert not (r.at_return.nodes & r.old_nodes)
    assert r.at_return.ready_servers_on(r.new_nodes) == REPLICAS
    last = r.watcher.samples[-1]
    assert not (last.nodes & r.old_nodes)
    assert last.ready_servers_on(r.new_nodes) == REPLICAS


@pytest.mark.parametrize("which", ["replacement", "upgrade"])
def test_the_service_never_has_zero_ready_endpoints(rolled: Rolled, which: str) -> None:
    rollout: Rollout = getattr(rolled, which)
    assert len(rollout.watcher.samples) > 10
    assert rollout.watcher.zero_endpoint_times() == []


@pytest.mark.parametrize("which", ["replacement", "upgrade"])
def test_ready_servers_stay_at_replicas_with_a_spare_node_and_dip_by_one_without(
    rolled: Rolled, which: str
) -> None:
    rollout: Rollout = getattr(rolled, which)
    expected = REPLICAS if rolled.spare else REPLICAS - 1
    assert rollout.watcher.min_ready_servers() == expected


def test_an_upgrade_rolls_servers_first_and_agents_after(rolled: Rolled) -> None:
    events = rolled.upgrade.events

    def sequence(kind: str, type_: str) -> int:
        return next(
            int(e["sequence"])
            for e in events
            if kind in e
            and type_and_name(e[kind]["metadata"]["urn"])[0] == type_
            and e[kind]["metadata"]["op"] == "update"
        )

    assert sequence("resOutputsEvent", "kubernetes:apps/v1:Deployment") < sequence(
        "resourcePreEvent", "kubernetes:apps/v1:DaemonSet"
    )
    # The cluster agrees: no agent ran the new image before every server ran it, Ready.
    w = rolled.upgrade.watcher
    first_new_agent = w.first("an agent on the new image", lambda s: NEW_IMAGE in s.agent_images)
    assert first_new_agent.server_images == {NEW_IMAGE}
    assert first_new_agent.ready_servers == REPLICAS
    assert w.samples[-1].agent_images == {NEW_IMAGE}

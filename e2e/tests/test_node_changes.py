"""Every kind of change to the server nodes, and a kiam upgrade, applied by the real engine and
watched every half second, with and without a spare node: which path the engine took for the node
group, the fewest Ready servers, whether the Service ever had no ready endpoint, and how long
`pulumi up` took.

The node group stand-in carries the program's `replaceOnChanges` (contracts/eks_node_group.py):
the engine itself decides which change makes a new group. A launch template change (disk size), a
taint (its value, or its effect, under NO_SCHEDULE and NO_EXECUTE) and a Kubernetes version must
take the replacement path, never touching the running nodes; labels and sizes change the running
group, and no server restarts.

Scenarios 3, 4 and 6 of docs/e2e.md read the first replacement (the instance type) and the upgrade
that follows it:

- Replacement: the new nodes exist before any server moves; the old nodes go only once every
  server is Ready on the new ones, and `pulumi up` returns only after that; the Service the
  agents dial never has zero ready endpoints.
- Capacity: with a spare node (desiredSize > replicas) Ready servers never drop below `replicas`;
  without one they drop to `replicas - 1` and no lower (a surge pod with nowhere to go would
  wedge the rollout).
- Upgrade: servers roll first and are awaited; agents roll after, one node at a time.

One installed stack per variant carries them all, one change after another (an install of its
own for the replacement and the upgrade cost `make e2e` about two minutes).
"""

from __future__ import annotations

import json
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
from kiam_eks.contracts.eks_node_group import NodeChange
from kiam_eks.contracts.rollout_wait import (
    BUILT_IN_DEPLOYMENT_WAIT_DONE_MESSAGE,
    JSONPATH_FOUND_PREFIX,
    ROLLED_OUT_STATUS_COUNTS,
)

NAMESPACE = "kiam"
REPLICAS = 2
# The stand-in group (the arguments whose change replaces it) and its nodes.
GROUP = ("kubernetes:core/v1:ConfigMap", "kiam-server-nodes")
NODE = "kubernetes:core/v1:Node"
DEPLOYMENT = ("kubernetes:apps/v1:Deployment", "kiam-server")
NEW_IMAGE = "quay.io/uswitch/kiam:v4.2-e2e"
# The kiam upgrade, applied right after the first change (the instance type).
UPGRADE_AFTER = "instance type"


@dataclass(frozen=True)
class Step:
    label: str
    changes: dict[str, dict[str, Any]]
    expected: NodeChange | None
    """The path the node group must take; None for a change that is not the nodes' (the upgrade)."""


def steps(size: int) -> list[Step]:
    """The changes, applied one after another to the same stack."""
    return [
        Step(
            "instance type", {"nodeGroup": {"instanceTypes": ["t3.medium"]}}, NodeChange.REPLACEMENT
        ),
        Step(
            "disk size (launch template)",
            {"nodeGroup": {"diskSizeGiB": 40}},
            NodeChange.REPLACEMENT,
        ),
        Step(
            "taint value, NO_SCHEDULE",
            {"nodeGroup": {"taint": {"value": "kiam-servers"}}},
            NodeChange.REPLACEMENT,
        ),
        Step(
            "taint effect to NO_EXECUTE",
            {"nodeGroup": {"taint": {"value": "kiam-servers", "effect": "NO_EXECUTE"}}},
            NodeChange.REPLACEMENT,
        ),
        Step(
            "taint value, NO_EXECUTE",
            {"nodeGroup": {"taint": {"value": "kiam", "effect": "NO_EXECUTE"}}},
            NodeChange.REPLACEMENT,
        ),
        Step(
            "Kubernetes version", {"cluster": {"kubernetesVersion": "1.34"}}, NodeChange.REPLACEMENT
        ),
        Step("labels", {"nodeGroup": {"labels": {"team": "platform"}}}, NodeChange.CONFIG_UPDATE),
        Step(
            "scaling (one node more)",
            {"nodeGroup": {"desiredSize": size + 1, "maxSize": size + 2}},
            NodeChange.SCALING,
        ),
        # EKS drains the node it terminates (the harness's drainer, as EKS: eviction API).
        Step("scaling (one node fewer)", {"nodeGroup": {"desiredSize": size}}, NodeChange.SCALING),
    ]


# With a spare node the engine takes the same path for every change (the run without one proves
# which change takes which); what the spare changes is the rollout strategy, which the instance
# type and the taint replacements show (and the upgrade). The other four would add about 100 s to
# `make e2e` and nothing to learn.
SPARE_NODE_STEPS = (
    "instance type",
    "taint effect to NO_EXECUTE",
    "labels",
    "scaling (one node more)",
    "scaling (one node fewer)",
)


@dataclass
class Watched:
    step: Step
    path: NodeChange | None
    watcher: Watcher
    seconds: float
    returned_at: float
    """When `pulumi up` returned, on the watcher's clock."""
    at_return: Sample
    """The cluster read from the API right after `pulumi up` returned."""
    old_nodes: set[str]
    new_nodes: set[str]
    server_pods_before: set[str]
    deployment_messages: list[str]
    """What the provider reported while it awaited the server Deployment (the event log)."""
    events: list[dict[str, Any]]
    """The engine's event log of this `pulumi up`."""


@dataclass
class Changed:
    spare: bool
    watched: list[Watched]
    """The node changes, in order."""
    upgrade: Watched
    """The kiam upgrade (new server and agent images), right after the instance type change."""
    env: Environment

    @property
    def replacement(self) -> Watched:
        """The first replacement: the instance type, from the stack as installed."""
        first = self.watched[0]
        assert first.step.label == UPGRADE_AFTER and first.path is NodeChange.REPLACEMENT
        return first


def _path(
    events: list[dict[str, Any]], nodes_before: set[str], nodes_after: set[str]
) -> NodeChange:
    """The path the engine took, read from its own event log (the group's steps) and the nodes."""
    ops: dict[tuple[str, str], set[str]] = {}
    for e in events:
        if "resourcePreEvent" in e:
            meta = e["resourcePreEvent"]["metadata"]
            ops.setdefault(type_and_name(meta["urn"]), set()).add(meta["op"])
    if ops.get(GROUP, set()) & {"create-replacement", "replace", "delete-replaced"}:
        return NodeChange.REPLACEMENT
    if nodes_before != nodes_after:
        return NodeChange.SCALING
    # Applied to the running nodes: their labels change in place.
    if any(key[0] == NODE and "update" in op for key, op in ops.items()):
        return NodeChange.CONFIG_UPDATE
    raise AssertionError(f"the group took no step: {ops}")


def _watched_up(
    env: Environment, stack: PulumiStack, config: dict[str, Any], step: Step
) -> Watched:
    old = set(env.dedicated_nodes())
    pods_before = {p["metadata"]["name"] for p in env.pods(NAMESPACE, "server")}
    set_settings(env, stack, config)
    log = env.root / f"{step.label.replace(' ', '-')}.jsonl"
    watcher = Watcher(env.kube, NAMESPACE, "kiam-server")
    with watcher.running():
        watcher.samples.append(watcher.sample())
        began = watcher.now()
        stack.up(event_log=log)
        returned = watcher.now()
        at_return = watcher.sample()
        watcher.samples.append(at_return)
    assert not watcher.errors, watcher.errors
    # Kept beside the event log, for whoever reads a failure.
    log.with_suffix(".timeline.json").write_text(
        json.dumps(
            [
                {
                    "t": round(x.t, 3),
                    "servers": x.servers,
                    "endpoints": x.ready_endpoints,
                    "nodes": sorted(x.nodes),
                }
                for x in watcher.timeline
            ],
            indent=1,
        )
    )
    now = set(env.dedicated_nodes())
    events = read_event_log(log)
    path = None if step.expected is None else _path(events, old, now)
    return Watched(
        step,
        path,
        watcher,
        returned - began,
        returned,
        at_return,
        old,
        now - old,
        pods_before,
        _messages_of(events, DEPLOYMENT),
        events,
    )


def _messages_of(events: list[dict[str, Any]], resource: tuple[str, str]) -> list[str]:
    return [
        e["diagnosticEvent"]["message"].strip()
        for e in events
        if "diagnosticEvent" in e
        and e["diagnosticEvent"].get("urn")
        and type_and_name(e["diagnosticEvent"]["urn"]) == resource
    ]


@pytest.fixture(scope="module", params=[False, True], ids=["no-spare-node", "spare-node"])
def changed(bin_dir: Path, session_root: Path, request: pytest.FixtureRequest) -> Iterator[Changed]:
    spare = request.param
    with installed_dev_with_capacity(session_root, bin_dir, "node-changes", spare=spare) as (
        env,
        stack,
        config,
    ):
        watched, upgrade = [], None
        for step in steps(REPLICAS + (1 if spare else 0)):
            if spare and step.label not in SPARE_NODE_STEPS:
                continue
            config = with_changes(config, **step.changes)
            watched.append(_watched_up(env, stack, config, step))
            if step.label == UPGRADE_AFTER:
                image = {"image": NEW_IMAGE}
                config = with_changes(config, server=image, agent=image)
                upgrade = _watched_up(env, stack, config, Step("kiam upgrade", {}, None))
        assert upgrade is not None
        result = Changed(spare, watched, upgrade, env)
        REPORT.extend([*summary(result), *rollout_summary(result)])
        yield result
        stack.destroy()


def summary(changed: Changed) -> list[str]:
    """One line per change, as `make e2e` prints them (and docs/performance.md tabulates)."""
    label = "with a spare node" if changed.spare else "without a spare node"
    return [
        f"node change {label}: {w.step.label}: path {w.path and w.path.value}, fewest Ready servers "
        f"{w.watcher.min_ready_servers()} of {REPLICAS}, zero ready endpoints "
        f"{'never' if not w.watcher.zero_endpoint_times() else len(w.watcher.zero_endpoint_times())}"
        f", `pulumi up` {w.seconds:.1f}s ({len(w.watcher.timeline)} observations)"
        for w in changed.watched
    ]


def test_each_change_takes_the_path_the_contract_gives_it(changed: Changed) -> None:
    assert [(w.step.label, w.path) for w in changed.watched] == [
        (w.step.label, w.step.expected) for w in changed.watched
    ]


def test_no_change_ever_leaves_the_service_without_a_ready_server(changed: Changed) -> None:
    for w in changed.watched:
        assert len(w.watcher.samples) > 2, w.step.label
        assert w.watcher.zero_endpoint_times() == [], w.step.label
        assert w.watcher.min_ready_servers() >= REPLICAS - 1, w.step.label


def _replacements(changed: Changed) -> list[Watched]:
    return [w for w in changed.watched if w.path is NodeChange.REPLACEMENT]


def test_a_spare_node_keeps_every_server_ready_through_every_change(changed: Changed) -> None:
    expected = REPLICAS if changed.spare else REPLICAS - 1
    replaced = _replacements(changed)
    assert [w.watcher.min_ready_servers() for w in replaced] == [expected] * len(replaced)


def test_a_replacement_moves_every_server_to_new_nodes_before_the_old_ones_go(
    changed: Changed,
) -> None:
    for w in _replacements(changed):
        assert len(w.new_nodes) == REPLICAS + changed.spare, w.step.label
        new, old = w.new_nodes, w.old_nodes

        def moved(s: Sample, new: set[str] = new) -> bool:
            return s.ready_servers_on(new) == REPLICAS

        def gone(s: Sample, old: set[str] = old) -> bool:
            return not old <= s.nodes

        all_moved = w.watcher.first(f"{w.step.label}: every server Ready on the new nodes", moved)
        old_gone = w.watcher.first(f"{w.step.label}: an old node deleted", gone)
        assert all_moved.t <= old_gone.t, w.step.label
        assert not (w.at_return.nodes & w.old_nodes), w.step.label


def test_the_provider_holds_each_replacement_by_the_programs_rollout_wait(
    changed: Changed,
) -> None:
    # Not by its own Deployment wait, which returned once with one new server Ready and let the
    # engine delete the old nodes under the other (contracts/rollout_wait.py): the provider
    # reports each of the program's conditions found, and never its own wait's completion.
    for w in _replacements(changed):
        found = {m for m in w.deployment_messages if m.startswith(JSONPATH_FOUND_PREFIX)}
        assert found == {
            f"{JSONPATH_FOUND_PREFIX}{{.status.{count}}}={REPLICAS}"
            for count in ROLLED_OUT_STATUS_COUNTS
        }, w.step.label
        assert not [m for m in w.deployment_messages if BUILT_IN_DEPLOYMENT_WAIT_DONE_MESSAGE in m]


def test_a_taint_never_reaches_a_node_that_runs_servers_under_the_old_one(
    changed: Changed,
) -> None:
    # The servers on the old nodes tolerate the old taint only: had the new taint been applied to
    # those nodes (EKS's in-place path), a NO_EXECUTE one would have evicted them all at once.
    for w in changed.watched:
        if "taint" in w.step.label:
            assert w.path is NodeChange.REPLACEMENT
            assert w.old_nodes.isdisjoint(w.at_return.nodes)


def test_labels_and_sizes_change_the_running_group_and_restart_no_server(
    changed: Changed,
) -> None:
    in_place = [w for w in changed.watched if w.path is not NodeChange.REPLACEMENT]
    assert [w.step.label for w in in_place] == [
        "labels",
        "scaling (one node more)",
        "scaling (one node fewer)",
    ]
    labels, more, fewer = in_place
    for w in (labels, more):
        assert set(w.at_return.servers) == w.server_pods_before, w.step.label
        assert w.watcher.min_ready_servers() == REPLICAS, w.step.label
    assert labels.new_nodes == set()
    assert labels.old_nodes <= labels.at_return.nodes
    # EKS applies labels to the nodes already running: so did the stand-in.
    for node in changed.env.dedicated_nodes():
        assert changed.env.kube.get(f"/api/v1/nodes/{node}")["metadata"]["labels"]["team"] == (
            "platform"
        )
    assert len(more.new_nodes) == 1
    # One node fewer: it was drained through the eviction API before it went, so a server on it
    # (if any) moved with at most the one disruption the PodDisruptionBudget allows.
    (removed,) = fewer.old_nodes - fewer.at_return.nodes
    assert (removed, True) in [(node, emptied) for node, _, emptied in changed.env.drainer.drained]
    assert fewer.watcher.min_ready_servers() >= REPLICAS - 1


def test_every_deleted_node_was_drained_before_the_limit(changed: Changed) -> None:
    # Old groups' nodes (after a replacement) and scaled-in ones alike, as EKS drains them.
    assert changed.env.drainer.drained
    assert all(emptied for _, _, emptied in changed.env.drainer.drained)
    assert changed.env.drainer.errors == []


def rollout_summary(changed: Changed) -> list[str]:
    """The replacement's timeline and both rollouts' minimums, as `make e2e` prints them."""
    r, w = changed.replacement, changed.replacement.watcher
    label = "with a spare node" if changed.spare else "without a spare node"

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
        f"{r.watcher.min_ready_servers()}, upgrade {changed.upgrade.watcher.min_ready_servers()}; "
        f"{len(r.watcher.samples) + len(changed.upgrade.watcher.samples)} samples, "
        f"{len(r.watcher.events) + len(changed.upgrade.watcher.events)} watched changes",
    ]


def test_new_nodes_exist_before_any_server_moves(changed: Changed) -> None:
    r = changed.replacement
    assert len(r.new_nodes) == REPLICAS + changed.spare
    nodes_up = r.watcher.first("every new node", lambda s: r.new_nodes <= s.nodes)
    first_move = r.watcher.first("a server on a new node", lambda s: s.servers_on(r.new_nodes) > 0)
    assert nodes_up.t <= first_move.t


def test_up_returns_only_after_every_server_is_ready_on_the_new_nodes(changed: Changed) -> None:
    # Read from the API once `pulumi up` had returned, the old nodes are gone and every server is
    # Ready on the new ones. (When a sample first *sees* the old nodes gone is no bound on when
    # `up` returned: a deletion in the last half second before it returns is first seen by this
    # very read.)
    r = changed.replacement
    assert r.at_return.t >= r.returned_at
    assert not (r.at_return.nodes & r.old_nodes)
    assert r.at_return.ready_servers_on(r.new_nodes) == REPLICAS
    last = r.watcher.samples[-1]
    assert not (last.nodes & r.old_nodes)
    assert last.ready_servers_on(r.new_nodes) == REPLICAS


def test_the_upgrade_never_leaves_the_service_without_a_ready_server(changed: Changed) -> None:
    assert len(changed.upgrade.watcher.samples) > 10
    assert changed.upgrade.watcher.zero_endpoint_times() == []


def test_ready_servers_stay_at_replicas_with_a_spare_node_and_dip_by_one_without(
    changed: Changed,
) -> None:
    expected = REPLICAS if changed.spare else REPLICAS - 1
    assert changed.replacement.watcher.min_ready_servers() == expected
    assert changed.upgrade.watcher.min_ready_servers() == expected


def test_an_upgrade_rolls_servers_first_and_agents_after(changed: Changed) -> None:
    events = changed.upgrade.events

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
    w = changed.upgrade.watcher
    first_new_agent = w.first("an agent on the new image", lambda s: NEW_IMAGE in s.agent_images)
    assert first_new_agent.server_images == {NEW_IMAGE}
    assert first_new_agent.ready_servers == REPLICAS
    assert w.samples[-1].agent_images == {NEW_IMAGE}

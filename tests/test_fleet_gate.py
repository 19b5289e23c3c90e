"""The health gate's decisions on hand-built cluster objects, and its wait and soak on a fake clock."""

from __future__ import annotations

from typing import Any

from kiam_eks.contracts.labels import NODE_GROUP_LABEL
from kiam_eks.settings import settings_from_stack_file
from kiam_eks.settings.agent_rollout import AgentRolloutSettings
from tools.fleet.gate import (
    ClusterView,
    Expectation,
    agent_nodes,
    gate_timeout,
    judge,
    run_gate,
)
from tools.mock_engine import PROJECT_DIR

GROUP = "kiam-server-new"
OLD_GROUP = "kiam-server-old"


def expectation(**overrides: Any) -> Expectation:
    settings, _ = settings_from_stack_file(PROJECT_DIR / "stacks" / "Pulumi.dev.yaml")
    expect = Expectation.of(settings, {"nodeGroupName": GROUP})
    return Expectation(**{**expect.__dict__, **overrides})


def node(
    name: str, group: str | None = None, taints: list[dict[str, str]] | None = None
) -> dict[str, Any]:
    labels = {"kubernetes.io/hostname": name}
    if group:
        labels |= {NODE_GROUP_LABEL: group, "dedicated": "kiam-server"}
    return {"metadata": {"name": name, "labels": labels}, "spec": {"taints": taints or []}}


def pod(name: str, on: str, ready: bool = True, restarts: int = 0) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"nodeName": on},
        "status": {
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "containerStatuses": [{"name": "c", "restartCount": restarts}],
        },
    }


def endpoints(*ready: bool) -> list[dict[str, Any]]:
    return [{"endpoints": [{"conditions": {"ready": r}} for r in ready]}]


NODES = [
    node("server-1", GROUP),
    node("server-2", GROUP),
    node("worker-1"),
    node("worker-2"),
    node(
        "reserved", taints=[{"key": "workload-class", "value": "reserved", "effect": "NoSchedule"}]
    ),
    node("preferred", taints=[{"key": "soft", "value": "x", "effect": "PreferNoSchedule"}]),
]


def healthy(**changes: Any) -> ClusterView:
    view = {
        "nodes": NODES,
        "server_pods": [pod("s1", "server-1"), pod("s2", "server-2")],
        "agent_pods": [pod("a1", "worker-1"), pod("a2", "worker-2"), pod("a3", "preferred")],
        "endpoint_slices": endpoints(True, True),
    }
    return ClusterView(**{**view, **changes})


def test_the_expectation_comes_from_the_stack_settings_and_outputs() -> None:
    expect = expectation()
    assert (expect.namespace, expect.replicas, expect.service, expect.node_group) == (
        "kiam",
        2,
        "kiam-server",
        GROUP,
    )
    assert expect.agent_selector == {
        "app.kubernetes.io/component": "agent",
        "app.kubernetes.io/name": "kiam",
    }
    assert expect.server_node_label == ("dedicated", "kiam-server")
    assert expect.exact_endpoints is True


def test_agents_belong_on_every_node_but_server_nodes_and_untolerated_taints() -> None:
    assert agent_nodes(expectation(), NODES) == ["preferred", "worker-1", "worker-2"]


def test_a_healthy_cluster_passes() -> None:
    assert judge(expectation(), healthy()) == []


def test_a_server_left_on_the_old_node_group_fails() -> None:
    nodes = [*NODES, node("old-1", OLD_GROUP)]
    view = healthy(nodes=nodes, server_pods=[pod("s1", "server-1"), pod("s2", "old-1")])
    assert judge(expectation(), view) == [
        f"servers Ready on node group {GROUP}: 1 of 2; not: s2 (Ready on old-1, node group {OLD_GROUP})"
    ]


def test_a_server_not_ready_or_not_scheduled_fails() -> None:
    servers = [pod("s1", "server-1"), pod("s2", "server-2", ready=False), pod("s3", "")]
    assert judge(
        expectation(), healthy(server_pods=servers, endpoint_slices=endpoints(True, False))
    ) == [
        f"servers Ready on node group {GROUP}: 1 of 2; not: s2 (not Ready on server-2, node group "
        f"{GROUP}), s3 (not scheduled)",
        "Service kiam-server: 1 ready endpoints, expected 2",
    ]


def test_a_terminating_server_is_not_counted() -> None:
    leaving = pod("s0", "server-1", ready=False)
    leaving["metadata"]["deletionTimestamp"] = "2026-11-30T00:00:00Z"
    view = healthy(server_pods=[leaving, pod("s1", "server-1"), pod("s2", "server-2")])
    assert judge(expectation(), view) == []


def test_endpoints_must_equal_the_replicas_except_while_adoption_keeps_old_servers_behind_it() -> (
    None
):
    three = healthy(endpoint_slices=endpoints(True, True, True))
    assert judge(expectation(), three) == ["Service kiam-server: 3 ready endpoints, expected 2"]
    assert judge(expectation(exact_endpoints=False), three) == []
    assert judge(expectation(exact_endpoints=False), healthy(endpoint_slices=endpoints(True))) == [
        "Service kiam-server: 1 ready endpoints, expected at least 2"
    ]


def test_a_node_without_exactly_one_ready_agent_fails() -> None:
    agents = [pod("a1", "worker-1", ready=False), pod("a3", "preferred"), pod("a4", "preferred")]
    assert judge(expectation(), healthy(agent_pods=agents)) == [
        "node preferred: 2 Ready agents, expected 1",
        "node worker-1: 0 Ready agents, expected 1",
        "node worker-2: 0 Ready agents, expected 1",
    ]


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def gate_over(
    views: list[ClusterView], timeout: float = 10, soak: float = 6
) -> tuple[Any, FakeClock, list[str]]:
    clock = FakeClock()
    lines: list[str] = []
    readings = iter(views)
    last: list[ClusterView] = []

    def read() -> ClusterView:
        last[:] = [next(readings, last[0] if last else views[-1])]
        return last[0]

    result = run_gate(
        read, expectation(), timeout=timeout, poll=2, soak=soak, progress=lines.append,
        clock=clock, sleep=clock.sleep,
    )  # fmt: skip
    return result, clock, lines


def test_the_gate_waits_until_healthy_then_soaks() -> None:
    not_yet = healthy(endpoint_slices=endpoints(True))
    result, clock, lines = gate_over([not_yet, not_yet, healthy()])
    assert (result.ok, result.reason) == (True, "")
    assert lines == ["healthy; soaking 6 s"]
    # two polls waiting, then the 6 s soak read every 2 s
    assert clock.sleeps == [2, 2, 2, 2, 2]


def test_a_restart_during_the_soak_fails_the_gate() -> None:
    restarted = healthy(server_pods=[pod("s1", "server-1", restarts=1), pod("s2", "server-2")])
    result, _, _ = gate_over([healthy(), healthy(), restarted])
    assert (result.ok, result.reason) == (
        False,
        "kiam pods restarted during the soak: s1 (restarts 0 -> 1)",
    )


def test_a_cluster_unhealthy_during_the_soak_fails_the_gate() -> None:
    broken = healthy(server_pods=[pod("s1", "server-1"), pod("s2", "server-2", ready=False)])
    result, _, _ = gate_over([healthy(), broken])
    assert result.ok is False
    assert result.reason == (
        f"unhealthy during the soak: servers Ready on node group {GROUP}: 1 of 2; "
        f"not: s2 (not Ready on server-2, node group {GROUP})"
    )


def test_a_cluster_never_healthy_fails_at_the_timeout() -> None:
    result, clock, lines = gate_over([healthy(endpoint_slices=[])], timeout=5)
    assert (result.ok, result.reason) == (
        False,
        "not healthy after 5 s: Service kiam-server: 0 ready endpoints, expected 2",
    )
    assert clock.now == 6 and lines == []


def test_the_expectation_reads_a_stack_in_adoption_phase_servers() -> None:
    settings, _ = settings_from_stack_file(
        PROJECT_DIR / "docs" / "migration" / "Pulumi.migrate-1-servers.yaml"
    )
    expect = Expectation.of(settings, {"nodeGroupName": GROUP})
    assert expect.exact_endpoints is False
    assert expect.agent_selector == dict(settings.adoption_state.agent_selector)


def test_the_gate_waits_at_least_two_agent_restarts_never_the_whole_rollout() -> None:
    settings, _ = settings_from_stack_file(PROJECT_DIR / "stacks" / "Pulumi.dev.yaml")
    # The dev stack's agents restart in 30 s: a fleet's own timeout above a minute holds.
    assert (gate_timeout(600, settings), gate_timeout(15, settings)) == (600, 60)
    slow = settings.model_copy(
        update={
            "agent": settings.agent.model_copy(
                update={
                    "rollout": AgentRolloutSettings(max_unavailable=1, nodes=40, restart_seconds=90)
                }
            )
        }
    )
    # `pulumi up` waits up to 120 min for 40 restarts of 90 s one at a time; the gate, after it,
    # waits for one joining node's agent (twice 90 s), not for the rollout again.
    assert slow.agent.rollout.wait_minutes == 120
    assert gate_timeout(60, slow) == 180

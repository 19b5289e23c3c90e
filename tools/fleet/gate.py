"""The health gate a cluster must pass after its stack's `up` before the rollout goes on: every
server Ready on the node group the stack now names, the Service's ready endpoints equal to the
replicas, one Ready agent on every node the agents should run on, and no kiam pod restarting
during the soak. `judge` decides on plain cluster objects (the unit tests build them by hand);
`run_gate` waits for it, then holds it through the soak."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kiam_eks.contracts.labels import NODE_GROUP_LABEL, selector_labels
from kiam_eks.contracts.rollouts import ENDPOINT_SLICE_SERVICE_LABEL
from kiam_eks.program.kube_api import KubeApi, is_ready, selector
from kiam_eks.settings.agent import TolerationSettings
from kiam_eks.settings.agent_rollout import WAIT_MARGIN
from kiam_eks.settings.stack import StackSettings

Obj = dict[str, Any]
# Taint effects that keep a pod off a node (PreferNoSchedule only discourages it).
_KEEPING_EFFECTS = ("NoSchedule", "NoExecute")


@dataclass(frozen=True)
class Expectation:
    """What a healthy kiam looks like on one cluster, from its stack's settings and outputs."""

    namespace: str
    replicas: int
    service: str
    node_group: str
    agent_selector: dict[str, str]
    server_node_label: tuple[str, str]
    agent_tolerations: tuple[TolerationSettings, ...]
    exact_endpoints: bool
    """False while adopting (phase `servers`): the running install's servers are behind the
    Service too, so at least `replicas` endpoints are ready."""

    @classmethod
    def of(cls, settings: StackSettings, outputs: dict[str, Any]) -> Expectation:
        taint = settings.node_group.taint
        adoption = settings.adoption_state
        return cls(
            namespace=settings.namespace.name,
            replicas=settings.server.replicas,
            service=settings.server.service_name,
            node_group=str(outputs["nodeGroupName"]),
            agent_selector=dict(adoption.agent_selector),
            server_node_label=(taint.key, taint.value),
            agent_tolerations=tuple(settings.agent.tolerations),
            exact_endpoints=adoption.stack_owns_service,
        )


def gate_timeout(fleet_seconds: int, settings: StackSettings) -> int:
    """How long the gate waits for a stack's cluster: the fleet file's `gate.timeout`, but never
    less than two agent restarts as the stack declares them (`kiam:agent.rollout.restartSeconds`).
    The stack's `pulumi up` has already waited for its whole agent rollout (the DaemonSet's
    timeouts follow the rollout, components/agent.py), so the gate need not wait for it again:
    only for the agent of a node that joined meanwhile to start, which takes one restart. A gate
    as long as the rollout would hold a wave that long on a cluster already known unhealthy."""
    return max(fleet_seconds, settings.agent.rollout.restart_seconds * WAIT_MARGIN)


@dataclass(frozen=True)
class ClusterView:
    """The objects the gate reads, as the API returns them."""

    nodes: list[Obj]
    server_pods: list[Obj]
    agent_pods: list[Obj]
    endpoint_slices: list[Obj]


def read_cluster(api: KubeApi, expect: Expectation) -> ClusterView:
    ns = expect.namespace
    pods = f"/api/v1/namespaces/{ns}/pods?labelSelector="
    slices = (
        f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices?labelSelector="
        f"{ENDPOINT_SLICE_SERVICE_LABEL}={expect.service}"
    )
    return ClusterView(
        nodes=api.items("/api/v1/nodes"),
        server_pods=api.items(pods + selector(selector_labels("server"))),
        agent_pods=api.items(pods + selector(expect.agent_selector)),
        endpoint_slices=api.items(slices),
    )


def agent_nodes(expect: Expectation, nodes: list[Obj]) -> list[str]:
    """Nodes the agents should run on: not server nodes (the agents' required node affinity), and
    with no NoSchedule/NoExecute taint the agents do not tolerate."""
    key, value = expect.server_node_label
    wanted = []
    for node in nodes:
        if (node["metadata"].get("labels") or {}).get(key) == value:
            continue
        taints = (node.get("spec") or {}).get("taints") or []
        kept_off = any(
            t.get("effect") in _KEEPING_EFFECTS
            and not any(
                tol.tolerates(t["key"], t.get("value", ""), t["effect"])
                for tol in expect.agent_tolerations
            )
            for t in taints
        )
        if not kept_off:
            wanted.append(node["metadata"]["name"])
    return sorted(wanted)


def judge(expect: Expectation, view: ClusterView) -> list[str]:
    """Every way the cluster falls short of a healthy kiam; empty when healthy."""
    problems: list[str] = []
    group_of = {
        n["metadata"]["name"]: (n["metadata"].get("labels") or {}).get(NODE_GROUP_LABEL)
        for n in view.nodes
    }
    live = [p for p in view.server_pods if not p["metadata"].get("deletionTimestamp")]
    ready_on_group = [
        p
        for p in live
        if is_ready(p) and group_of.get(p["spec"].get("nodeName", "")) == expect.node_group
    ]
    others = sorted(
        f"{p['metadata']['name']} ({_where(p, group_of)})" for p in live if p not in ready_on_group
    )
    if len(ready_on_group) != expect.replicas or others:
        problems.append(
            f"servers Ready on node group {expect.node_group}: {len(ready_on_group)} of "
            f"{expect.replicas}" + (f"; not: {', '.join(others)}" if others else "")
        )
    endpoints = sum(
        1
        for s in view.endpoint_slices
        for e in s.get("endpoints") or []
        if (e.get("conditions") or {}).get("ready")
    )
    if (endpoints != expect.replicas) if expect.exact_endpoints else (endpoints < expect.replicas):
        wanted = f"{expect.replicas}" if expect.exact_endpoints else f"at least {expect.replicas}"
        problems.append(f"Service {expect.service}: {endpoints} ready endpoints, expected {wanted}")
    ready_agents: dict[str, int] = {}
    for pod in view.agent_pods:
        if is_ready(pod):
            node = pod["spec"].get("nodeName", "")
            ready_agents[node] = ready_agents.get(node, 0) + 1
    for node in agent_nodes(expect, view.nodes):
        count = ready_agents.get(node, 0)
        if count != 1:
            problems.append(f"node {node}: {count} Ready agents, expected 1")
    return problems


def _where(pod: Obj, group_of: dict[str, str | None]) -> str:
    node = pod["spec"].get("nodeName")
    if not node:
        return "not scheduled"
    state = "Ready" if is_ready(pod) else "not Ready"
    return f"{state} on {node}, node group {group_of.get(node) or 'none'}"


def restart_counts(view: ClusterView) -> dict[str, int]:
    """Restarts of every container of every kiam pod, by pod name."""
    return {
        p["metadata"]["name"]: sum(
            int(c.get("restartCount", 0))
            for c in (p.get("status") or {}).get("containerStatuses") or []
        )
        for p in [*view.server_pods, *view.agent_pods]
    }


def restarted(before: dict[str, int], after: dict[str, int]) -> list[str]:
    """Pods whose containers restarted between two readings (a pod new since is not a restart:
    the gate's readiness check covers it)."""
    return sorted(
        f"{name} (restarts {before[name]} -> {count})"
        for name, count in after.items()
        if name in before and count > before[name]
    )


@dataclass(frozen=True)
class GateResult:
    ok: bool
    reason: str = ""


def run_gate(
    read: Callable[[], ClusterView],
    expect: Expectation,
    *,
    timeout: float,
    poll: float,
    soak: float,
    progress: Callable[[str], None],
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> GateResult:
    """Wait (up to `timeout`) until the cluster is healthy, then keep reading it for `soak`
    seconds: any problem or any kiam container restart in that time fails the gate."""
    deadline = clock() + timeout
    view = read()
    problems = judge(expect, view)
    while problems:
        if clock() >= deadline:
            return GateResult(False, f"not healthy after {timeout:.0f} s: {'; '.join(problems)}")
        sleep(poll)
        view = read()
        problems = judge(expect, view)
    progress(f"healthy; soaking {soak:.0f} s")
    baseline = restart_counts(view)
    soak_end = clock() + soak
    while clock() < soak_end:
        sleep(min(poll, max(0.0, soak_end - clock())))
        view = read()
        problems = judge(expect, view)
        restarts = restarted(baseline, restart_counts(view))
        if restarts:
            return GateResult(False, f"kiam pods restarted during the soak: {', '.join(restarts)}")
        if problems:
            return GateResult(False, f"unhealthy during the soak: {'; '.join(problems)}")
    return GateResult(True)

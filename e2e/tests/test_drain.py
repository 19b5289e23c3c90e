"""Scenario 5, drain, as an operator (or EKS) drains nodes: through the eviction API, watched.

Draining one dedicated node leaves its server Pending (hard anti-affinity: nowhere else to go);
draining a second is refused by the PodDisruptionBudget until the first node is back; then
everything is Ready again."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from e2e.harness.environment import Environment
from e2e.harness.kube import is_ready
from e2e.harness.pulumi import PulumiStack
from e2e.harness.watcher import Watcher

NAMESPACE = "kiam"
PDB_REFUSAL = "Cannot evict pod as it would violate the pod's disruption budget"


def wait_for(
    env: Environment,
    what: str,
    predicate: Callable[[list[dict[str, Any]]], bool],
    deadline: float = 120,
) -> None:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if predicate(env.pods(NAMESPACE, "server")):
            return
        time.sleep(0.5)
    raise AssertionError(f"not within {deadline} s: {what}\n{env.placement(NAMESPACE)}")


def drain(env: Environment, node: str, timeout: str = "60s") -> tuple[int, str]:
    done = env.kube.kubectl(
        "drain",
        node,
        "--ignore-daemonsets",
        "--delete-emptydir-data",
        f"--timeout={timeout}",
        check=False,
    )
    return done.returncode, done.stdout + done.stderr


def test_a_drained_server_waits_and_a_second_drain_is_refused_until_the_first_node_returns(
    env: Environment, installed_dev: PulumiStack
) -> None:
    first, second = env.dedicated_nodes()
    watcher = Watcher(env.kube, NAMESPACE, "kiam-server")
    with watcher.running():
        code, output = drain(env, first)
        assert code == 0, output
        wait_for(
            env,
            "the evicted server's successor Pending",
            lambda pods: any(not p["spec"].get("nodeName") for p in pods),
        )
        pending = next(p for p in env.pods(NAMESPACE, "server") if not p["spec"].get("nodeName"))
        scheduled = next(c for c in pending["status"]["conditions"] if c["type"] == "PodScheduled")
        assert scheduled["reason"] == "Unschedulable"

        code, output = drain(env, second, timeout="15s")
        assert code != 0 and PDB_REFUSAL in output, output
        assert sum(map(is_ready, env.pods(NAMESPACE, "server"))) == 1  # the second kept serving

        env.kube.kubectl("uncordon", first)
        wait_for(env, "both servers Ready", lambda pods: sum(map(is_ready, pods)) == 2)
        code, output = drain(env, second)  # now allowed: the budget has room again
        assert code == 0, output
        env.kube.kubectl("uncordon", second)
        wait_for(env, "both servers Ready again", lambda pods: sum(map(is_ready, pods)) == 2)
    assert not watcher.errors, watcher.errors
    # One server was out at a time, never both: the Service always had a ready endpoint.
    assert watcher.min_ready_servers() == 1
    assert watcher.zero_endpoint_times() == []
    assert sorted(p["spec"]["nodeName"] for p in env.pods(NAMESPACE, "server")) == [first, second]

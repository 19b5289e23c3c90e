"""What EKS does before it terminates a managed node, for the stand-in's Nodes: drain it.

EKS user guide, "Delete a managed node group" (and scale-in, which terminates nodes the same
way): "Before each instance is terminated, Amazon EKS sends a signal to drain that node ... If the
node hasn't been drained after 5 minutes, Amazon EKS lets Auto Scaling continue the forced
termination of the instance." A drain cordons the node and evicts its pods through the eviction
API, so a PodDisruptionBudget holds an eviction back; DaemonSet pods are left (they would come
straight back).

The stand-in's Nodes carry `FINALIZER`, so a Node Pulumi deletes stays, marked for deletion,
until this drainer has cordoned it, evicted its pods (retrying those a budget holds back) and
then removed the finalizer, or until `DRAIN_LIMIT_SECONDS` have passed, when it is removed
regardless, as EKS terminates regardless. Without a drainer running, such a Node never goes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from e2e.harness.kube import ApiError, Kube
from e2e.standins.nodes import DRAIN_FINALIZER as FINALIZER
from kiam_eks.contracts.eks_node_group import DRAIN_BEFORE_TERMINATION_SECONDS

# EKS forces a termination 5 minutes after it asked for the drain.
DRAIN_LIMIT_SECONDS = float(DRAIN_BEFORE_TERMINATION_SECONDS)
RETRY_SECONDS = 0.5


class Drainer:
    """Drains every Node marked for deletion that carries `FINALIZER`, as long as it runs."""

    def __init__(self, kube: Kube, limit_seconds: float = DRAIN_LIMIT_SECONDS) -> None:
        self.kube = kube
        self.limit_seconds = limit_seconds
        self.drained: list[tuple[str, float, bool]] = []
        """(node, seconds the drain took, whether every pod left before the limit)."""
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._started: dict[str, float] = {}

    @contextmanager
    def running(self) -> Iterator[Drainer]:
        self._thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                for node in self.kube.items("/api/v1/nodes"):
                    meta = node["metadata"]
                    if meta.get("deletionTimestamp") and FINALIZER in meta.get("finalizers", []):
                        self._drain_step(node)
            except Exception as error:  # recorded, and the next round tries again
                self.errors.append(f"{time.monotonic():.1f}: {error}")
            self._stop.wait(RETRY_SECONDS)

    def _drain_step(self, node: dict[str, Any]) -> None:
        """One round for one node: cordon, try to evict what is left, release it when empty or
        when the limit has passed."""
        name = node["metadata"]["name"]
        started = self._started.setdefault(name, time.monotonic())
        if not node["spec"].get("unschedulable"):
            self.kube.request(
                "PATCH",
                f"/api/v1/nodes/{name}",
                {"spec": {"unschedulable": True}},
                content_type="application/strategic-merge-patch+json",
            )
        left = [p for p in self._pods_on(name) if not _owned_by_daemon_set(p)]
        for pod in left:
            self._evict(pod)
        elapsed = time.monotonic() - started
        if not left or elapsed >= self.limit_seconds:
            meta = node["metadata"]
            finalizers = [f for f in meta.get("finalizers", []) if f != FINALIZER]
            try:
                self.kube.request(
                    "PATCH",
                    f"/api/v1/nodes/{name}",
                    # The version read: a Node changed since is released in the next round.
                    {
                        "metadata": {
                            "finalizers": finalizers,
                            "resourceVersion": meta["resourceVersion"],
                        }
                    },
                    content_type="application/merge-patch+json",
                )
            except ApiError as error:
                if error.status != 409:
                    raise
                return
            self.drained.append((name, elapsed, not left))

    def _pods_on(self, node: str) -> list[dict[str, Any]]:
        pods = self.kube.items(f"/api/v1/pods?fieldSelector=spec.nodeName={node}")
        return [p for p in pods if not p["metadata"].get("deletionTimestamp")]

    def _evict(self, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        body = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
        }
        try:
            self.kube.request(
                "POST", f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/eviction", body
            )
        except ApiError as error:
            # 429: a PodDisruptionBudget holds the eviction back; try again next round.
            # 404: the pod is gone already.
            if error.status not in (404, 429):
                raise


def _owned_by_daemon_set(pod: dict[str, Any]) -> bool:
    return any(o.get("kind") == "DaemonSet" for o in pod["metadata"].get("ownerReferences", []))

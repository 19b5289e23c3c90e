"""Watches the cluster while it changes, two ways at once:

- every half second, a sample of the server pods and where they are, the Service's ready
  endpoints, the nodes, and the agents on each node;
- every change the API server reports for the namespace's pods and the Service's EndpointSlices
  (a watch), in the API server's own order, so a dip shorter than half a second (kwok starts a
  pod in milliseconds) is still seen.

The assertions read both: a sample and an event are each a `Sample` of the timeline."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from contracts.labels import selector_labels
from e2e.harness.kube import Kube, is_ready, selector

PERIOD_SECONDS = 0.5


@dataclass(frozen=True)
class Sample:
    """The cluster at one moment (`t`: seconds since the watcher started)."""

    t: float
    servers: dict[str, tuple[str, bool]]
    """Server pod name -> (node, Ready)."""
    ready_endpoints: int
    """Ready endpoints behind the Service the agents dial."""
    nodes: frozenset[str]
    agents: dict[str, list[bool]]
    """Node -> the Ready state of each agent pod on it."""
    server_images: frozenset[str] = frozenset()
    """Every image a server pod runs."""
    agent_images: frozenset[str] = frozenset()
    """Every image an agent pod runs."""

    @property
    def ready_servers(self) -> int:
        return sum(ready for _, ready in self.servers.values())

    def ready_servers_on(self, nodes: set[str]) -> int:
        return sum(ready for node, ready in self.servers.values() if node in nodes)

    def servers_on(self, nodes: set[str]) -> int:
        return sum(node in nodes for node, _ in self.servers.values())


@dataclass
class Watcher:
    """Samples in a background thread until stopped; `samples` is the timeline."""

    kube: Kube
    namespace: str
    service: str
    server_labels: dict[str, str] = field(default_factory=lambda: selector_labels("server"))
    agent_labels: dict[str, str] = field(default_factory=lambda: selector_labels("agent"))
    samples: list[Sample] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    events: list[Sample] = field(default_factory=list)
    """The state after each watched change."""

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._run, daemon=True),
            threading.Thread(target=self._stream, args=("pods",), daemon=True),
            threading.Thread(target=self._stream, args=("slices",), daemon=True),
        ]
        self._start = time.monotonic()
        self._lock = threading.Lock()
        self._pods: dict[str, dict[str, Any]] = {}
        self._slices: dict[str, dict[str, Any]] = {}
        self._listed: set[str] = set()

    def now(self) -> float:
        return time.monotonic() - self._start

    def _run(self) -> None:
        while not self._stop.is_set():
            began = time.monotonic()
            try:
                self.samples.append(self.sample())
            except Exception as error:  # a failed sample is recorded, never silently skipped
                self.errors.append(f"{self.now():.1f}s: {error}")
            self._stop.wait(max(0.0, PERIOD_SECONDS - (time.monotonic() - began)))

    def sample(self) -> Sample:
        t = self.now()
        ns = self.namespace
        servers = self.kube.items(
            f"/api/v1/namespaces/{ns}/pods?labelSelector={selector(self.server_labels)}"
        )
        agents = self.kube.items(
            f"/api/v1/namespaces/{ns}/pods?labelSelector={selector(self.agent_labels)}"
        )
        slices = self.kube.items(
            f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices"
            f"?labelSelector=kubernetes.io/service-name={self.service}"
        )
        nodes = self.kube.items("/api/v1/nodes")
        by_node: dict[str, list[bool]] = {}
        for pod in agents:
            node = pod["spec"].get("nodeName")
            if node:
                by_node.setdefault(node, []).append(is_ready(pod))
        return Sample(
            t=t,
            servers={
                p["metadata"]["name"]: (p["spec"].get("nodeName") or "", is_ready(p))
                for p in servers
            },
            ready_endpoints=_ready_endpoints(slices),
            nodes=frozenset(n["metadata"]["name"] for n in nodes),
            agents=by_node,
            server_images=_images(servers),
            agent_images=_images(agents),
        )

    def _stream(self, what: str) -> None:
        ns = self.namespace
        path = (
            f"/api/v1/namespaces/{ns}/pods"
            if what == "pods"
            else f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices"
            f"?labelSelector=kubernetes.io/service-name={self.service}"
        )
        store = self._pods if what == "pods" else self._slices
        try:
            for kind, obj in self.kube.watch(path, self._stop):
                with self._lock:
                    if kind == "LISTED":
                        self._listed.add(what)
                    elif kind == "DELETED":
                        store.pop(obj["metadata"]["name"], None)
                    else:
                        store[obj["metadata"]["name"]] = obj
                    # Half-listed states are not states the cluster was in: record from the
                    # moment both watches hold the whole collection.
                    if self._listed == {"pods", "slices"}:
                        self.events.append(self._state(self.now()))
        except Exception as error:
            if not self._stop.is_set():
                self.errors.append(f"{self.now():.1f}s: {what} watch: {error}")

    def _state(self, t: float) -> Sample:
        pods = list(self._pods.values())
        servers = [p for p in pods if _labelled(p, self.server_labels)]
        agents = [p for p in pods if _labelled(p, self.agent_labels)]
        by_node: dict[str, list[bool]] = {}
        for pod in agents:
            if pod["spec"].get("nodeName"):
                by_node.setdefault(pod["spec"]["nodeName"], []).append(is_ready(pod))
        return Sample(
            t=t,
            servers={
                p["metadata"]["name"]: (p["spec"].get("nodeName") or "", is_ready(p))
                for p in servers
            },
            ready_endpoints=_ready_endpoints(list(self._slices.values())),
            nodes=self.samples[-1].nodes if self.samples else frozenset(),
            agents=by_node,
            server_images=_images(servers),
            agent_images=_images(agents),
        )

    @property
    def timeline(self) -> list[Sample]:
        """Samples and watched changes together, in time order."""
        return sorted([*self.samples, *self.events], key=lambda s: s.t)

    @contextmanager
    def running(self) -> Iterator[Watcher]:
        for thread in self._threads:
            thread.start()
        # The watches list first: the timeline starts from the state before anything changes.
        deadline = time.monotonic() + 10
        while len(self.events) < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        try:
            yield self
        finally:
            self._stop.set()
            for thread in self._threads:
                thread.join(timeout=15)

    # --- what the scenarios assert ------------------------------------------------------------

    def first(self, condition: str, predicate: Callable[[Sample], bool]) -> Sample:
        """The first sample for which `predicate` holds (fails with `condition` if none does)."""
        for s in self.samples:
            if predicate(s):
                return s
        raise AssertionError(f"never observed: {condition}")

    def min_ready_servers(self, after: float = 0.0) -> int:
        return min(s.ready_servers for s in self.timeline if s.t >= after)

    def zero_endpoint_times(self) -> list[float]:
        return [s.t for s in self.timeline if s.ready_endpoints == 0]

    def nodes_with_two_agents(self) -> list[tuple[float, str]]:
        return [(s.t, n) for s in self.timeline for n, pods in s.agents.items() if len(pods) > 1]

    def worst_agent_gap(self, nodes: set[str]) -> tuple[float, str]:
        """The longest time any of `nodes` went without a Ready agent, and which node."""
        worst, where = 0.0, ""
        for node in sorted(nodes):
            gap_start: float | None = None
            for s in self.timeline:
                ready = any(s.agents.get(node, []))
                if not ready and gap_start is None:
                    gap_start = s.t
                elif ready and gap_start is not None:
                    if s.t - gap_start > worst:
                        worst, where = s.t - gap_start, node
                    gap_start = None
            end = self.timeline[-1].t if self.timeline else 0.0
            if gap_start is not None and end - gap_start > worst:
                worst, where = end - gap_start, node
        return worst, where


def _images(pods: list[dict[str, Any]]) -> frozenset[str]:
    return frozenset(c["image"] for p in pods for c in p["spec"]["containers"])


def _ready_endpoints(slices: list[dict[str, Any]]) -> int:
    return sum(
        1
        for s in slices
        for e in s.get("endpoints") or []
        if (e.get("conditions") or {}).get("ready")
    )


def _labelled(obj: dict[str, Any], labels: dict[str, str]) -> bool:
    have = obj["metadata"].get("labels") or {}
    return all(have.get(k) == v for k, v in labels.items())

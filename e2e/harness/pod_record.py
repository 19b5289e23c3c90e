"""A record of kiam's pods and agent DaemonSet in one namespace, in the API server's order of
changes: what the watched rollout scenarios (the retirement, the agent rollouts at scale) judge
moment by moment, never by sampling."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from e2e.harness.kube import Kube, is_ready
from kiam_eks.contracts import names
from kiam_eks.contracts.labels import selector_labels


@dataclass(frozen=True)
class Pod:
    name: str
    role: str
    node: str
    args: tuple[str, ...]
    ready: bool
    stopping: bool


@dataclass(frozen=True)
class Moment:
    """The namespace's kiam pods and the agent DaemonSet right after one watched change."""

    t: float
    what: str
    """`<kind> <event> <name>` of the change."""
    pods: tuple[Pod, ...]
    daemon_set_deleting: bool

    def agents(self) -> list[Pod]:
        return [p for p in self.pods if p.role == "agent"]

    def without_agent(self, nodes: set[str]) -> int:
        """How many of `nodes` have no Ready agent that is not stopping: nodes whose pods the
        metadata address refuses at this moment."""
        serving = {p.node for p in self.agents() if p.ready and not p.stopping}
        return len(nodes - serving)


@dataclass
class Recorder:
    """Watches the namespace's pods and DaemonSets; `moments` is the timeline."""

    kube: Kube
    namespace: str
    moments: list[Moment] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._pods: dict[str, Pod] = {}
        self._deleting = False
        self._listed: set[str] = set()
        self._start = time.monotonic()

    @contextmanager
    def running(self) -> Iterator[Recorder]:
        threads = [
            threading.Thread(target=self._watch, args=(kind,), daemon=True)
            for kind in ("pods", "daemonsets")
        ]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 30
        while self._listed != {"pods", "daemonsets"} and time.monotonic() < deadline:
            time.sleep(0.05)
        assert self._listed == {"pods", "daemonsets"}, f"watches never listed: {self.errors}"
        try:
            yield self
        finally:
            self._stop.set()
            for thread in threads:
                thread.join(timeout=15)

    def _watch(self, kind: str) -> None:
        base = "/api/v1" if kind == "pods" else "/apis/apps/v1"
        try:
            for event, obj in self.kube.watch(
                f"{base}/namespaces/{self.namespace}/{kind}", self._stop
            ):
                with self._lock:
                    if event == "LISTED":
                        self._listed.add(kind)
                        continue
                    name = obj["metadata"]["name"]
                    if kind == "pods":
                        self._pod_event(event, obj)
                    elif name == names.AGENT_NAME and (
                        event == "DELETED" or obj["metadata"].get("deletionTimestamp")
                    ):
                        self._deleting = True
                    if self._listed != {"pods", "daemonsets"}:
                        continue  # a half-listed state is not one the cluster was in
                    self.moments.append(
                        Moment(
                            time.monotonic() - self._start,
                            f"{kind} {event} {name}",
                            tuple(sorted(self._pods.values(), key=lambda p: p.name)),
                            self._deleting,
                        )
                    )
        except Exception as error:
            if not self._stop.is_set():
                self.errors.append(f"{kind} watch: {error}")

    def _pod_event(self, event: str, obj: dict[str, Any]) -> None:
        name, labels = obj["metadata"]["name"], obj["metadata"].get("labels") or {}
        if event == "DELETED":
            self._pods.pop(name, None)
            return
        role = next(
            (
                r
                for r in ("server", "agent")
                if all(labels.get(k) == v for k, v in selector_labels(r).items())
            ),
            None,
        )
        if role is None:
            return
        self._pods[name] = Pod(
            name=name,
            role=role,
            node=obj["spec"].get("nodeName") or "",
            args=tuple(obj["spec"]["containers"][0].get("args") or []),
            ready=is_ready(obj),
            stopping=bool(obj["metadata"].get("deletionTimestamp")),
        )

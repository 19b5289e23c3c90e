"""What kiam agents leave in each node's iptables, for kwok nodes that have none: the stand-in for
the metadata DNAT rule (contracts/agent_rule.py, as kiam v4.2 writes and removes it).

kwok runs no container, so no agent ever touches a node's iptables. This model watches every pod
the API server reports and acts for each kiam agent among them (a container started as
`kiam agent`) as the agent would:

- once its pod runs, the agent appends its rule, unless its node holds that rule already
  (`AppendUnique`, with its `--host` and `--port` in the rule's text);
- once its pod is asked to stop (a deletion timestamp, or gone without one), an agent started
  with `--iptables-remove` removes its rule, and one started with `--no-iptables-remove` leaves
  it; the model counts the agent as stopped from that first moment, as its graceful stop begins;
- a node that is deleted takes its iptables with it.

Each change is kept with its time, so the credential judge (e2e/harness/kiam_chain.py) can ask
which rule a pod's metadata request met first on its node at any moment, and which agent listened
there.

It also keeps what a kubelet mounts: every version of every Secret, by the revision it was
written at, and the revision each pod was created at, so the judge knows which versions of its
certificate Secret a server may have loaded (the one current when it was created, and every one
since). kube-apiserver reports etcd's revision as `resourceVersion`, ordered here because this
control plane's own etcd backs it ("resourceVersion ... used by clients to determine when
objects have changed"; compared only for this etcd).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from e2e.harness.kube import Kube
from kiam_eks.contracts.agent_rule import AgentCommand, NodeRules, Rule, agent_command

# The interface a pod's packets arrive on at its node: the EKS VPC CNI names pod interfaces
# `eni` and a hash (amazon-vpc-cni-k8s: "eni" + 11 hex digits), which `--host-interface eni+`
# matches; the judge asks the rules for it.
POD_INTERFACE = "eni0a1b2c3d4e5"


def is_agent(pod: dict[str, Any]) -> AgentCommand | None:
    """The command of a kiam agent pod (the first container started as `kiam agent`), else None."""
    for container in pod["spec"].get("containers") or []:
        args = [str(a) for a in container.get("args") or []]
        command = [str(c) for c in container.get("command") or []]
        words = [*command[1:], *args] if command[:1] == ["/kiam"] else args
        if words[:1] == ["agent"]:
            return agent_command(words)
    return None


@dataclass
class NodeRulesModel:
    """Watches pods and nodes; `rules_at(node, t)` is the rules a node held at time `t` (the
    model's own clock, `now()`)."""

    kube: Kube
    errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._start = time.monotonic()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._rules: dict[str, NodeRules] = {}
        self._history: dict[str, list[tuple[float, tuple[Rule, ...]]]] = {}
        self._running: dict[str, tuple[str, str, AgentCommand]] = {}
        """Agent pod UID -> (node, host, command) for the agents started and not yet stopped."""
        self._stopped: set[str] = set()
        self._listed = threading.Event()
        self._created: dict[str, int] = {}
        """Pod UID -> the revision it was first seen at (its creation, for pods created since)."""
        self._secrets: dict[tuple[str, str], list[tuple[int, dict[str, str]]]] = {}
        self._threads = [
            threading.Thread(target=self._watch, args=("/api/v1/pods", self._pod), daemon=True),
            threading.Thread(target=self._watch, args=("/api/v1/nodes", self._node), daemon=True),
            threading.Thread(
                target=self._watch, args=("/api/v1/secrets", self._secret), daemon=True
            ),
        ]

    def now(self) -> float:
        return time.monotonic() - self._start

    @contextmanager
    def running(self) -> Iterator[NodeRulesModel]:
        for thread in self._threads:
            thread.start()
        self._listed.wait(timeout=30)
        try:
            yield self
        finally:
            self._stop.set()
            for thread in self._threads:
                thread.join(timeout=15)

    def rules_at(self, node: str, t: float | None = None) -> tuple[Rule, ...]:
        with self._lock:
            history = self._history.get(node, [])
            if t is None:
                return history[-1][1] if history else ()
            held: tuple[Rule, ...] = ()
            for when, rules in history:
                if when > t:
                    break
                held = rules
            return held

    def destination(self, node: str, t: float | None = None) -> Rule | None:
        """The rule a pod's metadata request meets first on `node` (None: the node's own
        metadata service answers)."""
        return NodeRules(list(self.rules_at(node, t))).destination(POD_INTERFACE)

    def snapshot(self) -> dict[str, tuple[Rule, ...]]:
        with self._lock:
            return {node: h[-1][1] for node, h in self._history.items() if h}

    def created_at(self, uid: str) -> int | None:
        with self._lock:
            return self._created.get(uid)

    def secret_versions(self, namespace: str, name: str) -> list[tuple[int, dict[str, str]]]:
        """Every version of a Secret seen, oldest first: (revision, data); data `{}` once gone."""
        with self._lock:
            return list(self._secrets.get((namespace, name), []))

    def _secret(self, kind: str, secret: dict[str, Any]) -> None:
        meta = secret["metadata"]
        key = (meta["namespace"], meta["name"])
        data = {} if kind == "DELETED" else dict(secret.get("data") or {})
        self._secrets.setdefault(key, []).append((int(meta["resourceVersion"]), data))

    # --- what an agent does --------------------------------------------------------------------

    def _record(self, node: str) -> None:
        rules = self._rules.get(node)
        self._history.setdefault(node, []).append(
            (self.now(), tuple(rules.rules) if rules is not None else ())
        )

    def _pod(self, kind: str, pod: dict[str, Any]) -> None:
        uid = pod["metadata"]["uid"]
        self._created.setdefault(uid, int(pod["metadata"]["resourceVersion"]))
        command = is_agent(pod)
        if command is None:
            return
        node = pod["spec"].get("nodeName")
        status = pod.get("status") or {}
        stopping = kind == "DELETED" or bool(pod["metadata"].get("deletionTimestamp"))
        if uid in self._running and stopping:
            node, host, started = self._running.pop(uid)
            self._stopped.add(uid)
            if node in self._rules:
                self._rules[node].agent_stopped(started, host)
                self._record(node)
            return
        if (
            not stopping
            and uid not in self._running
            and uid not in self._stopped
            and node
            and status.get("phase") == "Running"
        ):
            host = status.get("hostIP") or status.get("podIP") or node
            self._running[uid] = (node, host, command)
            self._rules.setdefault(node, NodeRules()).agent_started(command, host)
            self._record(node)

    def _node(self, kind: str, node: dict[str, Any]) -> None:
        if kind == "DELETED":
            name = node["metadata"]["name"]
            self._rules.pop(name, None)
            self._record(name)

    def _watch(self, path: str, handle: Any) -> None:
        try:
            for kind, obj in self.kube.watch(path, self._stop):
                if kind == "LISTED":
                    if path.endswith("pods"):
                        self._listed.set()
                    continue
                with self._lock:
                    handle(kind, obj)
        except Exception as error:
            if not self._stop.is_set():
                self.errors.append(f"{self.now():.1f}s: {path} watch: {error}")

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
from typing import Any, TypeVar

from e2e.harness.kiam_chain import ChainState, KiamChain
from e2e.harness.kube import Kube, is_ready, selector
from e2e.standins import pod_identity
from kiam_eks.contracts import credential_env
from kiam_eks.contracts.kiam import permits, resolve
from kiam_eks.contracts.labels import PERMITTED_ANNOTATION, ROLE_ANNOTATION, selector_labels
from kiam_eks.contracts.pod_identity import AGENT_ADDON
from kiam_eks.settings.applications import ServedBy

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


# --- where each application pod gets its credentials --------------------------------------------


@dataclass(frozen=True)
class Application:
    """What the credential judge needs of one application: its pods (by the harness's label), its
    role, and kiam's role base ARN (to resolve the pods' kiam annotation)."""

    app: str
    namespace: str
    role_arn: str
    role_base_arn: str


@dataclass(frozen=True)
class Credentials:
    """One pod's credential source, as an SDK in it would find it, and whether it works."""

    source: str
    """`irsa`, `podIdentity`, `kiam` or `none`: the first the SDK's chain finds configured."""
    works: bool
    why: str


@dataclass(frozen=True)
class CredentialSample:
    """Every application pod's credentials at one moment."""

    t: float
    pods: dict[str, Credentials]
    """`<app>/<pod>` -> its credentials."""


def credentials(
    pod: dict[str, Any],
    app: Application,
    permitted: str,
    associations: dict[tuple[str, str], dict[str, Any]],
    agent_running: bool,
    states: frozenset[ServedBy],
    kiam: ChainState,
) -> Credentials:
    """Where the SDK in `pod` gets credentials, given the live cluster and the states the
    application's IAM trust is in (`states`: the role's trust is IAM, which the stand-ins do not
    create, so during a `pulumi up` it is either state's).

    The chain (contracts/credential_env.py): web identity (IRSA) first, then container
    credentials (Pod Identity), then the instance metadata API, which kiam intercepts. An SDK
    whose configured step fails does not fall back to a later one. A kiam pod is served only
    while its request reaches a Ready agent on its node that reaches a Ready server
    (e2e/harness/kiam_chain.py), and the server admits its role."""
    containers = pod["spec"]["containers"]
    env = {e["name"]: e.get("value", "") for c in containers for e in c.get("env") or []}
    if credential_env.has_web_identity(env):
        if env[credential_env.ROLE_ARN] != app.role_arn:
            return Credentials("irsa", False, f"web identity for {env[credential_env.ROLE_ARN]}")
        if not any(state.irsa for state in states):
            return Credentials("irsa", False, "the role does not trust the service account")
        return Credentials("irsa", True, "web identity, trusted")
    if credential_env.has_pod_identity(env):
        account = pod["spec"].get("serviceAccountName") or "default"
        association = associations.get((pod["metadata"]["namespace"], account))
        if association is None:
            return Credentials("podIdentity", False, f"no association for {account}")
        # With a target role EKS hands out the target's credentials (pod-id-assign-target-role).
        handed = association.get("targetRoleArn") or association["roleArn"]
        if handed != app.role_arn:
            return Credentials("podIdentity", False, f"associated to {handed}")
        if not agent_running:
            return Credentials("podIdentity", False, f"no {AGENT_ADDON}")
        return Credentials("podIdentity", True, f"associated to {handed}")
    annotation = (pod["metadata"].get("annotations") or {}).get(ROLE_ANNOTATION)
    if annotation:
        arn = resolve(annotation, app.role_base_arn)
        if arn != app.role_arn:
            return Credentials("kiam", False, f"annotated for {arn}")
        if not permits(permitted, arn):
            return Credentials("kiam", False, "its namespace does not permit the role")
        chain = kiam.serves(pod)
        if not chain.works:
            return Credentials("kiam", False, chain.why)
        return Credentials("kiam", True, f"permitted by its namespace; {chain.why}")
    return Credentials("none", False, "no wiring and no kiam annotation")


@dataclass
class WatchedChange:
    """What a `CredentialWatcher` saw of every application pod while one change applied."""

    label: str
    without_source: dict[str, list[tuple[float, str, str]]] = field(default_factory=dict)
    """Pod -> every (time, source, why) it had no working credential source."""
    sources: dict[str, set[str]] = field(default_factory=dict)
    """Pod -> every working source it was seen with."""
    samples: int = 0
    errors: list[str] = field(default_factory=list)


Change = TypeVar("Change", bound=WatchedChange)


@dataclass
class CredentialWatcher:
    """Samples every application pod's credentials in a background thread, and after every change
    the API server reports for the application namespaces' pods and for the association
    stand-ins: a window shorter than a sample is still seen."""

    kube: Kube
    applications: list[Application]
    states: dict[str, frozenset[ServedBy]]
    """Application -> the states its trust is in while this watcher runs."""
    chain: KiamChain
    """Asks whether kiam's agents and servers can serve a pod at this moment."""
    samples: list[CredentialSample] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._start = time.monotonic()
        namespaces = sorted({a.namespace for a in self.applications})
        self._threads = [threading.Thread(target=self._run, daemon=True)] + [
            threading.Thread(target=self._stream, args=(path,), daemon=True)
            for path in [
                *(f"/api/v1/namespaces/{n}/pods" for n in namespaces),
                # kiam's own pods and the Service's endpoints: an agent or server that stops.
                f"/api/v1/namespaces/{self.chain.namespace}/pods",
                f"/apis/discovery.k8s.io/v1/namespaces/{self.chain.namespace}/endpointslices",
                f"/api/v1/namespaces/{pod_identity.NAMESPACE}/configmaps"
                f"?labelSelector={pod_identity.ASSOCIATION_SELECTOR}",
            ]
        ]
        self._listed = 0

    def now(self) -> float:
        return time.monotonic() - self._start

    def sample(self) -> CredentialSample:
        t = self.now()
        associations = pod_identity.associations(self.kube)
        agent_running = pod_identity.agent_in_cluster(self.kube)
        kiam = self.chain.state()
        pods: dict[str, Credentials] = {}
        for app in self.applications:
            namespace = self.kube.get(f"/api/v1/namespaces/{app.namespace}")
            permitted = (namespace["metadata"].get("annotations") or {}).get(
                PERMITTED_ANNOTATION, ""
            )
            for pod in self.kube.items(
                f"/api/v1/namespaces/{app.namespace}/pods?labelSelector=kiam.e2e/app={app.app}"
            ):
                if pod["metadata"].get("deletionTimestamp"):
                    continue  # going: its SDK is no longer asked
                if (pod.get("status") or {}).get("phase") != "Running":
                    continue  # not started: nothing in it asks yet
                pods[f"{app.app}/{pod['metadata']['name']}"] = credentials(
                    pod, app, permitted, associations, agent_running, self.states[app.app], kiam
                )
        return CredentialSample(t=t, pods=pods)

    def _record(self) -> None:
        try:
            self.samples.append(self.sample())
        except Exception as error:  # a failed sample is recorded, never silently skipped
            self.errors.append(f"{self.now():.1f}s: {error}")

    def _run(self) -> None:
        while not self._stop.is_set():
            began = time.monotonic()
            self._record()
            self._stop.wait(max(0.0, PERIOD_SECONDS - (time.monotonic() - began)))

    def _stream(self, path: str) -> None:
        try:
            for kind, _ in self.kube.watch(path, self._stop):
                if kind == "LISTED":
                    self._listed += 1
                elif self._listed >= len(self._threads) - 1:
                    # Read the whole picture right after the change.
                    self._record()
        except Exception as error:
            if not self._stop.is_set():
                self.errors.append(f"{self.now():.1f}s: {path} watch: {error}")

    @contextmanager
    def running(self) -> Iterator[CredentialWatcher]:
        for thread in self._threads:
            thread.start()
        deadline = time.monotonic() + 10
        while (self._listed < len(self._threads) - 1 or not self.samples) and (
            time.monotonic() < deadline
        ):
            time.sleep(0.05)
        try:
            yield self
        finally:
            self._stop.set()
            for thread in self._threads:
                thread.join(timeout=15)
            self._record()

    @contextmanager
    def watching(self, change: Change) -> Iterator[Change]:
        """Watch while the block applies a change; `change` holds what was seen once it ends."""
        with self.running():
            yield change
        change.without_source = self.without_source()
        change.sources = self.sources()
        change.samples = len(self.samples)
        change.errors = self.errors

    def without_source(self) -> dict[str, list[tuple[float, str, str]]]:
        """Pod -> every (time, source, why) it had no working credential source."""
        found: dict[str, list[tuple[float, str, str]]] = {}
        for s in sorted(self.samples, key=lambda s: s.t):
            for pod, c in s.pods.items():
                if not c.works:
                    found.setdefault(pod, []).append((s.t, c.source, c.why))
        return found

    def sources(self) -> dict[str, set[str]]:
        """Pod -> every working source it was seen with."""
        seen: dict[str, set[str]] = {}
        for s in self.samples:
            for pod, c in s.pods.items():
                if c.works:
                    seen.setdefault(pod, set()).add(c.source)
        return seen

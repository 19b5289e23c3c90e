"""Adopting a running kiam for real (docs/migration.md): the upstream manifests' install and the Helm
chart's, created with kubectl before the program runs, moved onto the program through the three
phases and back through each phase's rollback, as the runbook has an operator do it, through the
real CLI, while a watcher follows the cluster the whole time.

Every half second and on every change the API server reports, the watcher records, for every
non-dedicated node, the agent pods on it and whether they are Ready, and the ready endpoints behind
the Service the agents dial. Over the whole move, rollbacks included:

- the Service never has zero ready endpoints;
- no node ever has two agents (a terminating one counts: it still holds the metadata rule);
- no node is without a Ready agent for longer than one agent rollout step: the old pod's
  `terminationGracePeriodSeconds` to stop, plus the new pod's `readinessProbe.initialDelaySeconds`
  and one `periodSeconds` to pass its first probe (the DaemonSet replaces one node at a time, so a
  node waits for nothing else), read from the program's live DaemonSet.

Per phase: `pulumi preview` shows what the runbook says (golden files `e2e/golden/adoption-*`),
`pulumi up` succeeds, what the install had is taken over in place where Kubernetes allows it (its
ServiceAccounts and Service keep their UIDs; the agent DaemonSet is replaced by one of the same name
and selector that adopts its pods), and the old server DaemonSet goes only in phase 1's own step.
"""

from __future__ import annotations

import base64
import functools
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509

from e2e.harness.environment import Environment, write_stack_file
from e2e.harness.golden import check_golden, normalise
from e2e.harness.kube import Kube, is_ready, selector
from e2e.harness.pulumi import PulumiStack, Result, type_and_name
from e2e.harness.running_install import (
    AGENT_DAEMON_SET,
    INSTALLS,
    SERVER_DAEMON_SET,
    SERVICE,
    WORKER_LABEL,
    RunningInstall,
    running_install,
)
from e2e.harness.shape import shape_of
from e2e.harness.watcher import Watcher
from e2e.tests.conftest import REPORT, changes, fresh_environment
from kiam_eks.contracts import tokens
from kiam_eks.contracts.labels import selector_labels
from kiam_eks.settings.loader import settings_from_values

NS = "kube-system"
STACK = "adopt"
PHASES = ("servers", "takeover", "complete")
DS = "kubernetes:apps/v1:DaemonSet"


# What an update in a preview changes: its detailed-diff paths, the annotations before and after.
Diff = tuple[list[str], dict[str, str], dict[str, str]]


@dataclass
class Step:
    """One watched step of the move, on the watcher's clock."""

    name: str
    began: float
    ended: float


@dataclass
class Move:
    """What happened while one running install was moved onto the program, and back, and on."""

    install: RunningInstall
    env: Environment
    stack: PulumiStack
    watcher: Watcher
    steps: list[Step] = field(default_factory=list)
    previews: dict[str, str] = field(default_factory=dict)
    preview_steps: dict[str, dict[tuple[str, str], str]] = field(default_factory=dict)
    preview_diffs: dict[str, dict[tuple[str, str], Diff]] = field(default_factory=dict)
    """For each update a preview shows: the paths it changes, the annotations before and after."""
    results: dict[str, Result] = field(default_factory=dict)
    seen: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Objects of kube-system (by `kind/name`) at named moments."""
    agent_nodes: set[str] = field(default_factory=set)
    step_bound: float = 0.0
    state_after_rollback: list[dict[str, Any]] | None = None
    """The stack's resources right after phase 1's rollback (`pulumi destroy`)."""

    def obj(self, moment: str, kind: str, name: str) -> dict[str, Any] | None:
        found: dict[str, Any] | None = self.seen[moment].get(f"{kind}/{name}")
        return found


PATHS = {
    "ServiceAccount": "/api/v1/namespaces/{ns}/serviceaccounts",
    "Service": "/api/v1/namespaces/{ns}/services",
    "Secret": "/api/v1/namespaces/{ns}/secrets",
    "DaemonSet": "/apis/apps/v1/namespaces/{ns}/daemonsets",
    "Deployment": "/apis/apps/v1/namespaces/{ns}/deployments",
    "Pod": "/api/v1/namespaces/{ns}/pods",
    "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
}


def inventory(kube: Kube) -> dict[str, Any]:
    """Every object of the kinds an install has, in kube-system and cluster-wide for RBAC."""
    found = {}
    for kind, path in PATHS.items():
        for item in kube.items(path.format(ns=NS)):
            name = item["metadata"]["name"]
            if kind.startswith("Cluster") and not name.startswith("kiam"):
                continue
            found[f"{kind}/{name}"] = item
    return found


# Generous: on a loaded 2-core machine the control plane and kwok can take a while.
WAIT_SECONDS = 300


def wait_for(
    what: str,
    condition: Callable[[], bool],
    kube: Kube | None = None,
    timeout: float = WAIT_SECONDS,
) -> None:
    """Poll until `condition` holds; on a timeout, say where every pod of kube-system was."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if condition():
            return
        time.sleep(0.25)
    where = ""
    if kube is not None:
        where = "; pods: " + ", ".join(
            f"{p['metadata']['name']}@{p['spec'].get('nodeName') or '-'}"
            f"({(p.get('status') or {}).get('phase')}, ready={is_ready(p)})"
            for p in kube.items(f"/api/v1/namespaces/{NS}/pods")
        )
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}{where}")


def pods(kube: Kube, labels: dict[str, str]) -> list[dict[str, Any]]:
    return kube.items(f"/api/v1/namespaces/{NS}/pods?labelSelector={selector(labels)}")


def ready_on(kube: Kube, labels: dict[str, str], nodes: set[str]) -> bool:
    """Exactly one pod on each node, every one Ready and not terminating."""
    found = pods(kube, labels)
    return sorted(p["spec"].get("nodeName", "") for p in found) == sorted(nodes) and all(
        is_ready(p) for p in found
    )


def step_bound(daemon_set: dict[str, Any]) -> float:
    """One agent rollout step, from the DaemonSet's own settings (see the module docstring)."""
    spec = daemon_set["spec"]["template"]["spec"]
    probe = spec["containers"][0].get("readinessProbe") or {}
    return float(
        spec.get("terminationGracePeriodSeconds", 30)
        + probe.get("initialDelaySeconds", 0)
        + (probe.get("periodSeconds", 10) if probe else 0)
        + daemon_set["spec"].get("minReadySeconds", 0)
    )


def set_phase(move: Move, phase: str) -> None:
    """`pulumi config set --path 'kiam:adoption.phase' <phase>`, as the runbook says."""
    move.stack.run("config", "set", "--path", "kiam:adoption.phase", phase, "--stack", STACK)


def watched(move: Move, name: str, action: Callable[[], Result | None]) -> Any:
    began = move.watcher.now()
    try:
        return action()
    finally:
        move.steps.append(Step(name, began, move.watcher.now()))
        move.seen[name] = inventory(move.env.kube)


def preview(move: Move, phase: str, update: bool) -> None:
    """The phase's `pulumi preview`, kept as a golden file shared by both installs (Pulumi cannot
    tell which objects exist already, so their previews must not differ), and its steps with what
    each update changes."""
    text = without_installed(normalise(move.stack.preview("--parallel", "1").output))
    # The non-interactive display prints a step when it starts and when it ends, in an order
    # that follows which inputs resolve first: the golden file lists each step once, sorted.
    head: list[str] = []
    steps: set[str] = set()
    tail: list[str] = []
    for line in text.splitlines():
        if line.startswith("@ "):
            continue
        if line.startswith((" +  ", " ~  ", " -  ", "    pulumi:pulumi:Stack")):
            steps.add(line)
        else:
            (tail if steps else head).append(line)
    move.previews[phase] = "\n".join([*head, *sorted(steps), *tail]) + "\n"
    document = json.loads(move.stack.preview("--json").stdout)
    move.preview_steps[phase] = changes(json.dumps(document))
    move.preview_diffs[phase] = {
        type_and_name(s["urn"]): (
            sorted(s.get("detailedDiff") or {}),
            _annotations(s.get("oldState")),
            _annotations(s.get("newState")),
        )
        for s in document.get("steps") or []
        if s["op"] == "update"
    }
    name = f"adoption-{PHASES.index(phase) + 1}-{phase}.txt"
    # With --update-golden the first install writes the file; the second compares with it.
    check_golden(name, move.previews[phase], update and move.install.kind == INSTALLS[0])


def without_installed(text: str) -> str:
    """The preview without the `installed` output, which holds each install's own labels and CA
    fingerprint (the facts the next update judges its change from), where the two installs'
    previews otherwise agree."""
    out: list[str] = []
    skipping = ""
    for line in text.splitlines():
        if skipping:
            if line.startswith(skipping + "}"):
                skipping = ""
            continue
        stripped = line.lstrip()
        if stripped.startswith(("installed ", "+ installed ", "~ installed ")) and line.endswith(
            "{"
        ):
            # The block closes at the column its key starts at, after any diff marker.
            skipping = " " * line.index("installed")
            continue
        out.append(line)
    return "\n".join(out) + "\n"


def _annotations(state: dict[str, Any] | None) -> dict[str, str]:
    metadata = ((state or {}).get("inputs") or {}).get("metadata") or {}
    return dict(metadata.get("annotations") or {})


def replace_agents(move: Move) -> None:
    """The runbook's phase-2 step: the old agent DaemonSet goes, its pods stay, and they no
    longer claim to be of the template generation a new DaemonSet starts at."""
    kube, install = move.env.kube, move.install
    kube.kubectl("-n", NS, "delete", "daemonset", AGENT_DAEMON_SET, "--cascade=orphan")
    kube.kubectl(
        "-n", NS, "label", "pods", "-l", selector(install.agent_pod_labels),
        "pod-template-generation-",
    )  # fmt: skip


def roll_back_agents(move: Move) -> None:
    """The runbook's phase-2 rollback after `pulumi up` in phase servers: the old Service and agent
    DaemonSet exactly as they were, then the agents replaced one node at a time (both installs'
    DaemonSets are `OnDelete`)."""
    kube, install = move.env.kube, move.install
    install.replace(kube, "Service", SERVICE)
    install.replace(kube, "DaemonSet", AGENT_DAEMON_SET)
    labels = install.agent_pod_labels

    def replaced(node: str, old: str) -> bool:
        return any(
            p["metadata"]["name"] != old and p["spec"].get("nodeName") == node and is_ready(p)
            for p in pods(kube, labels)
        )

    for node in sorted(move.agent_nodes):
        (pod,) = [p for p in pods(kube, labels) if p["spec"].get("nodeName") == node]
        old = pod["metadata"]["name"]
        kube.kubectl("-n", NS, "delete", "pod", old, "--wait=false")
        wait_for(f"a new agent Ready on {node}", functools.partial(replaced, node, old), kube)
    wait_for("the old agents on every node", lambda: ready_on(kube, labels, move.agent_nodes), kube)


@pytest.fixture(scope="module", params=INSTALLS)
def move(bin_dir: Path, session_root: Path, request: pytest.FixtureRequest) -> Iterator[Move]:
    update = bool(request.config.getoption("--update-golden"))
    with fresh_environment(session_root, bin_dir, f"adoption-{request.param}") as env:
        kube = env.kube
        install = running_install(request.param)
        config = install.adoption_config()
        # The cluster as the running install found it: workers (labelled as the upstream agent
        # selects them), a tainted pool; then the install itself.
        with_ca = {
            **config,
            "kiam:adoption": {
                **config["kiam:adoption"],
                "caCertificate": install.ca_cert,
                "caPrivateKey": install.ca_key,
            },
        }
        settings = settings_from_values(
            {k.removeprefix("kiam:"): v for k, v in with_ca.items()}, "adoption"
        )
        shape = shape_of(settings)
        shape.apply(kube)
        workers = {n for n in shape.node_names if n.startswith("worker-")}
        for node in sorted(workers):
            kube.kubectl("label", "node", node, "=".join(WORKER_LABEL))
        install.install(kube)
        wait_for(
            "the running install's agents",
            lambda: ready_on(kube, install.agent_pod_labels, workers),
            kube,
        )
        wait_for("its servers", lambda: ready_on(kube, install.server_pod_labels, workers), kube)

        stack = env.stack(STACK)
        stack.create(write_stack_file(env.root / "stack-files" / f"Pulumi.{STACK}.yaml", config))
        install.set_ca(stack)
        watcher = Watcher(
            kube,
            NS,
            SERVICE,
            server_labels=install.server_pod_labels,
            agent_labels=install.agent_pod_labels,
        )
        m = Move(install, env, stack, watcher, agent_nodes=workers)
        m.seen["installed"] = inventory(kube)
        with watcher.running():
            run_the_move(m, update)
        assert not watcher.errors, watcher.errors
        REPORT.extend(summary(m))
        yield m


def remove_old_servers(m: Move) -> None:
    """The runbook's last step of phase 1: `kubectl delete ds kiam-server` (upstream and Helm)."""
    kube = m.env.kube
    kube.kubectl("-n", NS, "delete", "daemonset", SERVER_DAEMON_SET)
    wait_for("the old servers gone", lambda: not old_server_pods(m), kube)


def restore_old_servers(m: Move) -> None:
    """Phase 1's rollback, first step: the old server DaemonSet as it was, and its pods Ready."""
    m.install.recreate(m.env.kube, "DaemonSet", SERVER_DAEMON_SET)
    wait_for(
        "the old servers Ready",
        lambda: sum(is_ready(p) for p in old_server_pods(m)) == len(m.agent_nodes),
        m.env.kube,
    )


def old_server_pods(m: Move) -> list[dict[str, Any]]:
    """Server pods of the old DaemonSet (the new ones carry the same labels, and a pod template
    hash of their ReplicaSet)."""
    return [
        p
        for p in pods(m.env.kube, m.install.server_pod_labels)
        if "pod-template-hash" not in p["metadata"]["labels"]
    ]


def run_the_move(m: Move, update: bool) -> None:
    stack = m.stack

    # Phase 1, servers.
    preview(m, "servers", update)
    m.results["servers"] = watched(m, "servers", stack.up)
    watched(m, "old servers removed", lambda: remove_old_servers(m))
    # Rollback of phase 1: the old server DaemonSet back first, then `pulumi destroy`.
    watched(m, "rollback servers: old servers back", lambda: restore_old_servers(m))
    m.results["rollback servers"] = watched(m, "rollback servers", stack.destroy)
    m.state_after_rollback = stack.resources()
    # Phase 1 again, and the old servers' removal.
    m.results["servers again"] = watched(m, "servers again", stack.up)
    watched(m, "old servers removed again", lambda: remove_old_servers(m))

    # Phase 2, takeover. First as an operator who skipped the DaemonSet step: it must stop.
    set_phase(m, "takeover")
    preview(m, "takeover", update)
    m.results["takeover without orphaning"] = watched(
        m, "takeover without orphaning", lambda: stack.up(check=False)
    )
    watched(m, "old agent DaemonSet orphaned", lambda: replace_agents(m))
    m.results["takeover"] = watched(m, "takeover", stack.up)
    m.step_bound = step_bound(m.seen["takeover"][f"DaemonSet/{AGENT_DAEMON_SET}"])
    # Rollback of phase 2: back to phase servers (the stack lets go of what it took over,
    # keeping it), then the old Service and agents exactly as they were.
    set_phase(m, "servers")
    m.results["rollback takeover"] = watched(m, "rollback takeover", stack.up)
    watched(m, "rollback takeover: old agents back", lambda: roll_back_agents(m))
    # Phase 2 again.
    set_phase(m, "takeover")
    watched(m, "old agent DaemonSet orphaned again", lambda: replace_agents(m))
    m.results["takeover again"] = watched(m, "takeover again", stack.up)

    # Phase 3, complete; its rollback (back to takeover) and forward again.
    set_phase(m, "complete")
    preview(m, "complete", update)
    m.results["complete"] = watched(m, "complete", stack.up)
    set_phase(m, "takeover")
    m.results["rollback complete"] = watched(m, "rollback complete", stack.up)
    set_phase(m, "complete")
    m.results["complete again"] = watched(m, "complete again", stack.up)
    # Two phases back at once would delete the agents the stack owns since complete, with their
    # rule in place: refused before anything changes (transitions/).
    set_phase(m, "servers")
    m.results["back two phases (preview)"] = watched(
        m, "back two phases (preview)", lambda: stack.preview(check=False)
    )
    m.results["back two phases"] = watched(m, "back two phases", lambda: stack.up(check=False))
    set_phase(m, "complete")
    m.results["complete, after the refusal"] = watched(
        m, "complete, after the refusal", lambda: stack.up("--expect-no-changes")
    )
    # The runbook's clean-up of what the old install leaves.
    watched(m, "cleaned up", lambda: clean_up(m))


def clean_up(m: Move) -> None:
    kube = m.env.kube
    for secret in m.install.tls_secrets:
        kube.kubectl("-n", NS, "delete", "secret", secret)
    for name in ("kiam-read", "kiam-write"):
        kube.kubectl("delete", "clusterrolebinding", name)
        kube.kubectl("delete", "clusterrole", name)


def summary(m: Move) -> list[str]:
    w = m.watcher
    gap, node = w.worst_agent_gap(m.agent_nodes)
    timeline = w.timeline
    endpoints = [s.ready_endpoints for s in timeline]
    return [
        f"adoption ({m.install.kind}): {len(w.samples)} samples, {len(w.events)} watched changes "
        f"over {timeline[-1].t:.0f}s; ready endpoints min {min(endpoints)}, max {max(endpoints)}; "
        f"worst agent gap {gap:.2f}s on {node or '-'} (one rollout step: {m.step_bound:.0f}s); "
        + ", ".join(f"{s.name} {s.ended - s.began:.1f}s" for s in m.steps)
    ]


# --- the watcher, over the whole move --------------------------------------------------------


def test_the_service_never_has_zero_ready_endpoints(move: Move) -> None:
    assert len(move.watcher.samples) > 50
    assert move.watcher.zero_endpoint_times() == []


def test_no_node_ever_has_two_agents(move: Move) -> None:
    assert move.watcher.nodes_with_two_agents() == []


def test_no_node_is_without_a_ready_agent_longer_than_one_rollout_step(move: Move) -> None:
    assert move.step_bound == 45.0  # 30 s grace + 5 s initial delay + one 10 s period
    gap, node = move.watcher.worst_agent_gap(move.agent_nodes)
    assert gap < move.step_bound, (gap, node)


def test_agents_stay_on_the_same_nodes(move: Move) -> None:
    first, last = move.watcher.timeline[0], move.watcher.timeline[-1]
    assert set(first.agents) == set(last.agents) == move.agent_nodes


# --- each phase ------------------------------------------------------------------------------


def test_every_step_succeeds_but_the_one_the_runbook_warns_about(move: Move) -> None:
    failed = {name for name, result in move.results.items() if result.returncode != 0}
    assert failed == {
        "takeover without orphaning",
        "back two phases (preview)",
        "back two phases",
    }
    output = move.results["takeover without orphaning"].output
    assert "kiam-agent" in output and "Server-Side Apply field conflict" in output
    # ... and changed nothing of the old DaemonSet.
    ds = f"DaemonSet/{AGENT_DAEMON_SET}"
    before, after = move.seen["installed"][ds], move.seen["takeover without orphaning"][ds]
    assert after["metadata"]["uid"] == before["metadata"]["uid"]
    assert after["metadata"]["generation"] == before["metadata"]["generation"]
    assert after["spec"] == before["spec"]


BACK_TWO_PHASES = (
    "kiam:adoption.phase: complete back to servers would delete the agent DaemonSet the stack "
    "owns since complete (no longer kept on delete) without removing its iptables rule: one phase "
    "at a time, takeover first (docs/migration.md, Phase 3)"
)


def test_going_back_two_phases_is_refused_and_changes_nothing(move: Move) -> None:
    for name in ("back two phases (preview)", "back two phases"):
        output = move.results[name].output
        assert BACK_TWO_PHASES in output, output
        assert "Traceback" not in output
    ds = f"DaemonSet/{AGENT_DAEMON_SET}"
    before, after = move.seen["complete again"][ds], move.seen["back two phases"][ds]
    assert (after["metadata"]["uid"], after["metadata"]["generation"]) == (
        before["metadata"]["uid"],
        before["metadata"]["generation"],
    )


def test_the_previews_show_what_the_runbook_says(move: Move) -> None:
    assert move.preview_steps["servers"] == {
        ("pulumi:pulumi:Stack", f"kiam-{STACK}"): "create",
        ("pulumi:providers:kubernetes", "kubernetes"): "create",
        (tokens.KIAM, "kiam"): "create",
        (tokens.TLS, "kiam-tls"): "create",
        ("kiam:e2e:KwokNodeGroup", "kiam-server-nodes"): "create",
        ("kubernetes:core/v1:ConfigMap", "kiam-server-nodes"): "create",
        (tokens.SERVER, "kiam-server"): "create",
        ("kubernetes:core/v1:Node", "kiam-server-nodes-0"): "create",
        ("kubernetes:core/v1:Node", "kiam-server-nodes-1"): "create",
        ("kubernetes:core/v1:Node", "kiam-server-nodes-2"): "create",
        ("kubernetes:core/v1:Secret", "kiam-tls-server"): "create",
        ("kubernetes:core/v1:Secret", "kiam-tls-agent"): "create",
        ("kubernetes:core/v1:ServiceAccount", "kiam-server"): "create",
        ("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole", "kiam-server"): "create",
        ("kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding", "kiam-server"): "create",
        ("kubernetes:policy/v1:PodDisruptionBudget", "kiam-server"): "create",
        ("kubernetes:apps/v1:Deployment", "kiam-server"): "create",
    }
    assert move.preview_steps["takeover"] == {
        (tokens.AGENT, "kiam-agent"): "create",
        ("kubernetes:core/v1:Service", "kiam-server"): "create",
        ("kubernetes:core/v1:ServiceAccount", "kiam-agent"): "create",
        (DS, "kiam-agent"): "create",
        # And nothing else: the servers are those of phase 1 (no pod restarts).
    }
    # pulumi-kubernetes 4.25 has no upsert switch: only the objects stop being forced (and kept,
    # which no preview shows).
    forced: Diff = (["metadata.annotations"], {"pulumi.com/patchForce": "true"}, {})
    assert move.preview_diffs["complete"] == {
        ("kubernetes:core/v1:ServiceAccount", "kiam-server"): forced,
        ("kubernetes:core/v1:Service", "kiam-server"): forced,
        ("kubernetes:core/v1:ServiceAccount", "kiam-agent"): forced,
    }
    assert move.preview_diffs["takeover"] == {}


def test_phase_servers_adds_servers_behind_the_old_service_and_touches_nothing_else(
    move: Move,
) -> None:
    before, after = move.seen["installed"], move.seen["servers"]
    for key in (
        f"Service/{SERVICE}",
        f"DaemonSet/{AGENT_DAEMON_SET}",
        f"DaemonSet/{SERVER_DAEMON_SET}",
    ):
        assert after[key]["metadata"]["uid"] == before[key]["metadata"]["uid"], key
        assert after[key]["metadata"].get("generation") == before[key]["metadata"].get(
            "generation"
        ), key
        assert after[key]["spec"] == before[key]["spec"], key
    # The ServiceAccount the old servers use is taken over in place.
    account = "ServiceAccount/kiam-server"
    assert after[account]["metadata"]["uid"] == before[account]["metadata"]["uid"]
    # Old and new servers behind the old Service.
    last = next(s for s in reversed(move.watcher.samples) if s.t <= step(move, "servers").ended)
    assert last.ready_endpoints == 2 * len(move.agent_nodes)


def test_the_new_certificates_are_signed_by_the_running_installs_ca(move: Move) -> None:
    ca = x509.load_pem_x509_certificate(move.install.ca_cert.encode())
    for name in ("kiam-server-certificate", "kiam-agent-certificate"):
        data = move.seen["servers"][f"Secret/{name}"]["data"]
        # `pulumi config set` drops the trailing newline of what it reads from stdin.
        assert base64.b64decode(data["ca.crt"]).decode().strip() == move.install.ca_cert.strip()
        leaf = x509.load_pem_x509_certificate(base64.b64decode(data["tls.crt"]))
        leaf.verify_directly_issued_by(ca)


def test_rolling_back_phase_servers_leaves_the_install_as_it_was(move: Move) -> None:
    before, after = move.seen["installed"], move.seen["rollback servers"]
    assert move.state_after_rollback == []
    for key in (
        f"Service/{SERVICE}",
        f"DaemonSet/{AGENT_DAEMON_SET}",
        "ServiceAccount/kiam-server",
    ):
        assert after[key]["metadata"]["uid"] == before[key]["metadata"]["uid"], key
    assert (
        after[f"DaemonSet/{SERVER_DAEMON_SET}"]["spec"]["template"]
        == before[f"DaemonSet/{SERVER_DAEMON_SET}"]["spec"]["template"]
    )
    assert "Deployment/kiam-server" not in after
    assert not any(k.startswith("ClusterRole") and k.endswith("/kiam-server") for k in after)


def test_the_old_server_daemon_set_goes_only_in_phase_ones_own_step(move: Move) -> None:
    ds = f"DaemonSet/{SERVER_DAEMON_SET}"
    assert ds in move.seen["servers"] and ds in move.seen["servers again"]
    assert ds not in move.seen["old servers removed again"]
    for moment in ("takeover", "complete", "cleaned up"):
        assert ds not in move.seen[moment]


def test_takeover_keeps_the_service_and_replaces_the_daemon_set_with_the_same_selector(
    move: Move,
) -> None:
    before, after = move.seen["installed"], move.seen["takeover"]
    service = f"Service/{SERVICE}"
    assert after[service]["metadata"]["uid"] == before[service]["metadata"]["uid"]
    assert after[service]["spec"]["selector"] == selector_labels("server")
    ports = [(p["name"], p["port"], p["targetPort"]) for p in after[service]["spec"]["ports"]]
    assert ports == [("grpc", 443, "grpc"), ("metrics", 9620, "metrics")]
    # Of the old Service only metadata the program does not set stays (its installer's labels
    # and annotations): nothing of its spec.
    program_labels = set(selector_labels("server")) | {
        "app.kubernetes.io/part-of",
        "app.kubernetes.io/managed-by",
    }
    left_labels = set(after[service]["metadata"].get("labels") or {}) - program_labels
    assert left_labels == set(before[service]["metadata"].get("labels") or {}) - program_labels
    account = "ServiceAccount/kiam-agent"
    if account in before:  # the Helm chart's, taken over in place
        assert after[account]["metadata"]["uid"] == before[account]["metadata"]["uid"]
    ds = f"DaemonSet/{AGENT_DAEMON_SET}"
    assert after[ds]["metadata"]["uid"] != before[ds]["metadata"]["uid"]
    assert after[ds]["spec"]["selector"] == before[ds]["spec"]["selector"]
    template = after[ds]["spec"]["template"]["spec"]
    # Exactly the program's template: nothing of the old one survives.
    assert [c["name"] for c in template["containers"]] == ["kiam-agent"]
    assert sorted(v["name"] for v in template["volumes"]) == ["tls", "xtables-lock"]
    assert "nodeSelector" not in template
    # Every agent pod was replaced, and runs the program's image.
    old_pods = {k for k in before if k.startswith("Pod/") and "agent" in k}
    new_pods = {k for k in after if k.startswith("Pod/") and "agent" in k}
    assert old_pods and not old_pods & new_pods
    assert {after[p]["spec"]["containers"][0]["image"] for p in new_pods} == {
        "quay.io/uswitch/kiam:v4.2"
    }


def test_rolling_back_takeover_restores_the_old_service_and_agents(move: Move) -> None:
    before, after = move.seen["installed"], move.seen["rollback takeover: old agents back"]
    service = f"Service/{SERVICE}"
    assert after[service]["metadata"]["uid"] == before[service]["metadata"]["uid"]
    assert after[service]["spec"]["selector"] == before[service]["spec"]["selector"]
    assert after[service]["spec"]["ports"] == before[service]["spec"]["ports"]
    ds = f"DaemonSet/{AGENT_DAEMON_SET}"
    assert after[ds]["spec"]["template"] == before[ds]["spec"]["template"]
    assert after[ds]["spec"]["updateStrategy"] == before[ds]["spec"]["updateStrategy"]
    images = {
        o["spec"]["containers"][0]["image"]
        for k, o in after.items()
        if k.startswith("Pod/") and "agent" in k
    }
    assert images == {before[ds]["spec"]["template"]["spec"]["containers"][0]["image"]}
    # The stack let go of what it had taken over but deleted none of it (kept on delete).
    account = "ServiceAccount/kiam-agent"
    assert account in after
    if account in before:  # the Helm chart's
        assert after[account]["metadata"]["uid"] == before[account]["metadata"]["uid"]


def test_complete_changes_no_running_pod(move: Move) -> None:
    before, after = move.seen["takeover again"], move.seen["complete"]
    pods_before = {k for k in before if k.startswith("Pod/")}
    pods_after = {k for k in after if k.startswith("Pod/")}
    assert pods_before == pods_after
    service = after[f"Service/{SERVICE}"]
    assert "pulumi.com/patchForce" not in (service["metadata"].get("annotations") or {})


def test_after_the_clean_up_only_the_programs_objects_remain(move: Move) -> None:
    left = {
        k
        for k in move.seen["cleaned up"]
        if not k.startswith("Pod/") and not k.startswith("ServiceAccount/default")
    }
    assert left == {
        "ServiceAccount/kiam-server",
        "ServiceAccount/kiam-agent",
        f"Service/{SERVICE}",
        "Secret/kiam-server-certificate",
        "Secret/kiam-agent-certificate",
        f"DaemonSet/{AGENT_DAEMON_SET}",
        "Deployment/kiam-server",
        "ClusterRole/kiam-server",
        "ClusterRoleBinding/kiam-server",
    }


def step(move: Move, name: str) -> Step:
    return next(s for s in move.steps if s.name == name)

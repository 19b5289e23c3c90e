"""Scenario: changes between two valid stacks on a running install (transitions/),
each previewed and applied as users do (`pulumi preview`, then `pulumi up`, which previews again)
and watched.

The dev stack runs kiam with one application (billing, served by kiam) and two of its pods on the
workload nodes, annotated as the stack output says. While each change applies, the credential
judge asks, every half second and after every change the API server reports, whether each pod's
metadata request reaches, on its node, the first DNAT rule there (as kiam's agents write and
remove them, e2e/harness/node_rules.py), a Ready agent on that rule's port, and through the
address that agent dials a Ready server listening there whose certificate names it (the Secret
versions since the server started, e2e/harness/kiam_chain.py).

- refused at preview, nothing changed: the agents' port, the servers' port, an application's
  role path (each with its exact message);
- sequenced, no pod ever unserved: the Service agents dial renamed (the certificate names both
  while agents move, then drops the old names), kiam's namespace released (kept, then forgotten);
- the certificates re-issued: both Secrets updated in place (same UID, never absent);
- the agents widened onto the reserved pool, where two pods already run: the preview reads the
  cluster and names the node and both pods (the one reaching the node's own role, the one with a
  kiam annotation); applied, an agent starts there and writes its rule, no billing pod unserved;
- a negative test of the judge: the agents moved to another port behind the program's back strand
  every pod on the old rule, as kiam's source says they would.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

from e2e.harness import app_pods
from e2e.harness.app_pods import Workload
from e2e.harness.environment import Environment
from e2e.harness.kube import Kube, is_ready
from e2e.harness.pulumi import PulumiStack, Result
from e2e.harness.shape import UNTOLERATED_TAINT
from e2e.harness.waiting import wait_for
from e2e.harness.watcher import Application, CredentialWatcher
from e2e.standins.roles import ComputedApplicationRole, ComputedRoles
from e2e.tests.conftest import REPORT, changes, deploy, example_config, set_settings
from kiam_eks.contracts import names
from kiam_eks.contracts.labels import ROLE_ANNOTATION
from kiam_eks.settings.applications import ServedBy
from kiam_eks.settings.loader import settings_from_values, stack_file_for
from kiam_eks.transitions.installed import installed_by
from kiam_eks.transitions.judge import judge
from kiam_eks.transitions.verdicts import RefusedChangeError

STACK = "changes"
NAMESPACE = "kiam"
REPLICAS = 2
APP = {"namespace": "billing", "roleName": "billing-api"}
SECRETS = ("kiam-server-certificate", "kiam-agent-certificate")
# One rollout step of the agent DaemonSet: the old pod's 30 s termination grace, then the new one's
# readiness probe's 5 s initial delay and one 10 s period (components/agent.py).
AGENT_STEP_SECONDS = 30 + 5 + 10
PERIOD_SECONDS = 0.5


def gap_seconds(samples: list[tuple[float, str, str]]) -> float:
    """The longest run of consecutive unserved samples, each a sample period long at least."""
    longest, start, previous = 0.0, None, None
    for t, _, _ in samples:
        if start is None or previous is None or t - previous > 2 * PERIOD_SECONDS:
            start = t
        previous = t
        longest = max(longest, t - start + PERIOD_SECONDS)
    return longest


def base() -> dict[str, Any]:
    return {**example_config("dev"), "kiam:applications": {"billing": dict(APP)}}


def changed(**sections: dict[str, Any]) -> dict[str, Any]:
    config = base()
    for key, values in sections.items():
        config[f"kiam:{key}"] = {**config.get(f"kiam:{key}", {}), **values}
    return config


def settings_of(config: dict[str, Any]) -> Any:
    return settings_from_values(
        {k.removeprefix("kiam:"): v for k, v in config.items()}, stack_file_for(STACK)
    )


def refusal(before: dict[str, Any], after: dict[str, Any]) -> str:
    """The message the program gives for this change: the table's, for these facts."""
    with pytest.raises(RefusedChangeError) as refused:
        judge(settings_of(after), installed_by(settings_of(before), None), {}, "")
    return "\n".join(refused.value.args[0].splitlines()[1:])


REFUSED: dict[str, Callable[[], dict[str, Any]]] = {
    "agent port": lambda: changed(agent={"port": 8282}),
    "server port": lambda: changed(server={"grpcPort": 9443}),
    "application role path": lambda: {
        **base(),
        "kiam:applications": {"billing": {**APP, "path": "/kiam-apps/team-b/"}},
    },
}


# The pool no agent tolerates in any example stack (e2e/harness/shape.py), and what widens the
# agents onto it.
RESERVED_NODE = "untolerated-0"
RESERVED_TAINT = UNTOLERATED_TAINT
RESERVED_TOLERATION = {"operator": "Equal", **RESERVED_TAINT}


def reserved_pod(name: str, role: str | None) -> dict[str, Any]:
    """A pod already running on the reserved pool (bound there, tolerating its taint)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "reserved",
            **({"annotations": {ROLE_ANNOTATION: role}} if role else {}),
        },
        "spec": {
            "nodeName": RESERVED_NODE,
            "tolerations": [RESERVED_TOLERATION],
            "containers": [{"name": "app", "image": "registry.example/batch:1"}],
        },
    }


@dataclass
class Watched:
    label: str
    without_source: dict[str, list[tuple[float, str, str]]]
    samples: int
    errors: list[str]
    secrets: dict[str, set[str]]
    """Secret -> every UID it had (absent: `none`) during the change."""
    up: Result | None = None


@dataclass
class Story:
    refused: dict[str, tuple[Result, Result, str, bool]] = field(default_factory=dict)
    """label -> (preview, up, the expected message, whether the stack and cluster stayed as they were)."""
    watched: dict[str, Watched] = field(default_factory=dict)
    previews: dict[str, Result] = field(default_factory=dict)
    steps: dict[str, dict[tuple[str, str], str]] = field(default_factory=dict)
    namespace_uids: list[str] = field(default_factory=list)
    namespace_in_state: list[bool] = field(default_factory=list)
    server_address: list[str] = field(default_factory=list)
    reserved_agents: list[dict[str, Any]] = field(default_factory=list)
    reserved_rule: Any = None


def secret_uids(kube: Kube, stop: threading.Event, seen: dict[str, set[str]]) -> None:
    path = f"/api/v1/namespaces/{NAMESPACE}/secrets"
    current: dict[str, str] = {}
    for kind, obj in kube.watch(path, stop):
        if kind == "LISTED":
            continue
        name = obj["metadata"]["name"]
        if name not in SECRETS:
            continue
        current[name] = "none" if kind == "DELETED" else obj["metadata"]["uid"]
        seen.setdefault(name, set()).add(current[name])


class Scenario:
    def __init__(self, env: Environment, stack: PulumiStack) -> None:
        self.env, self.stack = env, stack
        self.story = Story()
        settings = settings_of(base())
        role_base = ComputedRoles.of("kiam", settings).role_base_arn
        self.role = ComputedApplicationRole.of(
            settings.applications["billing"], settings, role_base
        )
        self.applications = [Application("billing", "billing", self.role.role_arn, role_base)]

    @contextmanager
    def watched(self, label: str) -> Iterator[Watched]:
        watcher = CredentialWatcher(
            self.env.kube,
            self.applications,
            {"billing": frozenset({ServedBy.KIAM})},
            self.env.kiam_chain(NAMESPACE),
        )
        stop = threading.Event()
        seen: dict[str, set[str]] = {}
        thread = threading.Thread(target=secret_uids, args=(self.env.kube, stop, seen), daemon=True)
        thread.start()
        step = Watched(label, {}, 0, [], seen)
        with watcher.running():
            yield step
        stop.set()
        thread.join(timeout=15)
        step.without_source = watcher.without_source()
        step.samples = len(watcher.samples)
        step.errors = watcher.errors + self.env.node_rules.errors
        self.story.watched[label] = step

    def apply(self, label: str, config: dict[str, Any]) -> None:
        """The user's path: `pulumi preview`, then `pulumi up` (previewing again), watched."""
        set_settings(self.env, self.stack, config)
        self.story.previews[label] = self.stack.preview("--diff")
        self.story.steps[label] = changes(self.stack.preview("--json").stdout)
        with self.watched(label) as step:
            step.up = self.stack.up()

    def refuse(self, label: str, config: dict[str, Any]) -> None:
        before = self._unchanged()
        set_settings(self.env, self.stack, config)
        preview = self.stack.preview(check=False)
        up = self.stack.up(check=False)
        expected = refusal(base(), config)
        self.story.refused[label] = (preview, up, expected, before == self._unchanged())
        set_settings(self.env, self.stack, base())

    def _unchanged(self) -> Any:
        """What a refused change must leave as it was: the stack's state and kiam's workloads."""
        resources = [(r["urn"], r.get("id"), repr(r.get("inputs"))) for r in self.stack.resources()]
        kube = self.env.kube
        workloads = [
            (o["metadata"]["uid"], o["metadata"]["generation"])
            for o in (
                kube.get(f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/{names.SERVER_NAME}"),
                kube.get(f"/apis/apps/v1/namespaces/{NAMESPACE}/daemonsets/{names.AGENT_NAME}"),
            )
        ]
        return resources, workloads

    def record_namespace(self) -> None:
        self.story.namespace_uids.append(
            self.env.kube.get(f"/api/v1/namespaces/{NAMESPACE}")["metadata"]["uid"]
        )
        self.story.namespace_in_state.append(
            any(r["type"] == "kubernetes:core/v1:Namespace" for r in self.stack.resources())
        )


@pytest.fixture(scope="module")
def story(env: Environment) -> Story:
    stack, _ = deploy(env, STACK, base())
    scenario = Scenario(env, stack)
    stack.up()
    kube = env.kube
    annotation = stack.outputs()["applications"]["billing"]["podAnnotation"]
    workload = Workload(
        app="billing",
        namespace="billing",
        role_annotation=next(iter(annotation.values())),
    )
    with scenario.watched("pods start"):
        app_pods.create(kube, workload, 0, REPLICAS)

    for label, config in REFUSED.items():
        scenario.refuse(label, config())

    renamed = changed(server={"serviceName": "kiam-grpc"})
    scenario.apply("service renamed", renamed)
    scenario.story.server_address.append(stack.outputs()["serverAddress"])
    scenario.apply("service renamed, settled", renamed)

    reissued = copy.deepcopy(renamed)
    reissued["kiam:tls"] = {"certValidityHours": 4000}
    scenario.apply("certificates re-issued", reissued)

    released = copy.deepcopy(reissued)
    released["kiam:namespace"] = {"create": False}
    scenario.record_namespace()
    scenario.apply("namespace released", released)
    scenario.record_namespace()
    scenario.apply("namespace forgotten", released)
    scenario.record_namespace()

    # The agents widened onto the reserved pool, where two pods run already.
    kube.apply(
        [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "reserved"}},
            reserved_pod("batch-0", None),
            reserved_pod("report-0", "billing-api"),
        ]
    )
    wait_for(
        "the reserved pool's pods running",
        lambda: all(
            (kube.get(f"/api/v1/namespaces/reserved/pods/{name}").get("status") or {}).get("phase")
            == "Running"
            for name in ("batch-0", "report-0")
        ),
        120,
    )
    widened = copy.deepcopy(released)
    widened["kiam:agent"] = {**widened.get("kiam:agent", {}), "tolerations": [RESERVED_TOLERATION]}
    scenario.apply("agents widened", widened)
    scenario.story.reserved_agents = [
        p for p in env.pods(NAMESPACE, "agent") if p["spec"].get("nodeName") == RESERVED_NODE
    ]
    scenario.story.reserved_rule = env.node_rules.destination(RESERVED_NODE)

    # The judge's own negative test: the agents moved to another port behind the program's back.
    with scenario.watched("agents moved behind the program's back"):
        moved = kube.get(f"/apis/apps/v1/namespaces/{NAMESPACE}/daemonsets/{names.AGENT_NAME}")
        args = moved["spec"]["template"]["spec"]["containers"][0]["args"]
        patched = [a if not a.startswith("--port=") else "--port=8282" for a in args]
        kube.kubectl(
            "-n", NAMESPACE, "patch", "daemonset", names.AGENT_NAME, "--type", "json", "-p",
            f'[{{"op": "replace", "path": "/spec/template/spec/containers/0/args", '
            f'"value": {__import__("json").dumps(patched)}}}]',
        )  # fmt: skip
        kube.kubectl(
            "-n", NAMESPACE, "rollout", "status", "daemonset", names.AGENT_NAME, "--timeout=180s"
        )
    stack.destroy()
    for label, step in scenario.story.watched.items():
        worst = sum(len(v) for v in step.without_source.values())
        REPORT.append(f"changes: {label}: {step.samples} samples, {worst} unserved pod-samples")
    return scenario.story


@pytest.mark.parametrize("label", list(REFUSED))
def test_a_refused_change_stops_preview_and_up_with_its_message_and_changes_nothing(
    story: Story, label: str
) -> None:
    preview, up, expected, unchanged = story.refused[label]
    assert preview.returncode != 0 and up.returncode != 0
    for line in expected.splitlines():
        assert line in preview.output
        assert line in up.output
    assert "Traceback" not in preview.output + up.output
    assert unchanged


@pytest.mark.parametrize(
    "label",
    [
        "pods start",
        "service renamed",
        "service renamed, settled",
        "certificates re-issued",
        "namespace released",
        "namespace forgotten",
        "agents widened",
    ],
)
def test_no_pod_is_ever_unserved_while_a_safe_or_sequenced_change_applies(
    story: Story, label: str
) -> None:
    """Unserved only while its node's agent is being replaced (the agents roll one node at a
    time, each keeping the rule: requests fail closed until the new agent answers, kiam #253),
    and never for longer than one rollout step of the agent DaemonSet."""
    step = story.watched[label]
    assert step.errors == []
    assert step.samples >= 3
    for pod, samples in step.without_source.items():
        reasons = {why for _, _, why in samples}
        assert all(why.endswith("no Ready agent there") for why in reasons), (pod, reasons)
        assert gap_seconds(samples) < AGENT_STEP_SECONDS, (pod, samples)


def test_the_renamed_service_is_what_agents_dial_and_the_preview_says_how(story: Story) -> None:
    assert story.server_address == ["kiam-grpc.kiam.svc.cluster.local:9610"]
    preview = story.previews["service renamed"].output
    assert "sequenced change: kiam:server.serviceName: the running agents dial" in preview
    steps = story.steps["service renamed"]
    assert steps[("kubernetes:core/v1:Service", "kiam-server")] == "replace"
    assert steps[("kubernetes:core/v1:Secret", "kiam-tls-server")] == "update"


@pytest.mark.parametrize(
    "label", ["service renamed", "service renamed, settled", "certificates re-issued"]
)
def test_certificate_secrets_are_updated_in_place_never_replaced(story: Story, label: str) -> None:
    step = story.watched[label]
    assert sorted(step.secrets) == sorted(SECRETS)
    for secret, uids in step.secrets.items():
        assert len(uids) == 1 and "none" not in uids, (secret, uids)
    assert all(op == "update" for (t, _), op in story.steps[label].items() if t.endswith("Secret"))


def test_the_released_namespace_stays_and_leaves_the_state(story: Story) -> None:
    assert len(set(story.namespace_uids)) == 1 and len(story.namespace_uids) == 3
    assert story.namespace_in_state == [True, True, False]
    assert ("kubernetes:core/v1:Namespace", "kiam-namespace") not in story.steps[
        "namespace released"
    ]


def test_widened_agents_are_named_with_what_runs_where_they_start(story: Story) -> None:
    """The preview reads the nodes and pods (program/live_cluster.py) and says, as a warning,
    where the agents start and what runs there; the change applies and an agent serves there."""
    preview = " ".join(story.previews["agents widened"].output.split())
    assert (
        f"kiam:agent.tolerations: the agents start on 1 node they do not run on now: "
        f"{RESERVED_NODE}; 2 pods run there; 1 with neither a kiam annotation nor Pod Identity "
        "or IRSA wiring reach the node's own instance role today, and get 404 from kiam's agent "
        "for any role once it runs there: reserved/batch-0 (give each the kiam annotation of a "
        "role, or Pod Identity or IRSA, before this update if it calls AWS); 1 with the kiam "
        "annotation, which kiam starts serving: reserved/report-0"
    ) in preview
    assert [is_ready(p) for p in story.reserved_agents] == [True]
    assert story.reserved_rule is not None
    assert story.steps["agents widened"] == {
        ("kubernetes:apps/v1:DaemonSet", "kiam-agent"): "update"
    }


def test_the_judge_sees_agents_moved_to_another_port_strand_every_pod(story: Story) -> None:
    step = story.watched["agents moved behind the program's back"]
    stranded = step.without_source
    assert sorted(stranded) == [f"billing/billing-0-{i}" for i in range(REPLICAS)]
    # However the roll went, each pod ends stranded: its node's first rule sends it to the old
    # port while the new agent listens on the other.
    last = {pod: samples[-1][2] for pod, samples in stranded.items()}
    assert all(
        why.endswith(
            "'s rule sends it to port 8181, where nothing listens: its agent listens on 8282"
        )
        for why in last.values()
    ), last

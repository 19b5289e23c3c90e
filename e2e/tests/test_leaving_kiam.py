"""The way out of kiam, live (issue 18): applications moved state by state with `pulumi up` on a
real control plane, Pod Identity's association and agent through their stand-ins, the pods
created as EKS admits them at that moment (`e2e/harness/app_pods.py`), and every up and every
pod roll watched: at every sample, and after every change the API server reports to the
applications' pods or to the associations, each application pod has a credential source that
works in its application's state (`e2e/harness/watcher.py`, `CredentialWatcher`).

- billing, to Pod Identity and back: kiam -> kiam+podIdentity -> (pods recreated: they get Pod
  Identity) -> podIdentity -> (pods recreated without the kiam annotation) -> kiam+podIdentity ->
  (pods recreated on a service account without the association, with the kiam annotation: a pod
  created while an association names its service account always gets Pod Identity, whose
  credentials end with the association) -> kiam.
- search, to IRSA: kiam -> kiam+irsa -> (service account annotated as the stack output says, pods
  recreated: they get web identity) -> irsa.
- legacy, the step the cluster must judge: kiam -> kiam+podIdentity, then podIdentity while the
  pods created under kiam still run: refused at preview and at `up` (program/live_cluster.py
  reads the pods), naming them, with nothing changed; once they are recreated (they take Pod
  Identity), the same step applies, watched.

- the inconvenient paths: an association made outside the stack for a pair the stack then
  associates is refused and kept as it was; with `manageAddon: false` a cluster without the agent
  stops the preview with the message.
- then every application off kiam, every pod without the kiam annotation, and `kiam:retire`:
  watched, no pod loses its source, the associations and the agent stay (test_retire.py judges the
  retirement itself).

Each state change's `pulumi preview --diff` is a golden file (`e2e/golden/leaving-*.txt`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

from e2e.harness import app_pods
from e2e.harness.app_pods import Workload
from e2e.harness.environment import Environment
from e2e.harness.golden import check_golden, normalise
from e2e.harness.pulumi import PulumiStack, Result
from e2e.harness.watcher import Application, CredentialWatcher, WatchedChange
from e2e.standins import pod_identity
from e2e.standins.roles import ComputedApplicationRole, ComputedRoles
from e2e.tests.conftest import REPORT, changes, deploy, example_config, set_settings
from kiam_eks.contracts.labels import IRSA_ANNOTATION, PERMITTED_ANNOTATION
from kiam_eks.contracts.pod_identity import AGENT_ADDON
from kiam_eks.settings.applications import ServedBy
from kiam_eks.settings.loader import settings_from_values

REPLICAS = 2
APPS: dict[str, dict[str, Any]] = {
    "billing": {"namespace": "billing", "roleName": "billing-api"},
    "search": {"namespace": "search", "roleName": "search-api"},
    "legacy": {"namespace": "legacy", "roleName": "legacy-api"},
}
ACCOUNTS = {"billing": "api", "search": "indexer", "legacy": "worker"}
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
FOREIGN_ROLE = "arn:aws:iam::111122223333:role/kiam-apps/someone-else"
PATCH = "kubernetes:core/v1:NamespacePatch"


def config(states: dict[str, ServedBy], *, retire: bool = False) -> dict[str, Any]:
    apps = {}
    for app, values in APPS.items():
        state = states[app]
        apps[app] = {**values, "servedBy": state.value}
        if state.successor:
            apps[app]["serviceAccount"] = ACCOUNTS[app]
    return {
        **example_config("dev"),
        "kiam:applications": apps,
        "kiam:podIdentityAgent": {"manageAddon": True, "addonVersion": "v1.3.4-eksbuild.1"},
        **({"kiam:retire": True} if retire else {}),
    }


@dataclass
class Step(WatchedChange):
    """One watched change: a `pulumi up` or a roll of pods."""

    states: dict[str, frozenset[ServedBy]] = field(default_factory=dict)
    steps: dict[tuple[str, str], str] = field(default_factory=dict)


@dataclass
class Story:
    steps: list[Step] = field(default_factory=list)
    associations: dict[str, dict[tuple[str, str], dict[str, Any]]] = field(default_factory=dict)
    permitted: dict[str, dict[str, str]] = field(default_factory=dict)
    agent_pods: int = 0
    nodes: int = 0
    collision: Result | None = None
    early_preview: Result | None = None
    early_up: Result | None = None
    kiam_pods_after_retire: int = -1
    resources_after_retire: set[tuple[str, str]] = field(default_factory=set)
    after_collision: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)

    def step(self, label: str) -> Step:
        return next(s for s in self.steps if s.label == label)


class Scenario:
    """The stack, the applications' workloads and the watchers around every change."""

    def __init__(self, env: Environment, stack: PulumiStack, update_golden: bool) -> None:
        self.env, self.stack, self.update_golden = env, stack, update_golden
        self.states = {app: ServedBy.KIAM for app in APPS}
        self.generation = {app: 0 for app in APPS}
        self.retired = False
        self.story = Story()
        settings = settings_from_values(
            {k.removeprefix("kiam:"): v for k, v in config(self.states).items()}, "leaving"
        )
        base = ComputedRoles.of("kiam", settings).role_base_arn
        self.roles = {
            app: ComputedApplicationRole.of(s, settings, base)
            for app, s in settings.applications.items()
        }
        self.applications = [
            Application(app, APPS[app]["namespace"], self.roles[app].role_arn, base) for app in APPS
        ]

    @contextmanager
    def watched(self, label: str, states: dict[str, frozenset[ServedBy]]) -> Iterator[Step]:
        repeats = sum(s.label.split(" (again")[0] == label for s in self.story.steps)
        label = f"{label} (again {repeats})" if repeats else label
        watcher = CredentialWatcher(
            self.env.kube, self.applications, states, self.env.kiam_chain("kiam")
        )
        with watcher.watching(Step(label, states=states)) as step:
            yield step
        self.story.steps.append(step)

    def move(self, app: str, to: ServedBy, golden: str | None) -> None:
        """One `pulumi up` moving `app` to `to`, previewed (golden) and watched."""
        before = dict(self.states)
        self.states[app] = to
        self.up(f"{app}: {before[app].value} -> {to.value}", before, golden)

    def retire(self) -> None:
        """`kiam:retire: true`, watched. Its preview is no golden file: the engine nests the
        deleted node group's children differently from run to run (measured), which
        `e2e/harness/golden.py` does not normalise; test_retire.py judges the retirement's steps."""
        self.retired = True
        self.up("kiam retired", dict(self.states), None)

    def up(self, label: str, before: dict[str, ServedBy], golden: str | None) -> None:
        set_settings(self.env, self.stack, config(self.states, retire=self.retired))
        diff = normalise(self.stack.preview("--diff", "--parallel", "1").output)
        steps = changes(self.stack.preview("--json").stdout)
        if golden:
            check_golden(golden, diff, self.update_golden)
        in_force = {a: frozenset({before[a], self.states[a]}) for a in APPS}
        with self.watched(label, in_force) as step:
            # Previewed just above, as a reviewer reads it (--diff) and as the test reads it.
            self.stack.up(skip_preview="previewed just before")
        step.steps = steps
        self.record(step.label)

    def roll(self, app: str, *, kiam_annotation: bool, service_account: str) -> None:
        """Recreate `app`'s pods from its template as it is now, watched."""
        self.generation[app] += 1
        workload = Workload(
            app=app,
            namespace=APPS[app]["namespace"],
            service_account=service_account,
            role_annotation=(
                next(iter(self.roles[app].pod_annotation.values())) if kiam_annotation else None
            ),
        )
        in_force = {a: frozenset({self.states[a]}) for a in APPS}
        with self.watched(f"{app}: pods recreated ({self.generation[app]})", in_force):
            app_pods.roll(self.env.kube, workload, self.generation[app], REPLICAS)

    def record(self, label: str) -> None:
        kube = self.env.kube
        self.story.associations[label] = pod_identity.associations(kube)
        self.story.permitted[label] = {
            app: (
                kube.get(f"/api/v1/namespaces/{values['namespace']}")["metadata"].get("annotations")
                or {}
            ).get(PERMITTED_ANNOTATION, "")
            for app, values in APPS.items()
        }


@pytest.fixture(scope="module")
def story(env: Environment, request: pytest.FixtureRequest) -> Iterator[Story]:
    update = bool(request.config.getoption("--update-golden"))
    stack, _ = deploy(env, "leaving", config({app: ServedBy.KIAM for app in APPS}))
    scenario = Scenario(env, stack, update)
    stack.up()
    kube = env.kube
    for app in APPS:
        app_pods.service_account(kube, APPS[app]["namespace"], ACCOUNTS[app])
    # Each application's pods as they run under kiam: its service account, the kiam annotation.
    for app in APPS:
        scenario.roll(app, kiam_annotation=True, service_account=ACCOUNTS[app])

    # billing, to Pod Identity and back.
    scenario.move(
        "billing", ServedBy.KIAM_AND_POD_IDENTITY, "leaving-1-kiam-to-kiam+podIdentity.txt"
    )
    scenario.roll("billing", kiam_annotation=True, service_account=ACCOUNTS["billing"])
    scenario.move("billing", ServedBy.POD_IDENTITY, "leaving-2-kiam+podIdentity-to-podIdentity.txt")
    scenario.roll("billing", kiam_annotation=False, service_account=ACCOUNTS["billing"])
    scenario.move(
        "billing", ServedBy.KIAM_AND_POD_IDENTITY, "leaving-3-podIdentity-to-kiam+podIdentity.txt"
    )
    scenario.roll("billing", kiam_annotation=True, service_account="default")
    scenario.move("billing", ServedBy.KIAM, "leaving-4-kiam+podIdentity-to-kiam.txt")

    # search, to IRSA: the service account annotated as the stack output says.
    scenario.move("search", ServedBy.KIAM_AND_IRSA, "leaving-5-kiam-to-kiam+irsa.txt")
    outputs = stack.outputs()["applications"]["search"]
    annotation = outputs["serviceAccount"]["annotations"]
    assert annotation == {IRSA_ANNOTATION: outputs["roleArn"]}
    app_pods.service_account(kube, APPS["search"]["namespace"], ACCOUNTS["search"], annotation)
    scenario.roll("search", kiam_annotation=True, service_account=ACCOUNTS["search"])
    scenario.move("search", ServedBy.IRSA, "leaving-6-kiam+irsa-to-irsa.txt")

    # legacy: its last step off kiam tried while the pods created under kiam still run.
    scenario.move(
        "legacy", ServedBy.KIAM_AND_POD_IDENTITY, "leaving-7-legacy-kiam-to-kiam+podIdentity.txt"
    )
    set_settings(env, stack, config({**scenario.states, "legacy": ServedBy.POD_IDENTITY}))
    scenario.story.early_preview = stack.preview(check=False)
    scenario.story.early_up = stack.up(check=False)
    scenario.record("legacy: refused")
    set_settings(env, stack, config(scenario.states))
    scenario.roll("legacy", kiam_annotation=True, service_account=ACCOUNTS["legacy"])
    scenario.move(
        "legacy", ServedBy.POD_IDENTITY, "leaving-8-legacy-kiam+podIdentity-to-podIdentity.txt"
    )
    scenario.roll("legacy", kiam_annotation=False, service_account=ACCOUNTS["legacy"])

    # The managed agent, measured while kiam's nodes are still there.
    agents = kube.items(
        f"/api/v1/namespaces/{pod_identity.NAMESPACE}/pods"
        f"?labelSelector=app.kubernetes.io/name={AGENT_ADDON}"
    )
    scenario.story.agent_pods = len(agents)
    scenario.story.nodes = len(kube.items("/api/v1/nodes"))

    # An association made outside the stack for billing's pair: AWS refuses a second one
    # (ResourceInUseException); so must the stand-in, and the outside one must stay as it was.
    foreign_name = pod_identity.association_name("billing", ACCOUNTS["billing"])
    foreign: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": foreign_name,
            "namespace": pod_identity.NAMESPACE,
            "labels": pod_identity.ASSOCIATION_LABEL,
        },
        "data": pod_identity.association_data("dev", "billing", ACCOUNTS["billing"], FOREIGN_ROLE),
    }
    kube.apply([foreign])
    states = {**scenario.states, "billing": ServedBy.KIAM_AND_POD_IDENTITY}
    set_settings(env, stack, config(states))
    scenario.story.collision = stack.up(check=False)
    scenario.story.after_collision = pod_identity.associations(kube)
    kube.kubectl("delete", "configmap", "-n", pod_identity.NAMESPACE, foreign_name)
    set_settings(env, stack, config(scenario.states))
    stack.up()

    # Every application off kiam, every pod without its annotation, then kiam retired.
    scenario.move("billing", ServedBy.KIAM_AND_POD_IDENTITY, None)
    scenario.roll("billing", kiam_annotation=True, service_account=ACCOUNTS["billing"])
    scenario.move("billing", ServedBy.POD_IDENTITY, None)
    for app in ("billing", "search"):
        scenario.roll(app, kiam_annotation=False, service_account=ACCOUNTS[app])
    scenario.retire()
    story_after = scenario.story
    story_after.kiam_pods_after_retire = len(kube.items("/api/v1/namespaces/kiam/pods"))
    story_after.resources_after_retire = {
        (r["type"], r["urn"].rsplit("::", 1)[-1]) for r in stack.resources()
    }

    story = scenario.story
    for step in story.steps:
        REPORT.append(
            f"leaving kiam, {step.label}: {step.samples} samples, "
            f"{len(step.without_source)} pods ever without a working source"
        )
    yield story
    stack.destroy()
    stack.remove()


MOVES = [
    "billing: kiam -> kiam+podIdentity",
    "billing: kiam -> kiam+podIdentity (again 1)",
    "billing: kiam+podIdentity -> podIdentity (again 1)",
    "kiam retired",
    "billing: kiam+podIdentity -> podIdentity",
    "billing: podIdentity -> kiam+podIdentity",
    "billing: kiam+podIdentity -> kiam",
    "search: kiam -> kiam+irsa",
    "search: kiam+irsa -> irsa",
    "legacy: kiam -> kiam+podIdentity",
    "legacy: kiam+podIdentity -> podIdentity",
]


@pytest.mark.parametrize("label", MOVES)
def test_no_application_pod_is_ever_without_a_working_source(story: Story, label: str) -> None:
    step = story.step(label)
    assert step.errors == []
    assert step.samples >= 3
    assert step.without_source == {}


def test_no_pod_roll_leaves_a_pod_without_a_source(story: Story) -> None:
    rolls = [s for s in story.steps if "pods recreated" in s.label]
    # Each application's first pods, billing's three recreations, search's, legacy's two,
    # billing's two and search's one on the way to retirement.
    assert len(rolls) == 3 + 3 + 1 + 2 + 3
    for step in rolls:
        assert step.errors == [], step.label
        assert step.samples >= 3, step.label
        assert step.without_source == {}, step.label


def test_each_move_changes_exactly_what_its_state_needs(story: Story) -> None:
    billing_association = (CONFIG_MAP, "kiam-app-billing-pod-identity")
    assert story.step("billing: kiam -> kiam+podIdentity").steps == {
        billing_association: "create",
        ("kubernetes:apps/v1:DaemonSet", "kiam-pod-identity-agent"): "create",
    }
    assert story.step("billing: kiam+podIdentity -> podIdentity").steps == {
        (PATCH, "kiam-permissions-billing"): "delete",
    }
    assert story.step("billing: podIdentity -> kiam+podIdentity").steps == {
        (PATCH, "kiam-permissions-billing"): "create",
    }
    assert story.step("billing: kiam+podIdentity -> kiam").steps == {
        billing_association: "delete",
        ("kubernetes:apps/v1:DaemonSet", "kiam-pod-identity-agent"): "delete",
    }
    # IRSA needs nothing in the cluster from the stack: the trust is IAM's (computed here).
    assert story.step("search: kiam -> kiam+irsa").steps == {}
    assert story.step("search: kiam+irsa -> irsa").steps == {
        (PATCH, "kiam-permissions-search"): "delete",
    }


def test_the_association_exists_exactly_while_pod_identity_serves(story: Story) -> None:
    billing = ("billing", "api")
    expected_billing = {
        "billing: kiam -> kiam+podIdentity": True,
        "billing: kiam+podIdentity -> podIdentity": True,
        "billing: podIdentity -> kiam+podIdentity": True,
        "billing: kiam+podIdentity -> kiam": False,
    }
    for label, present in expected_billing.items():
        assert (billing in story.associations[label]) is present, label
    data = story.associations["billing: kiam -> kiam+podIdentity"][billing]
    assert data == {
        "clusterName": "dev",
        "namespace": "billing",
        "serviceAccount": "api",
        "roleArn": "arn:aws:iam::111122223333:role/kiam-apps/billing-api",
    }
    assert set(story.associations["legacy: kiam+podIdentity -> podIdentity"]) == {
        ("legacy", "worker")
    }


def test_the_namespace_admits_the_role_exactly_while_kiam_serves(story: Story) -> None:
    assert story.permitted["billing: kiam+podIdentity -> podIdentity"]["billing"] == ""
    assert "billing-api" in story.permitted["billing: podIdentity -> kiam+podIdentity"]["billing"]
    assert "billing-api" in story.permitted["billing: kiam+podIdentity -> kiam"]["billing"]
    assert story.permitted["search: kiam+irsa -> irsa"]["search"] == ""
    assert "search-api" in story.permitted["search: kiam -> kiam+irsa"]["search"]


def test_recreated_pods_take_the_successor_and_keep_it(story: Story) -> None:
    # Pods created after the association: Pod Identity; after the annotation: web identity.
    rolled = story.step("billing: pods recreated (2)").sources
    assert {p: s for p, s in rolled.items() if p.startswith("billing/billing-2")} == {
        f"billing/billing-2-{i}": {"podIdentity"} for i in range(REPLICAS)
    }
    after_move = story.step("billing: kiam+podIdentity -> podIdentity").sources
    assert {p: s for p, s in after_move.items() if p.startswith("billing/")} == {
        f"billing/billing-2-{i}": {"podIdentity"} for i in range(REPLICAS)
    }
    irsa = story.step("search: kiam+irsa -> irsa").sources
    assert {p: s for p, s in irsa.items() if p.startswith("search/")} == {
        f"search/search-2-{i}": {"irsa"} for i in range(REPLICAS)
    }
    back = story.step("billing: kiam+podIdentity -> kiam").sources
    assert {p: s for p, s in back.items() if p.startswith("billing/")} == {
        f"billing/billing-4-{i}": {"kiam"} for i in range(REPLICAS)
    }


def test_the_last_step_off_kiam_waits_for_the_pods_created_under_kiam(story: Story) -> None:
    """Refused at preview and at `up`, before anything is registered, naming the pods that would
    be left without credentials; nothing changed; applied once they were recreated."""
    refusal = (
        "kiam:applications.legacy.servedBy: kiam+podIdentity to podIdentity stops kiam serving "
        "arn:aws:iam::111122223333:role/kiam-apps/legacy-api, and 2 pods created before any "
        "other wiring still get their credentials from kiam alone: legacy/legacy-1-0, "
        "legacy/legacy-1-1 (recreate them: no workload owns them). Recreate them first (they take "
        "Pod Identity when created again), then `pulumi up` again"
    )
    for result in (story.early_preview, story.early_up):
        assert result is not None
        assert result.returncode != 0
        assert refusal in result.output
        assert "Traceback" not in result.output
    # Nothing changed: the namespace still admits the role, the association is as it was.
    assert "legacy-api" in story.permitted["legacy: refused"]["legacy"]
    assert (
        story.associations["legacy: refused"]
        == story.associations["legacy: kiam -> kiam+podIdentity"]
    )
    # Recreated in the moving state, they take Pod Identity; then the step applies.
    recreated = story.step("legacy: pods recreated (2)")
    assert {p: s for p, s in recreated.sources.items() if p.startswith("legacy/legacy-2")} == {
        f"legacy/legacy-2-{i}": {"podIdentity"} for i in range(REPLICAS)
    }
    moved = story.step("legacy: kiam+podIdentity -> podIdentity")
    assert moved.without_source == {}
    assert story.permitted["legacy: kiam+podIdentity -> podIdentity"]["legacy"] == ""


def test_the_managed_agent_runs_on_every_node(story: Story) -> None:
    # Its DaemonSet stays (the add-on's `preserve`) once billing moved back; legacy needs it.
    assert story.agent_pods == story.nodes


def test_an_unmanaged_agent_must_be_in_the_cluster(env: Environment, story: Story) -> None:
    """With `manageAddon: false` the stack only checks the add-on is there: a preview without it
    stops with the message, and passes once it is installed (here, as the add-on leaves it)."""
    kube = env.kube
    agent = kube.get(pod_identity.agent_path())
    kube.kubectl("delete", "daemonset", "-n", pod_identity.NAMESPACE, AGENT_ADDON)
    unmanaged = {
        **config(
            {**{app: ServedBy.KIAM for app in APPS}, "billing": ServedBy.KIAM_AND_POD_IDENTITY}
        ),
        "kiam:podIdentityAgent": {"manageAddon": False},
    }
    stack, _ = deploy(env, "unmanaged", unmanaged)
    try:
        refused = stack.preview(check=False)
        kube.apply(
            [
                {
                    "apiVersion": "apps/v1",
                    "kind": "DaemonSet",
                    "metadata": {"name": AGENT_ADDON, "namespace": pod_identity.NAMESPACE},
                    "spec": agent["spec"],
                }
            ]
        )
        accepted = stack.preview(check=False)
    finally:
        stack.remove()
    assert refused.returncode != 0
    assert (
        "cluster dev has no eks-pod-identity-agent add-on, which Pod Identity needs on the "
        "nodes: install it, or set kiam:podIdentityAgent.manageAddon: true"
    ) in refused.output
    assert accepted.returncode == 0, accepted.output


def test_a_second_association_for_a_pair_is_refused_and_the_first_kept(story: Story) -> None:
    assert story.collision is not None and story.collision.returncode != 0
    output = story.collision.output
    assert "kiam-app-billing-pod-identity" in output
    # pulumi-kubernetes 4.25 applies server-side: the outside owner's field refuses the create.
    assert 'conflict with "kubectl-client-side-apply" using v1: .data.roleArn' in output
    assert story.after_collision[("billing", "api")]["roleArn"] == FOREIGN_ROLE


def test_retiring_kiam_keeps_every_application_served(story: Story) -> None:
    step = story.step("kiam retired")
    # Every pod kept its source through the retirement: none of them asked kiam any more.
    assert {pod: sources for pod, sources in step.sources.items()} == {
        **{f"billing/billing-6-{i}": {"podIdentity"} for i in range(REPLICAS)},
        **{f"search/search-3-{i}": {"irsa"} for i in range(REPLICAS)},
        **{f"legacy/legacy-3-{i}": {"podIdentity"} for i in range(REPLICAS)},
    }
    assert story.kiam_pods_after_retire == 0
    kept = story.resources_after_retire
    for app in ("billing", "legacy"):
        assert (CONFIG_MAP, f"kiam-app-{app}-pod-identity") in kept
    assert ("kubernetes:apps/v1:DaemonSet", "kiam-pod-identity-agent") in kept
    assert not {r for r in kept if r[1] in ("kiam-server", "kiam-agent")}
    assert set(story.associations["kiam retired"]) == {("billing", "api"), ("legacy", "worker")}

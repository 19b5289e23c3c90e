"""A cluster that has run kiam for years, taken out of it, live (issue 24): roles made outside
the stack (one named by a bare annotation, one by its full ARN and its own path, one in another
account), two roles on one service account, a pod its namespace does not admit; the stack
installed kiam long ago and serves no application yet.

1. `tools.kiam_draft` reads the cluster and drafts `kiam:applications`: one application per
   role and namespace, every role by `roleArn`, the namespaces' annotations as
   `kiam:existingPermitted`, and what blocks each move (judged exactly).
2. The draft pasted into the stack file and applied: no pod is recreated and every pod keeps
   kiam as its source (watched).
3. The operator gives one of the two workloads sharing a service account its own; the draft
   drawn again names a service account for every application.
4. One `pulumi up` moves every application to its moving state (Pod Identity, through
   `targetRoleArn` and a chain role for the role of another account; IRSA for one), the pods
   recreated as EKS admits them, one `pulumi up` to the successor, the pods recreated without
   the kiam annotation: watched throughout, no pod is ever without a working source.
   Meanwhile the role of another account is rolled back to kiam and moved again, one
   `pulumi up` each: its association and chain go and come back.
5. `tools.kiam_usage` refuses retirement while the pod its namespace never admitted still carries
   the annotation, blesses it once it is gone; `kiam:retire`, watched: every application keeps
   its source.

The stand-ins (e2e/standins) compute what AWS would: roles that exist already keep their ARN,
the chain role's ARN from its name prefix, the association with `targetRoleArn` as EKS documents
it, the cluster's OIDC issuer from the control plane's own discovery document.
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
from e2e.harness.pulumi import PulumiStack
from e2e.harness.tool_process import run_tool
from e2e.harness.watcher import Application, CredentialWatcher, WatchedChange
from e2e.standins import pod_identity
from e2e.tests.conftest import REPORT, changes, deploy, example_config, set_settings
from kiam_eks.contracts.labels import IRSA_ANNOTATION, PERMITTED_ANNOTATION
from kiam_eks.settings.applications import ServedBy

ACCOUNT = "111122223333"
OTHER_ACCOUNT = "444455556666"
BASE = f"arn:aws:iam::{ACCOUNT}:role/kiam-apps/"


@dataclass(frozen=True)
class Role:
    """One application as the cluster runs it today, and where it goes."""

    namespace: str
    arn: str
    annotation: str
    """What its pods carry: a bare name (resolved against kiam's base) or the full ARN."""
    service_account: str
    """The service account its pods run as today."""
    to: ServedBy

    @property
    def moving(self) -> ServedBy:
        """The state on the way to `to`, served by both."""
        state = self.to.previous
        assert state is not None, self.to
        return state


# Keyed by the name the draft gives each (`<namespace>-<role name>`).
ROLES = {
    "payments-api": Role("payments", f"{BASE}api", "api", "api", ServedBy.POD_IDENTITY),
    "catalog-reader": Role(
        "catalog",
        f"arn:aws:iam::{ACCOUNT}:role/teams/catalog/reader",
        f"arn:aws:iam::{ACCOUNT}:role/teams/catalog/reader",
        "catalog",
        ServedBy.IRSA,
    ),
    "catalog-writer": Role("catalog", f"{BASE}writer", "writer", "catalog", ServedBy.POD_IDENTITY),
    "batch-exporter": Role(
        "batch",
        f"arn:aws:iam::{OTHER_ACCOUNT}:role/exporter",
        f"arn:aws:iam::{OTHER_ACCOUNT}:role/exporter",
        "exporter",
        ServedBy.POD_IDENTITY,
    ),
}
# The namespaces' annotations as years of `kubectl annotate` left them.
PERMITTED = {
    "payments": f"{BASE}api",
    "catalog": f"arn:aws:iam::{ACCOUNT}:role/(teams/catalog/reader|kiam-apps/writer)",
    "batch": f"arn:aws:iam::{OTHER_ACCOUNT}:role/exporter",
}
# A pod whose role its namespace never admitted: kiam refuses it today; no application serves it.
UNADMITTED = Workload(app="batch-nightly", namespace="batch", role_annotation="nightly")
# The service account the operator gives catalog-writer, so that each role has its own.
WRITER_ACCOUNT = "writer"


def stack_config(drafted: dict[str, Any]) -> dict[str, Any]:
    """The dev example's stack file with the Pod Identity add-on managed and the sections a
    draft gives (`kiam:applications`, `kiam:existingPermitted`)."""
    return {
        **example_config("dev"),
        "kiam:podIdentityAgent": {"manageAddon": True, "addonVersion": "v1.3.4-eksbuild.1"},
        **drafted,
    }


def with_states(draft: dict[str, Any], states: dict[str, ServedBy]) -> dict[str, Any]:
    """The draft's config with each application in `states`."""
    apps = {
        app: {**entry, "servedBy": states[app].value}
        for app, entry in draft["kiam:applications"].items()
    }
    return {**draft, "kiam:applications": apps}


@dataclass
class Step(WatchedChange):
    """One watched change: a `pulumi up` (with what its preview planned) or a roll of pods."""

    changes: dict[tuple[str, str], str] = field(default_factory=dict)


@dataclass
class Story:
    first_draft: tuple[int, dict[str, Any]] = (0, {})
    second_draft: tuple[int, dict[str, Any]] = (0, {})
    steps: list[Step] = field(default_factory=list)
    pod_uids_before: dict[str, str] = field(default_factory=dict)
    pod_uids_after: dict[str, str] = field(default_factory=dict)
    outputs_moving: dict[str, Any] = field(default_factory=dict)
    associations_moving: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    associations_rolled_back: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    associations_moving_again: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    retirement_refused: tuple[int, dict[str, Any]] = (0, {})
    retirement_blessed: tuple[int, dict[str, Any]] = (0, {})
    associations_retired: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    kiam_pods_retired: int = -1

    def step(self, label: str) -> Step:
        return next(s for s in self.steps if s.label == label)


class Cluster:
    """The stack, the workloads, and a credential watcher around every change."""

    def __init__(self, env: Environment, stack: PulumiStack) -> None:
        self.env, self.stack = env, stack
        # The stack file as the user edits it (set_settings writes it).
        self.stack_file = env.root / "stack-files" / f"Pulumi.{stack.stack}.yaml"
        self.story = Story()
        self.states = {app: ServedBy.KIAM for app in ROLES}
        self.previous = dict(self.states)
        self.generation = {app: 0 for app in ROLES}
        self.accounts = {app: role.service_account for app, role in ROLES.items()}
        self.applications = [
            Application(app, role.namespace, role.arn, BASE) for app, role in ROLES.items()
        ]

    @contextmanager
    def watched(self, label: str) -> Iterator[Step]:
        in_force = {a: frozenset({self.previous[a], self.states[a]}) for a in ROLES}
        watcher = CredentialWatcher(
            self.env.kube, self.applications, in_force, self.env.kiam_chain("kiam")
        )
        with watcher.watching(Step(label)) as step:
            yield step
        self.story.steps.append(step)
        REPORT.append(
            f"long-lived cluster, {label}: {step.samples} samples, "
            f"{len(step.without_source)} pods ever without a working source"
        )

    def up(self, label: str, config: dict[str, Any]) -> None:
        set_settings(self.env, self.stack, config)
        planned = changes(self.stack.preview("--json").stdout)
        with self.watched(label) as step:
            self.stack.up(skip_preview="previewed just before")
        step.changes = planned
        self.previous = dict(self.states)

    def workload(self, app: str, *, kiam_annotation: bool = True) -> Workload:
        role = ROLES[app]
        return Workload(
            app=app,
            namespace=role.namespace,
            service_account=self.accounts[app],
            role_annotation=role.annotation if kiam_annotation else None,
        )

    def roll(self, label: str, apps: list[str], *, kiam_annotation: bool) -> None:
        with self.watched(label):
            for app in apps:
                self.generation[app] += 1
                app_pods.roll(
                    self.env.kube,
                    self.workload(app, kiam_annotation=kiam_annotation),
                    self.generation[app],
                    1,
                )

    def draft(self) -> tuple[int, dict[str, Any]]:
        return run_tool(self.env, "tools.kiam_draft", self.stack_file)

    def usage(self) -> tuple[int, dict[str, Any]]:
        return run_tool(self.env, "tools.kiam_usage", self.stack_file, "--check-retire")

    def pod_uids(self) -> dict[str, str]:
        return {
            f"{p['metadata']['namespace']}/{p['metadata']['name']}": p["metadata"]["uid"]
            for namespace in PERMITTED
            for p in self.env.kube.items(f"/api/v1/namespaces/{namespace}/pods")
        }


def shape_long_lived(cluster: Cluster) -> None:
    """The namespaces, annotations, service accounts and pods the stack did not make."""
    kube = cluster.env.kube
    kube.apply(
        [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in PERMITTED]
    )
    for namespace, expression in PERMITTED.items():
        kube.kubectl("annotate", "namespace", namespace, f"{PERMITTED_ANNOTATION}={expression}")
    for role in ROLES.values():
        app_pods.service_account(kube, role.namespace, role.service_account)
    app_pods.service_account(kube, UNADMITTED.namespace, UNADMITTED.service_account)
    for app in ROLES:
        app_pods.create(kube, cluster.workload(app), 0, 1)
    app_pods.create(kube, UNADMITTED, 0, 1)


@pytest.fixture(scope="module")
def story(env: Environment) -> Iterator[Story]:
    # kiam as the stack installed it long ago, serving no application of the stack yet.
    stack, _ = deploy(env, "longlived", stack_config({}))
    stack.up()
    cluster = Cluster(env, stack)
    story = cluster.story
    shape_long_lived(cluster)

    # 1-2. The draft, pasted into the stack file as it is, applied.
    story.first_draft = cluster.draft()
    drafted = story.first_draft[1]["config"]
    story.pod_uids_before = cluster.pod_uids()
    cluster.up("the draft applied", stack_config(drafted))
    story.pod_uids_after = cluster.pod_uids()

    # 3. catalog-writer gets a service account of its own; the draft drawn again.
    app_pods.service_account(env.kube, "catalog", WRITER_ACCOUNT)
    cluster.accounts["catalog-writer"] = WRITER_ACCOUNT
    cluster.roll(
        "catalog-writer on its own service account", ["catalog-writer"], kiam_annotation=True
    )
    story.second_draft = cluster.draft()
    drafted = story.second_draft[1]["config"]

    # 4. Every application to its moving state, then to its successor.
    cluster.states = {app: role.moving for app, role in ROLES.items()}
    cluster.up("every application moving", stack_config(with_states(drafted, cluster.states)))
    story.outputs_moving = stack.outputs()["applications"]
    story.associations_moving = pod_identity.associations(env.kube)
    # The role of another account rolled back, its pods not yet recreated, then moving again:
    # the association and the chain go, and come back.
    cluster.states["batch-exporter"] = ServedBy.KIAM
    cluster.up("batch-exporter rolled back", stack_config(with_states(drafted, cluster.states)))
    story.associations_rolled_back = pod_identity.associations(env.kube)
    cluster.states["batch-exporter"] = ROLES["batch-exporter"].moving
    cluster.up("batch-exporter moving again", stack_config(with_states(drafted, cluster.states)))
    story.associations_moving_again = pod_identity.associations(env.kube)
    reader = story.outputs_moving["catalog-reader"]["serviceAccount"]
    app_pods.service_account(env.kube, "catalog", reader["name"], reader["annotations"])
    cluster.roll("the pods recreated, wired", list(ROLES), kiam_annotation=True)
    cluster.states = {app: role.to for app, role in ROLES.items()}
    cluster.up("every application moved", stack_config(with_states(drafted, cluster.states)))
    cluster.roll("the pods recreated without kiam", list(ROLES), kiam_annotation=False)

    # 5. Retirement: refused while the never-admitted pod carries the annotation, then blessed.
    # Asked of the stack file as the last `pulumi up` applied it, before `kiam:retire` is set.
    moved = stack_config(with_states(drafted, cluster.states))
    story.retirement_refused = cluster.usage()
    app_pods.delete(env.kube, UNADMITTED)
    story.retirement_blessed = cluster.usage()
    cluster.up("kiam retired", {**moved, "kiam:retire": True})
    story.associations_retired = pod_identity.associations(env.kube)
    story.kiam_pods_retired = len(env.kube.items("/api/v1/namespaces/kiam/pods"))
    yield story
    stack.destroy()
    stack.remove()


STEPS = [
    "the draft applied",
    "catalog-writer on its own service account",
    "every application moving",
    "batch-exporter rolled back",
    "batch-exporter moving again",
    "the pods recreated, wired",
    "every application moved",
    "the pods recreated without kiam",
    "kiam retired",
]


@pytest.mark.parametrize("label", STEPS)
def test_no_pod_is_ever_without_a_working_source(story: Story, label: str) -> None:
    step = story.step(label)
    assert step.errors == []
    assert step.samples > 0
    assert step.without_source == {}
    assert {pod.split("/")[0] for pod in step.sources} == set(ROLES)


def test_the_draft_serves_exactly_todays_access_and_says_what_blocks_each_move(
    story: Story,
) -> None:
    code, found = story.first_draft
    assert code == 0
    assert found["problems"] == []
    assert found["config"] == {
        "kiam:applications": {
            "batch-exporter": {
                "namespace": "batch",
                "roleArn": ROLES["batch-exporter"].arn,
                "serviceAccount": "exporter",
            },
            "catalog-reader": {"namespace": "catalog", "roleArn": ROLES["catalog-reader"].arn},
            "catalog-writer": {"namespace": "catalog", "roleArn": ROLES["catalog-writer"].arn},
            "payments-api": {
                "namespace": "payments",
                "roleArn": ROLES["payments-api"].arn,
                "serviceAccount": "api",
            },
        },
        "kiam:existingPermitted": PERMITTED,
    }
    cross_account = (
        f"the role is in account {OTHER_ACCOUNT}: Pod Identity reaches it by role chaining (the "
        f"stack creates the chain role), IRSA through an IAM OIDC provider for the cluster in "
        f"account {OTHER_ACCOUNT}; either way its owner adds what the stack output "
        "applications.<app>.trust.next says"
    )
    assert found["applications"] == {
        "batch-exporter": {
            "workloads": ["Pod/batch/batch-exporter-0-0"],
            "blockers": [cross_account],
        },
        "catalog-reader": {
            "workloads": ["Pod/catalog/catalog-reader-0-0"],
            "blockers": [
                "service account catalog also runs Pod/catalog/catalog-writer-0-0 with other "
                "roles; a service account gets one role: give Pod/catalog/catalog-reader-0-0 a "
                "service account of their own"
            ],
        },
        "catalog-writer": {
            "workloads": ["Pod/catalog/catalog-writer-0-0"],
            "blockers": [
                "service account catalog also runs Pod/catalog/catalog-reader-0-0 with other "
                "roles; a service account gets one role: give Pod/catalog/catalog-writer-0-0 a "
                "service account of their own"
            ],
        },
        "payments-api": {"workloads": ["Pod/payments/payments-api-0-0"], "blockers": []},
    }
    assert found["notAdmitted"] == [
        f"batch/batch-nightly-0-0: namespace batch does not admit {BASE}nightly today "
        f"({PERMITTED_ANNOTATION}: {PERMITTED['batch']!r}): kiam refuses it already"
    ]
    assert found["unresolved"] == []


def test_applying_the_draft_recreates_no_pod_and_only_takes_the_annotations_over(
    story: Story,
) -> None:
    assert story.pod_uids_after == story.pod_uids_before
    step = story.step("the draft applied")
    assert step.sources == {pod: {"kiam"} for pod in step.sources}
    # The stack's annotation patch of each namespace, and the one taking the found value over
    # (docs/migration.md): nothing else, not a kiam workload, not an application's pod.
    assert step.changes == {
        ("kiam:index:NamespacePermissions", "kiam-permissions"): "create",
        **{
            ("kubernetes:core/v1:NamespacePatch", f"kiam-permissions-{namespace}{part}"): "create"
            for namespace in PERMITTED
            for part in ("", "-existing")
        },
    }


def test_every_pod_ends_on_its_applications_successor(story: Story) -> None:
    for label in ("the pods recreated without kiam", "kiam retired"):
        step = story.step(label)
        assert {pod.split("/")[0]: sources for pod, sources in step.sources.items()} == {
            app: {role.to.value} for app, role in ROLES.items()
        }, label


def test_with_its_own_service_account_every_application_can_move(story: Story) -> None:
    code, found = story.second_draft
    assert code == 0
    first = story.first_draft[1]["config"]["kiam:applications"]
    assert found["config"]["kiam:applications"] == {
        **first,
        "catalog-reader": {**first["catalog-reader"], "serviceAccount": "catalog"},
        "catalog-writer": {**first["catalog-writer"], "serviceAccount": WRITER_ACCOUNT},
    }
    blockers = {app: a["blockers"] for app, a in found["applications"].items()}
    assert {app: len(b) for app, b in blockers.items()} == {
        "batch-exporter": 1,
        "catalog-reader": 0,
        "catalog-writer": 0,
        "payments-api": 0,
    }


def test_the_role_of_another_account_is_reached_through_the_chain_role(story: Story) -> None:
    association = story.associations_moving[("batch", "exporter")]
    # The chain role under kiamRolePath, named from its prefix (IAM appends a unique suffix,
    # which the stand-in leaves out).
    chain = f"arn:aws:iam::{ACCOUNT}:role/kiam/kiam-chain-batch-"
    assert association["roleArn"] == chain
    assert association["targetRoleArn"] == ROLES["batch-exporter"].arn
    for namespace, account, app in [("payments", "api", "payments-api"), ("catalog", WRITER_ACCOUNT, "catalog-writer")]:  # fmt: skip
        same = story.associations_moving[(namespace, account)]
        assert same["roleArn"] == ROLES[app].arn
        assert "targetRoleArn" not in same
    assert set(story.associations_moving) == {
        ("payments", "api"),
        ("catalog", WRITER_ACCOUNT),
        ("batch", "exporter"),
    }


def test_rolled_back_and_moved_again_the_chain_goes_and_comes_back(story: Story) -> None:
    exporter = ("batch", "exporter")
    assert set(story.associations_rolled_back) == set(story.associations_moving) - {exporter}
    assert story.associations_moving_again == story.associations_moving
    # The association's stand-in (e2e/standins/pod_identity.py), nothing else.
    association = ("kubernetes:core/v1:ConfigMap", "kiam-app-batch-exporter-pod-identity")
    assert story.step("batch-exporter rolled back").changes == {association: "delete"}
    assert story.step("batch-exporter moving again").changes == {association: "create"}


def test_each_moving_role_names_the_trust_its_owner_adds(story: Story) -> None:
    outputs = story.outputs_moving
    assert {app: sorted(o["trust"]["next"]) for app, o in outputs.items()} == {
        "batch-exporter": ["podIdentity"],
        "catalog-reader": ["irsa"],
        "catalog-writer": ["podIdentity"],
        "payments-api": ["podIdentity"],
    }
    reader = outputs["catalog-reader"]
    assert reader["serviceAccount"]["annotations"] == {IRSA_ANNOTATION: ROLES["catalog-reader"].arn}


def test_retirement_waits_for_the_pod_its_namespace_never_admitted(story: Story) -> None:
    refused, report = story.retirement_refused
    blessed, _ = story.retirement_blessed
    assert (refused, blessed) == (1, 0), report


def test_retired_kiam_leaves_every_association_and_no_kiam_pod(story: Story) -> None:
    assert set(story.associations_retired) == set(story.associations_moving)
    assert story.kiam_pods_retired == 0

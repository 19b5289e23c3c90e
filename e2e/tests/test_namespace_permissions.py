"""Application roles and the namespaces' `iam.amazonaws.com/permitted` annotation, through the real
server-side-apply patch on a real API server:

- two applications in two namespaces that exist already, labelled and annotated by someone else:
  the annotation is added, every other label and annotation (and its owner) stays, and an
  application pod, checked the way kiam v4.2 checks it against the live namespace annotation and
  the live server's flags (`invariants.kiam_rules.granted_role`), gets exactly its role, and a pod
  of the other namespace with the same annotation gets nothing;
- a namespace whose annotation `kubectl annotate` set and the stack does not mention (a
  conflicting owner), or mentions with another value than it holds: `pulumi up` stops with the
  API server's field conflict naming that owner, and the annotation keeps its value;
- a namespace whose annotation a running kiam set, declared in `kiam:existingPermitted` (adopted):
  taken over, visible in the preview (golden file), admitting the old roles and the new one while
  held; given back by a `pulumi up`; after `pulumi destroy` every namespace is exactly as found;
- a destroy while the annotation is still held leaves the union (what the runbook says it does).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from e2e.harness.environment import Environment
from e2e.harness.golden import check_golden, normalise
from e2e.harness.kube import Kube, selector
from e2e.harness.pulumi import Result
from e2e.tests.conftest import REPORT, changes, deploy, example_config, set_settings
from kiam_eks.components.namespace_permissions import permitted_regexp, permitted_union
from kiam_eks.contracts import tokens
from kiam_eks.contracts.labels import ROLE_ANNOTATION, selector_labels
from kiam_eks.invariants.kiam_rules import granted_role

PERMITTED = "iam.amazonaws.com/permitted"
EXISTING = "kiam.pulumi.io/existing-permitted"
FORCE = "pulumi.com/patchForce"
ACCOUNT = "111122223333"
BASE = f"arn:aws:iam::{ACCOUNT}:role/kiam-apps/"
# What a running kiam left on billing: the two roles billing's pods use today.
FOUND = f"{BASE}billing-(reports|batch)"
# What someone set on legacy, which the stack does not mention.
FOREIGN = f"{BASE}legacy-.*"
APPS = {
    "billing": {"namespace": "billing", "roleName": "billing-api"},
    "search": {"namespace": "search", "roleName": "search-api"},
}
LEGACY_APP = {"namespace": "legacy", "roleName": "legacy-api"}
NAMESPACES = ("billing", "search", "legacy")
PATCH = "kubernetes:core/v1:NamespacePatch"


@dataclass
class Story:
    """What happened, in order; the tests below judge it."""

    before: dict[str, dict[str, Any]]
    takeover_preview: str = ""
    takeover_steps: dict[tuple[str, str], str] = field(default_factory=dict)
    held: dict[str, dict[str, Any]] = field(default_factory=dict)
    outputs: dict[str, Any] = field(default_factory=dict)
    server_args: list[str] = field(default_factory=list)
    granted_while_held: dict[str, str | None] = field(default_factory=dict)
    conflict_preview: Result | None = None
    conflict_up: Result | None = None
    after_conflict: dict[str, dict[str, Any]] = field(default_factory=dict)
    wrong_value_up: Result | None = None
    after_wrong_value: dict[str, dict[str, Any]] = field(default_factory=dict)
    give_back_steps: dict[tuple[str, str], str] = field(default_factory=dict)
    given_back: dict[str, dict[str, Any]] = field(default_factory=dict)
    granted_after_give_back: dict[str, str | None] = field(default_factory=dict)
    destroyed: dict[str, dict[str, Any]] = field(default_factory=dict)
    destroyed_while_held: dict[str, dict[str, Any]] = field(default_factory=dict)


def metadata(kube: Kube, namespace: str) -> dict[str, Any]:
    return dict(kube.get(f"/api/v1/namespaces/{namespace}")["metadata"])


def snapshot(kube: Kube) -> dict[str, dict[str, Any]]:
    return {n: metadata(kube, n) for n in NAMESPACES}


def owners(meta: dict[str, Any], annotation: str) -> set[str]:
    """The field managers that own one annotation of an object."""
    return {
        m["manager"]
        for m in meta.get("managedFields") or []
        if f"f:{annotation}"
        in ((m.get("fieldsV1") or {}).get("f:metadata", {}).get("f:annotations") or {})
    }


def app_pod(kube: Kube, name: str, namespace: str, role: str) -> dict[str, Any]:
    """A pod asking for a role the way an application's pod does (kwok runs it on a worker)."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "annotations": {ROLE_ANNOTATION: role}},
        "spec": {"containers": [{"name": "app", "image": "app:1"}], "restartPolicy": "Never"},
    }
    kube.apply([pod])
    return dict(kube.get(f"/api/v1/namespaces/{namespace}/pods/{name}"))


def granted(
    kube: Kube, pods: dict[str, tuple[str, str]], server_args: list[str]
) -> dict[str, str | None]:
    """What kiam would assume for each pod, from the live pod, namespace and server flags."""
    found = {}
    for name, (namespace, _) in pods.items():
        pod = kube.get(f"/api/v1/namespaces/{namespace}/pods/{name}")
        permitted = (metadata(kube, namespace).get("annotations") or {}).get(PERMITTED, "")
        found[name] = granted_role(
            pod["metadata"]["annotations"][ROLE_ANNOTATION], permitted, server_args
        )
    return found


def live_server_args(kube: Kube) -> list[str]:
    servers = kube.items(
        f"/api/v1/namespaces/kiam/pods?labelSelector={selector(selector_labels('server'))}"
    )
    args = {tuple(p["spec"]["containers"][0]["args"]) for p in servers}
    assert len(args) == 1, args
    return list(args.pop())


def with_apps(apps: dict[str, Any], existing: dict[str, str] | None) -> dict[str, Any]:
    config = {**example_config("dev"), "kiam:applications": apps}
    if existing:
        config["kiam:existingPermitted"] = existing
    return config


@pytest.fixture(scope="module")
def story(env: Environment, request: pytest.FixtureRequest) -> Iterator[Story]:
    kube = env.kube
    stack, _ = deploy(env, "perms", with_apps(APPS, None))
    # The namespaces exist before kiam, labelled and annotated by their owners; billing carries
    # what the running kiam's installer set with `kubectl annotate`.
    kube.kubectl("create", "namespace", "legacy")
    for namespace in NAMESPACES:
        kube.kubectl("label", "namespace", namespace, "team=payments", "env=dev")
        kube.kubectl("annotate", "namespace", namespace, "owner=payments@example.com")
    kube.kubectl("annotate", "namespace", "billing", f"{PERMITTED}={FOUND}")
    kube.kubectl("annotate", "namespace", "legacy", f"{PERMITTED}={FOREIGN}")
    s = Story(before=snapshot(kube))

    # kiam first, without applications, so the preview below shows only what they add.
    set_settings(env, stack, example_config("dev"))
    stack.up()
    set_settings(env, stack, with_apps(APPS, {"billing": FOUND}))
    s.takeover_preview = normalise(stack.preview("--diff", "--parallel", "1").output)
    s.takeover_steps = changes(stack.preview("--json").stdout)
    check_golden(
        "preview-namespace-takeover.txt",
        s.takeover_preview,
        request.config.getoption("--update-golden"),
    )
    stack.up()
    s.held = snapshot(kube)
    s.outputs = stack.outputs()
    s.server_args = live_server_args(kube)
    apps = s.outputs["applications"]
    pods = {
        "billing-api": ("billing", apps["billing"]["podAnnotation"][ROLE_ANNOTATION]),
        "search-api": ("search", apps["search"]["podAnnotation"][ROLE_ANNOTATION]),
        "billing-reports": ("billing", "billing-reports"),
        "billing-in-search": ("search", apps["billing"]["podAnnotation"][ROLE_ANNOTATION]),
    }
    for name, (namespace, role) in pods.items():
        app_pod(kube, name, namespace, role)
    s.granted_while_held = granted(kube, pods, s.server_args)

    # A conflicting owner: legacy's annotation, which the stack does not declare.
    set_settings(env, stack, with_apps({**APPS, "legacy": LEGACY_APP}, {"billing": FOUND}))
    s.conflict_preview = stack.preview(check=False)
    s.conflict_up = stack.up(check=False)
    s.after_conflict = snapshot(kube)
    # Declared, but not with the value the namespace holds: refused the same way, before the
    # takeover patch is applied.
    set_settings(
        env,
        stack,
        with_apps(
            {**APPS, "legacy": LEGACY_APP}, {"billing": FOUND, "legacy": f"{BASE}legacy-old"}
        ),
    )
    s.wrong_value_up = stack.up(check=False)
    s.after_wrong_value = snapshot(kube)

    # Give billing's annotation back: no application of the stack uses billing any more.
    set_settings(env, stack, with_apps({"search": APPS["search"]}, {"billing": FOUND}))
    s.give_back_steps = changes(stack.preview("--json").stdout)
    stack.up()
    s.given_back = snapshot(kube)
    s.granted_after_give_back = granted(kube, pods, s.server_args)

    stack.destroy()
    s.destroyed = snapshot(kube)

    # A destroy while billing's annotation is still held.
    set_settings(env, stack, with_apps(APPS, {"billing": FOUND}))
    stack.up()
    stack.destroy()
    s.destroyed_while_held = snapshot(kube)
    REPORT.append(
        "namespace permissions: taken over "
        f"{'and given back exactly' if s.destroyed['billing'].get('annotations') == s.before['billing'].get('annotations') else 'NOT given back'}; "
        f"conflicting owner refused by `pulumi up` (exit {s.conflict_up.returncode}), preview exit "
        f"{s.conflict_preview.returncode}"
    )
    yield s
    stack.remove()


def annotations_of(meta: dict[str, Any]) -> dict[str, str]:
    return dict(meta.get("annotations") or {})


def test_the_preview_shows_the_takeover(story: Story) -> None:
    assert story.takeover_steps == {
        (tokens.NAMESPACE_PERMISSIONS, "kiam-permissions"): "create",
        (PATCH, "kiam-permissions-billing-existing"): "create",
        (PATCH, "kiam-permissions-billing"): "create",
        (PATCH, "kiam-permissions-search"): "create",
    }
    for shown in (FOUND, FORCE, EXISTING, "kiam-permissions-billing-existing"):
        assert shown in story.takeover_preview


def test_each_namespace_gets_its_annotation_and_keeps_everything_else(story: Story) -> None:
    billing_arn = story.outputs["applications"]["billing"]["roleArn"]
    search_arn = story.outputs["applications"]["search"]["roleArn"]
    expected = {
        "billing": {
            PERMITTED: permitted_union(FOUND, [billing_arn]),
            FORCE: "true",
            EXISTING: FOUND,
        },
        "search": {PERMITTED: permitted_regexp([search_arn])},
    }
    for namespace, added in expected.items():
        before, held = story.before[namespace], story.held[namespace]
        assert held["labels"] == before["labels"]
        assert annotations_of(held) == {
            **{k: v for k, v in annotations_of(before).items() if k != PERMITTED},
            **added,
        }
        # The other labels and annotations are still their owners'.
        assert owners(held, "owner") == {"kubectl-annotate"}
    # kubectl-annotate no longer owns billing's annotation: the takeover did, with force.
    assert "kubectl-annotate" not in owners(story.held["billing"], PERMITTED)
    assert owners(story.held["search"], PERMITTED) and "kubectl-annotate" not in owners(
        story.held["search"], PERMITTED
    )


def test_application_pods_get_exactly_their_role_as_kiam_decides(story: Story) -> None:
    apps = story.outputs["applications"]
    assert story.granted_while_held == {
        "billing-api": apps["billing"]["roleArn"],
        "search-api": apps["search"]["roleArn"],
        # While held, the roles the running kiam admitted stay admitted.
        "billing-reports": f"{BASE}billing-reports",
        # Another namespace's role: refused.
        "billing-in-search": None,
    }


def test_a_conflicting_owner_stops_up_and_keeps_its_value(story: Story) -> None:
    assert story.conflict_preview is not None and story.conflict_up is not None
    # The provider dry-runs a new patch with force: a preview cannot see the conflict.
    assert story.conflict_preview.returncode == 0
    assert story.conflict_up.returncode != 0
    output = story.conflict_up.output
    assert "kiam-permissions-legacy" in output
    assert 'conflict with "kubectl-annotate"' in output
    assert ".metadata.annotations.iam.amazonaws.com/permitted" in output
    assert annotations_of(story.after_conflict["legacy"]) == annotations_of(story.before["legacy"])


def test_a_declared_value_the_namespace_does_not_hold_is_refused_before_the_takeover(
    story: Story,
) -> None:
    assert story.wrong_value_up is not None and story.wrong_value_up.returncode != 0
    output = story.wrong_value_up.output
    assert "kiam-permissions-legacy-existing" in output
    assert 'conflict with "kubectl-annotate"' in output
    # The takeover patch never ran: no force annotation, no record, the value as it was.
    assert annotations_of(story.after_wrong_value["legacy"]) == annotations_of(
        story.before["legacy"]
    )


def test_giving_back_restores_the_found_value(story: Story) -> None:
    assert story.give_back_steps == {
        (PATCH, "kiam-permissions-billing"): "update",
        (PATCH, "kiam-permissions-billing-given-back"): "create",
    }
    assert annotations_of(story.given_back["billing"])[PERMITTED] == FOUND
    assert story.granted_after_give_back["billing-reports"] == f"{BASE}billing-reports"
    assert story.granted_after_give_back["billing-api"] is None


def test_destroy_leaves_every_namespace_as_it_was_found(story: Story) -> None:
    for namespace in NAMESPACES:
        before, after = story.before[namespace], story.destroyed[namespace]
        assert after["labels"] == before["labels"], namespace
        assert annotations_of(after) == annotations_of(before), namespace


def test_a_destroy_while_held_leaves_the_union_never_an_empty_annotation(story: Story) -> None:
    left = annotations_of(story.destroyed_while_held["billing"])
    assert left[PERMITTED].startswith(f"{FOUND}$|")
    assert left[EXISTING] == FOUND
    assert annotations_of(story.destroyed_while_held["search"]) == annotations_of(
        story.before["search"]
    )

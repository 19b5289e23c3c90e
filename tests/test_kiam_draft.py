"""`tools.kiam_draft`: the live cluster's kiam use as a `kiam:applications` draft. One application
per role and namespace, the ARN as kiam resolves it, only what the namespaces admit today, each
blocker named; pasted into a stack file it validates, plans and keeps every guarantee."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kiam_eks.invariants import check_all
from kiam_eks.invariants.recorded import resources_from_recording
from tests.conftest import base_config, expected_of, run_program
from tools import kiam_draft
from tools.application_draft import Workload, draft
from tools.kiam_draft import owners_of

BASE = "arn:aws:iam::111122223333:role/kiam-apps/"
OTHER = "arn:aws:iam::444455556666:role/reports-reader"


def namespace(name: str, permitted: str | None) -> dict[str, Any]:
    annotations = {"iam.amazonaws.com/permitted": permitted} if permitted is not None else {}
    return {"metadata": {"name": name, "annotations": annotations}}


def pod(
    ns: str,
    name: str,
    role: str | None,
    *,
    account: str | None = None,
    owner: tuple[str, str] | None = None,
    node: str = "ip-10-0-0-1",
    phase: str = "Running",
) -> dict[str, Any]:
    meta: dict[str, Any] = {"namespace": ns, "name": name, "annotations": {}}
    if role is not None:
        meta["annotations"]["iam.amazonaws.com/role"] = role
    if owner is not None:
        meta["ownerReferences"] = [{"kind": owner[0], "name": owner[1], "controller": True}]
    spec: dict[str, Any] = {"nodeName": node, "containers": [{"name": "app"}]}
    if account is not None:
        spec["serviceAccountName"] = account
    return {"metadata": meta, "spec": spec, "status": {"phase": phase}}


def controlled(kind: str, ns: str, name: str, owner: tuple[str, str]) -> dict[str, Any]:
    return {
        "kind": kind,
        "metadata": {
            "namespace": ns,
            "name": name,
            "ownerReferences": [{"kind": owner[0], "name": owner[1], "controller": True}],
        },
    }


NAMESPACES = [
    namespace("billing", f"^{BASE}billing-api$"),
    namespace("reports", f"^{OTHER}$"),
    namespace("shop", f"^{BASE}shop-(web|worker)$"),
    namespace("batch", f"^{BASE}nightly$"),
    namespace("legacy", ""),
    namespace("plain", None),
]
PODS = [
    pod("billing", "api-6f9-a", "billing-api", account="api", owner=("ReplicaSet", "api-6f9")),
    pod("billing", "api-6f9-b", "billing-api", account="api", owner=("ReplicaSet", "api-6f9")),
    pod("reports", "reader-0", OTHER, account="reporter", owner=("StatefulSet", "reader")),
    # Two roles on one (the default) service account.
    pod("shop", "web-5d-a", "shop-web", owner=("ReplicaSet", "web-5d")),
    pod("shop", "worker-7c-a", "/shop-worker", owner=("ReplicaSet", "worker-7c")),
    # On Fargate: IRSA only.
    pod(
        "batch",
        "nightly-1-x",
        "nightly",
        account="batch",
        owner=("Job", "nightly-1"),
        node="fargate-ip-1",
    ),
    # Refused by its namespace today.
    pod("legacy", "old-0", "legacy-role", account="old"),
    # Not kiam's: no annotation, or ended.
    pod("plain", "nginx", None),
    pod("billing", "api-migrate", "billing-api", account="api", phase="Succeeded"),
]
NODES = [
    {"metadata": {"name": "ip-10-0-0-1", "labels": {"kubernetes.io/os": "linux"}}},
    {
        "metadata": {
            "name": "fargate-ip-1",
            "labels": {"eks.amazonaws.com/compute-type": "fargate", "kubernetes.io/os": "linux"},
        }
    },
]
OWNERS = owners_of(
    [
        controlled("ReplicaSet", "billing", "api-6f9", ("Deployment", "api")),
        controlled("ReplicaSet", "shop", "web-5d", ("Deployment", "web")),
        controlled("ReplicaSet", "shop", "worker-7c", ("Deployment", "worker")),
    ],
    [controlled("Job", "batch", "nightly-1", ("CronJob", "nightly"))],
)


@pytest.fixture(scope="module")
def drafted() -> Any:
    return draft(
        PODS, NAMESPACES, NODES, OWNERS, role_base_arn=BASE, cluster_account_id="111122223333"
    )


def test_one_application_per_role_and_namespace_with_the_arn_kiam_resolves(drafted: Any) -> None:
    assert drafted.stack_config() == {
        "kiam:applications": {
            "batch-nightly": {
                "namespace": "batch",
                "roleArn": f"{BASE}nightly",
                "serviceAccount": "batch",
            },
            "billing-billing-api": {
                "namespace": "billing",
                "roleArn": f"{BASE}billing-api",
                "serviceAccount": "api",
            },
            "reports-reports-reader": {
                "namespace": "reports",
                "roleArn": OTHER,
                "serviceAccount": "reporter",
            },
            # One leading `/` dropped, as kiam does (`/shop-worker`).
            "shop-shop-web": {"namespace": "shop", "roleArn": f"{BASE}shop-web"},
            "shop-shop-worker": {"namespace": "shop", "roleArn": f"{BASE}shop-worker"},
        },
        # Every annotation found, as it is: the stack takes each over without changing it.
        "kiam:existingPermitted": {
            "batch": f"^{BASE}nightly$",
            "billing": f"^{BASE}billing-api$",
            "legacy": "",
            "reports": f"^{OTHER}$",
            "shop": f"^{BASE}shop-(web|worker)$",
        },
    }


def test_each_blocker_is_named_with_what_to_do(drafted: Any) -> None:
    blockers = {a.key: a.blockers for a in drafted.applications}
    assert blockers == {
        "batch-nightly": [
            "podIdentity: pods nightly-1-x on Fargate node fargate-ip-1: EKS Pod Identity serves "
            "Linux Amazon EC2 nodes only; move it to irsa instead"
        ],
        "billing-billing-api": [],
        "reports-reports-reader": [
            "the role is in account 444455556666: Pod Identity reaches it by role chaining (the "
            "stack creates the chain role), IRSA through an IAM OIDC provider for the cluster in "
            "account 444455556666; either way its owner adds what the stack output "
            "applications.<app>.trust.next says"
        ],
        "shop-shop-web": [
            "service account default also runs Deployment/shop/worker with other roles; a "
            "service account gets one role: give Deployment/shop/web a service account of their "
            "own"
        ],
        "shop-shop-worker": [
            "service account default also runs Deployment/shop/web with other roles; a service "
            "account gets one role: give Deployment/shop/worker a service account of their own"
        ],
    }
    workloads = {a.key: a.workloads for a in drafted.applications}
    assert workloads["billing-billing-api"] == [Workload("billing", "Deployment", "api")]
    assert workloads["batch-nightly"] == [Workload("batch", "CronJob", "nightly")]
    assert workloads["reports-reports-reader"] == [Workload("reports", "StatefulSet", "reader")]


def test_what_kiam_refuses_today_is_left_out_and_listed(drafted: Any) -> None:
    assert drafted.not_admitted == [
        "legacy/old-0: namespace legacy does not admit arn:aws:iam::111122223333:role/kiam-apps/"
        "legacy-role today (iam.amazonaws.com/permitted: ''): kiam refuses it already"
    ]
    assert drafted.unresolved == []


def test_the_default_service_account_alone_is_a_blocker() -> None:
    found = draft(
        [pod("solo", "a", "solo-role")],
        [namespace("solo", f"^{BASE}solo-role$")],
        NODES,
        {},
        role_base_arn=BASE,
        cluster_account_id="111122223333",
    )
    (app,) = found.applications
    assert app.service_account is None
    assert app.blockers == [
        "its pods run as the namespace's default service account: give its workloads a service "
        "account of their own before moving, so the role goes to them alone"
    ]


def merged_config(drafted: Any) -> dict[str, Any]:
    return {**base_config(), **drafted.stack_config()}


def test_pasted_into_a_stack_file_the_draft_plans_and_keeps_every_guarantee(drafted: Any) -> None:
    config = merged_config(drafted)
    run = run_program(config)
    assert check_all(resources_from_recording(run), expected_of(config)) == []
    # The namespaces admit what they admitted: the union of the value found and the same roles.
    patches = {
        r.inputs["metadata"]["name"]: r.inputs["metadata"]["annotations"][
            "iam.amazonaws.com/permitted"
        ]
        for r in run.by_type("kubernetes:core/v1:NamespacePatch")
        if not r.name.endswith("-existing")
    }
    assert patches["billing"] == (
        f"^{BASE}billing-api$$|^(arn:aws:iam::111122223333:role/kiam-apps/billing-api)$"
    )


def _cluster(
    monkeypatch: pytest.MonkeyPatch,
    pods: list[dict[str, Any]] = PODS,
    namespaces: list[dict[str, Any]] = NAMESPACES,
) -> None:
    """The command reads these objects instead of a cluster's."""
    monkeypatch.setattr(
        kiam_draft,
        "read_objects",
        lambda kubeconfig: {
            "pods": pods,
            "namespaces": namespaces,
            "nodes": NODES,
            "replicasets": [],
            "jobs": [],
        },
    )


def test_the_command_prints_the_section_to_paste_and_exits_0(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stack = tmp_path / "Pulumi.draft.yaml"
    stack.write_text(yaml.safe_dump({"config": base_config()}))
    _cluster(monkeypatch)
    args = ["--config-file", str(stack), "--kubeconfig", str(tmp_path / "k")]
    assert kiam_draft.main(args) == 0
    printed = capsys.readouterr().out
    assert "  # blocks a move: podIdentity: pods nightly-1-x on Fargate node" in printed
    pasted = yaml.safe_load(printed)
    assert (
        pasted
        == draft(
            PODS, NAMESPACES, NODES, {}, role_base_arn=BASE, cluster_account_id="111122223333"
        ).stack_config()
    )
    assert kiam_draft.main([*args, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["problems"] == []


def test_a_draft_the_stack_would_refuse_exits_1_naming_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stack = tmp_path / "Pulumi.draft.yaml"
    stack.write_text(yaml.safe_dump({"config": base_config()}))
    # A namespace admitting every role of the application path: another namespace's too.
    broad = [namespace("billing", f"^{BASE}.*$"), namespace("shop", f"^{BASE}shop-web$")]
    pods = [
        pod("billing", "api", "billing-api", account="api"),
        pod("shop", "web", "shop-web", account="web"),
    ]
    _cluster(monkeypatch, pods, broad)
    args = ["--config-file", str(stack), "--kubeconfig", str(tmp_path / "k"), "--json"]
    assert kiam_draft.main(args) == 1
    assert json.loads(capsys.readouterr().out)["problems"] == [
        f"kiam:existingPermitted.billing '^{BASE}.*$' admits {BASE}shop-web, the role of "
        "application shop-shop-web in namespace shop: pods of billing could assume it. Narrow "
        "the annotation first (kubectl annotate --overwrite namespace billing "
        "iam.amazonaws.com/permitted=...) and give the narrowed value"
    ]


def test_a_namespace_the_cluster_lacks_is_bad_input_and_nothing_is_drafted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stack = tmp_path / "Pulumi.draft.yaml"
    stack.write_text(yaml.safe_dump({"config": base_config()}))
    _cluster(monkeypatch)
    args = ["--config-file", str(stack), "--kubeconfig", str(tmp_path / "k"), "--json"]
    assert kiam_draft.main([*args, "--namespace", "billing", "--namespace", "ghost"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"{stack}: --namespace ghost: the cluster has no such namespace (it has batch, billing, "
        "legacy, plain, reports, shop)\n"
    )


def test_drafting_one_namespace_keeps_the_stack_files_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stack = tmp_path / "Pulumi.draft.yaml"
    # An application of another namespace already named like the one billing's draft would get.
    others = {
        "billing-billing-api": {"namespace": "shop", "roleName": "shop-web"},
    }
    stack.write_text(yaml.safe_dump({"config": {**base_config(), "kiam:applications": others}}))
    _cluster(monkeypatch)
    args = ["--config-file", str(stack), "--kubeconfig", str(tmp_path / "k"), "--json"]
    assert kiam_draft.main([*args, "--namespace", "billing"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["config"] == {
        "kiam:applications": {
            "billing-billing-api-2": {
                "namespace": "billing",
                "roleArn": f"{BASE}billing-api",
                "serviceAccount": "api",
            }
        },
        "kiam:existingPermitted": {"billing": f"^{BASE}billing-api$"},
    }
    assert found["problems"] == []
    # Only billing is read: legacy's refused pod is not listed.
    assert found["notAdmitted"] == []


def test_drawn_again_the_draft_keeps_the_names_and_found_values_the_stack_holds() -> None:
    # The stack holds billing's annotation as the union of the value it found and its roles.
    held = f"^{BASE}billing-api$$|^(arn:aws:iam::111122223333:role/kiam-apps/billing-api)$"
    namespaces = [namespace("billing", held)]
    again = draft(
        PODS,
        namespaces,
        NODES,
        OWNERS,
        role_base_arn=BASE,
        cluster_account_id="111122223333",
        taken_keys=["api"],
        known={("billing", f"{BASE}billing-api"): "api"},
        held_permitted={"billing": f"^{BASE}billing-api$"},
    )
    assert again.stack_config() == {
        "kiam:applications": {
            "api": {
                "namespace": "billing",
                "roleArn": f"{BASE}billing-api",
                "serviceAccount": "api",
            }
        },
        "kiam:existingPermitted": {"billing": f"^{BASE}billing-api$"},
    }

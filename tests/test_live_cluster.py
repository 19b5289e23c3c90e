"""What only the running cluster knows, read at preview (program/live_cluster.py): a step that stops
kiam serving a role (an application's last step off kiam, the retirement) is refused while a pod
gets its credentials from kiam alone, naming the pods and the rollout that recreates them; a
cluster that cannot be read refuses the step; any other change reads nothing."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pulumi
import pytest

from kiam_eks.contracts import tokens
from kiam_eks.program import providers
from kiam_eks.program.live_cluster import restart_command
from kiam_eks.settings.loader import settings_from_values
from tests.conftest import BASE_CONFIG, base_config
from tests.test_kiam_usage import PI_ENV, namespace, pod
from tools.mock_engine import (
    MockCluster,
    MockEngine,
    Recording,
    mock_cluster_authority,
    mock_cluster_endpoint,
    run_main,
)

MOVING = {"namespace": "billing", "roleName": "billing-api", "serviceAccount": "api"}


def config(state: str, **top: Any) -> dict[str, Any]:
    billing = (
        {**MOVING, "servedBy": state}
        if state != "kiam"
        else {"namespace": "billing", "roleName": "billing-api"}
    )
    return base_config(
        applications={"billing": billing},
        podIdentityAgent={"manageAddon": True},
        **top,
    )


def owned(raw: dict[str, Any], kind: str, name: str, **labels: str) -> dict[str, Any]:
    raw["metadata"]["ownerReferences"] = [{"kind": kind, "name": name, "controller": True}]
    raw["metadata"]["labels"] = labels
    return raw


def created_under_kiam(count: int, digits: int = 1) -> list[dict[str, Any]]:
    """Pods of Deployment api created while kiam alone served billing: the annotation, no Pod
    Identity wiring."""
    return [
        owned(
            pod("billing", f"api-7d4b9c-{i:0{digits}}", role="billing-api", account="api"),
            "ReplicaSet",
            "api-7d4b9c",
            **{"pod-template-hash": "7d4b9c"},
        )
        for i in range(count)
    ]


UNDER_KIAM = created_under_kiam(2)
# Recreated once the association existed: EKS wired them; the annotation stays, unused.
RECREATED = [
    pod("billing", f"api-5f6a7b-{i}", role="billing-api", account="api", env=PI_ENV)
    for i in range(2)
]
NAMESPACES = (namespace("billing"),)


@pytest.fixture(scope="module")
def moving() -> Recording:
    """billing served by kiam and Pod Identity (the moving state), installed."""
    return run_main(config("kiam+podIdentity"), stack="test")


def last_step_refusal(moving: Recording, cluster: MockCluster) -> str:
    """The refusal of billing's last step off kiam on `cluster`."""
    with pytest.raises(Exception) as refused:
        run_main(config("podIdentity"), stack="test", last_run=moving, cluster=cluster)
    return str(refused.value)


def test_the_last_step_off_kiam_is_refused_while_pods_created_under_kiam_run(
    moving: Recording, registered_types: list[str]
) -> None:
    cluster = MockCluster(pods=(*UNDER_KIAM, *RECREATED), namespaces=NAMESPACES)
    registered_types.clear()
    assert (
        "kiam:applications.billing.servedBy: kiam+podIdentity to podIdentity stops kiam serving "
        "arn:aws:iam::111122223333:role/kiam-apps/billing-api, and 2 pods created before any "
        "other wiring still get their credentials from kiam alone: billing/api-7d4b9c-0, "
        "billing/api-7d4b9c-1 (kubectl rollout restart deployment/api -n billing). Recreate them "
        "first (they take Pod Identity when created again), then `pulumi up` again"
    ) in last_step_refusal(moving, cluster)
    # Refused before the Kubernetes provider: nothing of kiam's is registered.
    assert tokens.KIAM not in registered_types
    assert "pulumi:providers:kubernetes" not in registered_types


def test_the_last_step_off_kiam_applies_once_the_pods_are_recreated(moving: Recording) -> None:
    cluster = MockCluster(pods=tuple(RECREATED), namespaces=NAMESPACES)
    after = run_main(config("podIdentity"), stack="test", last_run=moving, cluster=cluster)
    assert after.stack_outputs["applications"]["billing"]["servedBy"] == "podIdentity"


def test_a_cluster_that_cannot_be_read_refuses_the_step_and_says_why(moving: Recording) -> None:
    cluster = MockCluster(unreadable='pods is forbidden: User "ci" cannot list resource "pods"')
    assert (
        "kiam:applications.billing.servedBy: kiam+podIdentity to podIdentity stops kiam serving "
        "pods, and the cluster at https://mock-cluster.invalid cannot be read to check that none "
        "still gets its credentials from kiam alone (ApiError: HTTP 403: pods is forbidden: User "
        '"ci" cannot list resource "pods"). Preview where the cluster can be read'
    ) in last_step_refusal(moving, cluster)


def test_a_change_that_keeps_kiam_serving_reads_nothing(moving: Recording) -> None:
    """Most updates never touch the cluster's pods: an unreadable cluster does not matter."""
    cluster = MockCluster(unreadable="not to be read")
    after = config("kiam+podIdentity", agent={"logLevel": "debug"})
    run_main(after, stack="test", last_run=moving, cluster=cluster)
    back = config("kiam")
    run_main(back, stack="test", last_run=moving, cluster=cluster)


def test_the_retirement_is_refused_while_a_pod_still_asks_kiam() -> None:
    served = run_main(config("podIdentity"), stack="test", cluster=MockCluster())
    other = owned(pod("reports", "nightly-0", role="reports"), "StatefulSet", "nightly")
    cluster = MockCluster(
        pods=(*RECREATED, other), namespaces=(*NAMESPACES, namespace("reports", "^.*$"))
    )
    with pytest.raises(Exception) as refused:
        run_main(config("podIdentity", retire=True), stack="test", last_run=served, cluster=cluster)
    assert (
        "kiam:retire: the retirement removes kiam, and 1 pod created before any other wiring "
        "still get their credentials from kiam alone: reports/nightly-0 (kubectl rollout "
        "restart statefulset/nightly -n reports). Recreate them first (recreate them with Pod "
        "Identity or IRSA wiring, or without the annotation), then `pulumi up` again"
    ) in str(refused.value)
    retired = run_main(
        config("podIdentity", retire=True),
        stack="test",
        last_run=served,
        cluster=MockCluster(pods=tuple(RECREATED), namespaces=NAMESPACES),
    )
    # Retired: kiam's outputs are gone (program/stack.py).
    assert "serverRoleArn" not in retired.stack_outputs
    assert "serverRoleArn" in served.stack_outputs


@pytest.mark.parametrize("auth", ["token", "exec"])
def test_the_program_reads_the_cluster_its_provider_reaches(
    auth: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Without `kiam:kubeconfig`: the EKS cluster's endpoint and authority, with the provider's
    token or the one `aws eks get-token` prints (run once; here a stand-in `aws` on PATH)."""
    aws = tmp_path / "aws"
    aws.write_text(
        f"#!{sys.executable}\nimport json, sys\n"
        "print(json.dumps({'kind': 'ExecCredential', 'status': {'token': ' '.join(sys.argv[1:])}}))\n"
    )
    aws.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    read: list[Any] = []
    monkeypatch.setattr(providers, "KubeApi", lambda document: read.append(document))
    values = config("podIdentity", cluster={**BASE_CONFIG["kiam:cluster"], "kubernetesAuth": auth})
    settings = settings_from_values({k.removeprefix("kiam:"): v for k, v in values.items()}, "t")
    MockEngine().run(lambda: providers.connect_to_cluster(settings, pulumi.InvokeOptions())())
    token = (
        "k8s-aws-v1.mock-token"
        if auth == "token"
        else "eks get-token --cluster-name test --region eu-west-1"
    )
    assert read == [
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "test",
                    "cluster": {
                        "server": mock_cluster_endpoint("test", "eu-west-1"),
                        "certificate-authority-data": mock_cluster_authority("test"),
                    },
                }
            ],
            "users": [{"name": "pulumi", "user": {"token": token}}],
            "contexts": [{"name": "test", "context": {"cluster": "test", "user": "pulumi"}}],
            "current-context": "test",
        }
    ]


@pytest.mark.parametrize(
    ("owner", "labels", "command"),
    [
        (
            ("ReplicaSet", "web-6c9f"),
            {"pod-template-hash": "6c9f"},
            "kubectl rollout restart deployment/web -n ns",
        ),
        # A ReplicaSet no Deployment made: its name does not end in the pod's hash.
        (("ReplicaSet", "web"), {}, "recreate them: their owner is ReplicaSet web"),
        (("StatefulSet", "db"), {}, "kubectl rollout restart statefulset/db -n ns"),
        (("DaemonSet", "logs"), {}, "kubectl rollout restart daemonset/logs -n ns"),
        (("Job", "once-1"), {}, "recreate them: their owner is Job once-1"),
        (None, {}, "recreate them: no workload owns them"),
    ],
)
def test_the_rollout_named_is_the_one_that_recreates_the_pod(
    owner: tuple[str, str] | None, labels: dict[str, str], command: str
) -> None:
    raw = pod("ns", "p-0")
    if owner is not None:
        owned(raw, *owner, **labels)
    assert restart_command(raw) == command


def test_many_pods_of_one_workload_are_counted_not_listed(moving: Recording) -> None:
    cluster = MockCluster(pods=tuple(created_under_kiam(25, digits=2)), namespaces=NAMESPACES)
    shown = ", ".join(f"billing/api-7d4b9c-{i:02}" for i in range(10))
    assert (
        f"25 pods created before any other wiring still get their credentials from kiam alone: "
        f"{shown} and 15 more (kubectl rollout restart deployment/api -n billing)."
    ) in last_step_refusal(moving, cluster)


# --- agents widened onto nodes that ran without them ---------------------------------------------

GPU = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def node(name: str, *taints: tuple[str, str, str], **labels: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {"taints": [{"key": k, "value": v, "effect": e} for k, v, e in taints]},
    }


def on(raw: dict[str, Any], node_name: str) -> dict[str, Any]:
    raw["spec"]["nodeName"] = node_name
    return raw


NODES = (
    node("worker-0"),
    # A DaemonSet tolerates node.kubernetes.io/* itself; PreferNoSchedule keeps no pod off.
    node(
        "worker-1",
        ("node.kubernetes.io/unschedulable", "", "NoSchedule"),
        ("spot", "", "PreferNoSchedule"),
    ),
    node("gpu-0", ("nvidia.com/gpu", "a100", "NoSchedule")),
    node(
        "gpu-1",
        ("nvidia.com/gpu", "a100", "NoSchedule"),
        ("node.kubernetes.io/not-ready", "", "NoExecute"),
    ),
    # Tolerating the GPU taint is not enough here.
    node("gpu-db-0", ("nvidia.com/gpu", "a100", "NoSchedule"), ("db", "", "NoExecute")),
    # kiam's own servers: the agents' affinity keeps them off, whatever they tolerate.
    node("kiam-0", ("dedicated", "kiam-server", "NoSchedule"), dedicated="kiam-server"),
)
ON_GPUS = (
    on(pod("ml", "trainer-0"), "gpu-0"),  # the node's own role today
    on(pod("ml", "trainer-1", role="ml-trainer"), "gpu-1"),
    on(pod("ml", "tagger-0", account="tagger", env=PI_ENV), "gpu-1"),
    on(pod("ml", "done-0", phase="Succeeded"), "gpu-0"),  # ended: not counted
    on(pod("web", "front-0"), "worker-0"),  # where agents run already
)


@pytest.fixture(scope="module")
def installed() -> Recording:
    return run_main(base_config(), stack="test")


def test_widened_agents_name_the_nodes_they_start_on_and_what_runs_there(
    installed: Recording, caplog: pytest.LogCaptureFixture
) -> None:
    cluster = MockCluster(pods=ON_GPUS, nodes=NODES)
    run_main(
        base_config(agent={"tolerations": [GPU]}), stack="test", last_run=installed, cluster=cluster
    )
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert (
        "kiam:agent.tolerations: the agents start on 2 nodes they do not run on now: gpu-0, "
        "gpu-1; 3 pods run there; 1 with neither a kiam annotation nor Pod Identity or IRSA "
        "wiring reach the node's own instance role today, and get 404 from kiam's agent for any "
        "role once it runs there: ml/trainer-0 (give each the kiam annotation of a role, or Pod "
        "Identity or IRSA, before this update if it calls AWS); 1 with the kiam annotation, which "
        "kiam starts serving: ml/trainer-1; 1 wired to Pod Identity or IRSA, which kiam does not "
        "change"
    ) in warnings


def test_agents_not_widened_read_no_nodes(
    installed: Recording, caplog: pytest.LogCaptureFixture
) -> None:
    cluster = MockCluster(unreadable="not to be read")
    run_main(
        base_config(agent={"logLevel": "debug"}), stack="test", last_run=installed, cluster=cluster
    )
    assert not [r for r in caplog.records if "kiam:agent.tolerations" in r.getMessage()]


def test_a_widening_the_cluster_cannot_show_is_said_and_applied(
    installed: Recording, caplog: pytest.LogCaptureFixture
) -> None:
    cluster = MockCluster(unreadable="nodes is forbidden")
    run_main(
        base_config(agent={"tolerations": [GPU]}), stack="test", last_run=installed, cluster=cluster
    )
    assert (
        "kiam:agent.tolerations: the agents will tolerate more taints, and the cluster at "
        "https://mock-cluster.invalid cannot be read to say which nodes they start on and what "
        "runs there (ApiError: HTTP 403: nodes is forbidden)"
    ) in [r.getMessage() for r in caplog.records]

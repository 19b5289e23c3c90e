"""kiam-server: Deployment, headless Service, PDB, RBAC; placement, probes, privileges and ordering."""

from __future__ import annotations

import pytest

from kiam_eks.contracts import tokens
from tests.conftest import base_config, only_container, pod_spec, run_program, types_and_names
from tools.mock_engine import Recording

DEPLOYMENT = "kubernetes:apps/v1:Deployment"
SERVER_SELECTOR = {"app.kubernetes.io/name": "kiam", "app.kubernetes.io/component": "server"}


def test_children_and_parentage(base_run: Recording) -> None:
    component = base_run.one(tokens.SERVER)
    assert component.parent == base_run.one(tokens.KIAM).urn
    assert types_and_names(base_run.children_of(component.urn)) == {
        ("kubernetes:core/v1:ServiceAccount", "kiam-server"),
        ("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole", "kiam-server"),
        ("kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding", "kiam-server"),
        ("kubernetes:core/v1:Service", "kiam-server"),
        ("kubernetes:policy/v1:PodDisruptionBudget", "kiam-server"),
        (DEPLOYMENT, "kiam-server"),
    }


def test_rbac_reads_pods_and_namespaces_and_writes_events(base_run: Recording) -> None:
    role = base_run.one("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole")
    assert role.inputs["apiVersion"] == "rbac.authorization.k8s.io/v1"
    assert role.inputs["rules"] == [
        {"apiGroups": [""], "resources": ["pods", "namespaces"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},
    ]
    binding = base_run.one("kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding")
    assert binding.inputs["subjects"] == [
        {"kind": "ServiceAccount", "name": "kiam-server", "namespace": "kiam"}
    ]
    assert binding.inputs["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "kiam-server",
    }


def test_service_is_headless_and_selects_server_pods(base_run: Recording) -> None:
    service = base_run.one("kubernetes:core/v1:Service")
    assert service.inputs["metadata"]["name"] == "kiam-server"
    assert service.inputs["spec"] == {
        "clusterIP": "None",
        "selector": SERVER_SELECTOR,
        "ports": [
            {"name": "grpc", "port": 9610, "targetPort": "grpc", "protocol": "TCP"},
            {"name": "metrics", "port": 9620, "targetPort": "metrics", "protocol": "TCP"},
        ],
    }


def test_pdb_allows_one_server_down(base_run: Recording) -> None:
    pdb = base_run.one("kubernetes:policy/v1:PodDisruptionBudget")
    assert pdb.inputs["spec"] == {"maxUnavailable": 1, "selector": {"matchLabels": SERVER_SELECTOR}}


def test_hard_anti_affinity_on_hostname_selecting_servers_only(base_run: Recording) -> None:
    spec = pod_spec(base_run.one(DEPLOYMENT))
    assert spec["affinity"] == {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": SERVER_SELECTOR},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }
    agent_labels = base_run.one("kubernetes:apps/v1:DaemonSet").inputs["spec"]["template"][
        "metadata"
    ]["labels"]
    assert agent_labels["app.kubernetes.io/component"] == "agent"
    assert spec["topologySpreadConstraints"] == [
        {
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": SERVER_SELECTOR},
        }
    ]


def test_tolerates_its_taint_and_dead_nodes_briefly_and_nothing_else(base_run: Recording) -> None:
    spec = pod_spec(base_run.one(DEPLOYMENT))
    assert spec["tolerations"] == [
        {"key": "dedicated", "operator": "Equal", "value": "kiam-server", "effect": "NoSchedule"},
        {
            "key": "node.kubernetes.io/not-ready",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 30,
        },
        {
            "key": "node.kubernetes.io/unreachable",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 30,
        },
    ]


def test_pinned_to_the_node_group_by_its_actual_name(base_run: Recording) -> None:
    deployment, group = base_run.one(DEPLOYMENT), base_run.one("aws:eks/nodeGroup:NodeGroup")
    assert pod_spec(deployment)["nodeSelector"] == {
        "eks.amazonaws.com/nodegroup": group.outputs["nodeGroupName"]
    }
    assert group.urn in deployment.property_dependencies["spec"]


def test_without_a_spare_node_the_rollout_stops_one_server_before_starting_its_successor(
    base_run: Recording,
) -> None:
    deployment = base_run.one(DEPLOYMENT)
    spec = deployment.inputs["spec"]
    # The base stack: three servers on three nodes (desiredSize 3), so no node is spare.
    assert spec["replicas"] == 3
    assert spec["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1},
    }


@pytest.mark.parametrize(("desired", "replicas"), [(4, 3), (5, 2)])
def test_with_a_spare_node_a_new_server_is_ready_before_an_old_one_stops(
    desired: int, replicas: int
) -> None:
    rec = run_program(
        base_config(
            node_group={"desiredSize": desired, "maxSize": 6}, server={"replicas": replicas}
        )
    )
    assert rec.one(DEPLOYMENT).inputs["spec"]["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0},
    }


def test_the_rollout_is_awaited_long_enough(base_run: Recording) -> None:
    deployment = base_run.one(DEPLOYMENT)
    spec = deployment.inputs["spec"]
    assert spec["progressDeadlineSeconds"] == 1200
    assert deployment.custom_timeouts == {"create": "20m", "update": "20m"}


@pytest.mark.parametrize("replicas", [3, 2])
def test_up_waits_until_every_server_is_updated_and_available_and_no_old_one_is_left(
    replicas: int,
) -> None:
    # Not the provider's own Deployment wait, which can return with one new server Ready
    # (contracts/rollout_wait.py): the engine deletes a replaced node group once this returns.
    rec = run_program(base_config(server={"replicas": replicas}))
    assert rec.one(DEPLOYMENT).inputs["metadata"]["annotations"] == {
        "pulumi.com/waitFor": (
            f'["jsonpath={{.status.updatedReplicas}}={replicas}", '
            f'"jsonpath={{.status.replicas}}={replicas}", '
            f'"jsonpath={{.status.availableReplicas}}={replicas}"]'
        )
    }


def test_args_probes_resources_and_priority(base_run: Recording) -> None:
    deployment = base_run.one(DEPLOYMENT)
    server_role = base_run.one("aws:iam/role:Role", "kiam-iam-server")
    c = only_container(deployment)
    assert c["command"] == ["/kiam"]
    assert c["args"] == [
        "server",
        "--json-log",
        "--level=info",
        "--bind=0.0.0.0:9610",
        "--cert=/etc/kiam/tls/tls.crt",
        "--key=/etc/kiam/tls/tls.key",
        "--ca=/etc/kiam/tls/ca.crt",
        "--role-base-arn=arn:aws:iam::111122223333:role/kiam-apps/",
        f"--assume-role-arn={server_role.outputs['arn']}",
        "--session-duration=60m",
        "--session-refresh=20m",
        "--sync=1m",
        "--region=eu-west-1",
        "--prometheus-listen-addr=0.0.0.0:9620",
        "--grpc-max-connection-age-duration=15m",
        "--grpc-max-connection-idle-duration=15m",
        "--grpc-max-connection-age-grace-duration=15s",
    ]
    health = [
        "/kiam", "health", "--cert=/etc/kiam/tls/tls.crt", "--key=/etc/kiam/tls/tls.key",
        "--ca=/etc/kiam/tls/ca.crt", "--server-address=127.0.0.1:9610",
        "--gateway-timeout-creation=1s", "--timeout=5s",
    ]  # fmt: skip
    assert c["readinessProbe"]["exec"]["command"] == health
    assert c["livenessProbe"]["exec"]["command"] == health
    assert c["resources"] == {
        "requests": {"cpu": "50m", "memory": "128Mi"},
        "limits": {"memory": "256Mi"},
    }
    assert pod_spec(deployment)["priorityClassName"] == "system-cluster-critical"
    assert c["image"] == "quay.io/uswitch/kiam:v4.2"


def test_runs_as_nobody_with_no_capabilities_and_a_read_only_root(base_run: Recording) -> None:
    spec = pod_spec(base_run.one(DEPLOYMENT))
    assert spec["securityContext"] == {
        "runAsNonRoot": True,
        "runAsUser": 65534,
        "runAsGroup": 65534,
        "fsGroup": 65534,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert only_container(base_run.one(DEPLOYMENT))["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }


def test_tls_secret_is_mounted_as_a_directory(base_run: Recording) -> None:
    deployment = base_run.one(DEPLOYMENT)
    assert pod_spec(deployment)["volumes"] == [
        {"name": "tls", "secret": {"secretName": "kiam-server-certificate", "defaultMode": 0o440}}
    ]
    assert only_container(deployment)["volumeMounts"] == [
        {"name": "tls", "mountPath": "/etc/kiam/tls", "readOnly": True}
    ]


def test_waits_for_tls_rbac_and_service(base_run: Recording) -> None:
    deployment = base_run.one(DEPLOYMENT)
    for type_, name in [
        ("kubernetes:core/v1:Secret", "kiam-tls-server"),
        ("kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding", "kiam-server"),
        ("kubernetes:core/v1:Service", "kiam-server"),
    ]:
        assert base_run.one(type_, name).urn in deployment.dependencies


def test_settings_reach_the_pod() -> None:
    rec = run_program(
        base_config(
            server={
                "replicas": 2,
                "extraArgs": ["--fetchers=16"],
                "unhealthyNodeTolerationSeconds": 60,
                "rolloutTimeoutMinutes": 30,
            }
        )
    )
    deployment = rec.one(DEPLOYMENT)
    assert deployment.inputs["spec"]["replicas"] == 2
    assert only_container(deployment)["args"][-1] == "--fetchers=16"
    assert {t.get("tolerationSeconds") for t in pod_spec(deployment)["tolerations"]} == {None, 60}
    assert deployment.custom_timeouts == {"create": "30m", "update": "30m"}
    assert deployment.inputs["spec"]["progressDeadlineSeconds"] == 1800

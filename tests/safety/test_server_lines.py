"""components/server.py: what the mutants the other tests let live would change."""

from __future__ import annotations

from typing import Any

import pytest

from kiam_eks.components.server import ServerArgs, rolling_update
from kiam_eks.specs import kiam_flags
from tests.conftest import base_config, only_container, pod_spec, run_program
from tests.safety import assert_frozen_and_keyword_only, stack_settings
from tools.mock_engine import Recording

DEPLOYMENT = "kubernetes:apps/v1:Deployment"


@pytest.fixture(scope="module")
def server(base_run: Recording) -> Any:
    return base_run.one(DEPLOYMENT)


def test_the_args_are_a_frozen_keyword_only_value() -> None:
    settings = stack_settings(base_config())
    assert_frozen_and_keyword_only(
        ServerArgs,
        settings=settings.server,
        namespace="kube-system",
        region="eu-west-1",
        node_group_name="kiam-server-1",
        node_taint=settings.node_group.taint,
        spare_nodes=0,
        server_role_arn="arn:aws:iam::111122223333:role/kiam-server",
        role_base_arn="arn:aws:iam::111122223333:role/",
        tls_secret=object(),
        adoption=object(),
    )


@pytest.mark.parametrize(
    ("spare_nodes", "strategy"),
    [(0, {"maxSurge": 0, "maxUnavailable": 1}), (1, {"maxSurge": 1, "maxUnavailable": 0})],
)
def test_one_spare_node_is_enough_to_start_a_server_before_stopping_one(
    spare_nodes: int, strategy: dict[str, int]
) -> None:
    assert rolling_update(spare_nodes) == strategy


def test_a_server_is_available_after_ten_ready_seconds_and_has_thirty_to_stop(
    server: Any,
) -> None:
    assert server.inputs["spec"]["minReadySeconds"] == 10
    assert pod_spec(server)["terminationGracePeriodSeconds"] == 30


def test_the_probes_exactly(server: Any) -> None:
    container = only_container(server)
    probe = {
        "exec": {"command": kiam_flags.health_command(stack_settings(base_config()).server)},
        "periodSeconds": 10,
        "timeoutSeconds": 10,
        "failureThreshold": 3,
    }
    assert container["readinessProbe"] == {**probe, "initialDelaySeconds": 5}
    assert container["livenessProbe"] == {**probe, "initialDelaySeconds": 30}


def test_servers_spread_over_zones_by_at_most_one(server: Any) -> None:
    (constraint,) = pod_spec(server)["topologySpreadConstraints"]
    assert constraint["maxSkew"] == 1
    assert constraint["whenUnsatisfiable"] == "ScheduleAnyway"


def test_the_certificate_is_readable_by_the_servers_group(server: Any) -> None:
    (tls,) = pod_spec(server)["volumes"]
    assert tls["secret"]["defaultMode"] == 0o440


def test_the_pdb_allows_exactly_one_server_down(base_run: Recording) -> None:
    pdb = base_run.one("kubernetes:policy/v1:PodDisruptionBudget")
    assert pdb.inputs["spec"]["maxUnavailable"] == 1


@pytest.mark.parametrize(
    ("port", "sysctls"),
    [(1023, [{"name": "net.ipv4.ip_unprivileged_port_start", "value": "1023"}]), (1024, None)],
)
def test_only_a_port_below_1024_opens_the_unprivileged_port_range(
    port: int, sysctls: list[dict[str, str]] | None
) -> None:
    rec = run_program(base_config(server={"grpcPort": port}))
    assert pod_spec(rec.one(DEPLOYMENT))["securityContext"].get("sysctls") == sysctls


def test_the_cluster_wide_rbac_carries_no_namespace(base_run: Recording) -> None:
    for kind in ("ClusterRole", "ClusterRoleBinding"):
        reg = base_run.one(f"kubernetes:rbac.authorization.k8s.io/v1:{kind}")
        assert sorted(reg.inputs["metadata"]) == ["labels", "name"], kind


def test_every_namespaced_server_object_is_in_kiams_namespace(base_run: Recording) -> None:
    namespace = stack_settings(base_config()).namespace.name
    for kind in (
        "core/v1:ServiceAccount",
        "core/v1:Service",
        "policy/v1:PodDisruptionBudget",
        "apps/v1:Deployment",
    ):
        reg = base_run.one(f"kubernetes:{kind}", "kiam-server")
        assert reg.inputs["metadata"]["namespace"] == namespace, kind


def test_without_names_to_restart_for_the_server_pods_carry_no_annotation(server: Any) -> None:
    assert sorted(server.inputs["spec"]["template"]["metadata"]) == ["labels"]

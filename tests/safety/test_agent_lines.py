"""components/agent.py: what the mutants the other tests let live would change."""

from __future__ import annotations

from typing import Any

import pytest

from kiam_eks.components.agent import AgentArgs
from tests.conftest import base_config, only_container, pod_spec, run_program
from tests.safety import assert_frozen_and_keyword_only, stack_settings
from tools.mock_engine import Recording

DAEMON_SET = "kubernetes:apps/v1:DaemonSet"


@pytest.fixture(scope="module")
def agent(base_run: Recording) -> Any:
    return base_run.one(DAEMON_SET)


def test_the_args_are_a_frozen_keyword_only_value() -> None:
    settings = stack_settings(base_config())
    assert_frozen_and_keyword_only(
        AgentArgs,
        settings=settings.agent,
        namespace="kube-system",
        server_address="kiam-server:443",
        server_node_taint=settings.node_group.taint,
        tls_secret=object(),
        wait_for=(),
        adoption=object(),
    )


def test_an_agent_is_applied_with_force_only_when_asked() -> None:
    settings = stack_settings(base_config())
    args = AgentArgs(
        settings=settings.agent,
        namespace="kube-system",
        server_address="kiam-server:443",
        server_node_taint=settings.node_group.taint,
        tls_secret=object(),  # type: ignore[arg-type]
        wait_for=(),
        adoption=object(),  # type: ignore[arg-type]
    )
    assert (args.force_apply, args.pod_annotations) == (False, None)


def test_agents_roll_a_tenth_of_the_nodes_at_a_time_and_up_waits_ten_minutes(agent: Any) -> None:
    # The agent holds a host port: no surge. 10% of 100 nodes, 30 s each: 10 restarts, 5 min;
    # twice that is the provider's own 10 minutes.
    assert agent.inputs["spec"]["updateStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": "10%"},
    }
    assert agent.custom_timeouts == {"create": "10m", "update": "10m"}


def test_a_count_rolls_that_many_and_up_waits_twice_the_rollout() -> None:
    rollout = {"maxUnavailable": 2, "nodes": 90, "restartSeconds": 20}
    run = run_program(base_config(agent={"rollout": rollout}))
    daemon_set = run.one(DAEMON_SET)
    assert daemon_set.inputs["spec"]["updateStrategy"]["rollingUpdate"] == {"maxUnavailable": 2}
    # 45 restarts of 20 s: 15 min, waited for 30.
    assert daemon_set.custom_timeouts == {"create": "30m", "update": "30m"}


def test_the_probes_exactly(agent: Any) -> None:
    container = only_container(agent)
    assert container["livenessProbe"] == {
        "httpGet": {"path": "/ping", "port": 8181},
        "initialDelaySeconds": 5,
        "periodSeconds": 10,
        "timeoutSeconds": 5,
    }
    assert container["readinessProbe"] == {
        "httpGet": {"path": "/health?deep=1", "port": 8181},
        "initialDelaySeconds": 5,
        "periodSeconds": 10,
        "timeoutSeconds": 5,
    }


def test_an_agent_has_thirty_seconds_to_stop(agent: Any) -> None:
    assert pod_spec(agent)["terminationGracePeriodSeconds"] == 30


def test_the_certificate_is_readable_by_the_agents_root_user_only(agent: Any) -> None:
    (tls,) = [v for v in pod_spec(agent)["volumes"] if v["name"] == "tls"]
    assert tls["secret"]["defaultMode"] == 0o400


def test_unforced_and_unannotated_unless_asked(agent: Any) -> None:
    assert sorted(agent.inputs["metadata"]) == ["labels", "name", "namespace"]
    assert sorted(agent.inputs["spec"]["template"]["metadata"]) == ["labels"]


def test_the_agents_account_mounts_no_token(base_run: Recording) -> None:
    account = base_run.one("kubernetes:core/v1:ServiceAccount", "kiam-agent")
    assert account.inputs["automountServiceAccountToken"] is False


def test_a_toleration_renders_only_the_fields_it_sets() -> None:
    rec = run_program(base_config(agent={"tolerations": [{"key": "pool", "operator": "Exists"}]}))
    assert pod_spec(rec.one(DAEMON_SET))["tolerations"] == [{"key": "pool", "operator": "Exists"}]

"""settings/agent.py: what the mutants the other tests let live would change."""

from __future__ import annotations

import pytest

from kiam_eks.settings.agent import (
    AGENT_REQUEST_SECONDS,
    FAILOVER_LIMIT_SECONDS,
    READINESS_PROBE_TIMEOUT_SECONDS,
    AgentSettings,
    TolerationSettings,
)
from tests.safety import model_problems

NOT_LISTENING = "on every node: the host-networked agent could not listen on it"


def test_the_defaults_exactly() -> None:
    assert AgentSettings().model_dump() == {
        "image": "quay.io/uswitch/kiam:v4.2",
        "host_interface": "eni+",
        "port": 8181,
        "metrics_port": 9620,
        "remove_iptables_rule_on_exit": False,
        "allowed_metadata_routes": "^$",
        "keepalive_time": "10s",
        "keepalive_timeout": "2s",
        "gateway_timeout_creation": "1s",
        "tolerations": [],
        "resources": {"cpu_request": "20m", "memory_request": "48Mi", "memory_limit": "128Mi"},
        "rollout": {"max_unavailable": "10%", "nodes": 100, "restart_seconds": 30},
        "log_level": "info",
        "priority_class_name": "system-node-critical",
        "extra_args": [],
    }


@pytest.mark.parametrize("key", ["port", "metricsPort"])
def test_ports_1024_to_65535(key: str) -> None:
    other = {"metricsPort": 9621} if key == "port" else {"port": 8182}
    assert model_problems(AgentSettings, {key: 1024, **other}) == []
    assert model_problems(AgentSettings, {key: 65535, **other}) == []
    assert model_problems(AgentSettings, {key: 1023, **other}) == [
        f"{key}: Input should be greater than or equal to 1024"
    ]
    assert model_problems(AgentSettings, {key: 65536, **other}) == [
        f"{key}: Input should be less than or equal to 65535"
    ]


@pytest.mark.parametrize(
    ("key", "port", "taken"),
    [
        ("port", 10248, "the kubelet's health port"),
        ("port", 10249, "kube-proxy's metrics port"),
        ("metricsPort", 10250, "the kubelet's API port"),
        ("metricsPort", 10256, "kube-proxy's health port"),
        ("port", 30000, "a NodePort"),
        ("metricsPort", 32767, "a NodePort"),
        ("port", 29999, None),
        ("metricsPort", 32768, None),
    ],
)
def test_the_ports_every_node_already_uses_are_refused(
    key: str, port: int, taken: str | None
) -> None:
    assert model_problems(AgentSettings, {key: port}) == (
        [f": Value error, {key} {port} is {taken} {NOT_LISTENING}"] if taken else []
    )


def test_the_agent_and_metrics_ports_differ() -> None:
    assert model_problems(AgentSettings, {"port": 9620}) == [
        ": Value error, port and metricsPort are both 9620"
    ]


def test_keepalive_time_at_least_10s() -> None:
    assert model_problems(AgentSettings, {"keepaliveTime": "10s"}) == []
    assert model_problems(AgentSettings, {"keepaliveTime": "9s"}) == [
        ": Value error, keepaliveTime 9s is below 10s: gRPC raises it to 10s, so it would not "
        "take effect"
    ]


def test_a_failover_ends_before_the_probe_and_the_request_time_out() -> None:
    assert model_problems(AgentSettings, {"keepaliveTimeout": "3s"}) == []
    assert model_problems(AgentSettings, {"keepaliveTimeout": "4s"}) == [
        ": Value error, keepaliveTimeout 4s lets a failover from a silently lost server take up "
        "to 5.5s (the timeout and 1.5s measured), not below 5s, the agent readiness probe's "
        "timeout and the time kiam gives each credential request: use at most 3s"
    ]


@pytest.mark.parametrize(
    ("toleration", "taint", "tolerated"),
    [
        ({"operator": "Exists"}, ("any", "thing", "NoExecute"), True),
        ({"operator": "Exists", "effect": "NoSchedule"}, ("any", "thing", "NoExecute"), False),
        ({"operator": "Exists", "effect": "NoSchedule"}, ("any", "thing", "NoSchedule"), True),
        ({"key": "pool", "operator": "Exists"}, ("pool", "gpu", "NoSchedule"), True),
        ({"key": "pool", "operator": "Exists"}, ("other", "gpu", "NoSchedule"), False),
        ({"key": "pool", "value": "gpu"}, ("pool", "gpu", "NoSchedule"), True),
        ({"key": "pool", "value": "gpu"}, ("pool", "cpu", "NoSchedule"), False),
        ({"key": "pool"}, ("pool", "", "NoSchedule"), True),
        ({"key": "pool"}, ("pool", "gpu", "NoSchedule"), False),
    ],
)
def test_a_toleration_matches_as_kubernetes_matches_it(
    toleration: dict[str, str], taint: tuple[str, str, str], tolerated: bool
) -> None:
    assert TolerationSettings.model_validate(toleration).tolerates(*taint) is tolerated


def test_a_toleration_is_exists_without_a_value_or_equal_with_a_key() -> None:
    assert model_problems(TolerationSettings, {"operator": "Exists", "value": "x"}) == [
        ": Value error, a toleration with operator Exists takes no value"
    ]
    assert model_problems(TolerationSettings, {"value": "x"}) == [
        ": Value error, a toleration with operator Equal needs a key"
    ]


def test_a_failover_must_end_within_the_probes_and_the_requests_five_seconds() -> None:
    assert (FAILOVER_LIMIT_SECONDS, READINESS_PROBE_TIMEOUT_SECONDS, AGENT_REQUEST_SECONDS) == (
        5,
        5,
        5,
    )

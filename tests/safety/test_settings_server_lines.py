"""settings/server.py: what the mutants the other tests let live would change."""

from __future__ import annotations

import pytest

from kiam_eks.settings.server import ServerSettings
from tests.safety import model_problems

SESSIONS = "must be above 15m and at most 60m (kiam's minimum; the role-chaining maximum)"


def test_the_defaults_exactly() -> None:
    assert ServerSettings().model_dump() == {
        "image": "quay.io/uswitch/kiam:v4.2",
        "replicas": 3,
        "service_name": "kiam-server",
        "grpc_port": 9610,
        "metrics_port": 9620,
        "resources": {"cpu_request": "50m", "memory_request": "128Mi", "memory_limit": "256Mi"},
        "session_duration": "60m",
        "session_refresh": "20m",
        "sync_interval": "1m",
        "max_connection_age": "15m",
        "max_connection_idle": "15m",
        "max_connection_age_grace": "15s",
        "log_level": "info",
        "priority_class_name": "system-cluster-critical",
        "unhealthy_node_toleration_seconds": 30,
        "rollout_timeout_minutes": 20,
        "extra_args": [],
    }


@pytest.mark.parametrize(
    ("key", "lowest", "highest"),
    [
        ("replicas", 2, 20),
        ("grpcPort", 1, 65535),
        ("metricsPort", 1024, 65535),
        ("unhealthyNodeTolerationSeconds", 0, 300),
        ("rolloutTimeoutMinutes", 10, 60),
    ],
)
def test_each_bound_is_exactly_where_it_is_documented(key: str, lowest: int, highest: int) -> None:
    # The metrics port moves out of the way of a grpcPort at its own default.
    other = {"metricsPort": 9621} if key == "grpcPort" else {"grpcPort": 9611}
    assert model_problems(ServerSettings, {key: lowest, **other}) == []
    assert model_problems(ServerSettings, {key: highest, **other}) == []
    assert model_problems(ServerSettings, {key: lowest - 1, **other}) == [
        f"{key}: Input should be greater than or equal to {lowest}"
    ]
    assert model_problems(ServerSettings, {key: highest + 1, **other}) == [
        f"{key}: Input should be less than or equal to {highest}"
    ]


@pytest.mark.parametrize(
    ("duration", "refresh", "refused"),
    [
        ("15m", "14m", f"sessionDuration 15m {SESSIONS}"),
        ("15m1s", "15m", None),
        ("60m", "59m59s", None),
        ("60m1s", "20m", f"sessionDuration 60m1s {SESSIONS}"),
        ("30m", "30m", "sessionRefresh 30m must be below sessionDuration 30m"),
        ("30m", "29m59s", None),
    ],
)
def test_sessions_above_15m_at_most_60m_refreshed_before_they_end(
    duration: str, refresh: str, refused: str | None
) -> None:
    values = {"sessionDuration": duration, "sessionRefresh": refresh}
    assert model_problems(ServerSettings, values) == (
        [f": Value error, {refused}"] if refused else []
    )


def test_the_grpc_and_metrics_ports_differ() -> None:
    assert model_problems(ServerSettings, {"grpcPort": 9620}) == [
        ": Value error, grpcPort and metricsPort are both 9620"
    ]

"""`make sandbox` answers a bad stack file like the offline plan: exit 2, the loader's message,
and nothing started (no toolchain looked for, no sandbox state written)."""

from __future__ import annotations

from pathlib import Path

import pytest

from e2e import sandbox
from e2e.harness.watcher import Sample, Watcher
from tests.conftest import PROJECT_DIR

BAD = PROJECT_DIR / "tests" / "bad_stacks" / "12-replicas-not-a-number.yaml"


def test_invalid_settings_exit_2_before_anything_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))

    def no_toolchain(*_: object) -> Path:
        raise AssertionError("the toolchain must not be looked for")

    monkeypatch.setattr(sandbox.toolchain, "bin_dir", no_toolchain)
    assert sandbox.main(["up", "--config-file", str(BAD)]) == 2
    assert capsys.readouterr().err == (
        f"{BAD}: invalid kiam settings (1 problem):\n"
        "  - kiam:server.replicas: Input should be a valid integer, unable to parse string as an "
        'integer (got "three")\n'
    )
    assert list(tmp_path.iterdir()) == []


def _sample(t: float, ready: int, endpoints: int) -> Sample:
    servers = {f"s{i}": (f"n{i}", i < ready) for i in range(2)}
    return Sample(t=t, servers=servers, ready_endpoints=endpoints, nodes=frozenset(), agents={})


def _watched(*samples: Sample) -> Watcher:
    watcher = Watcher.__new__(Watcher)
    watcher.samples, watcher.events = list(samples), []
    return watcher


def test_a_second_run_reports_the_fewest_ready_servers_during_the_change() -> None:
    watched = _watched(_sample(0, 2, 2), _sample(0.5, 1, 1), _sample(1.0, 2, 2))
    assert sandbox.watched_summary(watched, 2) == (
        "\nDuring `pulumi up`: fewest Ready servers 1 (of 2); the Service always had a ready "
        "endpoint; 3 observations"
    )


def test_a_change_that_took_every_server_away_says_so() -> None:
    watched = _watched(_sample(0, 2, 2), _sample(0.5, 0, 0), _sample(1.0, 2, 2))
    assert sandbox.watched_summary(watched, 2) == (
        "\nDuring `pulumi up`: fewest Ready servers 0 (of 2); the Service had no ready endpoint "
        "at 1 observed moments; 3 observations"
    )


def test_a_first_install_counts_from_the_first_ready_endpoint() -> None:
    # The first server is Ready a moment before the EndpointSlice has it.
    watched = _watched(_sample(0, 0, 0), _sample(0.2, 1, 0), _sample(0.5, 1, 1), _sample(1.0, 2, 2))
    assert sandbox.watched_summary(watched, 2) == (
        "\nDuring `pulumi up`: fewest Ready servers 1 (of 2); the Service always had a ready "
        "endpoint; 4 observations"
    )

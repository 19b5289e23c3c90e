"""`kiam:agent.rollout`: how many agents restart at once, how long that takes on the cluster, and
how long `pulumi up` waits for it (settings/agent_rollout.py)."""

from __future__ import annotations

import math
import re
from typing import Any

import pulumi
import pytest
import yaml

from kiam_eks.settings.agent_rollout import (
    MAX_NODES,
    MAX_WAIT_MINUTES,
    PROVIDER_DEFAULT_WAIT_MINUTES,
    AgentRolloutSettings,
)
from kiam_eks.settings.server import ServerSettings
from tests.conftest import base_config, run_program
from tools.mock_engine import PROJECT_DIR, run_main

NODE_GROUP = PROJECT_DIR / "components" / "node_group.py"
DEPLOY = PROJECT_DIR / ".github" / "workflows" / "deploy.yml"


def rollout(**values: Any) -> AgentRolloutSettings:
    return AgentRolloutSettings.model_validate(values)


def test_a_percentage_is_rounded_up_as_kubernetes_does() -> None:
    tenth = rollout(maxUnavailable="10%")
    assert [tenth.at_once(n) for n in (1, 3, 10, 11, 73, 100, 5000)] == [1, 1, 1, 2, 8, 10, 500]
    # A count never exceeds the agents there are.
    assert [rollout(maxUnavailable=4).at_once(n) for n in (2, 4, 9)] == [2, 4, 4]


@pytest.mark.parametrize("percent", [1, 3, 7, 10, 33, 50, 100])
def test_a_percentage_bounds_the_waves_on_a_cluster_of_any_size(percent: int) -> None:
    # The wait with a percentage does not depend on `nodes`: no cluster, however it grows past
    # the number written down, takes more waves than ceil(100 / p).
    setting = rollout(maxUnavailable=f"{percent}%", restartSeconds=5)
    waves = [math.ceil(n / setting.at_once(n)) for n in range(1, MAX_NODES + 1)]
    assert max(waves) == setting.most_waves == math.ceil(100 / percent)


def test_the_estimate_and_the_wait() -> None:
    default = rollout()
    assert (default.waves, default.estimate_seconds, default.wait_minutes) == (10, 300, 10)
    one_by_one = rollout(maxUnavailable=1, nodes=73, restartSeconds=11)
    # The cluster: 73 nodes at about 11 s each did not fit the provider's 10 minutes.
    assert (one_by_one.waves, one_by_one.estimate_seconds) == (73, 803)
    assert one_by_one.wait_minutes == math.ceil(2 * 803 / 60) == 27
    # Never below the provider's own wait.
    assert rollout(maxUnavailable="50%", restartSeconds=5).wait_minutes == 10
    assert PROVIDER_DEFAULT_WAIT_MINUTES == 10


def test_the_description_says_the_cluster_the_rollout_and_the_wait() -> None:
    assert rollout(maxUnavailable=2, nodes=120, restartSeconds=20).describe() == (
        "2 of 120 nodes at a time (maxUnavailable 2): 60 restarts of about 20s, about 20 min; "
        "`pulumi up` waits up to 40 min"
    )
    # The dev stack's three workers: one at a time, under two minutes said in seconds.
    assert (
        rollout(nodes=3)
        .describe()
        .startswith(
            "1 of 3 nodes at a time (maxUnavailable 10%): 3 restarts of about 30s, about 90 s;"
        )
    )


def test_the_longest_wait_allowed_is_exactly_the_limit() -> None:
    # 120 min = 2 x 60 restarts of 60 s, one at a time: allowed; one node more is refused.
    assert rollout(maxUnavailable=1, nodes=60, restartSeconds=60).wait_minutes == MAX_WAIT_MINUTES
    with pytest.raises(ValueError, match="past the 120 min a deploy leaves the agents"):
        rollout(maxUnavailable=1, nodes=61, restartSeconds=60)
    with pytest.raises(ValueError, match=r"maxUnavailable: at least 2, or a percentage"):
        rollout(maxUnavailable=1, nodes=61, restartSeconds=60)
    # The count it suggests fits.
    assert rollout(maxUnavailable=2, nodes=61, restartSeconds=60).wait_minutes <= MAX_WAIT_MINUTES


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (0, "0 agents at a time would never finish a rollout"),
        (-1, "-1 agents at a time would never finish a rollout"),
        ("0%", "'0%' is not a count or a percentage from 1% to 100%"),
        ("101%", "'101%' is not a count or a percentage from 1% to 100%"),
        ("10.5%", "'10.5%' is not a count or a percentage"),
        ("5", "'5' is not a count or a percentage"),
        (True, "Input should be a valid integer"),
    ],
)
def test_a_rollout_that_could_never_finish_is_refused(value: Any, problem: str) -> None:
    with pytest.raises(ValueError, match=re.escape(problem)):
        rollout(maxUnavailable=value)


def test_the_agents_wait_fits_the_deploy_job_with_the_node_group_and_the_servers() -> None:
    # One stack's `pulumi up` in the deploy workflow may wait for the node group (its update
    # timeout), the servers (their longest rollout timeout) and the agents, one after another.
    job_minutes = yaml.safe_load(DEPLOY.read_text())["jobs"]["up"]["timeout-minutes"]
    node_group_minutes = int(re.findall(r'update="(\d+)m"', NODE_GROUP.read_text())[0])
    servers_minutes = ServerSettings.model_fields["rollout_timeout_minutes"].metadata[1].le
    assert (job_minutes, node_group_minutes, servers_minutes) == (240, 60, 60)
    assert node_group_minutes + servers_minutes + MAX_WAIT_MINUTES == job_minutes


def said_during(monkeypatch: pytest.MonkeyPatch, run: Any) -> list[str]:
    said: list[str] = []
    monkeypatch.setattr(pulumi.log, "info", lambda message, *_, **__: said.append(message))
    run()
    monkeypatch.undo()
    return [m for m in said if m.startswith("agent rollout:")]


def test_every_preview_says_how_long_the_agents_roll(monkeypatch: pytest.MonkeyPatch) -> None:
    config = base_config(agent={"rollout": {"nodes": 40}})
    assert said_during(monkeypatch, lambda: run_program(config)) == [
        "agent rollout: 4 of 40 nodes at a time (maxUnavailable 10%): 10 restarts of about 30s, "
        "about 5 min; `pulumi up` waits up to 10 min"
    ]
    # A retired stack has no agents to roll: nothing to say.
    installed = run_program(config)
    retired = run_main(
        {**config, "kiam:retire": True}, stack="test", last_outputs=installed.stack_outputs
    )
    assert (
        said_during(
            monkeypatch,
            lambda: run_main(
                {**config, "kiam:retire": True}, stack="test", last_outputs=retired.stack_outputs
            ),
        )
        == []
    )


def test_the_retirement_roll_waits_as_the_agents_rollout() -> None:
    config = base_config(agent={"rollout": {"maxUnavailable": 1, "nodes": 50}})
    installed = run_program(config)
    retired = run_main(
        {**config, "kiam:retire": True}, stack="test", last_outputs=installed.stack_outputs
    )
    (patch,) = retired.by_type("kubernetes:apps/v1:DaemonSetPatch")
    assert patch.inputs["spec"]["updateStrategy"]["rollingUpdate"] == {"maxUnavailable": 1}
    # 50 restarts of 30 s: 25 min, waited for 50.
    assert patch.custom_timeouts == {"create": "50m", "update": "50m"}

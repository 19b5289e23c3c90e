"""components/agent_retirement.py: what the mutants the other tests let live would change."""

from __future__ import annotations

import pytest

from kiam_eks.components.agent_retirement import AgentRetirementArgs, retiring_agent_flags
from tests.conftest import base_config
from tests.safety import assert_frozen_and_keyword_only, stack_settings


def test_the_args_are_a_frozen_keyword_only_value() -> None:
    assert_frozen_and_keyword_only(
        AgentRetirementArgs,
        settings=stack_settings(base_config()).agent,
        namespace="kube-system",
        daemon_set_name="kiam-agent",
        server_address="kiam-server:443",
        roll=True,
    )


def test_the_retiring_agents_server_address_is_passed_by_name_only() -> None:
    with pytest.raises(
        TypeError, match=r"^retiring_agent_flags\(\) takes 1 positional argument but 2 were given$"
    ):
        retiring_agent_flags(stack_settings(base_config()).agent, "kiam-server:443")  # type: ignore[misc]

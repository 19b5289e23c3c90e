"""specs/kiam_flags.py: what the mutants the other tests let live would change."""

from __future__ import annotations

import pytest

from kiam_eks.specs import kiam_flags
from tests.conftest import base_config
from tests.safety import stack_settings

SETTINGS = stack_settings(base_config())


def test_the_servers_arns_and_region_are_passed_by_name_only() -> None:
    # Three strings: by position, a role ARN could land in --region or the other ARN's flag.
    with pytest.raises(
        TypeError, match=r"^server_flags\(\) takes 1 positional argument but 4 were given$"
    ):
        kiam_flags.server_flags(  # type: ignore[misc]
            SETTINGS.server,
            "eu-west-1",
            "arn:aws:iam::111122223333:role/",
            "arn:aws:iam::111122223333:role/kiam-server",
        )


def test_the_agents_server_address_is_passed_by_name_only() -> None:
    with pytest.raises(
        TypeError, match=r"^agent_flags\(\) takes 1 positional argument but 2 were given$"
    ):
        kiam_flags.agent_flags(SETTINGS.agent, "kiam-server:443")  # type: ignore[misc]

"""contracts/pulumi_config.py: the configuration Pulumi hands a program in one environment
string, and the size Linux allows it, as measured on the real engine at its boundary."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
import yaml

from kiam_eks.contracts.pulumi_config import (
    CONFIG_VARIABLE,
    MAX_ARG_STRLEN,
    config_environment_bytes,
)
from kiam_eks.settings import SettingsError, settings_from_stack_file
from tools.scale_stack import scale_stack


def test_the_variable_and_the_limit() -> None:
    # execve(2): MAX_ARG_STRLEN is 32 pages; the SDK reads the configuration from this variable.
    assert (CONFIG_VARIABLE, MAX_ARG_STRLEN) == ("PULUMI_CONFIG", 131_072)


def test_the_size_counts_the_name_the_compact_json_of_each_value_and_the_nul() -> None:
    config = {"kiam:retire": True, "kiam:cluster": {"name": "a"}, "aws:region": "eu-west-1"}
    text = (
        r'PULUMI_CONFIG={"aws:region":"eu-west-1","kiam:cluster":"{\"name\":\"a\"}",'
        r'"kiam:retire":"true"}'
    )
    assert config_environment_bytes(config) == len(text) + 1
    # A value YAML reads as a date reaches the program as its text.
    assert (
        config_environment_bytes({"k": datetime.date(2012, 10, 17)})
        == len('PULUMI_CONFIG={"k":"\\"2012-10-17\\""}') + 1
    )


def test_the_measured_boundary() -> None:
    # On the real engine (Pulumi v3.276.0): 737 applications of the scale stack ran, 738 failed
    # with "argument list too long" (docs/performance.md).
    ran, refused = (config_environment_bytes(scale_stack(n, 50)["config"]) for n in (737, 738))
    assert (ran, refused) == (131_068, 131_195)
    assert ran <= MAX_ARG_STRLEN < refused


@pytest.mark.parametrize(("applications", "refused"), [(737, False), (738, True)])
def test_the_loader_refuses_what_pulumi_could_not_hand_over(
    tmp_path: Path, applications: int, refused: bool
) -> None:
    path = tmp_path / "Pulumi.big.yaml"
    path.write_text(yaml.safe_dump(scale_stack(applications, 50)))
    if not refused:
        settings, _ = settings_from_stack_file(path)
        assert len(settings.applications) == applications
        return
    with pytest.raises(SettingsError) as raised:
        settings_from_stack_file(path)
    assert raised.value.problems == [
        "the configuration is 131,195 bytes as Pulumi hands it to the program (the environment "
        "variable PULUMI_CONFIG), kiam:applications 118,582 of them; Linux refuses one "
        "environment string over 131,072 bytes, so `pulumi preview` and `pulumi up` would fail "
        'before the program starts ("argument list too long"): make it smaller by 123 bytes, '
        "for example by giving roles the stack creates managedPolicyArns instead of "
        "inlinePolicies"
    ]

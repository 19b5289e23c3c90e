"""Stack files the e2e harness and the sandbox write are read back by the Pulumi CLI (YAML 1.2)
exactly as they were meant: a string that looks like a number stays a string."""

from __future__ import annotations

import pytest
import yaml

from e2e.harness.stack_yaml import dump


def test_an_account_id_with_a_leading_zero_is_quoted() -> None:
    # PyYAML's own dumper writes it bare: YAML 1.1 has no decimal integer with a leading zero,
    # but YAML 1.2 (the CLI's reader) reads `098765432109` as the number 98765432109.
    assert yaml.safe_dump({"accountId": "098765432109"}) == "accountId: 098765432109\n"
    assert dump({"accountId": "098765432109"}) == "accountId: '098765432109'\n"


@pytest.mark.parametrize(
    "value", ["111122223333", "1.33", "1e3", "0x1F", "0o17", "true", "on", "no", "null", "~", ""]
)
def test_every_string_a_reader_could_take_for_something_else_is_quoted(value: str) -> None:
    assert dump({"k": value}) == f"k: '{value}'\n"
    assert yaml.safe_load(dump({"k": value})) == {"k": value}


@pytest.mark.parametrize("value", ["kiam-server", "eu-west-1", "subnet-0abc", "t3.medium", "1.2.3"])
def test_ordinary_strings_stay_plain(value: str) -> None:
    assert dump({"k": value}) == f"k: {value}\n"


def test_keys_order_and_nesting_are_kept() -> None:
    document = {"config": {"kiam:cluster": {"name": "c", "accountId": "012345678901"}}}
    assert (
        dump(document) == "config:\n  kiam:cluster:\n    name: c\n    accountId: '012345678901'\n"
    )

"""Every command names its stack the same two ways, and exactly one of them."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from tools.stack_source import add_stack_source, stack_file_of


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="cmd")
    add_stack_source(p, stack_help="a stack", file_help="a file")
    return p


def test_a_stack_name_is_the_file_in_the_stack_config_dir_below_the_root() -> None:
    args = parser().parse_args(["--stack", "dev"])
    assert stack_file_of(args) == Path("stacks/Pulumi.dev.yaml")
    assert stack_file_of(args, root=Path("/repo")) == Path("/repo/stacks/Pulumi.dev.yaml")


def test_a_config_file_is_taken_as_given_whatever_the_root() -> None:
    args = parser().parse_args(["--config-file", "elsewhere/Pulumi.x.yaml"])
    assert stack_file_of(args, root=Path("/repo")) == Path("elsewhere/Pulumi.x.yaml")


@pytest.mark.parametrize(
    "argv", [[], ["--stack", "dev", "--config-file", "x.yaml"]], ids=["neither", "both"]
)
def test_exactly_one_source_is_required(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        parser().parse_args(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "--stack" in err and "--config-file" in err

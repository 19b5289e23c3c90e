"""The one way every command names the stack it works on: `--stack NAME` or `--config-file PATH`.

`make plan STACK=dev`, `make sandbox CONFIG=...` and the alert-rules export accept the same two
spellings, so a stack file tried in one works in the others.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from kiam_eks.settings.loader import stack_file_for


def add_stack_source(parser: argparse.ArgumentParser, *, stack_help: str, file_help: str) -> None:
    """Exactly one of `--stack` (a stack in `stackConfigDir`) or `--config-file` (any file)."""
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--stack", help=stack_help)
    source.add_argument("--config-file", type=Path, help=file_help)


def stack_file_of(args: argparse.Namespace, root: Path = Path()) -> Path:
    """The stack file the arguments name; a `--stack` name is looked up below `root`."""
    if args.config_file is not None:
        return Path(args.config_file)
    return root / stack_file_for(args.stack)

"""Print a stack's alert rules as a Prometheus rules file (what its PrometheusRule holds).

    python -m tools.alert_rules --stack dev
    python -m tools.alert_rules --config-file path/to/Pulumi.x.yaml [--out FILE]

For a Prometheus without the operator (`rule_files:`), and for the rules file the promtool tests
in `tests/monitoring/` load: `--stack dev --out tests/monitoring/kiam.rules.yaml` writes it, and
`make test` fails while the two differ. Exit codes: 0 written; 2 the stack settings are invalid.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kiam_eks.settings import SettingsError, settings_from_stack_file
from kiam_eks.specs.alert_rules import context_of, rules_file
from tools.stack_source import add_stack_source, stack_file_of

# The stack whose rules the promtool tests in tests/monitoring/ run against.
TESTED_STACK = "dev"
TESTED_RULES = Path(__file__).resolve().parent.parent / "tests" / "monitoring" / "kiam.rules.yaml"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.alert_rules", description=__doc__.split("\n")[0]
    )
    add_stack_source(
        parser,
        stack_help="the rules of stacks/Pulumi.<STACK>.yaml",
        file_help="the rules of any stack file",
    )
    parser.add_argument("--out", type=Path, help="write the rules file here instead of printing")
    args = parser.parse_args(argv)
    path = stack_file_of(args)
    try:
        settings, _ = settings_from_stack_file(path)
    except SettingsError as error:
        print(error, file=sys.stderr)
        return 2
    text = rules_file(context_of(settings))
    if args.out:
        args.out.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

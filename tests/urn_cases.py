"""The states a running install can be in, each as the mock engine registers it: the example
stacks, each migration phase (docs/migration/), each way-out state of an application and the
retirement. tests/test_package.py holds their URN sets to those recorded before the modules moved
into the kiam_eks package (tests/fixtures/urns-before-package.json): a URN that changed would
make `pulumi up` replace the resource on every running install."""

from __future__ import annotations

from collections.abc import Callable

from kiam_eks.settings.loader import read_stack_file
from tests.conftest import EXAMPLE_STACKS, PROJECT_DIR, example_config, run_program
from tests.test_adoption import PHASES, adoption_config, helm_adoption_config
from tests.test_retire import installed_config, retired_config, retiring_run
from tests.test_served_by import STATES, config
from tools.mock_engine import Recording, run_main

MIGRATION_FILES = sorted((PROJECT_DIR / "docs" / "migration").glob("Pulumi.*.yaml"))


def _cases() -> dict[str, Callable[[], Recording]]:
    cases: dict[str, Callable[[], Recording]] = {}
    for stack in EXAMPLE_STACKS:
        cases[f"stack {stack}"] = lambda s=stack: run_program(example_config(s), stack=s)
    for path in MIGRATION_FILES:
        cases[f"migration {path.stem}"] = lambda p=path: run_program(read_stack_file(p))
    for phase in PHASES:
        cases[f"adoption {phase}"] = lambda p=phase: run_program(adoption_config(p))
        cases[f"helm adoption {phase}"] = lambda p=phase: run_program(helm_adoption_config(p))
    for state in STATES:
        for manage in (False, True):
            cases[f"served by {state}, add-on managed {manage}"] = lambda s=state, m=manage: (
                run_program(config(s, manage=m))
            )
    cases["installed, before retiring"] = lambda: run_program(installed_config())
    cases["retiring"] = lambda: retiring_run(retired_config())
    cases["retired"] = lambda: run_main(
        retired_config(),
        stack="test",
        last_outputs=retiring_run(retired_config()).stack_outputs,
    )
    return cases


CASES = _cases()


def urns(case: str) -> list[str]:
    return sorted(r.urn for r in CASES[case]().registrations)

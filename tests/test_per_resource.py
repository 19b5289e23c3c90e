"""The parts of the guarantees one resource decides (`invariants.per_resource`), which the policy
pack enforces before that resource's step: never more than the whole stack's check reports
(judging a resource alone must not invent a violation), and exactly the resource-local ones."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kiam_eks.invariants import CHECKS, Resource, Violation, check_all
from kiam_eks.invariants.per_resource import RESOURCE_LEVEL, resource_violations
from kiam_eks.invariants.recorded import resources_from_recording
from tests.conftest import run_program
from tests.test_invariants import APP_CASES, APP_CONFIG, APP_EXPECTED, BASE_EXPECTED, CASES
from tools.mock_engine import Recording


@pytest.fixture(scope="module")
def resources(base_run: Recording) -> list[Resource]:
    return resources_from_recording(base_run)


@pytest.fixture(scope="module")
def app_resources() -> list[Resource]:
    return resources_from_recording(run_program(APP_CONFIG))


def alone(resources: list[Resource]) -> set[Violation]:
    return {v for r in resources for check in RESOURCE_LEVEL for v in resource_violations(check, r)}


@pytest.mark.parametrize(("description", "breaks", "expected"), CASES, ids=[c[0] for c in CASES])
def test_a_resource_alone_never_reports_what_the_stack_does_not(
    resources: list[Resource],
    description: str,
    breaks: Callable[[list[Resource]], list[Resource]],
    expected: Callable[[list[Resource]], list[tuple[str, str, str]]],
) -> None:
    broken = breaks(resources)
    assert alone(broken) <= set(check_all(broken, BASE_EXPECTED))


def test_every_resource_level_part_catches_a_breakage_alone(resources: list[Resource]) -> None:
    """Not vacuous: each resource-level check stops some breakage of the mutation table with
    nothing but the broken resource in view (e.g. a Deployment without anti-affinity)."""
    caught = {v.id for _, breaks, _ in CASES for v in alone(breaks(resources))}
    assert caught == set(RESOURCE_LEVEL)


def test_application_cases_are_never_judged_alone(app_resources: list[Resource]) -> None:
    for _, breaks, _ in APP_CASES:
        broken = breaks(app_resources)
        assert alone(broken) <= set(check_all(broken, APP_EXPECTED))


def test_every_resource_level_check_exists() -> None:
    assert set(RESOURCE_LEVEL) <= set(CHECKS)

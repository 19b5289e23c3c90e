"""One run through the mock engine for every module here (they only read it): the base stack,
and the stack with the two applications the way-out guarantees judge."""

from __future__ import annotations

import pytest

from kiam_eks.invariants import Resource
from kiam_eks.invariants.recorded import resources_from_recording
from tests.conftest import base_config, run_program
from tests.test_invariants import APP_CONFIG
from tools.mock_engine import Recording


@pytest.fixture(scope="package")
def base_run() -> Recording:
    return run_program(base_config())


@pytest.fixture(scope="package")
def kiam() -> list[Resource]:
    """The applications' stack (billing served by kiam, search moving to IRSA)."""
    return resources_from_recording(run_program(APP_CONFIG))


@pytest.fixture(scope="package")
def base_resources(base_run: Recording) -> list[Resource]:
    """The base stack as the guarantees see it."""
    return resources_from_recording(base_run)

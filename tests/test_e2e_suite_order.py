"""The real-engine suite's module order (e2e/tests/conftest.py): every test module is ranked, once,
so none falls to the end of the two workers' queue by being renamed or added unranked."""

from __future__ import annotations

from pathlib import Path

from e2e.tests.conftest import LONGEST_FIRST

E2E_TESTS = Path(__file__).resolve().parents[1] / "e2e" / "tests"


def test_every_e2e_module_is_ranked_once() -> None:
    modules = sorted(path.stem for path in E2E_TESTS.glob("test_*.py"))
    assert len(modules) >= 18
    assert sorted(LONGEST_FIRST) == modules

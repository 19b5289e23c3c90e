"""The program collects cyclic garbage less often than CPython's default (program/collector.py):
the default it departs from, what it sets, that the heap is frozen at exit, and that both entry
points start (program/startup.py: the collector set, the stack's state asked for) before the
SDKs are imported."""

from __future__ import annotations

import ast
import gc
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kiam_eks.program import startup
from kiam_eks.program.collector import GENERATION0_ALLOCATIONS, collect_less_often
from tests.conftest import example_config, run_program

REPO = Path(__file__).resolve().parents[1]
ENTRY_POINTS = [REPO / "__main__.py", REPO / "e2e" / "program" / "__main__.py"]


@pytest.fixture
def default_threshold() -> Iterator[None]:
    """The interpreter's default thresholds for the test, the process's own restored after."""
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*before)


def test_cpythons_default_thresholds_are_the_documented_ones() -> None:
    """docs.python.org/3/library/gc.html: 700 net allocations, then every 10 collections."""
    fresh = subprocess.run(
        [sys.executable, "-c", "import gc; print(gc.get_threshold())"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert fresh.stdout.strip() == "(700, 10, 10)"


@pytest.mark.usefixtures("default_threshold")
def test_collect_less_often_raises_the_youngest_generations_threshold_only() -> None:
    collect_less_often()
    assert gc.get_threshold() == (GENERATION0_ALLOCATIONS, 10, 10)
    assert gc.isenabled()


@pytest.mark.usefixtures("default_threshold")
def test_a_program_run_collects_less_often() -> None:
    run_program(example_config("dev"))
    assert gc.get_threshold() == (GENERATION0_ALLOCATIONS, 10, 10)


def _statements(path: Path) -> list[str]:
    """Each top-level statement, as its source: imports by module, calls by function."""
    out = []
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ImportFrom):
            out.append(f"from {node.module}")
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            out.append(f"call {ast.unparse(node.value.func)}")
    return out


@pytest.mark.parametrize("entry_point", ENTRY_POINTS, ids=lambda p: str(p.relative_to(REPO)))
def test_entry_points_start_before_importing_the_sdks(entry_point: Path) -> None:
    statements = _statements(entry_point)
    # The project's own imports: those of the standard library and pulumi come first.
    imports = [s for s in statements if s.startswith(("from kiam_eks", "from e2e", "from tools"))]
    assert imports[0] == "from kiam_eks.program.startup"
    assert statements.index("call start") < statements.index(imports[1])


def test_the_programs_first_steps_collect_less_often_then_ask_for_the_stack_state(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    done: list[str] = []
    monkeypatch.setattr(startup, "collect_less_often", lambda: done.append("collect less often"))
    monkeypatch.setattr(startup, "start_reading", lambda: done.append("ask for the state"))
    startup.start()
    assert done == ["collect less often", "ask for the state"]


def test_the_exit_collections_are_skipped_once_the_program_is_done() -> None:
    """A fresh interpreter, `gc.freeze` counted: called twice, the heap is frozen once, after
    every `atexit` callback registered later (the SDK's own) and before the interpreter's
    finalization would walk it; the exit status is the one the process asked for."""
    script = (
        "import atexit, gc, sys\n"
        "freezes = []\n"
        "freeze = gc.freeze\n"
        "gc.freeze = lambda: (freezes.append(1), freeze())\n"
        "atexit.register(lambda: print('frozen', len(freezes), gc.get_freeze_count() > 0))\n"
        "from kiam_eks.program.collector import collect_less_often\n"
        "collect_less_often(); collect_less_often()\n"
        "atexit.register(lambda: print('sdk done', len(freezes)))\n"
        "sys.exit(3)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert (done.returncode, done.stdout.splitlines()) == (3, ["sdk done 0", "frozen 1 True"])

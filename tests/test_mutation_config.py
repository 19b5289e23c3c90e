"""tools/mutation: the targets and the list of equivalent mutants stay true without running
cosmic-ray (which `make test` does not install): every target module and test exists, and every
listed mutant's line is still in its module."""

from __future__ import annotations

from pathlib import Path

from tools.mutation.run import REPO, load_equivalents, load_targets


def test_every_target_module_and_its_tests_exist() -> None:
    shared, targets = load_targets()
    assert shared["timeout-factor"] >= 1
    assert targets, "no target module"
    for target in targets:
        assert (REPO / target.module).is_file(), target.module
        for test in target.tests:
            path, _, name = test.partition("::")
            assert (REPO / path).is_file(), test
            if name:
                assert f"def {name}(" in (REPO / path).read_text(), test


def test_every_equivalent_mutant_is_of_a_target_and_its_line_is_still_there() -> None:
    _, targets = load_targets()
    modules = {t.module for t in targets}
    for entry in load_equivalents():
        assert entry.module in modules, entry
        lines = [line.strip() for line in Path(REPO / entry.module).read_text().splitlines()]
        assert entry.line in lines, entry
        assert entry.operator.startswith("core/"), entry

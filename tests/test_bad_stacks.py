"""The bad-input corpus: every malformed stack file gets its exact message, exit code 2, and nothing is registered."""

from __future__ import annotations

import json
from pathlib import Path

import pulumi
import pytest
import yaml

from kiam_eks.settings import SettingsError
from kiam_eks.settings.loader import read_stack_file
from tools import mock_engine
from tools.plan import main

CORPUS = Path(__file__).parent / "bad_stacks"
EXPECTED: dict[str, list[str]] = yaml.safe_load((CORPUS / "expected.yaml").read_text())
CASES = sorted(p for p in CORPUS.glob("*.yaml") if p.name != "expected.yaml")


# How many malformed stack files the corpus holds; a case added or removed changes it here too.
CASE_COUNT = 138


def test_the_corpus_is_large_and_every_file_has_an_expectation() -> None:
    # Nothing else in the folder: a case under another extension would be silently skipped.
    assert sorted(p.name for p in CORPUS.iterdir() if p.suffix != ".yaml") == []
    assert len(CASES) == CASE_COUNT
    assert len(EXPECTED) == CASE_COUNT
    names = {p.name for p in CASES}
    assert sorted(names - set(EXPECTED)) == []  # every file has an expectation
    assert sorted(set(EXPECTED) - names) == []  # every expectation has a file
    assert all(EXPECTED[name] for name in names)  # and each names at least one problem


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_the_plan_exits_2_with_the_exact_message(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--config-file", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == str(SettingsError(str(path), EXPECTED[path.name])) + "\n"
    assert "Traceback" not in captured.err


def _program_cases() -> list[Path]:
    """Files whose YAML parses into a config map: Pulumi itself rejects the others before any
    program runs. The CLI hands the program JSON, in which an unquoted YAML date cannot stay a
    date; the plan, reading the file itself, refuses that case on its own."""
    cases = []
    for path in CASES:
        try:
            json.dumps(read_stack_file(path))
        except (SettingsError, TypeError):
            continue
        cases.append(path)
    return cases


def test_the_program_runs_every_case_but_the_five_it_never_sees() -> None:
    """The ones `_program_cases` leaves out, by name, so the program's cases are never empty."""
    program_cases = _program_cases()
    assert sorted(p.name for p in CASES if p not in program_cases) == [
        "01-empty-file.yaml",
        "02-yaml-list.yaml",
        "03-yaml-syntax-error.yaml",
        "04-config-not-a-mapping.yaml",
        "92-inline-policy-version-unquoted.yaml",
    ]
    assert len(program_cases) == CASE_COUNT - 5


@pytest.mark.parametrize("path", _program_cases(), ids=[p.stem for p in _program_cases()])
def test_the_program_stops_before_registering_anything(
    path: Path, registered_types: list[str]
) -> None:
    with pytest.raises(pulumi.RunError) as caught:
        mock_engine.run_main(read_stack_file(path), stack="case")
    assert str(caught.value) == str(SettingsError("stacks/Pulumi.case.yaml", EXPECTED[path.name]))
    assert registered_types == [
        "pulumi:pulumi:Stack"
    ]  # the engine's root, registered before the program runs

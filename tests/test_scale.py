"""Stacks at the size of the clusters that ran kiam (issue 39): the shape the measurements use,
and the plan's costs that must grow with the applications, not with their square."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import yaml

from kiam_eks.contracts import go_regexp, kiam
from kiam_eks.invariants import iam_documents
from kiam_eks.settings.loader import settings_from_values
from tools import plan, scale_stack


def test_the_scale_stack_has_the_proportions_of_a_long_lived_cluster() -> None:
    config = scale_stack.scale_stack(200, namespaces=20)["config"]
    apps = config["kiam:applications"]
    assert len(apps) == 200
    existing = [a["roleArn"] for a in apps.values() if "roleArn" in a]
    assert len(existing) == 160  # four in five made elsewhere
    assert sum(":444455556666:" in arn for arn in existing) == 20  # one in eight elsewhere
    assert Counter(a.get("servedBy", "kiam") for a in apps.values()) == {
        "kiam": 180,
        "kiam+irsa": 10,
        "kiam+podIdentity": 10,
    }
    assert len({a["namespace"] for a in apps.values()}) == 20
    assert config["kiam:cluster"]["name"] == "dev"
    # Valid settings, as the program reads them.
    values = {k.removeprefix("kiam:"): v for k, v in config.items()}
    assert len(settings_from_values(values, "scale").applications) == 200


def test_the_same_arguments_give_the_same_stack() -> None:
    assert scale_stack.scale_stack(50, 5) == scale_stack.scale_stack(50, 5)


def test_each_expression_is_scanned_once_however_often_it_is_checked() -> None:
    expression = r"^arn:aws:iam::111122223333:role/teams/team-07/.*$"
    go_regexp._scan.cache_clear()
    for _ in range(3):
        assert kiam.permitted_regexp_problem(expression) is None
        assert go_regexp.python_pattern(expression).search("x") is None
    # The expression, and the same anchored as kiam anchors it: two scans, whatever the repeats.
    assert go_regexp._scan.cache_info().misses == 2


@pytest.mark.parametrize(
    ("pattern", "value", "case_sensitive", "matches"),
    [
        ("arn:aws:iam::1:role/a", "arn:aws:iam::1:role/a", True, True),
        ("arn:aws:iam::1:role/a", "arn:aws:iam::1:role/A", True, False),
        ("arn:aws:iam::1:role/a", "arn:aws:iam::1:role/ab", True, False),
        ("sts:AssumeRole", "STS:assumerole", False, True),
        ("arn:aws:iam::1:role/a*", "arn:aws:iam::1:role/a/b", True, True),
        ("arn:aws:iam::1:role/a?", "arn:aws:iam::1:role/ab", True, True),
        ("arn:aws:iam::1:role/a?", "arn:aws:iam::1:role/a", True, False),
        ("a.b", "axb", True, False),  # `.` is literal, exact or not
    ],
)
def test_iam_wildcards_match_with_or_without_a_wildcard(
    pattern: str, value: str, case_sensitive: bool, matches: bool
) -> None:
    assert iam_documents.glob_matches(pattern, value, case_sensitive=case_sensitive) is matches


def test_the_plan_checks_each_namespace_once_against_the_other_roles(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Guarantee 12 asks whether a namespace's expression admits another namespace's role: once
    per namespace, not once per application of it (the square of the applications)."""
    applications, namespaces = 60, 6
    stack = tmp_path / "Pulumi.scale.yaml"
    stack.write_text(yaml.safe_dump(scale_stack.scale_stack(applications, namespaces)))
    calls = Counter[str]()
    permits = kiam.permits

    def counted(expression: str, arn: str, *, strict: bool = True) -> bool:
        calls[arn] += 1
        return permits(expression, arn, strict=strict)

    monkeypatch.setattr(kiam, "permits", counted)
    assert plan.main(["--config-file", str(stack), "--no-validate"]) == 0
    assert "✓ all invariants hold" in capsys.readouterr().out
    # Each role is asked of its own namespace once and of each other namespace once.
    assert set(calls.values()) == {namespaces}

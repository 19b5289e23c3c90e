"""kiam v4.2's namespace regexp rules (contracts/kiam.py), spelled out with their sources, so a
wrong rule fails here instead of passing both the settings check and the guarantee that share it.

- Go's regexp syntax (`go doc regexp/syntax`; RE2, https://github.com/google/re2/wiki/Syntax):
  no lookarounds `(?=` `(?!` `(?<=` `(?<!`, no atomic groups `(?>`, no conditionals `(?(`, no
  backreferences `\\1` `(?P=name)`, no `\\Z`; Go has `\\z`, `[[:alpha:]]`, `\\pL`, `\\Q...\\E`
  and `\\C`, which Python reads differently or not at all.
- kiam `pkg/server/policy.go` at v4.2, `NamespacePermittedRoleNamePolicy`: an empty annotation
  permits nothing; strict mode compiles `"^" + expression + "$"`; `--disable-strict-namespace-regexp`
  compiles the expression as it is; then `MatchString` against the resolved role ARN.
"""

from __future__ import annotations

import pytest

from contracts.kiam import permits, regexp_problem

RE2 = "Go's RE2, which kiam uses, does not compile lookarounds, backreferences, atomic groups, conditionals or \\Z"
GO_ONLY = "it uses Go-only syntax ([[:class:]], \\z, \\p, \\Q, \\C) this check does not read"
ARN = "arn:aws:iam::111122223333:role/kiam-apps/team-a/app-billing"


@pytest.mark.parametrize(
    "expression",
    [
        "^arn:(?=aws).*$",
        "^arn:(?!aws).*$",
        "(?<=role/)app-.*",
        "(?<!x)app-.*",
        "(?>app-).*",
        "(?(1)a|b)",
        r"(app)-\1",
        "(?P<n>app)(?P=n)",
        r"^arn:.*\Z",
    ],
)
def test_what_go_does_not_compile_is_refused(expression: str) -> None:
    assert regexp_problem(expression) == RE2


@pytest.mark.parametrize("expression", ["^[[:alpha:]]+$", r"^arn\z", r"\pL+", r"\Q.\E", r"\C"])
def test_go_only_syntax_is_refused_as_unreadable_here(expression: str) -> None:
    assert regexp_problem(expression) == GO_ONLY


@pytest.mark.parametrize(
    "expression",
    [
        "arn:aws:iam::111122223333:role/kiam-apps/team-a/.*",
        "(?i:ARN):aws:.*",
        "a|b",
        "",
    ],
)
def test_what_both_read_alike_is_accepted(expression: str) -> None:
    assert regexp_problem(expression) is None


def test_a_flag_that_anchoring_moves_from_the_start_is_named() -> None:
    """Go applies `(?i)` wherever it stands; Python refuses it once kiam's `^` precedes it."""
    assert regexp_problem("(?i)arn:.*") == (
        "anchored as kiam anchors it, this check cannot read it (global flags not at the start of "
        "the expression at position 1); write flags as a scoped group such as (?i:...)"
    )


@pytest.mark.parametrize(
    ("expression", "strict", "permitted"),
    [
        ("", True, False),  # empty: nothing
        ("", False, False),
        (".*", True, True),
        # Strict anchors by concatenation: `^team-a/.*$` cannot match an ARN, which starts `arn:`.
        ("team-a/.*", True, False),
        ("team-a/.*", False, True),  # unanchored: a search anywhere in the ARN
        # `a|b` becomes `^a|b$`: the first alternative anchored at the start, the last at the end.
        ("arn:aws:iam::111122223333:role/x|.*team-a/app-billing", True, True),
        ("nothing|team-a/app-billing", True, True),
        ("team-a/app-billing|nothing", True, False),
        ("arn:aws:iam::111122223333:role/kiam-apps/team-a/app-.*", True, True),
        ("arn:aws:iam::111122223333:role/kiam-apps/team-b/app-.*", True, False),
    ],
)
def test_kiam_matches_the_resolved_arn_anchored_by_concatenation(
    expression: str, strict: bool, permitted: bool
) -> None:
    assert permits(expression, ARN, strict=strict) is permitted

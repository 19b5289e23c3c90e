"""Contract tests for Go's regexp syntax as kiam v4.2 compiles it (`contracts.go_regexp`): the
constants spelled out as Go's regexp/syntax documentation (doc.go) writes them, and every
construct on which Go and Python's `re` part ways, each with the part of Go's parser
(regexp/syntax/parse.go) that decides it. Python's side of each row is Python 3's `re`."""

from __future__ import annotations

import re

import pytest

from kiam_eks.contracts import go_regexp
from kiam_eks.contracts.go_regexp import compile_problem, python_pattern, read_otherwise, refused


def test_the_go_kiam_is_built_with() -> None:
    # kiam's Dockerfile at tag v4.2: "FROM golang:1.15.15 as build".
    assert go_regexp.GO_VERSION == "1.15.15"


def test_the_syntax_constants_as_go_documents_them() -> None:
    # doc.go: "reject forms that create a minimum or maximum repetition count above 1000".
    assert go_regexp.MAX_REPEAT == 1000
    # doc.go, Grouping: the flags are i, m, s and U.
    assert sorted(go_regexp.FLAGS) == ["U", "i", "m", "s"]
    # doc.go, ASCII character classes: [[:alnum:]] through [[:xdigit:]].
    assert sorted(go_regexp.POSIX_CLASSES) == [
        "alnum", "alpha", "ascii", "blank", "cntrl", "digit", "graph", "lower", "print", "punct",
        "space", "upper", "word", "xdigit",
    ]  # fmt: skip
    # doc.go, Perl character classes: \d \D \s \S \w \W.
    assert sorted(go_regexp.PERL_CLASSES) == ["D", "S", "W", "d", "s", "w"]
    # doc.go, Escape sequences: \a \f \t \n \r \v (parse.go: "There is no case 'b'").
    assert sorted(go_regexp.C_ESCAPES) == ["a", "f", "n", "r", "t", "v"]
    # doc.go, Empty strings: \A, \b, \B (and \z, which Python spells \Z).
    assert sorted(go_regexp.EMPTY_ESCAPES) == ["A", "B", "b"]


@pytest.mark.parametrize(
    ("expression", "construct", "python_compiles"),
    [
        # parsePerlFlags: after "(?" only "P<name>" or flags are read; anything else is
        # "invalid or unsupported Perl syntax".
        ("^(?=a)", "a lookahead `(?=`", True),
        ("^(?!a)", "a lookahead `(?!`", True),
        ("(?<=a)b", "a lookbehind `(?<=`", True),
        ("(?<!a)b", "a lookbehind `(?<!`", True),
        ("(?>a)", "an atomic group `(?>`", True),
        ("(a)(?(1)a|b)", "a conditional `(?(`", True),
        ("(?#note)a", "a comment `(?#`", True),
        ("(?P<n>a)(?P=n)", "a backreference `(?P=`", True),
        # Go 1.15 reads only the (?P<name> form; (?<name> came with Go 1.22.
        ("(?<n>a)", "a named group of later Go versions `(?<`", False),
        ("(?x)a", "an unknown flag or group `(?x`", True),
        ("(?a)a", "an unknown flag or group `(?a`", True),
        ("(?i-x:a)", "an unknown flag or group `(?i-x`", True),
        ("(?-)a", "an unknown flag or group `(?-)`", False),
        # isValidCaptureName: [A-Za-z0-9_]+ only.
        ("(?P<é>a)", "a group name not of letters, digits and _ `(?P<é>`", True),
        # repeat: "a** is a syntax error, not a doubled star, and a++ means something else
        # entirely, which we don't support" (invalid nested repetition operator).
        ("a*+", "a possessive or nested repeat `*+`", True),
        ("a++", "a possessive or nested repeat `++`", True),
        ("a?+", "a possessive or nested repeat `?+`", True),
        ("a{2}+", "a possessive or nested repeat `{2}+`", True),
        ("a{1,2}?+", "a possessive or nested repeat `{1,2}?+`", False),
        # parse: "min > maxRepeat || max > maxRepeat" is an invalid repeat count, and so
        # (repeatIsValid) are nested counts that make more than 1000 copies.
        ("a{1001}", "a repeat count above 1000 `{1001}`", True),
        ("a{2,1001}", "a repeat count above 1000 `{2,1001}`", True),
        ("(a{100}){100}", "nested repeat counts above 1000 in all `{100}`", True),
        ("((a{2}){1}){600}", "nested repeat counts above 1000 in all `{600}`", True),
        # parseEscape: a single non-zero digit "is a backreference; not supported", and any other
        # escaped letter or digit is an invalid escape sequence.
        (r"(a)\1", r"a backreference `\1`", True),
        (r"(a)\8", r"a backreference `\8`", False),
        (r"[\1]", r"a backreference `\1`", True),
        (r"a\Z", r"Python's end-of-text escape `\Z` (Go writes `\z`)", True),
        (r"[\Z]", r"an escape `\Z`", False),
        (r"[\b]", r"an escape `\b`", True),
        (r"\u0041", r"an escape `\u`", True),
        (r"\U00000041", r"an escape `\U`", True),
        (r"\N{DIGIT ONE}", r"an escape `\N`", True),
        ("\\é", "an escape `\\é`", True),
        # parse: "\C" is "any byte; not supported".
        (r"a\C", r"an escape `\C`", False),
        # parseNamedClass: an unknown [:name:] is an invalid character class range.
        ("[[:foo:]]", "an unknown ASCII class `[:foo:]`", True),
    ],
)
def test_constructs_go_refuses_are_named(
    expression: str, construct: str, python_compiles: bool
) -> None:
    """Go's refusals, most of which Python compiles: a check that asked Python alone would pass
    them, and kiam would then fail on them."""
    assert str(refused(expression)) == construct
    try:
        python_pattern(expression)
    except (re.error, ValueError):
        assert not python_compiles
    else:
        assert python_compiles
    assert (
        compile_problem(expression)
        == f"uses {construct}, which Go's regexp (kiam's) does not compile"
    )


@pytest.mark.parametrize(
    "expression",
    [
        "^$",
        r"^/latest/meta-data/(placement/.*|instance-id)\z",
        r"^arn:aws:iam::\d{12}:role/kiam-apps/(billing|search)-.+$",
        r"\Aarn\b",
        "(?P<name_1>a)",
        "(?i)a",
        "(?i-s:a)",
        "(?s:.)",
        "a*?b+?c??d{2}?",
        # Inside a class, parentheses and digits are plain characters.
        "[(?=]",
        "[1-9]",
        # An escaped backslash before a digit is no backreference.
        r"a\\1",
        # Octal (parseEscape: up to three digits, \0 included) and punctuation escapes.
        r"\012",
        r"\123",
        r"\_\-\.\ ",
        # repeatIsValid: 10 x 100 copies is within 1000, {0} makes none, * is not counted.
        "(a{10}){100}",
        "(a{0}){1000}",
        "(a{1000})*",
    ],
)
def test_what_go_compiles_is_not_refused(expression: str) -> None:
    assert refused(expression) is None
    assert compile_problem(expression) is None


@pytest.mark.parametrize(
    ("expression", "construct", "python_reads_it"),
    [
        # parse: "\z" is the end of the text; Python has no \z (its \Z means the same).
        (r"a\z", None, True),
        # parseNamedClass: [[:alpha:]] is a class; Python reads `[[:alph]` and then `]`.
        ("[[:alpha:]]", "an ASCII class `[:alpha:]`", True),
        ("[^[:^digit:]]", "an ASCII class `[:^digit:]`", True),
        # parseUnicodeClass: \pL, \p{Greek}, \PL; Python has no \p.
        (r"\pL", r"a Unicode class `\pL`", False),
        (r"\p{Greek}", r"a Unicode class `\p{Greek}`", False),
        (r"[\PL]", r"a Unicode class `\PL`", False),
        # parse: \Q...\E is literal text; Python has no \Q.
        (r"\Q.*\E", r"quoted text `\Q.*\E`", False),
        # parsePerlFlags: U (ungreedy); Python has no such flag.
        ("(?U)a*", "the ungreedy flag `(?U`", False),
        # parseEscape: \x{...} takes any number of hex digits; Python wants exactly two.
        (r"\x{41}", r"a braced hex escape `\x{41}`", False),
        # parseEscape reads \12 as octal; Python as a backreference to group 12.
        (r"\12", r"a two-digit octal escape `\12`", False),
        # parseRepeat/parseInt: no missing minimum, no leading zeros, or `{` is a literal;
        # Python repeats.
        ("a{,3}", "a repeat Go reads as literal text `{,3}`", True),
        ("a{01}", "a repeat Go reads as literal text `{01}`", True),
        ("a{1,02}", "a repeat Go reads as literal text `{1,02}`", True),
    ],
)
def test_go_syntax_python_reads_otherwise_is_named(
    expression: str, construct: str | None, python_reads_it: bool
) -> None:
    assert refused(expression) is None
    assert (str(read_otherwise(expression)) if read_otherwise(expression) else None) == construct
    # For a compile check (the agent's), what Python compiles passes; the rest is named, not
    # reported as a syntax error Go would not make.
    expected = (
        None
        if python_reads_it
        else f"uses {construct}, which this check (Python's re) does not read as Go does"
    )
    assert compile_problem(expression) == expected


@pytest.mark.parametrize(
    ("expression", "problem"),
    [
        ("(a", "is not a regular expression (missing ), unterminated subpattern at position 0)"),
        ("[b-a]", "is not a regular expression (bad character range b-a at position 1)"),
        ("*a", "is not a regular expression (nothing to repeat at position 0)"),
        (
            "a{2,1}",
            "uses a repeat whose minimum exceeds its maximum `{2,1}`, which Go's regexp (kiam's) does not compile",
        ),
    ],
)
def test_what_neither_compiles_is_named_by_pythons_error(expression: str, problem: str) -> None:
    assert compile_problem(expression) == problem


def test_python_reads_go_as_closely_as_it_can() -> None:
    # Go's \z is the end of the text: Python's \Z.
    assert python_pattern(r"a\z").pattern == r"a\Z"
    # An escaped backslash before z is a backslash and a z in both.
    assert python_pattern(r"a\\z").pattern == r"a\\z"
    assert python_pattern(r"a\\z").search("a\\z") is not None
    # doc.go, Perl character classes are "all ASCII-only": \d is [0-9].
    assert python_pattern(r"^\d$").search("٣") is None
    # `[[` is read literally by both; Python's FutureWarning about it is not an error here.
    assert python_pattern("[[]").search("[") is not None

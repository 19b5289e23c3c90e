"""How kiam v4.2 compiles and matches a namespace's `iam.amazonaws.com/permitted` regexp: Go's
RE2 dialect and kiam's anchoring. The settings refuse a value kiam could not use and the
guarantees judge what a namespace admits, so both must read one definition.

Sources (each spelled out by `tests/test_contracts_kiam.py`): kiam `pkg/server/policy.go`
(`NamespacePermittedRoleNamePolicy`) at tag v4.2; Go's regexp syntax, `go doc regexp/syntax`
(RE2, https://github.com/google/re2/wiki/Syntax).
"""

from __future__ import annotations

import re
import warnings

# Python accepts these but Go's RE2 refuses to compile them (lookarounds, backreferences, atomic
# groups, conditionals, `\Z`): kiam then returns an error for every pod of the namespace.
_RE2_REFUSES = re.compile(r"\(\?(?:[=!>(]|<[=!]|P=)|\\[1-9Z]")
# Go syntax Python reads differently or not at all: POSIX classes, `\z`, `\p{..}`, `\Q..\E`, `\C`.
_GO_ONLY = re.compile(r"\[\[:|\\[zpPQEC]")


def regexp_problem(expression: str) -> str | None:
    """Why `expression` cannot be matched here the way kiam matches it, or None."""
    if _RE2_REFUSES.search(expression):
        return "Go's RE2, which kiam uses, does not compile lookarounds, backreferences, atomic groups, conditionals or \\Z"
    if _GO_ONLY.search(expression):
        return "it uses Go-only syntax ([[:class:]], \\z, \\p, \\Q, \\C) this check does not read"
    try:
        _compile(expression)
    except re.error as error:
        return f"it is not a regular expression ({error})"
    try:
        # kiam anchors it by concatenation; Python refuses an inline flag such as `(?i)` once it
        # no longer starts the expression, where Go applies it to the rest.
        _compile(f"^{expression}$")
    except re.error as error:
        return f"anchored as kiam anchors it, this check cannot read it ({error}); write flags as a scoped group such as (?i:...)"
    return None


def _compile(pattern: str) -> re.Pattern[str]:
    # Python warns that `[a--b]` or `[[` inside a class may change meaning in a future version;
    # today it reads them literally, as Go does.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return re.compile(pattern, re.ASCII)


def permits(expression: str, arn: str, *, strict: bool = True) -> bool:
    """Whether a namespace annotated `iam.amazonaws.com/permitted: <expression>` lets its pods
    assume `arn`, exactly as kiam `pkg/server/policy.go` (`NamespacePermittedRoleNamePolicy`)
    decides it; call only for an expression `regexp_problem` accepts.

    kiam matches the *resolved ARN*, never the annotation. An empty expression forbids everything.
    In strict mode (the default) it compiles `"^" + expression + "$"`, concatenated without a
    group, so `a|b` becomes `^a|b$` (anchoring only the first and last alternative); otherwise
    the expression as it is. Then `MatchString`, a search anywhere in the ARN.

    Python `re.search` with the same text decides the same, given what differs from Go: Python's
    `$` also matches before a final newline (no ARN holds one: IAM names and paths cannot);
    `\\d`, `\\w`, `\\s`, `\\b` are Unicode in Python and ASCII in Go (re.ASCII here); and the
    constructs only one side compiles are turned away by `regexp_problem` first. Leftmost-first
    (RE2) and backtracking (Python) may pick different matches, never a different yes or no.
    """
    if not expression:
        return False
    return _compile(f"^{expression}$" if strict else expression).search(arn) is not None

"""Reading IAM policy documents as the checks see them, and IAM's own wildcard matching."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kiam_eks.invariants.model import Resource, is_unknown


def document(text: Any) -> Any:
    """A JSON policy document, or None where it is unknown (preview) or not a string."""
    if is_unknown(text) or not isinstance(text, str):
        return None
    return json.loads(text)


def statements(document: Any) -> list[Any]:
    """A document's statements, always as a list (IAM accepts a single object too)."""
    found = document.get("Statement", []) if isinstance(document, dict) else []
    return found if isinstance(found, list) else [found]


def as_list(value: Any) -> list[Any]:
    """`Action`, `Resource` and principals may be one string or a list of them."""
    return value if isinstance(value, list) else [value] if value is not None else []


def known_arn(resource: Resource) -> str | None:
    """A resource's ARN where the gate knows it: the mock engine's outputs, or the policy pack's
    props (the outputs of an existing resource); None for a new resource during a preview."""
    for source in (resource.outputs, resource.inputs):
        arn = source.get("arn")
        if isinstance(arn, str) and not is_unknown(arn):
            return arn
    return None


def glob_matches(pattern: str, value: str, *, case_sensitive: bool = True) -> bool:
    """IAM's wildcard matching of one `Resource` (or `Action`) entry against a value.

    `*` matches any run of characters, none included and `/` and `:` included (so `role/apps/*`
    covers every sub-path); `?` matches exactly one character; nothing else is special. ARNs
    compare case-sensitively, actions case-insensitively. A policy variable (`${aws:username}`)
    is compared literally here, so it never counts as covering anything: this program writes none.
    """
    if not is_wildcard(pattern):
        # An exact ARN, as the server's permission lists each existing role: no regex needed.
        return pattern == value if case_sensitive else pattern.casefold() == value.casefold()
    return _glob(pattern, case_sensitive).fullmatch(value) is not None


def is_wildcard(pattern: str) -> bool:
    """Whether IAM reads a `Resource` (or `Action`) entry as a pattern rather than one value."""
    return "*" in pattern or "?" in pattern


# One compiled regex per pattern: each application's check reads every entry of the server's
# permission, and `re`'s own cache (512 entries) is smaller than a large stack's list of ARNs, so
# without this a plan of 1,000 applications compiled 186,068 regexes (issue 39).
@functools.cache
def _glob(pattern: str, case_sensitive: bool) -> re.Pattern[str]:
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.compile(regex, re.DOTALL | (0 if case_sensitive else re.IGNORECASE))


def allows(policy_statements: Sequence[Any], action: str, resource: str) -> bool:
    """Whether these statements certainly allow `action` on `resource`.

    Certainly: an `Allow` counts only without a `Condition` and with `Action` and `Resource`
    named positively; a `Deny` that may apply (any condition, or `NotAction`/`NotResource`)
    takes it away. Conservative both ways, because the check proves access works.
    """
    return allowing(policy_statements, action)(resource)


@dataclass(frozen=True)
class _Statement:
    """One statement as `allows` reads it, its `Resource` split into exact ARNs and wildcards."""

    effect: object
    conditional: bool
    action_hit: bool
    not_action: bool
    not_resource: bool
    exact: frozenset[str]
    wildcards: tuple[str, ...]

    def resource_hit(self, resource: str) -> bool:
        return resource in self.exact or any(glob_matches(w, resource) for w in self.wildcards)


def allowing(policy_statements: Sequence[Any], action: str) -> Callable[[str], bool]:
    """`allows(policy_statements, action, resource)` for many resources: each statement's
    actions matched once and its exact ARNs looked up in a set. Read entry by entry for each
    application, the server's permission of 1,000 ARNs cost 736,047 comparisons (issue 39)."""
    statements = []
    for statement in policy_statements:
        if not isinstance(statement, dict):
            continue
        resources = [r for r in as_list(statement.get("Resource")) if isinstance(r, str)]
        wildcards = tuple(r for r in resources if is_wildcard(r))
        statements.append(
            _Statement(
                effect=statement.get("Effect"),
                conditional="Condition" in statement,
                action_hit=any(
                    isinstance(a, str) and glob_matches(a, action, case_sensitive=False)
                    for a in as_list(statement.get("Action"))
                ),
                not_action="NotAction" in statement,
                not_resource="NotResource" in statement,
                exact=frozenset(resources).difference(wildcards),
                wildcards=wildcards,
            )
        )

    def allowed_on(resource: str) -> bool:
        allowed = denied = False
        for s in statements:
            if s.effect == "Deny":
                denied |= (s.action_hit or s.not_action) and (
                    s.not_resource or s.resource_hit(resource)
                )
            elif s.effect == "Allow" and not s.conditional:
                allowed |= s.action_hit and s.resource_hit(resource)
        return allowed and not denied

    return allowed_on

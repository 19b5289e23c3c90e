"""The IAM identity-policy grammar, checked before a document reaches PutRolePolicy.

IAM refuses a malformed document with MalformedPolicyDocument only when `pulumi up` is half-way;
the linter the plan runs (parliament) does not flag all of it (a Principal, for one). The rules
follow the IAM User Guide: "Grammar of the IAM JSON policy language", "IAM JSON policy elements"
(Version, Sid, Effect, Action/NotAction, Resource/NotResource, Condition and its operators) and
"IAM and AWS STS quotas" (characters, inline policy size per role).
"""

from __future__ import annotations

import json
import re
from typing import Any

from kiam_eks.contracts.iam_quotas import (
    ROLE_INLINE_POLICY_CHARACTERS as ROLE_INLINE_POLICY_CHARACTERS,
)

VERSION = "2012-10-17"

_STATEMENT_KEYS = frozenset(
    {"Sid", "Effect", "Action", "NotAction", "Resource", "NotResource", "Condition"}
)
_SID = re.compile(r"[A-Za-z0-9]*")
# `*`, or a service prefix and an action name that may hold wildcards (`s3:Get*`).
_ACTION = re.compile(r"\*|[A-Za-z0-9-]+:[A-Za-z0-9*?_-]+")
# Policy documents may hold only tab, line feed, carriage return and U+0020 to U+00FF (quotas).
_CHARACTERS = re.compile(r"[\t\n\r\u0020-\u00ff]*")
_OPERATORS = frozenset(
    o.lower()
    for o in (
        "StringEquals", "StringNotEquals", "StringEqualsIgnoreCase", "StringNotEqualsIgnoreCase",
        "StringLike", "StringNotLike", "NumericEquals", "NumericNotEquals", "NumericLessThan",
        "NumericLessThanEquals", "NumericGreaterThan", "NumericGreaterThanEquals", "DateEquals",
        "DateNotEquals", "DateLessThan", "DateLessThanEquals", "DateGreaterThan",
        "DateGreaterThanEquals", "Bool", "BinaryEquals", "IpAddress", "NotIpAddress", "ArnEquals",
        "ArnLike", "ArnNotEquals", "ArnNotLike", "Null",
    )
)  # fmt: skip


def check_policy_document(document: dict[str, Any]) -> dict[str, Any]:
    """The document, if IAM would take it as an inline policy; else a ValueError naming the
    first problem by its path inside the document."""
    problem = _document_problem(document)
    if problem:
        raise ValueError(problem)
    return document


# `\s` in a str pattern is what `str.isspace` calls white space (both are Python's
# Py_UNICODE_ISSPACE): the regular expression counts it at C speed, not character by character.
_WHITE_SPACE = re.compile(r"\s")


def policy_characters(document: dict[str, Any]) -> int:
    """Characters IAM counts against the inline-policy quota: the JSON without white space.
    Written compactly, the JSON has white space only inside its strings, which IAM does not
    count either."""
    text = json.dumps(document, ensure_ascii=False, separators=(",", ":"))
    return len(text) - len(_WHITE_SPACE.findall(text))


def _document_problem(document: dict[str, Any]) -> str | None:
    unknown = sorted(set(document) - {"Version", "Id", "Statement"})
    if unknown:
        return f"{unknown[0]} is not a policy element (Version, Id, Statement)"
    version = document.get("Version")
    if version is not None and not isinstance(version, str):
        return f"Version {version} is not a string: quote it ({VERSION!r}), or YAML reads a date"
    if version != VERSION:
        # IAM also takes 2008-10-17 (no policy variables) and no Version; the linter refuses both.
        return f"Version must be {VERSION!r} (got {version!r})"
    if not isinstance(document.get("Id", ""), str):
        return "Id must be a string"
    statements = document.get("Statement")
    if isinstance(statements, dict):
        statements = [statements]
    if not isinstance(statements, list) or not statements:
        return "Statement must be a statement or a non-empty list of statements"
    sids: set[str] = set()
    for index, statement in enumerate(statements):
        problem = _statement_problem(statement, sids)
        if problem:
            return f"Statement[{index}]{problem}"
    text = json.dumps(document, ensure_ascii=False)
    odd = sorted({c for c in text if not _CHARACTERS.fullmatch(c)})
    if odd:
        return (
            f"contains {''.join(odd)!r}: IAM takes only tab, line feed, carriage return and the "
            "characters U+0020 to U+00FF"
        )
    return None


def _statement_problem(statement: Any, sids: set[str]) -> str | None:
    if not isinstance(statement, dict):
        return " must be a mapping"
    if "Principal" in statement or "NotPrincipal" in statement:
        return ": an inline (identity) policy names no Principal: the role is the principal"
    unknown = sorted(set(statement) - _STATEMENT_KEYS)
    if unknown:
        return f".{unknown[0]} is not a statement element ({', '.join(sorted(_STATEMENT_KEYS))})"
    sid = statement.get("Sid")
    if sid is not None:
        if not isinstance(sid, str) or not _SID.fullmatch(sid):
            return f".Sid {sid!r} may hold only A-Z, a-z and 0-9"
        if sid in sids:
            return f".Sid {sid!r} is used twice: IAM wants each Sid once per policy"
        sids.add(sid)
    effect = statement.get("Effect")
    if effect not in ("Allow", "Deny"):
        return f".Effect {effect!r} must be Allow or Deny" if effect else ".Effect is required"
    for one, other, check in (
        ("Action", "NotAction", _action_problem),
        ("Resource", "NotResource", _resource_problem),
    ):
        if (one in statement) == (other in statement):
            return f" needs exactly one of {one} and {other}"
        key = one if one in statement else other
        values = statement[key]
        values = [values] if isinstance(values, str) else values
        if not isinstance(values, list) or not values:
            return f".{key} must be a string or a non-empty list of strings"
        for value in values:
            problem = check(value)
            if problem:
                return f".{key} {value!r} {problem}"
    if "Condition" in statement:
        return _condition_problem(statement["Condition"])
    return None


def _action_problem(value: Any) -> str | None:
    if isinstance(value, str) and _ACTION.fullmatch(value):
        return None
    return "is not an action such as s3:GetObject (service:action, wildcards allowed) or *"


def _resource_problem(value: Any) -> str | None:
    if value == "*" or (
        isinstance(value, str) and value.startswith("arn:") and value.count(":") >= 5
    ):
        return None
    return "is not an ARN (arn:partition:service:region:account:resource, wildcards allowed) or *"


def _condition_problem(condition: Any) -> str | None:
    if not isinstance(condition, dict) or not condition:
        return ".Condition must map operators to {key: value} mappings"
    for operator, block in condition.items():
        if not _known_operator(str(operator)):
            return f".Condition operator {operator!r} is not an IAM condition operator"
        if not isinstance(block, dict) or not block:
            return f".Condition.{operator} must map condition keys to values"
        for key, value in block.items():
            if not isinstance(key, str) or ":" not in key:
                return (
                    f".Condition.{operator} key {key!r} must name its service, such as aws:SourceIp"
                )
            values = value if isinstance(value, list) else [value]
            if not values or not all(isinstance(v, str | int | float | bool) for v in values):
                return (
                    f".Condition.{operator}.{key} must be a string, number or boolean, or a "
                    "list of them (quote dates, or YAML reads them as dates)"
                )
    return None


def _known_operator(operator: str) -> bool:
    name = operator.lower()
    for prefix in ("forallvalues:", "foranyvalue:"):
        name = name.removeprefix(prefix)
    if name.endswith("ifexists"):
        name = name.removesuffix("ifexists")
        return name in _OPERATORS and name != "null"  # Null takes no IfExists
    return name in _OPERATORS

"""One mandatory stack policy per invariant, each a thin wrapper around `invariants.CHECKS`."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyResource,
    ReportViolation,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import (
    UNKNOWN_ARCHIVE_VALUE,
    UNKNOWN_ARRAY_VALUE,
    UNKNOWN_ASSET_VALUE,
    UNKNOWN_BOOLEAN_VALUE,
    UNKNOWN_NUMBER_VALUE,
    UNKNOWN_OBJECT_VALUE,
    UNKNOWN_STRING_VALUE,
)

from invariants import CHECKS, UNKNOWN, Resource
from invariants.view import KiamView

_SENTINELS = {
    UNKNOWN_ARCHIVE_VALUE, UNKNOWN_ARRAY_VALUE, UNKNOWN_ASSET_VALUE, UNKNOWN_BOOLEAN_VALUE,
    UNKNOWN_NUMBER_VALUE, UNKNOWN_OBJECT_VALUE, UNKNOWN_STRING_VALUE,
}  # fmt: skip


def _plain(value: Any) -> Any:
    """The policy SDK's unknown-checking proxies as plain values, unknowns as `UNKNOWN`."""
    if hasattr(value, "__getitem__") and not isinstance(value, (str, bytes, list, dict)):
        # Both proxy kinds hand out their wrapped value under this key.
        with contextlib.suppress(KeyError, IndexError, TypeError):
            value = value["__target"]
    if isinstance(value, str) and value in _SENTINELS:
        return UNKNOWN
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def to_resource(resource: PolicyResource) -> Resource:
    """What the checks see of a resource under preview or update."""
    return Resource(
        urn=resource.urn,
        type=resource.resource_type,
        name=resource.name,
        inputs=_plain(resource.props),
        dependencies=frozenset(d.urn for d in resource.dependencies),
        property_dependencies={
            k: frozenset(d.urn for d in v) for k, v in resource.property_dependencies.items()
        },
        delete_before_replace=bool(resource.opts.delete_before_replace),
    )


def _validator(check_id: str) -> Callable[[StackValidationArgs, ReportViolation], None]:
    def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
        view = KiamView([to_resource(r) for r in args.resources])
        for violation in CHECKS[check_id](view):
            urn = violation.resource if violation.resource.startswith("urn:") else None
            report_violation(f"[{violation.id}] {violation.reason}", urn)

    return validate


POLICIES: list[Policy] = [
    StackValidationPolicy(
        name=f"kiam-{check_id}",
        description=(check.__doc__ or check_id).strip().splitlines()[0],
        enforcement_level=EnforcementLevel.MANDATORY,
        validate=_validator(check_id),
    )
    for check_id, check in CHECKS.items()
]

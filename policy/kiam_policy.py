"""The CrossGuard pack: one mandatory stack policy per guarantee, and one mandatory resource policy
for each part of a guarantee that one resource decides, each a thin wrapper around `invariants`."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pulumi
from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyResource,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
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

from kiam_eks.invariants import CHECKS, UNKNOWN, Resource
from kiam_eks.invariants.expected import Expected, MissingExpectationsError
from kiam_eks.invariants.per_resource import RESOURCE_LEVEL, resource_violations
from kiam_eks.invariants.view import KiamView
from kiam_eks.settings import SettingsError

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
        parent=(resource.parent.urn if resource.parent else resource.opts.parent) or "",
    )


# The stack's config from the engine's ConfigureStack request, kept for the analyses: the Pulumi
# runtime keeps config in a context variable, which the gRPC thread that serves ConfigureStack
# does not share with the ones that serve the analyses.
_stack_config: dict[str, tuple[dict[str, str], list[str]]] = {}


def take_stack_config(config: Mapping[str, str], secret_keys: Sequence[str]) -> None:
    """Keep the stack's config as the engine hands it to the pack in `ConfigureStack` (every
    key, its value as the program gets it). pulumi-policy 1.21 keeps only the request's tags;
    and a pack the CLI starts itself (`policy/pack-launcher`) gets no `PULUMI_CONFIG` in its
    environment, so this is the only way its settings arrive there."""
    if config:
        _stack_config["stack"] = (dict(config), list(secret_keys))


def _use_stack_config() -> None:
    """Put the kept config into this thread's Pulumi runtime, where the settings loader reads
    it; config in the environment (`PULUMI_CONFIG`) wins, as for the program."""
    if "stack" in _stack_config and not pulumi.runtime.get_config_env():
        pulumi.runtime.set_all_config(*_stack_config["stack"])


def _expected() -> tuple[Expected | None, str]:
    """What the stack asked for, from its settings: the engine starts the pack's process with
    the stack's config (`PULUMI_CONFIG`, secrets decrypted, as for the program), which
    pulumi-policy loads into the Pulumi runtime before each analysis; the pack reads it as the
    program does. Where it cannot (no config handed over, or invalid), why not."""
    _use_stack_config()
    try:
        return Expected.of_running_stack(), ""
    except SettingsError as error:
        return None, str(error)


def _stack_validator(check_id: str) -> Callable[[StackValidationArgs, ReportViolation], None]:
    def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
        resources = [to_resource(r) for r in args.resources]
        by_urn = {r.urn: r for r in resources}
        expected, why_not = _expected()
        try:
            violations = CHECKS[check_id](KiamView(resources, expected))
        except MissingExpectationsError:
            # Fail closed: a guarantee that judges against the settings cannot pass without them.
            report_violation(
                f"[{check_id}] cannot be judged: the pack could not read the stack's kiam "
                f"settings ({why_not})",
                None,
            )
            return
        for violation in violations:
            urn = violation.resource if violation.resource.startswith("urn:") else None
            alone = by_urn.get(urn or "")
            if alone is not None and violation in resource_violations(check_id, alone):
                continue  # its resource policy already stopped that resource's step
            report_violation(f"[{violation.id}] {violation.reason}", urn)

    return validate


def _resource_validator(
    check_id: str,
) -> Callable[[ResourceValidationArgs, ReportViolation], None]:
    def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        resource = Resource(
            urn=args.urn,
            type=args.resource_type,
            name=args.name,
            inputs=_plain(args.props),
            delete_before_replace=bool(args.opts.delete_before_replace),
            parent=args.opts.parent or "",
        )
        for violation in resource_violations(check_id, resource):
            report_violation(f"[{violation.id}] {violation.reason}", None)

    return validate


def _summary(check_id: str) -> str:
    return (CHECKS[check_id].__doc__ or check_id).strip().splitlines()[0]


# Resource policies run before each resource's step, so what one resource decides is prevented,
# on `up --skip-preview` too. Stack policies see every resource, after all steps: a preview (and
# the preview `pulumi up` starts with) fails on them before anything changes; an update without a
# preview reports them once its changes are applied.
POLICIES: list[Policy] = [
    *(
        ResourceValidationPolicy(
            name=f"kiam-{check_id}-resource",
            description=f"{_summary(check_id)} (what {', '.join(sorted(types))} alone decides)",
            enforcement_level=EnforcementLevel.MANDATORY,
            validate=_resource_validator(check_id),
        )
        for check_id, types in RESOURCE_LEVEL.items()
    ),
    *(
        StackValidationPolicy(
            name=f"kiam-{check_id}",
            description=_summary(check_id),
            enforcement_level=EnforcementLevel.MANDATORY,
            validate=_stack_validator(check_id),
        )
        for check_id in CHECKS
    ),
]

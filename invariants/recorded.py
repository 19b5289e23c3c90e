"""Adapter: the mock engine's recorded registrations as the checks' resources."""

from __future__ import annotations

from contracts.tokens import STACK
from invariants.model import Resource
from tools.mock_engine import Recording


def resources_from_recording(recording: Recording) -> list[Resource]:
    """Custom resources (components carry no inputs worth checking), and the root stack with the
    stack outputs, as the engine hands them to a policy pack."""
    roots = {r.parent for r in recording.registrations if r.parent.split("::")[2:3] == [STACK]}
    stack = [
        Resource(urn=urn, type=STACK, name=urn.rsplit("::", 1)[1], inputs=recording.stack_outputs)
        for urn in sorted(roots)
    ]
    return stack + [
        Resource(
            urn=r.urn,
            type=r.type,
            name=r.name,
            inputs=r.inputs,
            dependencies=frozenset(r.dependencies),
            property_dependencies={k: frozenset(v) for k, v in r.property_dependencies.items()},
            delete_before_replace=r.delete_before_replace,
            outputs=r.outputs,
        )
        for r in recording.registrations
        if r.custom
    ]

"""Adapter: the mock engine's recorded registrations as the checks' resources."""

from __future__ import annotations

from invariants.model import Resource
from tools.mock_engine import Recording


def resources_from_recording(recording: Recording) -> list[Resource]:
    """Custom resources only: components carry no inputs worth checking."""
    return [
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

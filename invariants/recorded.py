"""Adapter: a recorded run's registrations (the mock engine's, or any engine's recording of the
same shape) as the checks' resources.

The guarantees sit below `tools` (they also run in the policy pack, which has no tools), so they
name what they read of a recording here, as protocols, instead of importing the mock engine's
classes: `tools.mock_engine.Recording` fits them as it is, and mypy holds it to them wherever a
recording is passed in (`tools/plan.py`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from kiam_eks.contracts.tokens import STACK
from kiam_eks.invariants.model import Resource


class RecordedRegistration(Protocol):
    """What the checks read of one registered resource."""

    @property
    def urn(self) -> str: ...
    @property
    def parent(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def custom(self) -> bool: ...
    @property
    def inputs(self) -> Mapping[str, Any]: ...
    @property
    def dependencies(self) -> Sequence[str]: ...
    @property
    def property_dependencies(self) -> Mapping[str, Sequence[str]]: ...
    @property
    def delete_before_replace(self) -> bool: ...
    @property
    def replace_on_changes(self) -> Sequence[str]: ...
    @property
    def outputs(self) -> Mapping[str, Any]: ...
    @property
    def retain_on_delete(self) -> bool: ...


class RecordedRun(Protocol):
    """Every registration of one program run, in order."""

    @property
    def registrations(self) -> Sequence[RecordedRegistration]: ...
    @property
    def stack_outputs(self) -> Mapping[str, Any]: ...


def resources_from_recording(recording: RecordedRun) -> list[Resource]:
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
            parent=r.parent,
            replace_on_changes=tuple(r.replace_on_changes),
            outputs=r.outputs,
            retain_on_delete=r.retain_on_delete,
        )
        for r in recording.registrations
        if r.custom
    ]

"""What the checks see of a resource, whichever gate hands it over, and what they report."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


class _Unknown:
    """A value the engine cannot know yet (during `pulumi preview`): checks must not judge it."""

    def __repr__(self) -> str:
        return "<unknown>"


UNKNOWN: Any = _Unknown()


def is_unknown(value: Any) -> bool:
    return value is UNKNOWN


@dataclass(frozen=True)
class Resource:
    """One resource: its type and inputs as registered, and what the engine knows of its wiring."""

    urn: str
    type: str
    name: str
    inputs: Mapping[str, Any]
    dependencies: frozenset[str] = frozenset()
    """URNs this resource waits for (explicit `depends_on` and inputs from other resources)."""
    property_dependencies: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """For each top-level input, the URNs its value comes from."""
    delete_before_replace: bool = False
    parent: str = ""
    """The URN of the component (or stack) it was registered under."""
    replace_on_changes: tuple[str, ...] | None = None
    """The properties whose change the engine replaces it for; None where the gate cannot see
    them (pulumi-policy hands no `replaceOnChanges` to a policy pack)."""
    outputs: Mapping[str, Any] = field(default_factory=dict)
    """Outputs where the gate knows them (the mock engine; an update): checks use them when present."""
    retain_on_delete: bool | None = None
    """`retainOnDelete`; None where the gate cannot see it (a policy pack is not told)."""


@dataclass(frozen=True, order=True)
class Violation:
    """A broken guarantee: a stable id, the offending resource, one line of why."""

    id: str
    resource: str
    reason: str

    def __str__(self) -> str:
        return f"[{self.id}] {self.resource}: {self.reason}"


def dig(tree: Any, *path: str | int, default: Any = None) -> Any:
    """A nested value, or `default` where any step is missing."""
    node = tree
    for step in path:
        if is_unknown(node):
            return UNKNOWN
        try:
            node = node[step]
        except (KeyError, IndexError, TypeError):
            return default
    return node


def labels_match(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    """Whether `matchLabels` selects an object carrying `labels`."""
    return all(labels.get(k) == v for k, v in selector.items())


def by_type(resources: Iterable[Resource], type_: str) -> list[Resource]:
    return [r for r in resources if r.type == type_]

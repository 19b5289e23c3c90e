"""Values a component takes as `pulumi.Input`: a plain string is used as it is, so the stack file's
previews keep showing plain values; another resource's output is used once known."""

from __future__ import annotations

from collections.abc import Callable
from inspect import isawaitable
from typing import Any, TypeVar

import pulumi

T = TypeVar("T")


def when_known(value: pulumi.Input[str], render: Callable[[str], T]) -> T | pulumi.Output[T]:
    """`render(value)`: now for a string, once known for another resource's output."""
    if isinstance(value, str):
        return render(value)
    known: pulumi.Output[str] = pulumi.Output.from_input(value)
    return known.apply(render)


def lifted(value: Any) -> pulumi.Output[Any]:
    """`pulumi.Output.from_input(value)` for plain dicts and lists holding a few Outputs, at the
    cost of the Outputs alone.

    The SDK's `from_input` makes an Output (and its tasks) for every dict, list and value it walks,
    plain ones too: the `applications` mapping of 1,000 applications became about 5,000 Outputs
    (docs/performance.md has what the real engine's preview took before and after). Here the Outputs
    (and awaitables) in `value` are awaited together and the structure is rebuilt around their
    values: unknown while any of them is, secret if any is, depending on all their resources,
    as `from_input` would make it."""
    leaves: list[Any] = []

    def collect(node: Any) -> None:
        if isinstance(node, dict):
            for item in node.values():
                collect(item)
        elif isinstance(node, (list, tuple)):
            for item in node:
                collect(item)
        elif isinstance(node, pulumi.Output) or isawaitable(node):
            leaves.append(node)

    collect(value)

    def rebuild(resolved: list[Any]) -> Any:
        remaining = iter(resolved)

        def fill(node: Any) -> Any:
            if isinstance(node, dict):
                return {key: fill(item) for key, item in node.items()}
            if isinstance(node, list):
                return [fill(item) for item in node]
            if isinstance(node, tuple):
                return tuple(fill(item) for item in node)
            if isinstance(node, pulumi.Output) or isawaitable(node):
                return next(remaining)
            return node

        return fill(value)

    return pulumi.Output.all(*leaves).apply(rebuild)

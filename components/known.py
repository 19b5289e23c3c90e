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


class _Whole:
    """An Output's value handed through `pulumi.Output.all` as it is: `all` lifts each value it
    gathers with `from_input`, which makes an Output of every dict, list and value inside it."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def _holds_outputs(node: Any) -> bool:
    """Whether a plain value has an Output (or awaitable) somewhere inside."""
    if isinstance(node, dict):
        return any(_holds_outputs(item) for item in node.values())
    if isinstance(node, (list, tuple)):
        return any(_holds_outputs(item) for item in node)
    return isinstance(node, pulumi.Output) or isawaitable(node)


def lifted(value: Any) -> pulumi.Output[Any]:
    """`pulumi.Output.from_input(value)` for plain dicts and lists holding a few Outputs, at the
    cost of the Outputs alone.

    The SDK's `from_input` makes an Output (and its tasks) for every dict, list and value it walks,
    plain ones too: the `applications` mapping of 1,000 applications became about 5,000 Outputs
    (docs/performance.md has what the real engine's preview took before and after). Here the Outputs
    (and awaitables) in `value` are awaited together and the structure is rebuilt around their
    values: unknown while any of them is, secret if any is, depending on all their resources,
    as `from_input` would make it.

    An Output's own value is taken whole, not walked as `Output.all` walks it: the trust document
    of each of 800 existing roles (`applications.<app>.trust`) made about 25 Outputs. Should a
    value hold Outputs itself, the result is lifted by `from_input` after all, as it would be."""
    leaves: list[Any] = []

    def collect(node: Any) -> None:
        if isinstance(node, dict):
            for item in node.values():
                collect(item)
        elif isinstance(node, (list, tuple)):
            for item in node:
                collect(item)
        elif isinstance(node, pulumi.Output):
            leaves.append(node.apply(_Whole))
        elif isawaitable(node):
            leaves.append(node)

    collect(value)

    def rebuild(resolved: list[Any]) -> Any:
        remaining = (item.value if isinstance(item, _Whole) else item for item in resolved)

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

        filled = fill(value)
        return pulumi.Output.from_input(filled) if _holds_outputs(filled) else filled

    return pulumi.Output.all(*leaves).apply(rebuild)

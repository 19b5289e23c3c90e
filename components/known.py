"""Values a component takes as `pulumi.Input`: a plain string is used as it is, so the stack file's
previews keep showing plain values; another resource's output is used once known."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import pulumi

T = TypeVar("T")


def when_known(value: pulumi.Input[str], render: Callable[[str], T]) -> T | pulumi.Output[T]:
    """`render(value)`: now for a string, once known for another resource's output."""
    if isinstance(value, str):
        return render(value)
    known: pulumi.Output[str] = pulumi.Output.from_input(value)
    return known.apply(render)

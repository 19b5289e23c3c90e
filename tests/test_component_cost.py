"""What a component costs at each registration: the SDK resolves the annotations of a component's
class into types every time one is registered (`pulumi._types.resource_types`, called by
`rpc.resolve_outputs`, uncached), so the components registered once per application declare
their attributes in `__init__` and their classes carry no annotations (issue 39: half a
millisecond per existing role, 800 of them at 1,000 applications)."""

from __future__ import annotations

import inspect
from typing import Any

import pulumi
import pytest
from pulumi import _types

from kiam_eks.components.application_role import ApplicationRole
from kiam_eks.components.existing_role import ExistingApplicationRole


class _Annotated(pulumi.ComponentResource):
    role_arn: str
    pod_annotation: dict[str, str]


def test_the_sdk_resolves_a_component_classs_annotations_at_every_registration(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[Any] = []
    original = _types.get_type_hints  # type: ignore[attr-defined]

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(_types, "get_type_hints", counted)
    for _ in range(3):
        assert _types.resource_types(_Annotated) == {
            "role_arn": str,
            "pod_annotation": dict[str, str],
        }
    assert len(calls) == 3


@pytest.mark.parametrize("component", [ExistingApplicationRole, ApplicationRole])
def test_per_application_components_carry_no_class_annotations(component: type) -> None:
    assert inspect.get_annotations(component) == {}
    assert _types.resource_types(component) == {}

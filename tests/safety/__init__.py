"""Tests that kill the mutants the rest of the suite let live (tools/mutation, docs/testing.md):
one file a module under mutation, each test asserting one exact thing about that module's lines."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest


def assert_frozen_and_keyword_only(cls: type, **fields: Any) -> None:
    """A component's inputs are a value: named at construction (no field lands in another's
    place), and never changed under the component afterwards."""
    args = cls(**fields)
    name = next(iter(fields))
    with pytest.raises(dataclasses.FrozenInstanceError, match=f"cannot assign to field '{name}'"):
        setattr(args, name, fields[name])
    with pytest.raises(
        TypeError,
        match=rf"^{cls.__name__}.__init__\(\) takes 1 positional argument but {len(fields) + 1} were given$",
    ):
        cls(*fields.values())


def stack_settings(config: dict[str, Any]) -> Any:
    """The validated settings of a config map (tests/conftest.py's `base_config`)."""
    from kiam_eks.settings.loader import settings_from_values

    values = {k.removeprefix("kiam:"): v for k, v in config.items() if k.startswith("kiam:")}
    return settings_from_values(values, "test config")


def problems(config: dict[str, Any]) -> list[str]:
    """What the settings refuse in a config map, each as the user reads it (none: valid)."""
    from kiam_eks.settings import SettingsError

    try:
        stack_settings(config)
    except SettingsError as error:
        return error.problems
    return []


def model_problems(model: Any, values: dict[str, Any]) -> list[str]:
    """What one settings model refuses in `values` (its camelCase keys), as `key: message`."""
    from pydantic import ValidationError

    try:
        model.model_validate(values)
    except ValidationError as error:
        return [f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors()]
    return []

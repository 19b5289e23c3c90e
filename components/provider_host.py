"""The component provider that hosts `Kiam` and `KiamKubernetes` for programs in other languages
(provider/__main__.py), refusing what the SDK's own provider would silently drop.

The Python SDK's `ComponentProvider` maps what the engine sends onto the components' Python
arguments by walking the schema's properties: a key the schema does not have is never looked
at, so it vanishes (pulumi `provider/experimental/component.py`, `map_input_properties`). A
TypeScript program catches a misspelt key at `tsc`, and the engine checks a YAML program against
the schema; a plain JavaScript program, or TypeScript written through `any`, has neither, and a
misspelt `minSise` would install with the default. Here it is refused by its path, before the
component registers anything.
"""

from __future__ import annotations

import sys
from typing import Any

from pulumi import InputPropertyError
from pulumi.provider import main
from pulumi.provider.experimental.analyzer import PropertyDefinition
from pulumi.provider.experimental.component import ComponentProvider


class StrictComponentProvider(ComponentProvider):
    """`ComponentProvider` refusing any input key its schema does not name, at any depth."""

    def map_input_properties(
        self,
        inputs: Any,
        properties: dict[str, PropertyDefinition],
        mapping: dict[str, str],
        component_name: str,
        property_path: str,
    ) -> Any:
        if isinstance(inputs, dict):
            unknown = sorted(set(inputs) - set(properties))
            if unknown:
                path = f"{property_path}.{unknown[0]}" if property_path else unknown[0]
                raise InputPropertyError(
                    path,
                    f"'{path}' is not an input of '{component_name}'"
                    + (
                        f" ({len(unknown)} unknown: {', '.join(unknown)})"
                        if len(unknown) > 1
                        else ""
                    )
                    + f"; allowed here: {', '.join(sorted(properties))}",
                )
        return super().map_input_properties(
            inputs, properties, mapping, component_name, property_path
        )


def host(provider: ComponentProvider) -> None:
    """Serve `provider` to the engine that started this process."""
    main(provider, sys.argv[1:])

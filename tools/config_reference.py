"""Generate the configuration reference from the settings models, so the docs cannot drift.

python -m tools.config_reference           # print it
python -m tools.config_reference --write   # write docs/configuration.md
"""

from __future__ import annotations

import json
import sys
import types
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from settings.stack import StackSettings

REFERENCE = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"

HEADER = """# Configuration reference

Every setting lives under the `kiam:` namespace of `stacks/Pulumi.<stack>.yaml`, as structured
camelCase objects (`pulumi config set --path 'kiam:server.replicas' 3`). Unknown keys are errors.
Generated from the settings models by `python -m tools.config_reference --write`; a test fails
when this file and the models disagree.
"""


def _model_of(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return _type_name(args[0])
    if origin is typing.Literal:
        return " \\| ".join(json.dumps(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        return " \\| ".join(_type_name(a) for a in args if a is not type(None)) + " (optional)"
    if origin is list:
        return f"list of {_type_name(args[0])}"
    if origin is dict:
        return f"map of {_type_name(args[0])} to {_type_name(args[1])}"
    if annotation is SecretStr:
        return "secret string"
    model = _model_of(annotation)
    if model is not None:
        return "object"
    return getattr(annotation, "__name__", str(annotation))


def _default(field: FieldInfo) -> str:
    if field.is_required():
        return "**required**"
    value = field.default
    if value is PydanticUndefined or value is None:
        return "—"
    if isinstance(value, BaseModel):
        return "see below"
    if isinstance(value, list) and value and isinstance(value[0], BaseModel):
        return "see below"
    return f"`{json.dumps(value)}`"


def _rows(
    model: type[BaseModel], prefix: str, out: list[str], nested: list[tuple[str, type[BaseModel]]]
) -> None:
    for name, field in model.model_fields.items():
        key = field.alias or name
        path = f"{prefix}.{key}"
        annotation = field.annotation
        inner = _model_of(annotation)
        if inner is None and typing.get_origin(annotation) is list:
            inner = _model_of(typing.get_args(annotation)[0])
            if inner is not None:
                nested.append((f"{path}[]", inner))
                inner = None
        if inner is not None:
            _rows(inner, path, out, nested)
            continue
        description = (field.description or "").replace("|", "\\|")
        out.append(f"| `{path}` | {_type_name(annotation)} | {_default(field)} | {description} |")


def render() -> str:
    parts = [HEADER]
    for name, field in StackSettings.model_fields.items():
        key = f"kiam:{field.alias or name}"
        model = _model_of(field.annotation)
        parts.append(f"\n## `{key}`\n\n{field.description}\n")
        if model is None:
            parts.append(f"\nType: {_type_name(field.annotation)}. Default: {_default(field)}.\n")
            continue
        rows: list[str] = []
        nested: list[tuple[str, type[BaseModel]]] = []
        _rows(model, key, rows, nested)
        parts.append(
            "\n| key | type | default | description |\n|---|---|---|---|\n" + "\n".join(rows) + "\n"
        )
        for path, inner in nested:
            inner_rows: list[str] = []
            _rows(inner, path, inner_rows, [])
            parts.append(
                f"\nEach item of `{path[:-2]}`:\n\n| key | type | default | description |\n|---|---|---|---|\n"
                + "\n".join(inner_rows)
                + "\n"
            )
    return "".join(parts)


def main(argv: list[str]) -> int:
    text = render()
    if "--write" in argv:
        REFERENCE.parent.mkdir(exist_ok=True)
        REFERENCE.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

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

from kiam_eks.settings.base import model_class
from kiam_eks.settings.node_group import what_a_change_does
from kiam_eks.settings.stack import StackSettings
from kiam_eks.transitions.table import row_of
from tools.transition_reference import anchor

REFERENCE = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"

HEADER = """# Configuration reference

Every setting lives under the `kiam:` namespace of `stacks/Pulumi.<stack>.yaml`, as structured
camelCase objects (`pulumi config set --path 'kiam:server.replicas' 3`). Unknown keys are errors.
Generated from the settings models by `python -m tools.config_reference --write`; a test fails
when this file and the models disagree. [settings-audit.md](settings-audit.md) follows each key to
the AWS or Kubernetes field it ends up in, what that API accepts, and what the plan refuses.
"""


def _nested(annotation: Any) -> tuple[type[BaseModel], str] | None:
    """A settings model inside an annotation, and how its keys hang below the field's path."""
    model = model_class(annotation)
    if model is None:
        return None
    origin = typing.get_origin(annotation)
    return model, "[]" if origin is list else ".<name>" if origin is dict else ""


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
    if model_class(annotation) is not None:
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
    model: type[BaseModel], prefix: str, out: list[str], tables: list[tuple[str, type[BaseModel]]]
) -> None:
    for name, field in model.model_fields.items():
        path = f"{prefix}.{field.alias or name}"
        nested = _nested(field.annotation)
        if nested is not None and nested[1] == "":
            _rows(nested[0], path, out, tables)  # an object (optional or not): its keys inline
            continue
        if nested is not None:
            tables.append((path + nested[1], nested[0]))  # items of a list or map: a table below
        description = (
            (field.description or "").replace("|", "\\|") + _on_change(path) + _running(path)
        )
        out.append(
            f"| `{path}` | {_type_name(field.annotation)} | {_default(field)} | {description} |"
        )


def _on_change(path: str) -> str:
    """What changing a node group setting (or the Kubernetes version) does to the server nodes."""
    if path == "kiam:cluster.kubernetesVersion":
        return f" **On change:** {what_a_change_does('kubernetesVersion')}."
    if path == "kiam:nodeGroup.subnets[].zone":
        return " **On change:** nothing on AWS (the subnet's id decides its zone); read by checks only."
    if path.startswith("kiam:nodeGroup."):
        setting = path.removeprefix("kiam:nodeGroup.").split(".", 1)[0].split("[", 1)[0]
        return f" **On change:** {what_a_change_does(setting)}."
    return ""


def _running(path: str) -> str:
    """What a change does to a running install, from the transitions table."""
    row = row_of(path)
    kinds = " or ".join(k.value for k in row.kinds)
    return f" **Running install:** {kinds} ([transitions](transitions.md#{anchor(row.setting)}))."


def setting_keys() -> list[str]:
    """Every key path the configuration reference documents, in its order."""
    keys: list[str] = []
    for name, field in StackSettings.model_fields.items():
        key = f"kiam:{field.alias or name}"
        nested = _nested(field.annotation)
        if nested is None:
            keys.append(key)
            continue
        model, suffix = nested
        tables: list[tuple[str, type[BaseModel]]] = []
        _keys(model, key + suffix, keys, tables)
        while tables:
            path, inner = tables.pop(0)
            _keys(inner, path, keys, tables)
    return keys


def _keys(
    model: type[BaseModel], prefix: str, out: list[str], tables: list[tuple[str, type[BaseModel]]]
) -> None:
    for name, field in model.model_fields.items():
        path = f"{prefix}.{field.alias or name}"
        nested = _nested(field.annotation)
        if nested is not None and nested[1] == "":
            _keys(nested[0], path, out, tables)
            continue
        if nested is not None:
            tables.append((path + nested[1], nested[0]))
        out.append(path)


def _table(rows: list[str]) -> str:
    return "\n| key | type | default | description |\n|---|---|---|---|\n" + "\n".join(rows) + "\n"


def render() -> str:
    parts = [HEADER]
    for name, field in StackSettings.model_fields.items():
        key = f"kiam:{field.alias or name}"
        parts.append(f"\n## `{key}`\n\n{field.description}\n")
        nested = _nested(field.annotation)
        if nested is None:
            parts.append(
                f"\nType: {_type_name(field.annotation)}. Default: {_default(field)}."
                f"{_running(key)}\n"
            )
            continue
        model, suffix = nested
        if suffix:
            parts.append(
                f"\nType: {_type_name(field.annotation)}. Default: {_default(field)}."
                f"{_running(key)}\n"
            )
        tables: list[tuple[str, type[BaseModel]]] = []
        rows: list[str] = []
        _rows(model, key + suffix, rows, tables)
        parts.append(_table(rows))
        while tables:
            path, inner = tables.pop(0)
            inner_rows: list[str] = []
            _rows(inner, path, inner_rows, tables)
            parts.append(f"\nEach item of `{path.removesuffix('[]')}`:\n" + _table(inner_rows))
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

"""Generate `Kiam`'s named argument types from the settings models, so the two cannot drift.

Each section argument of `Kiam` (`node_group`, `server`, ... and each entry of `applications`) is
one stack setting (components/public_args.py `KIAM_ARGUMENTS`). This writes, for each settings model
under them, a `TypedDict` with the model's fields under their Python names (snake_case), their
types, whether they may be left out, and their descriptions as docstrings:
components/argument_types.py. The component provider infers the package schema from those
classes (pulumi/provider/experimental/analyzer.py `analyze_type`: a TypedDict becomes a named
object type, each key camelCased; `NotRequired` keys optional; a key's docstring its
description), so TypeScript, Python and YAML programs get one named type per section; and the
settings models accept the same snake_case names (settings/base.py `populate_by_name`), so the
values reach the same validation unchanged.

    python -m tools.argument_types           # print it
    python -m tools.argument_types --write   # write components/argument_types.py
"""

from __future__ import annotations

import enum
import json
import sys
import types
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from kiam_eks.components.public_args import KIAM_ARGUMENTS
from kiam_eks.settings.base import model_class
from kiam_eks.settings.kubernetes_side import KubernetesSideSettings
from kiam_eks.settings.stack import StackSettings
from tools.api_reference import camel

TARGET = Path(__file__).resolve().parent.parent / "components" / "argument_types.py"
# Each settings model's schema type name: the model's name with `Settings` made `Options`, as
# the arguments of a component are named in pulumi-eks (`NodeGroupOptions`); distinct from the
# components' own `...Args` classes and from the models themselves.
SUFFIX_FROM, SUFFIX_TO = "Settings", "Options"
# Names the rule above would make confusing: `ResourceOptions` is every Pulumi SDK's options of a
# resource.
RENAMED = {"ResourceSettings": "ContainerResourceOptions"}
KUBERNETES_SIDE_NODE_GROUP = KubernetesSideSettings.model_fields["node_group"].annotation

HEADER = '''"""`Kiam`'s and `KiamKubernetes`' named argument types: one per section of the stack settings
and one for each application entry, with the settings' snake_case names, types and descriptions.

Generated from the settings models by `python -m tools.argument_types --write`; do not edit
(tests/test_argument_types.py fails when this file and the models disagree). The component
provider reads these classes as the package schema's types (provider/schema.json)."""

# No `from __future__ import annotations`: the component provider reads these annotations as
# types at run time. The docstrings are the schema's descriptions, so each is one line.
from typing import Any, NotRequired, TypedDict
'''


def type_name(model: type[BaseModel]) -> str:
    name = model.__name__
    if name in RENAMED:
        return RENAMED[name]
    if not name.endswith(SUFFIX_FROM):
        raise ValueError(f"settings model {name} does not end in {SUFFIX_FROM!r}")
    return name[: -len(SUFFIX_FROM)] + SUFFIX_TO


def section_models() -> dict[str, Any]:
    """Each section argument of `Kiam` and the annotation of the stack setting it is."""
    fields = StackSettings.model_fields
    by_alias = {f.alias or name: f for name, f in fields.items()}
    sections = {}
    for argument, key_path in KIAM_ARGUMENTS.items():
        if "." in key_path:
            continue
        annotation = by_alias[key_path].annotation
        if model_class(annotation) is not None:
            sections[argument] = annotation
    return sections


class _Writer:
    """Collects the TypedDicts of the models reached, nested ones first."""

    def __init__(self) -> None:
        self.classes: dict[str, str] = {}

    def annotation(self, annotation: Any) -> tuple[str, bool, list[str]]:
        """The Python annotation for a setting's type, whether it may be None, and the values a
        Literal or enum allows (said in the description: the schema has no string unions)."""
        origin = typing.get_origin(annotation)
        args = typing.get_args(annotation)
        if origin is typing.Annotated:
            return self.annotation(args[0])
        if origin in (typing.Union, types.UnionType):
            kept = [a for a in args if a is not type(None)]
            optional = len(kept) < len(args)
            if len(kept) == 1:
                text, _, allowed = self.annotation(kept[0])
                return text, optional, allowed
            # Unions are not schema types (analyzer.py refuses them): any value, checked by
            # the settings as it is.
            return "Any", optional, []
        if origin is typing.Literal:
            kinds = {type(a) for a in args}
            return kinds.pop().__name__ if len(kinds) == 1 else "Any", False, [*args]
        if origin is list:
            text, _, _ = self.annotation(args[0])
            return f"list[{text}]", False, []
        if origin is dict:
            text, _, _ = self.annotation(args[1])
            return f"dict[str, {text}]", False, []
        if annotation is SecretStr:
            return "str", False, []
        if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
            return "str", False, [m.value for m in annotation]
        model = model_class(annotation)
        if model is not None:
            self.model(model)
            return type_name(model), False, []
        if annotation in (str, int, float, bool):
            return annotation.__name__, False, []
        if annotation is Any:
            return "Any", False, []
        raise ValueError(f"no argument type for the settings type {annotation!r}")

    def model(self, model: type[BaseModel]) -> None:
        name = type_name(model)
        if name in self.classes:
            return
        self.classes[name] = ""  # reserved: a model reached again while being written
        doc = _one_line(model.__doc__ or name)
        lines = [f"class {name}(TypedDict):", f'    """{_escaped(doc)}"""', ""]
        for field_name, field in model.model_fields.items():
            text, optional, allowed = self.annotation(field.annotation)
            if optional or not field.is_required():
                text = f"NotRequired[{text}]"
            lines.append(f"    {field_name}: {text}")
            lines.append(f'    """{_escaped(_description(field_name, field, allowed))}"""')
        self.classes.pop(name)
        self.classes[name] = "\n".join(lines)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _escaped(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')


def _description(name: str, field: FieldInfo, allowed: list[Any]) -> str:
    parts = [_one_line(field.description or "")]
    if field.alias and field.alias != camel(name):
        # The schema camelCases the Python name; where the stack file spells the key otherwise.
        parts.append(f"In a stack file `{field.alias}`.")
    if allowed:
        parts.append("One of " + ", ".join(f"`{json.dumps(a)}`" for a in allowed) + ".")
    default = field.default
    if not field.is_required() and default is not PydanticUndefined:
        shown = _plain(default)
        if shown is not None:
            parts.append(f"Default `{json.dumps(shown)}`.")
    return " ".join(p for p in parts if p)


def _plain(value: Any) -> Any:
    """A default as JSON shows it; None for defaults that are whole sections or empty."""
    if value is None or isinstance(value, BaseModel):
        return None
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (list, dict)) and (
        not value or any(isinstance(v, BaseModel) for v in value)
    ):
        return None
    return value


def render() -> str:
    writer = _Writer()
    for annotation in section_models().values():
        writer.annotation(annotation)
    # `KiamKubernetes`' other sections are `Kiam`'s; its node group, made elsewhere, is its own.
    writer.annotation(KUBERNETES_SIDE_NODE_GROUP)
    body = "\n\n\n".join(writer.classes.values())
    uses_any = "Any" in body.replace("Any,", "")
    header = HEADER if uses_any else HEADER.replace("Any, ", "")
    return f"{header}\n\n{body}\n"


def section_annotations() -> dict[str, str]:
    """Each section argument and its annotation in `KiamArgs` (components/kiam.py)."""
    writer = _Writer()
    return {a: writer.annotation(t)[0] for a, t in section_models().items()}


def main(argv: list[str]) -> int:
    text = render()
    if argv == ["--write"]:
        TARGET.write_text(text)
        print(f"wrote {TARGET.relative_to(TARGET.parent.parent)}")
        return 0
    if argv:
        print(__doc__, file=sys.stderr)
        return 2
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

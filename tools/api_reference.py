"""The component package's schema and its API reference, both generated from the public components'
type hints and docstrings, so neither can drift from the code.

python -m tools.api_reference           # print the reference
python -m tools.api_reference --write   # write provider/schema.json and docs/api.md

The schema is the one the component provider (provider/__main__.py) serves to the engine: the same
`ComponentProvider` builds it here from the same components. tests/test_provider_schema.py fails
when either file is stale, so a change to the public API shows up as a diff in review.
"""

from __future__ import annotations

import json
import runpy
import sys
from functools import cache
from pathlib import Path
from typing import Any

from pulumi.provider.experimental.component import ComponentProvider
from pulumi.provider.experimental.util import camel_case as to_camel

from kiam_eks.components.public_args import (
    KIAM_ARGUMENTS,
    setting_default,
    setting_field,
)
from kiam_eks.contracts import tokens

ROOT = Path(__file__).resolve().parent.parent
PROVIDER_DIR = ROOT / "provider"
SCHEMA = PROVIDER_DIR / "schema.json"
REFERENCE = ROOT / "docs" / "api.md"

HEADER = """# API reference: the component package

What a Pulumi program in any language passes to kiam_eks's public components and reads back from
them. Generated from the components' type hints and docstrings by `python -m tools.api_reference
--write` (the same schema the component provider serves, `provider/schema.json`); a test fails
when this file, the schema and the code disagree. Python programs pass the snake_case names
(`node_group_name`), TypeScript and YAML the camelCase ones (`nodeGroupName`). How to add the
package to a program: the README, "Use it from your own program".

**Another resource's output** is accepted wherever the value is something made elsewhere: `Kiam`'s
cluster name, OIDC issuer and subnet ids; `KiamKubernetes`' node group name, server role ARN,
certificates and permitted role ARNs (each checked once known). The sections are plain values,
as in a stack file, because each shapes what is planned before anything is created, and is
refused at that moment if AWS or the cluster would refuse it: an attachment's resource name (its
URN) is its policy's name; IAM's size quotas are counted on the characters of every role ARN the
server may assume; each namespace's permitted pattern is written from those ARNs; the change
judge records the adopted CA's fingerprint. A policy or role your program makes has an ARN
known from its name (`arn:aws:iam::<account>:policy/<name>`): pass it as text. The component's
children do not wait on its `dependsOn` (the Python SDK, which builds them in every language,
hands a child its parent's `protect` and providers only: pulumi `sdk/python/lib/pulumi/
resource.py`, `Resource.__init__`), and IAM attaches no policy that
does not exist yet, so make it first (an earlier `up`, or another stack); an application role
`Kiam` makes itself is an entry with `roleName`. The schema marks the sections plain, so
TypeScript's compiler and Python's type checker refuse an output there.
"""


@cache
def provider_module() -> dict[str, Any]:
    """provider/__main__.py's globals, as the engine's Python host would load them (not run)."""
    return runpy.run_path(str(PROVIDER_DIR / "__main__.py"), run_name="kiam_provider")


def component_provider() -> ComponentProvider:
    """The component provider provider/__main__.py hosts: its schema, and its mapping of what
    another language's program sends onto the components' Python arguments."""
    provider: ComponentProvider = provider_module()["component_provider"]()
    return provider


def schema() -> dict[str, Any]:
    """The schema the component provider serves."""
    served: dict[str, Any] = json.loads(component_provider().schema or "{}")
    return served


def render_schema() -> str:
    return json.dumps(schema(), indent=2, sort_keys=True) + "\n"


def camel(python_name: str) -> str:
    """The schema's name of an argument or output (`node_group_name` -> `nodeGroupName`)."""
    return to_camel(python_name)


def snake(schema_name: str) -> str:
    """The Python name of a schema property (`nodeGroupName` -> `node_group_name`)."""
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in schema_name)


def _type(prop: dict[str, Any]) -> str:
    if "$ref" in prop:
        target = str(prop["$ref"]).rsplit("/", 1)[-1]
        if target.startswith(f"{tokens.COMPONENT_PACKAGE}:index:"):
            # One of the package's named types, listed under "Types" below.
            name = target.rsplit(":", 1)[-1]
            return f"[{name}](#{name.lower()})"
        return target
    kind = str(prop.get("type", "any"))
    if kind == "array":
        return f"list of {_type(prop['items'])}"
    if kind == "object" and "additionalProperties" in prop:
        return f"map of {_type(prop['additionalProperties'])}"
    return kind


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _default(token: str, python_name: str) -> str:
    """The default of the setting the argument is; a whole section's is in
    docs/configuration.md, which its description names."""
    # `KiamKubernetes`' settings are `Kiam`'s arguments of the same names.
    key_path = KIAM_ARGUMENTS.get(python_name)
    if key_path is None or setting_field(key_path).is_required():
        return ""
    default = setting_default(key_path)
    return "" if isinstance(default, dict) else f"`{json.dumps(default)}`"


def render() -> str:
    served = schema()
    lines = [HEADER]
    for token, resource in sorted(served["resources"].items()):
        name = token.rsplit(":", 1)[-1]
        lines += [f"## `{name}` (`{token}`)", "", _cell(resource.get("description", "")), ""]
        lines += [
            "### Arguments",
            "",
            "| name | type | required | default | description |",
            "|---|---|---|---|---|",
        ]
        required = set(resource.get("requiredInputs", []))
        for schema_name, prop in resource.get("inputProperties", {}).items():
            python_name = snake(schema_name)
            kind = _type(prop) + (" (plain)" if prop.get("plain") else "")
            lines.append(
                f"| `{schema_name}` | {kind} | {'yes' if schema_name in required else 'no'} | "
                f"{_default(token, python_name)} | {_cell(prop.get('description', ''))} |"
            )
        lines += ["", "### Outputs", "", "| name | type | description |", "|---|---|---|"]
        for schema_name, prop in resource.get("properties", {}).items():
            lines.append(
                f"| `{schema_name}` | {_type(prop)} | {_cell(prop.get('description', ''))} |"
            )
        lines.append("")
    lines += [
        "A plain argument must be known when the program runs (a literal or config value, not",
        "another resource's output); every other argument may be an output. Invalid plain",
        "arguments stop the program before anything is registered, each named with the stack",
        "setting whose rule it follows.",
        "",
        "## Types",
        "",
        "`Kiam`'s sections (`nodeGroup`, `server`, each entry of `applications`...) are the stack",
        "settings' sections, with their defaults and rules (docs/configuration.md), generated from",
        "the settings models (components/argument_types.py, `python -m tools.argument_types",
        "--write`). Python programs pass the snake_case keys (`min_size`), TypeScript and YAML the",
        "camelCase ones (`minSize`); the one stack-file key spelled otherwise says so.",
        "",
    ]
    for token, kind in sorted(served.get("types", {}).items()):
        name = token.rsplit(":", 1)[-1]
        lines += [f"### {name}", "", _cell(kind.get("description", "")), ""]
        lines += ["| name | type | required | description |", "|---|---|---|---|"]
        required = set(kind.get("required", []))
        for schema_name, prop in sorted(kind.get("properties", {}).items()):
            lines.append(
                f"| `{schema_name}` | {_type(prop)} | {'yes' if schema_name in required else 'no'}"
                f" | {_cell(prop.get('description', ''))} |"
            )
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if argv == ["--write"]:
        SCHEMA.write_text(render_schema())
        REFERENCE.write_text(render())
        print(f"wrote {SCHEMA.relative_to(ROOT)} and {REFERENCE.relative_to(ROOT)}")
        return 0
    if argv:
        print(__doc__, file=sys.stderr)
        return 2
    print(render(), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

"""Writing stack files the Pulumi CLI reads back exactly as they were meant.

PyYAML writes YAML 1.1, the CLI reads YAML 1.2: a string such as `098765432109` (an account id
with a leading zero; YAML 1.1 has no decimal integer with a leading zero) is written unquoted and
read back as the number 98765432109, which the settings then refuse. Every string that a YAML
1.1 or 1.2 reader could take for anything but a string is written quoted here.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

# YAML 1.2 core schema's non-string plain scalars (null, booleans, ints, floats), plus YAML 1.1's
# extra booleans and sexagesimal/underscored numbers, which older readers still resolve.
_NOT_A_STRING = re.compile(
    r"""^(
        ~|null|Null|NULL|
        true|True|TRUE|false|False|FALSE|
        y|Y|yes|Yes|YES|n|N|no|No|NO|on|On|ON|off|Off|OFF|
        [-+]?[0-9_]+(:[0-5]?[0-9])*|
        0o[0-7_]+|0x[0-9a-fA-F_]+|0b[01_]+|
        [-+]?(\.[0-9_]+|[0-9_]+(\.[0-9_]*)?)([eE][-+]?[0-9]+)?|
        [-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN)
    )$""",
    re.VERBOSE,
)


class _StackDumper(yaml.SafeDumper):
    """A safe dumper that quotes every string a YAML 1.2 reader would not read as a string."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "'" if _NOT_A_STRING.match(value) or value == "" else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_StackDumper.add_representer(str, _represent_str)


def dump(document: Any) -> str:
    """`document` as YAML that YAML 1.1 and YAML 1.2 readers both read back unchanged."""
    return yaml.dump(document, Dumper=_StackDumper, sort_keys=False)

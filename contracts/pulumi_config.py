"""How Pulumi hands a stack's configuration to a Python program, and the size Linux lets it be.

The Python language host starts the program with the whole configuration in one environment
variable, `PULUMI_CONFIG=<JSON object>` (read in pulumi/pulumi v3.68.0,
sdk/python/cmd/pulumi-language-python/main.go, `pulumiConfigVar`; the v3.276.0 host this project
builds was not read, its behaviour was measured, below), which the SDK reads back
(sdk/python/lib/pulumi/runtime/config.py, `os.environ["PULUMI_CONFIG"]`, v3.276.0). Each value in that object is a string: a structured
setting (a map such as `kiam:applications`) is its compact JSON text.

Linux refuses to start a process one of whose argument or environment strings is longer than
MAX_ARG_STRLEN, 32 pages of 4 KiB, its terminating NUL included (execve(2), "Limits on size of
arguments and environment": E2BIG, "Argument list too long"). Past it `pulumi preview` and
`pulumi up` fail before the program starts: "could not run language executor: fork/exec
.../python3: argument list too long". Measured with this repository's toolchain (Pulumi
v3.276.0) on the scale stack (tools/scale_stack.py, 50 namespaces): 737 applications, 131,068
bytes by `config_environment_bytes`, preview ran; 738 applications, 131,195 bytes, refused
(docs/performance.md).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

CONFIG_VARIABLE = "PULUMI_CONFIG"
MAX_ARG_STRLEN = 32 * 4096


def _compact(value: Any) -> str:
    # A value YAML reads as a date reaches the program as its text.
    return json.dumps(value, separators=(",", ":"), sort_keys=True, default=str)


def value_text(value: Any) -> str:
    """A configuration value as the program receives it: a string as it is, anything else as
    its compact JSON text."""
    return value if isinstance(value, str) else _compact(value)


def config_environment_bytes(config: Mapping[str, Any]) -> int:
    """The length of `PULUMI_CONFIG=...` for this `config:` map, its NUL included, as execve
    counts it."""
    text = f"{CONFIG_VARIABLE}={_compact({k: value_text(v) for k, v in config.items()})}"
    return len(text.encode()) + 1

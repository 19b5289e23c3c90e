"""The base every settings model shares, and the small value types they are built from."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

# What the offline plan substitutes for `secure:` values: only the Pulumi CLI can decrypt them.
UNDECRYPTED_SECRET = "[secret: decrypted only by the Pulumi CLI]"


class Model(BaseModel):
    """Frozen, strict about unknown keys (a typo must fail), camelCase in stack files."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        validate_default=True,
    )


def model_class(annotation: Any) -> type[BaseModel] | None:
    """The settings model an annotation holds, directly or inside Optional, a list or a map."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = model_class(arg)
        if found is not None:
            return found
    return None


_DURATION_PART = re.compile(r"(\d+)(h|m|s)")
_DURATION = re.compile(r"^(\d+(h|m|s))+$")
_UNIT_SECONDS = {"h": 3600, "m": 60, "s": 1}


def duration_seconds(value: str) -> int:
    """Seconds in a Go duration string as kiam's flags take it (`1h`, `30m`, `1m30s`)."""
    return sum(int(n) * _UNIT_SECONDS[u] for n, u in _DURATION_PART.findall(value))


def matching(regex: str, what: str) -> AfterValidator:
    """A validator whose error says in words what is allowed, not only the regular expression."""
    compiled = re.compile(regex)

    def check(value: str) -> str:
        if not compiled.fullmatch(value):
            raise ValueError(f"{value!r} is not {what}")
        return value

    return AfterValidator(check)


def _check_duration(value: str) -> str:
    if not _DURATION.match(value) or duration_seconds(value) == 0:
        raise ValueError(
            f"{value!r} is not a duration: use a whole number with h, m or s, e.g. 30m"
        )
    return value


Duration = Annotated[str, AfterValidator(_check_duration)]
"""A positive Go duration such as `60m`, `1h` or `1m30s`."""

CpuQuantity = Annotated[
    str, matching(r"[1-9]\d*m|\d+(\.\d+)?", "a CPU quantity such as 50m or 0.5")
]
MemoryQuantity = Annotated[
    str, matching(r"[1-9]\d*(Ki|Mi|Gi)", "a memory quantity in Ki, Mi or Gi such as 64Mi")
]


def _check_image(value: str) -> str:
    if "@sha256:" in value:
        return value
    last = value.rsplit("/", 1)[-1]
    if ":" not in last:
        raise ValueError(f"image {value!r} has no tag: pin a version such as :v4.2 or a digest")
    if last.endswith(":latest"):
        raise ValueError(f"image {value!r} uses :latest: pin a version such as :v4.2 or a digest")
    return value


Image = Annotated[
    str,
    matching(r"[a-z0-9]([a-z0-9._\-/:@]*[a-z0-9])?", "a container image reference"),
    AfterValidator(_check_image),
]
"""A container image pinned by tag (not `latest`) or by digest."""

DnsLabel = Annotated[
    str,
    matching(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?", "a DNS-1123 label (a-z, 0-9, -; 63 at most)"),
]
"""A Kubernetes object name that must be a DNS-1123 label (namespaces, Services)."""

DnsSubdomain = Annotated[
    str, matching(r"[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?", "a DNS-1123 subdomain (a-z, 0-9, ., -)")
]
"""A Kubernetes object name that must be a DNS-1123 subdomain (priority classes)."""

_LABEL_NAME = r"[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?"
LabelKey = Annotated[
    str,
    matching(
        rf"([a-z0-9]([a-z0-9.-]{{0,251}}[a-z0-9])?/)?{_LABEL_NAME}",
        "a Kubernetes label key such as role or example.com/role",
    ),
]
"""A Kubernetes label or taint key, optionally prefixed (`example.com/role`)."""

LabelValue = Annotated[
    str, matching(rf"({_LABEL_NAME})?", "a Kubernetes label value (63 characters at most)")
]
"""A Kubernetes label or taint value (63 characters at most, may be empty)."""

LogLevel = Literal["debug", "info", "warn", "error"]
"""kiam's `--level`."""

ExtraArg = Annotated[str, matching(r"--[a-z][a-z0-9-]*(=.*)?", "a flag in --name=value form")]
"""One extra command-line flag in `--name=value` form."""

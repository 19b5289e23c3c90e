"""The base every settings model shares, and the small value types they are built from."""

from __future__ import annotations

import copy
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


def is_duration(value: str) -> bool:
    """A Go duration of whole hours, minutes and seconds (`0s` included)."""
    return bool(_DURATION.match(value))


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


# The image reference grammar of the distribution project (reference/reference.go's grammar
# comment): an optional registry host[:port], lower-case path components joined by `.`, `_`, `__`
# or dashes, an optional tag of at most 128 word characters, dots and dashes, an optional digest.
_HOST_PART = r"[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?"
_PATH_PART = r"[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*"
_IMAGE = re.compile(
    rf"(({_HOST_PART}(\.{_HOST_PART})*(:\d+)?)/)?{_PATH_PART}(/{_PATH_PART})*"
    r"(:(?P<tag>\w[\w.-]{0,127}))?(@(?P<digest>sha256:[0-9a-f]{64}))?",
    re.ASCII,
)
# A label name or value: 63 at most, alphanumeric at both ends (k8s.io/apimachinery validation).
LABEL_NAME = r"[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?"


def _check_image(value: str) -> str:
    match = _IMAGE.fullmatch(value)
    if match is None:
        raise ValueError(
            f"{value!r} is not a container image reference such as quay.io/uswitch/kiam:v4.2 "
            "(a digest is @sha256: and 64 hex digits)"
        )
    tag, digest = match.group("tag"), match.group("digest")
    if digest is not None:
        return value
    if tag is None:
        raise ValueError(f"image {value!r} has no tag: pin a version such as :v4.2 or a digest")
    if tag == "latest":
        raise ValueError(f"image {value!r} uses :latest: pin a version such as :v4.2 or a digest")
    # Without a digest the tag, cut to 63 characters, is the pods' app.kubernetes.io/version label
    # (contracts/labels.py), which must start and end with a letter or digit.
    if not re.fullmatch(LABEL_NAME, tag[:63]):
        raise ValueError(
            f"image {value!r} has a tag that cannot be the app.kubernetes.io/version label: it "
            "must start with a letter or digit and, cut to 63 characters, end with one"
        )
    return value


Image = Annotated[str, AfterValidator(_check_image)]
"""A container image pinned by tag (not `latest`) or by digest."""

# Kubernetes' name syntax (k8s.io/apimachinery/pkg/util/validation): a DNS-1123 label is at most
# 63 of a-z, 0-9 and `-`, starting and ending alphanumeric; a subdomain is such labels joined by
# dots, at most 253 characters; a DNS-1035 label must also start with a letter.
_DNS_1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_1123_SUBDOMAIN = rf"(?=.{{1,253}}$){_DNS_1123_LABEL}(\.{_DNS_1123_LABEL})*"

DnsLabel = Annotated[
    str,
    matching(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?", "a DNS-1123 label (a-z, 0-9, -; 63 at most)"),
]
"""A Kubernetes object name that must be a DNS-1123 label (namespaces)."""

Dns1035Label = Annotated[
    str,
    matching(
        r"[a-z]([a-z0-9-]{0,61}[a-z0-9])?",
        "a DNS-1035 label (a-z, 0-9, -; starting with a letter; 63 at most)",
    ),
]
"""A Kubernetes object name that must be a DNS-1035 label (Services)."""

DnsSubdomain = Annotated[
    str,
    matching(_DNS_1123_SUBDOMAIN, "a DNS-1123 subdomain (dot-separated a-z, 0-9, -; 253 at most)"),
]
"""A Kubernetes object name that must be a DNS-1123 subdomain (priority classes)."""

DnsName = Annotated[
    str,
    matching(
        r"(?=.{1,253}$)[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*",
        "a DNS domain such as cluster.local (dot-separated labels of at most 63 a-z, 0-9, -)",
    ),
]
"""A DNS domain: labels of at most 63 characters (RFC 1035), 253 in all."""

LabelKey = Annotated[
    str,
    matching(
        rf"((?=[^/]{{1,253}}/){_DNS_1123_LABEL}(\.{_DNS_1123_LABEL})*/)?{LABEL_NAME}",
        "a Kubernetes label key such as role or example.com/role",
    ),
]
"""A Kubernetes label or taint key, optionally prefixed (`example.com/role`)."""

LabelValue = Annotated[
    str, matching(rf"({LABEL_NAME})?", "a Kubernetes label value (63 characters at most)")
]
"""A Kubernetes label or taint value (63 characters at most, may be empty)."""

LogLevel = Literal["debug", "info", "warn", "error"]
"""kiam's `--level`."""

ExtraArg = Annotated[str, matching(r"--[a-z][a-z0-9-]*(=.*)?", "a flag in --name=value form")]
"""One extra command-line flag in `--name=value` form."""


def same_setting(model: type[BaseModel], field: str) -> Any:
    """The field `field` of `model`, for another model that holds the same setting: its type's
    rules, default and description defined once (settings/kubernetes_side.py)."""
    return copy.deepcopy(model.model_fields[field])

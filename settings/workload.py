"""Settings the server and the agent share: resources and the flags the program owns."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

from pydantic import AfterValidator, Field, model_validator

from kiam_eks.settings.base import CpuQuantity, DnsSubdomain, MemoryQuantity, Model

# Priority class names starting `system-` are reserved: only these two exist, and no other can be
# created (Kubernetes, pkg/apis/scheduling: SystemPriorityClassPrefix), so a pod naming another is
# never admitted.
SYSTEM_PRIORITY_CLASSES = ("system-node-critical", "system-cluster-critical")


def _check_priority_class(name: str) -> str:
    if name.startswith("system-") and name not in SYSTEM_PRIORITY_CLASSES:
        raise ValueError(
            f"{name!r} uses the reserved prefix system-: the only system priority classes are "
            f"{' and '.join(SYSTEM_PRIORITY_CLASSES)}"
        )
    return name


PriorityClassName = Annotated[DnsSubdomain, AfterValidator(_check_priority_class)]
"""A priority class pods can name: a DNS subdomain, and `system-` only for the built-in two."""


class ResourceSettings(Model):
    """Requests for scheduling and a memory limit; no CPU limit, so kiam is never throttled."""

    cpu_request: CpuQuantity = Field(description="CPU request.")
    memory_request: MemoryQuantity = Field(description="Memory request.")
    memory_limit: MemoryQuantity = Field(description="Memory limit (at least the request).")

    @model_validator(mode="after")
    def _check(self) -> ResourceSettings:
        if float(self.cpu_request.removesuffix("m")) == 0:
            raise ValueError(
                f"cpuRequest {self.cpu_request} must be above zero: a zero request reserves no CPU"
            )
        if _mebibytes(self.memory_limit) < _mebibytes(self.memory_request):
            raise ValueError(
                f"memoryLimit ({self.memory_limit}) is below memoryRequest ({self.memory_request})"
            )
        return self


def _mebibytes(quantity: str) -> float:
    factor = {"Ki": 1 / 1024, "Mi": 1.0, "Gi": 1024.0}[quantity[-2:]]
    return int(quantity[:-2]) * factor


def reject_flags(
    extra_args: list[str],
    *,
    command: str,
    known: frozenset[str],
    boolean: frozenset[str],
    managed: frozenset[str],
    refused: Mapping[str, str],
) -> None:
    """Extra args may add flags kiam has, never replace one the program sets (it would silently
    win or clash), nor turn on one that undoes a guarantee."""
    names = [a.split("=", 1)[0] for a in extra_args]

    def flag(name: str) -> str:
        # kiam parses flags with kingpin, which also takes --no-<flag> for every boolean flag.
        negated = "--" + name.removeprefix("--no-")
        return negated if name.startswith("--no-") and negated in boolean else name

    clashes = sorted({n for n in names if flag(n) in managed})
    if clashes:
        raise ValueError(
            f"extraArgs sets {', '.join(clashes)}, which the program manages: "
            "use the matching setting instead"
        )
    unknown = sorted({n for n in names if flag(n) not in known})
    if unknown:
        allowed = ", ".join(sorted(known - managed - set(refused)))
        raise ValueError(
            f"extraArgs sets {', '.join(unknown)}, which kiam v4.2's {command} does not have "
            f"(it would exit at start); it takes here: {allowed}"
        )
    for name in names:
        if name in refused:  # its --no- form only restates kiam's default
            raise ValueError(f"extraArgs sets {name}, which {refused[name]}")

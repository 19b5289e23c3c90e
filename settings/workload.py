"""Settings the server and the agent share: resources and the flags the program owns."""

from __future__ import annotations

from pydantic import Field, model_validator

from settings.base import CpuQuantity, MemoryQuantity, Model


class ResourceSettings(Model):
    """Requests for scheduling and a memory limit; no CPU limit, so kiam is never throttled."""

    cpu_request: CpuQuantity = Field(description="CPU request.")
    memory_request: MemoryQuantity = Field(description="Memory request.")
    memory_limit: MemoryQuantity = Field(description="Memory limit (at least the request).")

    @model_validator(mode="after")
    def _check(self) -> ResourceSettings:
        if _mebibytes(self.memory_limit) < _mebibytes(self.memory_request):
            raise ValueError(
                f"memoryLimit ({self.memory_limit}) is below memoryRequest ({self.memory_request})"
            )
        return self


def _mebibytes(quantity: str) -> float:
    factor = {"Ki": 1 / 1024, "Mi": 1.0, "Gi": 1024.0}[quantity[-2:]]
    return int(quantity[:-2]) * factor


def reject_managed_flags(extra_args: list[str], managed: frozenset[str]) -> None:
    """Extra args may add flags, never replace one the program sets (it would silently win or clash)."""
    clashes = sorted({a.split("=", 1)[0] for a in extra_args} & managed)
    if clashes:
        raise ValueError(
            f"extraArgs sets {', '.join(clashes)}, which the program manages: "
            "use the matching setting instead"
        )

"""What the server's and the agent's containers share: their resources from the settings, and a
securityContext that drops every capability and writes nothing to the image (guarantee 11)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kiam_eks.settings.workload import ResourceSettings


def container_resources(resources: ResourceSettings) -> dict[str, Any]:
    """Requests for scheduling and a memory limit; no CPU limit, so kiam is never throttled
    (settings/workload.py)."""
    return {
        "requests": {"cpu": resources.cpu_request, "memory": resources.memory_request},
        "limits": {"memory": resources.memory_limit},
    }


def locked_down(add: Sequence[str] = ()) -> dict[str, Any]:
    """No privilege escalation, a read-only root filesystem, every capability dropped but `add`."""
    capabilities: dict[str, list[str]] = {"drop": ["ALL"]}
    if add:
        capabilities["add"] = list(add)
    return {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": capabilities,
    }

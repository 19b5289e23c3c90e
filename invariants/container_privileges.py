"""Guarantee 11, `container-privileges`: `container_privileges` judges it (its docstring states the guarantee, and is the
policy pack's description of it)."""

from __future__ import annotations

from kiam_eks.invariants.model import Resource, Violation, dig
from kiam_eks.invariants.view import AGENT_CONTAINER, SERVER_CONTAINER, KiamView, container

AGENT_CAPABILITIES = frozenset({"NET_ADMIN", "NET_RAW"})
NO_CAPABILITIES: frozenset[str] = frozenset()


def container_privileges(view: KiamView) -> list[Violation]:
    """11. Least privilege: no escalation, all capabilities dropped but the agent's two, read-only root, requests."""
    out = []
    for workload, name, allowed in [
        *((d, SERVER_CONTAINER, NO_CAPABILITIES) for d in view.servers),
        *((a, AGENT_CONTAINER, AGENT_CAPABILITIES) for a in view.agents),
    ]:
        c = container(workload, name)
        ctx = c.get("securityContext") or {}

        def report(reason: str, workload: Resource = workload) -> None:
            out.append(Violation("container-privileges", workload.urn, reason))

        if ctx.get("privileged"):
            report("runs privileged")
        if ctx.get("allowPrivilegeEscalation") is not False:
            report("does not set allowPrivilegeEscalation: false")
        if ctx.get("readOnlyRootFilesystem") is not True:
            report("does not set readOnlyRootFilesystem: true")
        capabilities = ctx.get("capabilities") or {}
        if "ALL" not in (capabilities.get("drop") or []):
            report("does not drop ALL capabilities")
        extra = set(capabilities.get("add") or []) - allowed
        if extra:
            report(f"adds capabilities {sorted(extra)} beyond {sorted(allowed) or 'none'}")
        requests = dig(c, "resources", "requests", default={}) or {}
        if not {"cpu", "memory"} <= set(requests):
            report("has no CPU and memory requests")
        if not dig(c, "resources", "limits", "memory"):
            report("has no memory limit")
    return out

"""Guarantee 2, `server-tolerations`: `server_tolerations` judges it (its docstring states the guarantee, and is the
policy pack's description of it)."""

from __future__ import annotations

from kiam_eks.contracts.labels import NODE_GROUP_LABEL
from kiam_eks.invariants.model import Resource, Violation
from kiam_eks.invariants.view import KiamView, pod_spec, tolerates


def server_tolerations(view: KiamView) -> list[Violation]:
    """2. Servers tolerate the dedicated taint and nothing that would stop drains; pinned to the group."""
    out = []
    taints = view.server_taints()
    for dep in view.servers:
        spec = pod_spec(dep)
        tolerations = spec.get("tolerations") or []

        def report(reason: str, dep: Resource = dep) -> None:
            out.append(Violation("server-tolerations", dep.urn, reason))

        for taint in taints:
            if not any(tolerates(t, taint) for t in tolerations):
                report(
                    f"does not tolerate the dedicated taint {taint['key']}={taint['value']}:{taint['effect']}"
                )
        for t in tolerations:
            if not t.get("key") and t.get("operator") == "Exists":
                report("tolerates every taint (operator Exists with no key)")
            if t.get("key") == "node.kubernetes.io/unschedulable":
                report("tolerates node.kubernetes.io/unschedulable, so drains would not move it")
        if NODE_GROUP_LABEL not in (spec.get("nodeSelector") or {}):
            report(f"is not pinned to the dedicated node group (nodeSelector {NODE_GROUP_LABEL})")
    return out

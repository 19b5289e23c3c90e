"""Guarantee 10, `ordering`: `ordering` judges it (its docstring states the guarantee, and is the
policy pack's description of it)."""

from __future__ import annotations

from kiam_eks.contracts.tokens import CLUSTER_ROLE_BINDING, SECRET
from kiam_eks.invariants.model import Resource, Violation, dig
from kiam_eks.invariants.view import KiamView, pod_spec


def ordering(view: KiamView) -> list[Violation]:
    """10. Agents wait for the server Deployment; servers for their TLS Secret, RBAC and Service."""
    out = []
    server_urns = {d.urn for d in view.servers}
    for agent in view.agents:
        if not server_urns & agent.dependencies:
            out.append(
                Violation(
                    "ordering", agent.urn, "is not created after the server Deployment is Ready"
                )
            )
    for dep in view.servers:
        needs: dict[str, list[Resource | None]] = {
            "TLS Secret": [
                view.by_name(SECRET, v.get("secret", {}).get("secretName"))
                for v in pod_spec(dep).get("volumes") or []
                if "secret" in v
            ],
            "ClusterRoleBinding": [
                b
                for b in view.of_type(CLUSTER_ROLE_BINDING)
                if dig(b.inputs, "metadata", "name") == dig(dep.inputs, "metadata", "name")
            ],
            "Service": [view.dialed_service(a)[1] for a in view.agents],
        }
        for what, found in needs.items():
            if what == "Service" and not view.agents:
                continue  # the running install's agents dial its own Service (migration phase `servers`)
            if not found or any(r is None or r.urn not in dep.dependencies for r in found):
                out.append(Violation("ordering", dep.urn, f"does not wait for its {what}"))
    return out

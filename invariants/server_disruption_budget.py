"""Guarantee 3, `server-disruption-budget`: `server_disruption_budget` judges it (its docstring states the guarantee, and is the
policy pack's description of it)."""

from __future__ import annotations

from typing import Any

from kiam_eks.contracts.tokens import PDB
from kiam_eks.invariants.model import Violation, dig
from kiam_eks.invariants.view import KiamView


def server_disruption_budget(view: KiamView) -> list[Violation]:
    """3. A PDB selects exactly the server pods and allows one disruption, fewer than the replicas."""
    out = []
    for dep in view.servers:
        selector = dig(dep.inputs, "spec", "selector", "matchLabels", default={})
        replicas = dig(dep.inputs, "spec", "replicas", default=1)
        pdbs = [
            p
            for p in view.of_type(PDB)
            if dig(p.inputs, "spec", "selector", "matchLabels") == selector
        ]
        if not pdbs:
            out.append(
                Violation(
                    "server-disruption-budget",
                    dep.urn,
                    "no PodDisruptionBudget selects exactly its pods",
                )
            )
        for pdb in pdbs:
            spec = pdb.inputs.get("spec", {})
            if "maxUnavailable" in spec:
                allowed = spec["maxUnavailable"]
            elif "minAvailable" in spec and isinstance(replicas, (int, float)):
                allowed = replicas - spec["minAvailable"]
            else:
                allowed = None
            if not isinstance(allowed, (int, float)) or not 0 < allowed <= 1 or allowed >= replicas:
                out.append(
                    Violation(
                        "server-disruption-budget",
                        pdb.urn,
                        f"allows {_number(allowed)} disruptions of {_number(replicas)} servers; must be exactly 1 and fewer than the replicas",
                    )
                )
    return out


def _number(value: Any) -> str:
    """Numbers arrive as floats from the engine; print 3, not 3.0."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return repr(value)

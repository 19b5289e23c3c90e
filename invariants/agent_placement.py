"""Guarantee 6, `agent-placement`: `agent_placement` judges it (its docstring states the guarantee, and is the
policy pack's description of it)."""

from __future__ import annotations

from typing import Any

from kiam_eks.invariants.model import Violation, dig
from kiam_eks.invariants.view import KiamView, pod_spec, tolerates


def agent_placement(view: KiamView) -> list[Violation]:
    """6. Agents can never land on server nodes: no toleration of their taint, affinity excluding them."""
    out = []
    for agent in view.agents:
        spec = pod_spec(agent)
        terms = (
            dig(
                spec,
                "affinity",
                "nodeAffinity",
                "requiredDuringSchedulingIgnoredDuringExecution",
                "nodeSelectorTerms",
                default=[],
            )
            or []
        )
        for taint in view.server_taints():
            if any(tolerates(t, taint) for t in spec.get("tolerations") or []):
                out.append(
                    Violation(
                        "agent-placement",
                        agent.urn,
                        f"tolerates the server taint {taint['key']}={taint['value']}",
                    )
                )
            excluded = terms and all(
                _term_excludes(term, taint["key"], taint["value"]) for term in terms
            )
            if not excluded:
                out.append(
                    Violation(
                        "agent-placement",
                        agent.urn,
                        f"no required node affinity keeps it off nodes labelled {taint['key']}={taint['value']}",
                    )
                )
    return out


def _term_excludes(term: Any, key: str, value: str) -> bool:
    for expression in term.get("matchExpressions") or []:
        if expression.get("key") != key:
            continue
        if expression.get("operator") == "DoesNotExist":
            return True
        if expression.get("operator") == "NotIn" and value in (expression.get("values") or []):
            return True
    return False

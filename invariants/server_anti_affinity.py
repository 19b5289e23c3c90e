"""Guarantee 1, `server-anti-affinity`: `server_anti_affinity` judges it (its docstring states the guarantee, and is the
policy pack's description of it)."""

from __future__ import annotations

from kiam_eks.contracts.labels import HOSTNAME_TOPOLOGY
from kiam_eks.invariants.model import Violation, dig, labels_match
from kiam_eks.invariants.view import KiamView, pod_labels, pod_spec


def server_anti_affinity(view: KiamView) -> list[Violation]:
    """1. Server pods repel each other per host, by a selector that matches servers and no agent."""
    out = []
    for dep in view.servers:
        terms = dig(
            pod_spec(dep),
            "affinity",
            "podAntiAffinity",
            "requiredDuringSchedulingIgnoredDuringExecution",
            default=[],
        )
        agent_labels = [pod_labels(a) for a in view.agents]
        good = [
            t
            for t in terms or []
            if t.get("topologyKey") == HOSTNAME_TOPOLOGY
            and labels_match(
                dig(t, "labelSelector", "matchLabels", default={}) or {}, pod_labels(dep)
            )
            and dig(t, "labelSelector", "matchLabels")
            and not any(labels_match(t["labelSelector"]["matchLabels"], a) for a in agent_labels)
        ]
        if not good:
            out.append(
                Violation(
                    "server-anti-affinity",
                    dep.urn,
                    f"no required pod anti-affinity on {HOSTNAME_TOPOLOGY} selecting server pods only",
                )
            )
    return out

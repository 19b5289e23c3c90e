"""Guarantee 4, `server-service`: `server_service` judges it (its docstring states the guarantee, and is the
policy pack's description of it)."""

from __future__ import annotations

from kiam_eks.invariants.model import Violation, dig
from kiam_eks.invariants.view import KiamView


def server_service(view: KiamView) -> list[Violation]:
    """4. Agents dial a headless Service of this stack that selects the servers."""
    out = []
    for agent in view.agents:
        host, service = view.dialed_service(agent)
        if host is None:
            out.append(Violation("server-service", agent.urn, "needs exactly one --server-address"))
            continue
        if service is None:
            out.append(
                Violation(
                    "server-service",
                    agent.urn,
                    f"--server-address host {host} is not a Service of this stack",
                )
            )
            continue
        if dig(service.inputs, "spec", "clusterIP") != "None":
            out.append(
                Violation("server-service", service.urn, "is not headless (clusterIP: None)")
            )
        selector = dig(service.inputs, "spec", "selector", default={}) or {}
        if not any(
            selector == dig(d.inputs, "spec", "selector", "matchLabels") for d in view.servers
        ):
            out.append(
                Violation(
                    "server-service", service.urn, "its selector is not the server pods' selector"
                )
            )
    return out

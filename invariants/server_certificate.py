"""Guarantee 5, `server-certificate`: `server_certificate` judges it (its docstring states the guarantee, and is the
policy pack's description of it)."""

from __future__ import annotations

from kiam_eks.invariants.model import Violation, is_unknown
from kiam_eks.invariants.view import KiamView


def server_certificate(view: KiamView) -> list[Violation]:
    """5. The certificate the servers mount names the host agents dial (judged on the certificate request it is signed from, else on the certificate itself).

    Whatever issues it: where the stack issues it (pulumi-tls), its request is known at every
    preview; a certificate issued outside the stack (the real-engine suite's local CA) is read
    from the Secret itself. Not judged while a certificate is unknown.
    """
    sans = view.server_certificate_names()
    out: list[Violation] = []
    if any(is_unknown(names) for names in sans):
        return out
    for agent in view.agents:
        host, _ = view.dialed_service(agent)
        if host is not None and not any(host in names for names in sans):
            out.append(
                Violation(
                    "server-certificate",
                    agent.urn,
                    f"dials {host}, which the server certificate does not name",
                )
            )
    return out

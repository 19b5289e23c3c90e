"""`presence`, which runs before the sixteen guarantees and is none of its own: the parts they judge
exist, so none of them passes vacuously."""

from __future__ import annotations

from kiam_eks.invariants.model import Violation
from kiam_eks.invariants.view import KiamView


def presence(view: KiamView) -> list[Violation]:
    """The parts every other check judges must exist, or the others would pass vacuously; a
    retired stack has none of them (`retired` judges that)."""
    if view.expected.retire:
        return []
    # While a running install's agents serve (migration phase `servers`), the stack has none.
    own_agents = view.expected.own_agents
    missing = [
        what
        for what, found in (
            ("server Deployment", view.servers),
            ("agent DaemonSet", view.agents),
            ("node group", view.node_groups),
        )
        if not found
    ]
    return [
        Violation("presence", "stack", f"no kiam {what} found")
        for what in missing
        if what != "agent DaemonSet" or own_agents
    ]

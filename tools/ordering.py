"""The ordering edges that make node recycling safe, read from a recorded run for the plan summary."""

from __future__ import annotations

from contracts.tokens import DAEMON_SET, DEPLOYMENT, NODE_GROUP
from tools.mock_engine import Recording, Registration


def ordering_edges(recording: Recording) -> list[str]:
    """Each recorded dependency of the server Deployment and the agent DaemonSet, in words."""

    def label(reg: Registration) -> str:
        return f"{reg.type.rsplit(':', 1)[-1]} {reg.name}"

    edges = []
    for dep in recording.by_type(DEPLOYMENT):
        for urn in dep.property_dependencies.get("spec", ()):
            source = recording.by_urn(urn)
            if source.type == NODE_GROUP:
                edges.append(
                    f"{label(dep)} follows {label(source)}'s name (nodeSelector): a replacement group "
                    "is created, servers roll onto it and are Ready, then the old group is drained"
                )
        waits = [label(recording.by_urn(u)) for u in dep.dependencies]
        edges.append(f"{label(dep)} waits for {', '.join(sorted(waits))}")
    for ds in recording.by_type(DAEMON_SET):
        waits = [label(recording.by_urn(u)) for u in ds.dependencies]
        edges.append(f"{label(ds)} waits for {', '.join(sorted(waits))} (Ready)")
    return edges

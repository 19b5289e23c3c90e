"""The parts of the guarantees that one resource alone decides, for policies that run before that
resource's step (CrossGuard resource policies) and so prevent a change instead of reporting it.

A check belongs here for a resource type only if judging the resource alone can never report what
judging the whole stack would not: every other resource can only add violations. That holds for
the checks below (their cross-resource parts only add requirements: taints to tolerate, agents to
stay clear of) and is tested on every mutation case and generated stack
(`tests/test_per_resource.py`). Everything else (what spans resources: selectors matching across
objects, ordering, IAM trust, reachability) is judged only for the whole stack.
"""

from __future__ import annotations

from kiam_eks.contracts.tokens import DAEMON_SET, DEPLOYMENT, NODE_GROUP
from kiam_eks.invariants.checks import CHECKS
from kiam_eks.invariants.model import Resource, Violation
from kiam_eks.invariants.view import KiamView

# Check id -> the resource types it can judge alone.
RESOURCE_LEVEL: dict[str, frozenset[str]] = {
    "server-anti-affinity": frozenset({DEPLOYMENT}),
    "server-tolerations": frozenset({DEPLOYMENT}),
    "server-args": frozenset({DEPLOYMENT}),
    "container-privileges": frozenset({DEPLOYMENT, DAEMON_SET}),
    # The group's own name and replacement order; that the servers follow it spans resources.
    "node-group-replacement": frozenset({NODE_GROUP}),
}


def resource_violations(check_id: str, resource: Resource) -> list[Violation]:
    """What `check_id` reports about `resource`, judged with nothing else in view."""
    if resource.type not in RESOURCE_LEVEL.get(check_id, frozenset()):
        return []
    return [v for v in CHECKS[check_id](KiamView([resource])) if v.resource == resource.urn]

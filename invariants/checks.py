"""The sixteen guarantees, numbered in the order `CHECKS` runs them, after `presence`, which runs
first and is no guarantee of its own: it makes sure the parts the others judge exist, so none of
them passes vacuously. Each check returns violations; unknown values (preview) are never judged.

Each guarantee is a module of its own, named after what it judges (its docstring says which
number); this one only lists them in order and runs them."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kiam_eks.invariants.agent_placement import agent_placement
from kiam_eks.invariants.applications import application_reachable
from kiam_eks.invariants.container_privileges import container_privileges
from kiam_eks.invariants.expected import Expected
from kiam_eks.invariants.iam_least_privilege import iam_least_privilege
from kiam_eks.invariants.model import Resource, Violation
from kiam_eks.invariants.node_group_replacement import node_group_replacement
from kiam_eks.invariants.off_kiam import off_kiam
from kiam_eks.invariants.ordering import ordering
from kiam_eks.invariants.pod_identity import pod_identity
from kiam_eks.invariants.presence import presence
from kiam_eks.invariants.retirement import retired
from kiam_eks.invariants.server_anti_affinity import server_anti_affinity
from kiam_eks.invariants.server_args import server_args
from kiam_eks.invariants.server_certificate import server_certificate
from kiam_eks.invariants.server_disruption_budget import server_disruption_budget
from kiam_eks.invariants.server_service import server_service
from kiam_eks.invariants.server_tolerations import server_tolerations
from kiam_eks.invariants.transitions import change
from kiam_eks.invariants.view import KiamView

Check = Callable[[KiamView], list[Violation]]


# The order is the numbering: docstrings, README and docs cite the guarantees by these numbers.
CHECKS: dict[str, Check] = {
    "presence": presence,
    "server-anti-affinity": server_anti_affinity,
    "server-tolerations": server_tolerations,
    "server-disruption-budget": server_disruption_budget,
    "server-service": server_service,
    "server-certificate": server_certificate,
    "agent-placement": agent_placement,
    "server-args": server_args,
    "iam-least-privilege": iam_least_privilege,
    "node-group-replacement": node_group_replacement,
    "ordering": ordering,
    "container-privileges": container_privileges,
    "application-reachable": application_reachable,
    "pod-identity": pod_identity,
    "off-kiam": off_kiam,
    "retired": retired,
    "change": change,
}


def check_all(resources: Sequence[Resource], expected: Expected | None = None) -> list[Violation]:
    """Every violation of every check, judged against what the stack asked for, sorted so
    reports are stable.

    Without `expected`, the expectations of the stack whose program the Pulumi runtime just ran
    (`Expected.of_running_stack`): right for a caller that judges the run it made (the offline
    plan), wrong for one that judges resources recorded earlier, which must pass them."""
    view = KiamView(resources, expected if expected is not None else Expected.of_running_stack())
    return sorted(v for check in CHECKS.values() for v in check(view))

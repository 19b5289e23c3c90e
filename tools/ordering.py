"""The ordering edges that make node recycling safe, each checked against a recorded run's
dependencies, for the plan summary: it prints ✓ beside an edge the run has and ✗ beside one it
lacks, and fails on a ✗.

What each edge requires comes from what the run registered (the node group's role, the
workload's service account, mounted Secrets and the Services selecting its pods), never from the
dependencies being judged; the reason an edge matters is the one given where it is made
(components/node_group.py, components/server.py, components/kiam.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kiam_eks.contracts.tokens import (
    CLUSTER_ROLE_BINDING,
    DAEMON_SET,
    DEPLOYMENT,
    NODE_GROUP,
    ROLE_POLICY_ATTACHMENT,
    SECRET,
    SERVICE,
)
from tools.mock_engine import Recording, Registration


@dataclass(frozen=True)
class Edge:
    """One ordering the plan claims, and why it does not hold (None when it does)."""

    claim: str
    problem: str | None = None

    def __str__(self) -> str:
        if self.problem is None:
            return f"✓ {self.claim}"
        return f"✗ {self.claim}: {self.problem}"


def ordering_edges(recording: Recording) -> list[Edge]:
    """Every ordering edge of the recorded run, node groups first, then servers, then agents."""
    edges: list[Edge] = []
    groups = recording.by_type(NODE_GROUP)
    for group in groups:
        edges += [_waits_for_node_role_policies(recording, group), _create_before_delete(group)]
    servers = recording.by_type(DEPLOYMENT)
    for server in servers:
        edges.append(_follows_node_group(server, groups))
        edges.append(
            _waits_for(
                server,
                [
                    *_bindings_of(recording, server),
                    *_mounted_secrets(recording, server),
                    *_services_selecting(recording, server),
                ],
                "servers start with their RBAC, certificate and Service in place",
            )
        )
    for agent in recording.by_type(DAEMON_SET):
        edges.append(
            _waits_for(
                agent,
                [*servers, *_mounted_secrets(recording, agent)],
                "agents start once the servers are Ready, with their certificate",
                suffix=lambda r: " (Ready)" if r.type == DEPLOYMENT else "",
            )
        )
    return edges


def label(reg: Registration) -> str:
    return f"{reg.type.rsplit(':', 1)[-1]} {reg.name}"


def _waits_for(
    reg: Registration,
    required: Iterable[Registration],
    why: str,
    suffix: Callable[[Registration], str] = lambda r: "",
) -> Edge:
    ordered = sorted({r.urn: r for r in required}.values(), key=label)
    claim = f"{label(reg)} waits for {', '.join(label(r) + suffix(r) for r in ordered)}: {why}"
    if not ordered:
        return Edge(f"{label(reg)} waits for what it needs: {why}", "it needs nothing recorded")
    missing = [label(r) for r in ordered if r.urn not in reg.dependencies]
    return Edge(claim, f"no dependency on {', '.join(missing)}" if missing else None)


def _waits_for_node_role_policies(recording: Recording, group: Registration) -> Edge:
    roles = set(group.property_dependencies.get("nodeRoleArn", ()))
    attachments = [
        a
        for a in recording.by_type(ROLE_POLICY_ATTACHMENT)
        if roles & set(a.property_dependencies.get("role", ()))
    ]
    why = "nodes join only with the worker and CNI policies (else EKS fails the group)"
    if not attachments:
        return Edge(
            f"{label(group)} waits for its node role's policy attachments: {why}",
            "no policy attachment of its node role is recorded",
        )
    return _waits_for(group, attachments, why)


def _create_before_delete(group: Registration) -> Edge:
    claim = (
        f"{label(group)} is replaced create-before-delete: the new group is up before the old "
        "one drains"
    )
    return Edge(claim, "it is delete-before-replace" if group.delete_before_replace else None)


def _follows_node_group(server: Registration, groups: list[Registration]) -> Edge:
    followed = [g for g in groups if g.urn in server.property_dependencies.get("spec", ())]
    why = (
        "a replacement group is created, servers roll onto it and are Ready, then the old group "
        "is drained"
    )
    if not followed:
        names = ", ".join(label(g) for g in groups) or "no node group"
        return Edge(
            f"{label(server)} follows the node group's name (nodeSelector): {why}",
            f"its spec takes nothing from {names}",
        )
    names = ", ".join(f"{label(g)}'s" for g in followed)
    return Edge(f"{label(server)} follows {names} name (nodeSelector): {why}")


def _pod_spec(workload: Registration) -> Any:
    return workload.inputs.get("spec", {}).get("template", {}).get("spec", {})


def _namespace(reg: Registration) -> Any:
    return reg.inputs.get("metadata", {}).get("namespace")


def _bindings_of(recording: Recording, workload: Registration) -> list[Registration]:
    """The ClusterRoleBindings whose subjects include the workload's service account."""
    account = {
        "kind": "ServiceAccount",
        "name": _pod_spec(workload).get("serviceAccountName"),
        "namespace": _namespace(workload),
    }
    return [
        b
        for b in recording.by_type(CLUSTER_ROLE_BINDING)
        if any({k: s.get(k) for k in account} == account for s in b.inputs.get("subjects") or [])
    ]


def _mounted_secrets(recording: Recording, workload: Registration) -> list[Registration]:
    """The Secrets of this run that the workload's pods mount."""
    names = {
        v["secret"].get("secretName")
        for v in _pod_spec(workload).get("volumes") or []
        if "secret" in v
    }
    return [
        s
        for s in recording.by_type(SECRET)
        if s.inputs.get("metadata", {}).get("name") in names
        and _namespace(s) == _namespace(workload)
    ]


def _services_selecting(recording: Recording, workload: Registration) -> list[Registration]:
    """The Services of this run whose selector matches the workload's pods."""
    pod_labels = workload.inputs.get("spec", {}).get("template", {}).get("metadata", {})
    labels = pod_labels.get("labels") or {}
    return [
        s
        for s in recording.by_type(SERVICE)
        if _namespace(s) == _namespace(workload)
        and (selector := s.inputs.get("spec", {}).get("selector"))
        and all(labels.get(k) == v for k, v in selector.items())
    ]

"""Which lookup answers for a pending create: a person's `--adopt URN=ID` first, the server node
group by its tag (eks_node_groups.py), any Kubernetes object in its cluster (kubernetes_objects.py);
anything else is unknown, and the recovery names it."""

from __future__ import annotations

from tools.interrupted.eks_node_groups import NODE_GROUP
from tools.interrupted.pending import Finding, Lookup, PendingOperation


def adopted_arguments(values: list[str]) -> dict[str, str]:
    """`URN=ID` arguments (the ID may hold `=`; a URN never does)."""
    adopted = {}
    for value in values:
        urn, sep, object_id = value.partition("=")
        if not sep or not urn.startswith("urn:pulumi:") or not object_id:
            raise ValueError(f"--adopt {value!r}: expected URN=ID (a resource's URN, then its ID)")
        adopted[urn] = object_id
    return adopted


def lookup_for(kubernetes: Lookup, node_groups: Lookup, adopted: dict[str, str]) -> Lookup:
    def find(op: PendingOperation) -> Finding:
        if op.urn in adopted:
            return Finding("exists", id=adopted[op.urn])
        if op.type == NODE_GROUP:
            return node_groups(op)
        return kubernetes(op)

    return find

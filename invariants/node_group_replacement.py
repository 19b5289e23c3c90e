"""Guarantee 9, `node-group-replacement`: `node_group_replacement` judges it (its docstring states the guarantee, and is the
policy pack's description of it)."""

from __future__ import annotations

from kiam_eks.contracts.eks_node_group import REPLACE_ON_CHANGES
from kiam_eks.contracts.rollout_wait import (
    ROLLED_OUT_STATUS_COUNTS,
    SKIP_AWAIT_ANNOTATION,
    WAIT_FOR_ANNOTATION,
    rolled_out_wait_for,
)
from kiam_eks.contracts.tokens import NODE_GROUP
from kiam_eks.invariants.model import Violation, dig, is_unknown
from kiam_eks.invariants.view import KiamView


def node_group_replacement(view: KiamView) -> list[Violation]:
    """9. The group can be replaced create-first, is replaced (not rolled in place) on every change
    that touches the servers' nodes, carries exactly the taint asked for, and the servers follow
    its name and `pulumi up` waits until their rollout is done (contracts/rollout_wait.py)."""
    out = []
    for group in view.of_type(NODE_GROUP):
        if group not in view.node_groups:
            continue
        taints = group.inputs.get("taints")
        # Whole-stack only: which taint is right is the settings' to say.
        if (
            view.knows_settings
            and not is_unknown(taints)
            and [dict(t) for t in taints or []]
            != [dict(t) for t in view.expected.node_group_taints]
        ):
            out.append(
                Violation(
                    "node-group-replacement",
                    group.urn,
                    f"is tainted {taints}, not with the taint kiam:nodeGroup.taint asks for "
                    f"({list(view.expected.node_group_taints)})",
                )
            )
        replaced_on = group.replace_on_changes
        missing = [
            p for p in REPLACE_ON_CHANGES if replaced_on is not None and p not in replaced_on
        ]
        if missing:
            out.append(
                Violation(
                    "node-group-replacement",
                    group.urn,
                    f"is not replaced on a change of {', '.join(missing)}: EKS would roll it into "
                    "the running nodes, where a new NO_EXECUTE taint evicts every server at once",
                )
            )
    for group in view.node_groups:
        if group.inputs.get("nodeGroupName"):
            out.append(
                Violation(
                    "node-group-replacement",
                    group.urn,
                    "has a fixed nodeGroupName: a replacement would collide",
                )
            )
        if group.delete_before_replace:
            out.append(
                Violation(
                    "node-group-replacement",
                    group.urn,
                    "is delete-before-replace: servers would lose their nodes first",
                )
            )
    for dep in view.servers:
        if not any(
            g.urn in dep.property_dependencies.get("spec", frozenset()) for g in view.node_groups
        ):
            out.append(
                Violation(
                    "node-group-replacement",
                    dep.urn,
                    "its spec does not follow the node group's name",
                )
            )
        annotations = dig(dep.inputs, "metadata", "annotations", default={}) or {}
        replicas = dig(dep.inputs, "spec", "replicas")
        if str(annotations.get(SKIP_AWAIT_ANNOTATION, "false")).lower() == "true":
            out.append(
                Violation(
                    "node-group-replacement",
                    dep.urn,
                    f"skips the rollout wait ({SKIP_AWAIT_ANNOTATION})",
                )
            )
            continue
        wait_for = annotations.get(WAIT_FOR_ANNOTATION)
        if (
            isinstance(replicas, (int, float))
            and not is_unknown(wait_for)
            and wait_for != rolled_out_wait_for(int(replicas))
        ):
            out.append(
                Violation(
                    "node-group-replacement",
                    dep.urn,
                    f"is not held until its rollout is done: {WAIT_FOR_ANNOTATION} must wait for "
                    f"{', '.join(ROLLED_OUT_STATUS_COUNTS)} to reach {int(replicas)} (it is "
                    f"{wait_for}); the provider's own Deployment wait can return with one new "
                    "server Ready, and the old nodes go",
                )
            )
    return out

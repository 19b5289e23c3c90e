"""Whether a pending create of the server node group finished: the EKS managed node group an
interrupted update may have left running without the state knowing it.

The group is named from a prefix when EKS creates it (`nodeGroupNamePrefix`,
components/node_group.py), so the pending operation cannot say which group it made; the group
carries the stack's tag (`contracts.names.STACK_TAG`, valued `<project>/<stack>`). The cluster's
groups are listed and read with the AWS CLI (AWS CLI Command Reference: `aws eks list-nodegroups`
answers `{"nodegroups": [names]}`, `aws eks describe-nodegroup` answers `{"nodegroup":
{"nodegroupName", "status", "createdAt", "tags", ...}}`); a group tagged for this stack that the
state does not hold is the orphan.

It is named, never imported or deleted here: its create may still be running at EKS (status
CREATING, which pulumi-aws' bridge waits out and cannot cancel), and only a person can tell
whether the servers already moved onto it. The message gives both ways out: adopt it (`up
--resume --adopt URN=ID`, the same state edit as a Kubernetes object's import, with the AWS
provider's import ID `<cluster>:<group>`), or delete it once nothing runs on it.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kiam_eks.contracts.names import STACK_TAG, stack_tag_value
from tools.interrupted.pending import Finding, PendingOperation

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
AwsCli = Callable[[list[str]], dict[str, Any]]


def aws_cli(args: list[str]) -> dict[str, Any]:
    done = subprocess.run(
        ["aws", *args, "--output", "json"], check=True, capture_output=True, text=True
    )
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def project_and_stack(urn: str) -> tuple[str, str]:
    """`urn:pulumi:<stack>::<project>::<types>::<name>` (Pulumi's URN format)."""
    stack, project = urn.split("::", 2)[:2]
    return project, stack.removeprefix("urn:pulumi:")


@dataclass
class EksNodeGroups:
    region: str
    tracked: Callable[[], set[str]]
    """The node group names the state holds."""
    aws: AwsCli = aws_cli

    def find(self, op: PendingOperation) -> Finding:
        cluster = op.inputs.get("clusterName")
        if not isinstance(cluster, str) or not cluster:
            return Finding("unknown", why="its inputs name no cluster (clusterName)")
        listed = self.aws(
            ["eks", "list-nodegroups", "--cluster-name", cluster, "--region", self.region]
        )
        tracked = self.tracked()
        tag = stack_tag_value(*project_and_stack(op.urn))
        orphans = []
        for name in listed.get("nodegroups") or []:
            if name in tracked:
                continue
            group = self.aws(
                ["eks", "describe-nodegroup", "--cluster-name", cluster, "--nodegroup-name", name,
                 "--region", self.region]
            )["nodegroup"]  # fmt: skip
            if (group.get("tags") or {}).get(STACK_TAG) == tag:
                orphans.append(group)
        if not orphans:
            return Finding("absent")
        found = ", ".join(
            f"{g['nodegroupName']} (status {g.get('status', '?')}, created {g.get('createdAt', '?')})"
            for g in orphans
        )
        adopt = f"{op.urn}={cluster}:{orphans[0]['nodegroupName']}"
        return Finding(
            "unknown",
            why=(
                f"node group {found} of cluster {cluster} carries this stack's tag {STACK_TAG}="
                f"{tag} and is not in the state: the interrupted create made it. Adopt it "
                f"(once its status is ACTIVE): `python -m tools.fleet up --resume --adopt "
                f"'{adopt}'`; or, once no kiam server runs on its nodes, delete it: `aws eks "
                f"delete-nodegroup --region {self.region} --cluster-name {cluster} "
                f"--nodegroup-name {orphans[0]['nodegroupName']}`"
            ),
        )


def tracked_node_groups(exported: dict[str, Any]) -> set[str]:
    """The names of the node groups a `pulumi stack export` holds."""
    return {
        str((r.get("outputs") or {}).get("nodeGroupName"))
        for r in (exported.get("deployment") or {}).get("resources") or []
        if r.get("type") == NODE_GROUP and (r.get("outputs") or {}).get("nodeGroupName")
    }

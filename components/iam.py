"""The IAM chain: server node role -> kiam-server role -> application roles (by pattern, and
existing roles by exact ARN)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from kiam_eks.components.known import when_known
from kiam_eks.contracts import names, tokens
from kiam_eks.contracts.iam import EKS_NODE_MANAGED_POLICIES, managed_policy_arn
from kiam_eks.settings import server_permission
from kiam_eks.settings.cluster import ClusterSettings
from kiam_eks.settings.iam import IamSettings
from kiam_eks.specs import iam_policies


@dataclass(frozen=True, kw_only=True)
class IamArgs:
    """Inputs of `Iam`."""

    cluster: ClusterSettings
    """Account, region and partition of the roles."""
    cluster_name: pulumi.Input[str]
    """The EKS cluster's name, for the roles' descriptions (another resource's output, or
    `kiam:cluster.name`)."""
    iam: IamSettings
    """Role paths and the application-role pattern."""
    application_paths: Sequence[str] = ()
    """IAM paths of the roles the stack creates for applications; each below the base path gets
    its own pattern."""
    existing_role_arns: Sequence[str] = ()
    """Existing roles applications name (`roleArn`): the server may assume each exactly."""
    previous_server_permission: Sequence[Sequence[str]] | None = None
    """How the last update laid the server's permission over its documents (the installed
    facts), so that this one moves nothing from one document to another."""


class Iam(pulumi.ComponentResource):
    """The server nodes' instance role and the kiam-server role it alone may assume."""

    node_role: aws.iam.Role
    """Instance role of the dedicated server nodes."""
    node_policy_attachments: list[aws.iam.RolePolicyAttachment]
    """The EKS worker policies on the node role; the node group must wait for them."""
    server_role: aws.iam.Role
    """The role kiam-server assumes (`--assume-role-arn`) to assume application roles."""
    role_base_arn: str
    """kiam's `--role-base-arn`."""
    application_role_patterns: list[str]
    """The ARN patterns the server may assume."""
    server_permission: list[list[str]]
    """`application_role_patterns` as laid over the server role's inline policy (first) and
    its customer managed policies."""
    node_role_arn: pulumi.Output[str]
    """`node_role`'s ARN (`KiamRoles`)."""
    server_role_arn: pulumi.Output[str]
    """`server_role`'s ARN (`KiamRoles`)."""
    node_role_policies: list[aws.iam.RolePolicyAttachment]
    """`node_policy_attachments` (`KiamRoles`)."""

    def __init__(
        self, name: str, args: IamArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(tokens.IAM, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        partition, account = args.cluster.partition, args.cluster.account_id

        node_role, server_role = names.node_role_name(name), names.server_role_name(name)
        self.node_role = aws.iam.Role(
            node_role,
            path=args.iam.kiam_role_path,
            description=when_known(args.cluster_name, "kiam server nodes of EKS cluster {}".format),
            assume_role_policy=json.dumps(iam_policies.ec2_trust_policy()),
            opts=child,
        )
        # Keyed by policy name, not position: reordering the list never replaces an attachment.
        self.node_policy_attachments = [
            aws.iam.RolePolicyAttachment(
                f"{node_role}-{policy}",
                role=self.node_role.name,
                policy_arn=managed_policy_arn(partition, policy),
                opts=child,
            )
            for policy in EKS_NODE_MANAGED_POLICIES
        ]
        self.server_role = aws.iam.Role(
            server_role,
            path=args.iam.kiam_role_path,
            description=when_known(args.cluster_name, "kiam-server of EKS cluster {}".format),
            assume_role_policy=self.node_role.arn.apply(
                lambda arn: json.dumps(iam_policies.role_trust_policy(arn))
            ),
            # Role chaining caps sessions at an hour whatever this says; keep the two aligned.
            max_session_duration=3600,
            opts=child,
        )
        aws.iam.RolePolicy(
            f"{node_role}-assume-server",
            role=self.node_role.name,
            policy=self.server_role.arn.apply(
                lambda arn: json.dumps(iam_policies.assume_role_policy(arn, "AssumeKiamServerRole"))
            ),
            opts=child,
        )
        self.application_role_patterns = iam_policies.application_role_patterns(
            partition, account, args.iam, args.application_paths, args.existing_role_arns
        )
        self.server_permission = server_permission.place(
            self.application_role_patterns,
            args.iam.managed_policies_per_role,
            args.previous_server_permission,
        )
        inline, *managed = server_permission.documents(self.server_permission)
        # Past the inline policy's 10,240 characters the permission continues in customer managed
        # policies, keyed by their place: each keeps its resources from one update to the next
        # (settings/server_permission.py), so an update only ever adds to or takes from one.
        attachments = []
        for index, document in enumerate(managed, start=1):
            policy = aws.iam.Policy(
                f"{server_role}-assume-applications-{index}",
                path=args.iam.kiam_role_path,
                description=when_known(
                    args.cluster_name,
                    f"kiam-server of EKS cluster {{}}: application roles, part {index + 1}".format,
                ),
                policy=json.dumps(document),
                opts=child,
            )
            attachments.append(
                aws.iam.RolePolicyAttachment(
                    f"{server_role}-assume-applications-{index}",
                    role=self.server_role.name,
                    policy_arn=policy.arn,
                    opts=child,
                )
            )
        aws.iam.RolePolicy(
            f"{server_role}-assume-applications",
            role=self.server_role.name,
            policy=json.dumps(inline),
            # A resource leaving the inline policy for a managed one is allowed there first.
            opts=pulumi.ResourceOptions(parent=self, depends_on=attachments),
        )
        self.role_base_arn = iam_policies.role_base_arn(partition, account, args.iam)
        self.node_role_arn = self.node_role.arn
        self.server_role_arn = self.server_role.arn
        self.node_role_policies = self.node_policy_attachments
        self.register_outputs(
            {
                "node_role": self.node_role,
                "server_role": self.server_role,
                "role_base_arn": self.role_base_arn,
                "application_role_patterns": self.application_role_patterns,
            }
        )

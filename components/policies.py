"""IAM policy documents and ARNs of the kiam chain, as pure functions of plain values."""

from __future__ import annotations

from typing import Any

from settings.iam import IamSettings

PolicyDocument = dict[str, Any]

# Tags name each kiam role's part in the chain, so policy checks find it whatever its name.
ROLE_TAG = "kiam:role"
ALLOW_ANY_ROLE_TAG = "kiam:allow-any-role"

# AWS managed policies every EKS worker node needs, keyed by the name used for the attachment.
NODE_MANAGED_POLICIES = (
    "AmazonEKSWorkerNodePolicy",
    "AmazonEKS_CNI_Policy",
    "AmazonEC2ContainerRegistryReadOnly",
)


def managed_policy_arn(partition: str, policy: str) -> str:
    """ARN of an AWS managed policy."""
    return f"arn:{partition}:iam::aws:policy/{policy}"


def role_base_arn(partition: str, account_id: str, iam: IamSettings) -> str:
    """kiam's `--role-base-arn`: pods may annotate a bare role name under the application path."""
    return f"arn:{partition}:iam::{account_id}:role{iam.application_role_path}"


def application_role_pattern(partition: str, account_id: str, iam: IamSettings) -> str:
    """The narrowest ARN pattern covering the application roles the server may assume."""
    if iam.allow_any_role:
        return f"arn:{partition}:iam::{account_id}:role/*"
    return f"{role_base_arn(partition, account_id, iam)}{iam.application_role_name_prefix}*"


def ec2_trust_policy() -> PolicyDocument:
    """Trust for an EC2 instance role (the server nodes)."""
    return _trust({"Service": "ec2.amazonaws.com"})


def role_trust_policy(principal_role_arn: str) -> PolicyDocument:
    """Trust for a role that exactly one other role may assume."""
    return _trust({"AWS": principal_role_arn})


def assume_role_policy(resource: str, sid: str) -> PolicyDocument:
    """Permission to call sts:AssumeRole on one ARN or ARN pattern, and nothing else."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {"Sid": sid, "Effect": "Allow", "Action": "sts:AssumeRole", "Resource": resource}
        ],
    }


def _trust(principal: dict[str, str]) -> PolicyDocument:
    return {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": principal, "Action": "sts:AssumeRole"}],
    }

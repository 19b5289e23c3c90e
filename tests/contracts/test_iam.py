"""The IAM facts of `contracts.iam`, spelled out literally with their sources, so a wrong
constant fails here instead of passing every gate that reads it."""

from __future__ import annotations

import re

from kiam_eks.contracts.iam import (
    EKS_NODE_MANAGED_POLICIES,
    ROLE_ARN_PATTERN,
    ROLE_REPLACE_FIELDS,
    RoleArnParts,
    delegates_across,
    managed_policy_arn,
    oidc_provider_arn,
    pod_role_annotation,
    role_arn,
    role_arn_parts,
)


def test_the_node_role_needs_exactly_the_eks_worker_cni_and_registry_policies() -> None:
    # Amazon EKS User Guide, "Amazon EKS node IAM role": AmazonEKSWorkerNodePolicy,
    # AmazonEC2ContainerRegistryReadOnly, and AmazonEKS_CNI_Policy where the VPC CNI runs as
    # the node role.
    assert sorted(EKS_NODE_MANAGED_POLICIES) == [
        "AmazonEC2ContainerRegistryReadOnly",
        "AmazonEKSWorkerNodePolicy",
        "AmazonEKS_CNI_Policy",
    ]


def test_arns_as_iam_writes_them() -> None:
    # IAM User Guide, "IAM identifiers": arn:partition:iam::account-id:role/role-name-with-path,
    # AWS managed policies under the account `aws`.
    assert managed_policy_arn("aws", "AdministratorAccess") == (
        "arn:aws:iam::aws:policy/AdministratorAccess"
    )
    assert managed_policy_arn("aws-cn", "AmazonEKS_CNI_Policy") == (
        "arn:aws-cn:iam::aws:policy/AmazonEKS_CNI_Policy"
    )
    assert role_arn("aws", "111122223333", "/", "x") == "arn:aws:iam::111122223333:role/x"
    assert role_arn("aws-us-gov", "1", "/a/b/", "x") == "arn:aws-us-gov:iam::1:role/a/b/x"


def test_a_role_arn_is_partition_account_path_and_name() -> None:
    # IAM User Guide, "IAM identifiers": a path such as /division_abc/subdivision_xyz/
    # product_1234/engineering/ is part of the role's ARN (arn:partition:iam::account:role/
    # role-name-with-path); a role name is 1-64 of [\w+=,.@-] (CreateRole, RoleName), an account
    # 12 digits.
    arn = "arn:aws:iam::123456789012:role/division_abc/subdivision_xyz/product_1234/engineering/App"
    assert re.fullmatch(ROLE_ARN_PATTERN, arn)
    assert role_arn_parts(arn) == RoleArnParts(
        "aws", "123456789012", "/division_abc/subdivision_xyz/product_1234/engineering/", "App"
    )
    assert role_arn_parts("arn:aws-cn:iam::123456789012:role/x") == RoleArnParts(
        "aws-cn", "123456789012", "/", "x"
    )
    for not_a_role in (
        "arn:aws:iam::123456789012:user/x",
        "arn:aws:iam::12345678901:role/x",
        "arn:aws:iam::123456789012:role/",
        "arn:aws:iam::123456789012:role/" + "x" * 65,
        "arn:aws:sts::123456789012:assumed-role/x/session",
        "billing-api",
    ):
        assert not re.fullmatch(ROLE_ARN_PATTERN, not_a_role), not_a_role


def test_a_pod_annotation_kiam_resolves_back_to_the_role() -> None:
    # kiam v4.2 pkg/aws/sts/arn_resolver.go: an `arn:` annotation is kept, anything else is
    # appended to --role-base-arn.
    base = "arn:aws:iam::1:role/apps/"
    assert pod_role_annotation(f"{base}team/x", base) == "team/x"
    assert pod_role_annotation("arn:aws:iam::1:role/other/x", base) == (
        "arn:aws:iam::1:role/other/x"
    )


def test_no_role_is_delegated_across_partitions() -> None:
    # IAM User Guide, "IAM identifiers": "You cannot delegate access between accounts in
    # different partitions."
    assert delegates_across("aws", "aws")
    assert not delegates_across("aws", "aws-cn")
    assert not delegates_across("aws-us-gov", "aws")


def test_irsa_trusts_the_oidc_provider_of_the_roles_own_account() -> None:
    # IAM User Guide, "Create an OpenID Connect (OIDC) identity provider in IAM": the provider's
    # ARN is arn:aws:iam::<account>:oidc-provider/<issuer without https://>. EKS User Guide,
    # "Authenticate to another account with IRSA": "Account B follows the instructions in Create
    # an IAM OIDC provider for your cluster ... using the OIDC issuer URL from Account A's
    # cluster": the provider lives in the role's account, not the cluster's.
    issuer = "https://oidc.eks.eu-west-1.amazonaws.com/id/4D967A30111BF29F0EBA01C448B375C1"
    assert oidc_provider_arn("aws", "444455556666", issuer) == (
        "arn:aws:iam::444455556666:oidc-provider/"
        "oidc.eks.eu-west-1.amazonaws.com/id/4D967A30111BF29F0EBA01C448B375C1"
    )
    assert oidc_provider_arn("aws-cn", "111122223333", issuer.removeprefix("https://")) == (
        "arn:aws-cn:iam::111122223333:oidc-provider/"
        "oidc.eks.eu-west-1.amazonaws.com/id/4D967A30111BF29F0EBA01C448B375C1"
    )


def test_what_replaces_a_role() -> None:
    # terraform-provider-aws internal/service/iam/role.go (0040ea69): `ForceNew: true` on name,
    # name_prefix and path in ResourceRole's schema, in pulumi-aws's input names.
    assert ROLE_REPLACE_FIELDS == ("name", "namePrefix", "path")

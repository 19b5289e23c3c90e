"""IAM's ARN grammar and the managed policies EKS requires of a node role: what the program builds
its roles from and what the guarantees judge them against, so the two read one definition.

Sources (each spelled out by `tests/contracts/test_iam.py`):
- ARN formats: the IAM User Guide, "IAM identifiers", "IAM ARNs" (`arn:partition:iam::account:
  role/path/name`; AWS managed policies live in the account `aws`).
- What replaces a role: terraform-provider-aws (which pulumi-aws bridges)
  internal/service/iam/role.go at 0040ea6911af00bea2cca6dbb14e86829826ad8e, `ResourceRole`'s
  schema: `name`, `name_prefix` and `path` are `ForceNew` (IAM's UpdateRole changes neither);
  a role is then created anew, with another ARN (`role/<path><name>`), and the old one deleted.
- The node role's policies: the Amazon EKS User Guide, "Amazon EKS node IAM role": a managed
  node group's role needs `AmazonEKSWorkerNodePolicy`, `AmazonEC2ContainerRegistryReadOnly` and,
  where the VPC CNI uses the node role (as here: no IRSA for `aws-node` is assumed),
  `AmazonEKS_CNI_Policy`.
"""

from __future__ import annotations

from dataclasses import dataclass

# The AWS managed policies every EKS worker node needs; the program attaches exactly these to the
# server nodes' role, and guarantee 8 allows the node role exactly these.
EKS_NODE_MANAGED_POLICIES = (
    "AmazonEKSWorkerNodePolicy",
    "AmazonEKS_CNI_Policy",
    "AmazonEC2ContainerRegistryReadOnly",
)


ROLE_REPLACE_FIELDS = ("name", "namePrefix", "path")
"""A role's arguments, in pulumi-aws's input names, whose change replaces it (another ARN)."""


def managed_policy_arn(partition: str, policy: str) -> str:
    """ARN of an AWS managed policy (account `aws`, no path)."""
    return f"arn:{partition}:iam::aws:policy/{policy}"


# "IAM identifiers": a role ARN is `arn:<partition>:iam::<account>:role/<path><name>`; a path is
# `/` or `/`-delimited printable ASCII (`[!-~]`), a role name 1 to 64 of `[A-Za-z0-9+=,.@_-]`
# (CreateRole's roleNameType), an account 12 digits.
ROLE_ARN_PATTERN = r"arn:aws[a-z-]*:iam::\d{12}:role/([!-~]+/)?[A-Za-z0-9+=,.@_-]{1,64}"


@dataclass(frozen=True)
class RoleArnParts:
    """A role ARN taken apart (`role_arn_parts`)."""

    partition: str
    account_id: str
    path: str
    """`/` or `/a/b/`."""
    name: str


def role_arn_parts(arn: str) -> RoleArnParts:
    """The partition, account, path and name of a role ARN matching `ROLE_ARN_PATTERN`:
    the path is everything between `role` and the last `/`, inclusive."""
    prefix, _, path_and_name = arn.partition(":role")
    _, partition, _, _, account_id = prefix.split(":")
    cut = path_and_name.rfind("/") + 1
    return RoleArnParts(partition, account_id, path_and_name[:cut], path_and_name[cut:])


def delegates_across(principal_partition: str, role_partition: str) -> bool:
    """Whether a principal of one partition can be given a role of another: never. IAM User
    Guide, "IAM identifiers" (IAM ARNs, `partition`): "You cannot delegate access between accounts
    in different partitions"."""
    return principal_partition == role_partition


def oidc_provider_arn(partition: str, role_account_id: str, issuer: str) -> str:
    """The IAM OIDC provider a role trusts for IRSA: the cluster's issuer (without `https://`),
    registered in the **role's** account. IAM names it `arn:<partition>:iam::<account>:oidc-
    provider/<issuer host and path>` (IAM User Guide, "Create an OpenID Connect (OIDC) identity
    provider in IAM"); for a role of another account, the EKS User Guide ("Authenticate to
    another account with IRSA", cross-account-access) has that account create it: "Account B
    follows the instructions in Create an IAM OIDC provider for your cluster ... using the OIDC
    issuer URL from Account A's cluster"."""
    return f"arn:{partition}:iam::{role_account_id}:oidc-provider/{issuer.removeprefix('https://')}"


def role_arn(partition: str, account_id: str, path: str, name: str) -> str:
    """The ARN IAM gives a role: its path (`/` or `/a/b/`) and name are both part of it."""
    return f"arn:{partition}:iam::{account_id}:role{path}{name}"


def pod_role_annotation(arn: str, role_base_arn: str) -> str:
    """What a pod annotates (`iam.amazonaws.com/role`) so that kiam resolves it to `arn`.

    kiam v4.2 (`pkg/aws/sts/arn_resolver.go`) keeps an annotation starting with `arn:` as it is,
    and otherwise prefixes `--role-base-arn` to it (after dropping one leading `/`). A role below
    the base therefore goes by its path relative to the base (`team-a/billing-api`), which stays
    the same in every account; any other role by its full ARN.
    """
    return arn[len(role_base_arn) :] if arn.startswith(role_base_arn) else arn

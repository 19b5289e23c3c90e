"""Application roles pods may assume through kiam (and, optionally, through IRSA)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, Field, model_validator

from settings.base import DnsLabel, Model, matching
from settings.iam import IamSettings, RolePath
from settings.policy_document import (
    ROLE_INLINE_POLICY_CHARACTERS,
    check_policy_document,
    policy_characters,
)

# IAM names (CreateRole's roleNameType, PutRolePolicy's policyNameType).
RoleName = Annotated[
    str, matching(r"[A-Za-z0-9+=,.@_-]{1,64}", "an IAM role name (64 characters at most)")
]
PolicyName = Annotated[str, matching(r"[A-Za-z0-9+=,.@_-]{1,128}", "a policy name")]
# arn:<partition>:iam::<aws or account>:policy<path><name>; that the partition and the account
# are the cluster's is checked with the cluster (settings/stack.py).
PolicyArn = Annotated[
    str,
    matching(
        r"arn:aws[a-z-]*:iam::(aws|\d{12}):policy(/[A-Za-z0-9+=,.@_-]+)*/[A-Za-z0-9+=,.@_-]{1,128}",
        "an IAM policy ARN",
    ),
]
PolicyDocument = Annotated[dict[str, Any], AfterValidator(check_policy_document)]


class IrsaSettings(Model):
    """Also trust the cluster's OIDC provider for one service account, so the app can move to IRSA."""

    service_account: DnsLabel = Field(
        description="The service account, in the application's namespace."
    )


class ApplicationSettings(Model):
    """One application role: assumable through kiam from one namespace."""

    namespace: DnsLabel = Field(description="Namespace whose pods may assume the role.")
    role_name: RoleName = Field(
        description="IAM role name; must start with `kiam:iam.applicationRoleNamePrefix`. Pods "
        "annotate `iam.amazonaws.com/role` with the role's path below "
        "`kiam:iam.applicationRolePath` and this name (`<roleName>`, or `team-a/<roleName>` for "
        "path `/kiam-apps/team-a/`): the stack output `applications` gives it."
    )
    path: RolePath | None = Field(
        default=None,
        description="IAM path of the role; defaults to `kiam:iam.applicationRolePath` and must "
        "lie under it. The server may assume roles under each such path (with the name prefix).",
    )
    managed_policy_arns: list[PolicyArn] = Field(
        default=[],
        description="Managed policies to attach: AWS managed ones or the cluster account's, in "
        "the cluster's partition, each policy name once, at most "
        "`kiam:iam.managedPoliciesPerRole`.",
    )
    inline_policies: dict[PolicyName, PolicyDocument] = Field(
        default={},
        description='Inline policy documents by name, in IAM\'s grammar (Version "2012-10-17", '
        "Effect, Action or NotAction, Resource or NotResource; no Principal); "
        f"{ROLE_INLINE_POLICY_CHARACTERS} characters at most together, white space not counted.",
    )
    irsa: IrsaSettings | None = Field(
        default=None,
        description="Also trust this service account through the cluster's OIDC provider.",
    )

    @model_validator(mode="after")
    def _check(self) -> ApplicationSettings:
        names = [arn.rsplit("/", 1)[1] for arn in self.managed_policy_arns]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            # Each attachment is named after its policy (components/application_role.py): two
            # would collide, and the engine refuses a duplicate resource name.
            raise ValueError(
                f"managedPolicyArns lists the policy name {', '.join(twice)} more than once: "
                "attach each policy once"
            )
        size = sum(policy_characters(d) for d in self.inline_policies.values())
        if size > ROLE_INLINE_POLICY_CHARACTERS:
            raise ValueError(
                f"inlinePolicies total {size} characters without white space: IAM allows "
                f"{ROLE_INLINE_POLICY_CHARACTERS} per role (move some into managed policies)"
            )
        return self

    def role_path(self, iam: IamSettings) -> str:
        """The role's IAM path: its own `path`, or `kiam:iam.applicationRolePath`."""
        return self.path or iam.application_role_path

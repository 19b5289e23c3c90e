"""Application roles pods may assume through kiam (and, optionally, through IRSA)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from settings.base import DnsLabel, Model, matching
from settings.iam import RolePath

RoleName = Annotated[
    str, matching(r"[A-Za-z0-9+=,.@_-]{1,64}", "an IAM role name (64 characters at most)")
]
PolicyArn = Annotated[
    str,
    matching(r"arn:aws[a-z-]*:iam::(aws|\d{12}):policy/[A-Za-z0-9+=,.@_/-]+", "an IAM policy ARN"),
]


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
        default=[], description="Managed policies to attach."
    )
    inline_policies: dict[
        Annotated[str, matching(r"[A-Za-z0-9+=,.@_-]{1,128}", "a policy name")], dict[str, Any]
    ] = Field(default={}, description="Inline policy documents by name (JSON objects).")
    irsa: IrsaSettings | None = Field(
        default=None,
        description="Also trust this service account through the cluster's OIDC provider.",
    )

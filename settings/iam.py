"""Which application roles the kiam server may assume, and where kiam's own roles live."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field, model_validator

from kiam_eks.contracts import names
from kiam_eks.contracts.iam_quotas import (
    MANAGED_POLICIES_PER_ROLE_DEFAULT,
    MANAGED_POLICIES_PER_ROLE_MAX,
)
from kiam_eks.settings.base import Model, matching

# IAM allows any printable ASCII in a path (CreateRole's pathType); these are the characters of
# names, so that a path never carries `*` or `?` into the ARN patterns the server may assume.
MAX_PATH = 512  # pathType's length limit


def _check_path_length(path: str) -> str:
    if len(path) > MAX_PATH:
        raise ValueError(f"the path is {len(path)} characters: IAM allows {MAX_PATH}")
    return path


RolePath = Annotated[
    str,
    matching(r"/([A-Za-z0-9+=,.@_-]+/)*", "an IAM path such as /kiam-apps/"),
    AfterValidator(_check_path_length),
]
RoleNamePrefix = Annotated[
    str, matching(r"[A-Za-z0-9+=,.@_-]{0,32}", "an IAM role name prefix (32 characters at most)")
]


class IamSettings(Model):
    """`kiam:iam`: the narrowest role pattern the kiam server may assume."""

    application_role_path: RolePath = Field(
        default="/kiam-apps/",
        description="IAM path of the application roles pods may assume; the server may assume "
        "only roles under it. Also the `--role-base-arn`, so pods may annotate a bare role name.",
    )
    application_role_name_prefix: RoleNamePrefix = Field(
        default="",
        description="Optional role-name prefix that narrows the pattern further.",
    )
    allow_any_role: bool = Field(
        default=False,
        description="Let the server assume any role in the account (`role/*`). Only with this "
        "set may the path be `/` with no prefix.",
    )
    kiam_role_path: RolePath = Field(
        default="/kiam/",
        description="IAM path of kiam's own roles (node role, server role), and of the roles "
        "Pod Identity chains through to an existing role of another account, which stay once "
        "kiam is retired.",
    )
    managed_policies_per_role: int = Field(
        default=MANAGED_POLICIES_PER_ROLE_DEFAULT,
        ge=MANAGED_POLICIES_PER_ROLE_DEFAULT,
        le=MANAGED_POLICIES_PER_ROLE_MAX,
        description='The account\'s IAM quota "Managed policies per role": 10 unless raised in '
        "Service Quotas (up to 20). No application may attach more, and the kiam-server role's "
        "permission spreads over its inline policy and at most this many managed policies.",
    )

    @model_validator(mode="after")
    def _check(self) -> IamSettings:
        broad = self.application_role_path == "/" and not self.application_role_name_prefix
        if broad and not self.allow_any_role:
            raise ValueError(
                "applicationRolePath '/' with no applicationRoleNamePrefix lets the server assume "
                "every role in the account; narrow it, or set allowAnyRole: true to mean it"
            )
        prefix = self.application_role_name_prefix
        if self.pattern_covers_kiam_roles(self.application_role_path):
            raise ValueError(
                f"applicationRolePath {self.application_role_path!r} with prefix {prefix!r} "
                f"also matches kiam's own roles under kiamRolePath {self.kiam_role_path!r}: "
                "the server could assume them"
            )
        return self

    def pattern_covers_kiam_roles(self, path: str) -> bool:
        """Whether the server's pattern for roles under `path` (`role<path><prefix>*`) would
        also cover kiam's own roles; always false with allowAnyRole, which means it."""
        if self.allow_any_role or not self.kiam_role_path.startswith(path):
            return False
        # What follows the path in the ARN of kiam's own roles.
        rest = self.kiam_role_path[len(path) :] + names.OWN_ROLE_NAME_PREFIX
        prefix = self.application_role_name_prefix
        return rest.startswith(prefix) or prefix.startswith(rest)

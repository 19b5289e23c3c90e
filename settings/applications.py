"""Application roles, and how each application gets its credentials: through kiam, through EKS Pod
Identity or IRSA, or through both while it moves (docs/leaving-kiam.md)."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from pydantic import AfterValidator, Field, model_validator

from kiam_eks.settings.base import DnsLabel, Model, matching
from kiam_eks.settings.iam import IamSettings, RolePath
from kiam_eks.settings.policy_document import (
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


class ServedBy(StrEnum):
    """Where an application's pods get their credentials; each move is one step along a path:
    `kiam` -> `kiam+podIdentity` -> `podIdentity`, or `kiam` -> `kiam+irsa` -> `irsa`, and back.

    The middle state is the move itself: the role trusts both, the namespace still admits it for
    kiam, and pods are recreated onto the successor (EKS injects the Pod Identity or IRSA
    environment only into pods created after it is wired) before kiam stops serving the role."""

    KIAM = "kiam"
    KIAM_AND_POD_IDENTITY = "kiam+podIdentity"
    POD_IDENTITY = "podIdentity"
    KIAM_AND_IRSA = "kiam+irsa"
    IRSA = "irsa"

    @property
    def kiam(self) -> bool:
        """kiam serves the role: the kiam-server role is trusted and the namespace admits it."""
        return self.value.startswith("kiam")

    @property
    def pod_identity(self) -> bool:
        """An EKS Pod Identity association serves the role to its service account."""
        return self.value.endswith("podIdentity")

    @property
    def irsa(self) -> bool:
        """The cluster's OIDC provider is trusted for its service account (IRSA)."""
        return self.value.endswith("irsa")

    @property
    def successor(self) -> bool:
        """Pod Identity or IRSA serves it (it then needs `serviceAccount`)."""
        return self.pod_identity or self.irsa

    @property
    def next(self) -> ServedBy | None:
        """The next state on this state's path, None at the end of it (or at `kiam`, which has two)."""
        return _NEXT.get(self)

    @property
    def previous(self) -> ServedBy | None:
        """The state a rollback goes back to; None at `kiam`."""
        return _PREVIOUS.get(self)


_NEXT = {
    ServedBy.KIAM_AND_POD_IDENTITY: ServedBy.POD_IDENTITY,
    ServedBy.KIAM_AND_IRSA: ServedBy.IRSA,
}
_PREVIOUS = {
    ServedBy.KIAM_AND_POD_IDENTITY: ServedBy.KIAM,
    ServedBy.POD_IDENTITY: ServedBy.KIAM_AND_POD_IDENTITY,
    ServedBy.KIAM_AND_IRSA: ServedBy.KIAM,
    ServedBy.IRSA: ServedBy.KIAM_AND_IRSA,
}


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
    served_by: ServedBy = Field(
        default=ServedBy.KIAM,
        description="Where its pods get credentials: `kiam`; `kiam+podIdentity` or `kiam+irsa` "
        "while the application moves (both work; recreate its pods, then check with "
        "`python -m tools.kiam_usage`); `podIdentity` or `irsa` once it has moved. One step at a "
        "time, forward or back (docs/leaving-kiam.md).",
    )
    service_account: DnsLabel | None = Field(
        default=None,
        description="The service account, in the application's namespace, that Pod Identity or "
        "IRSA serves the role to; required unless `servedBy` is `kiam`.",
    )

    @model_validator(mode="before")
    @classmethod
    def _moved_keys(cls, data: Any) -> Any:
        if isinstance(data, dict) and "irsa" in data:
            irsa = data["irsa"]
            account = irsa.get("serviceAccount") if isinstance(irsa, dict) else None
            raise ValueError(
                "irsa is now two keys: servedBy: kiam+irsa and serviceAccount: "
                f"{account or '<the service account>'} (docs/leaving-kiam.md)"
            )
        return data

    @model_validator(mode="after")
    def _check(self) -> ApplicationSettings:
        if self.served_by.successor and self.service_account is None:
            raise ValueError(
                f"servedBy {self.served_by.value} needs serviceAccount: the service account, in "
                f"namespace {self.namespace}, that the role is served to"
            )
        if not self.served_by.successor and self.service_account is not None:
            raise ValueError(
                "serviceAccount is used only when servedBy is kiam+podIdentity, podIdentity, "
                "kiam+irsa or irsa: remove it, or move the application on"
            )
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

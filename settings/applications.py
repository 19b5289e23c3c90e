"""Application roles, and how each application gets its credentials: through kiam, through EKS Pod
Identity or IRSA, or through both while it moves (docs/leaving-kiam.md)."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from pydantic import AfterValidator, Field, model_validator

from kiam_eks.contracts.iam import ROLE_ARN_PATTERN, role_arn, role_arn_parts
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
RoleArn = Annotated[
    str,
    matching(
        ROLE_ARN_PATTERN,
        "an IAM role ARN (arn:<partition>:iam::<account>:role/<path><name>, such as "
        "arn:aws:iam::111122223333:role/billing-api)",
    ),
]
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
    def forward(self) -> tuple[ServedBy, ...]:
        """The states one step forward: both moves from `kiam`, the end of a move from its
        middle, none at an end."""
        if self is ServedBy.KIAM:
            return (ServedBy.KIAM_AND_POD_IDENTITY, ServedBy.KIAM_AND_IRSA)
        return (self.next,) if self.next is not None else ()

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
    """One application role, served to one namespace: a role the stack creates (`roleName`) or
    one that exists already (`roleArn`)."""

    namespace: DnsLabel = Field(description="Namespace whose pods may assume the role.")
    role_name: RoleName | None = Field(
        default=None,
        description="IAM role name of a role the stack creates; must start with "
        "`kiam:iam.applicationRoleNamePrefix`. Pods annotate `iam.amazonaws.com/role` with the "
        "role's path below `kiam:iam.applicationRolePath` and this name (`<roleName>`, or "
        "`team-a/<roleName>` for path `/kiam-apps/team-a/`): the stack output `applications` "
        "gives it. Give this or `roleArn`.",
    )
    role_arn: RoleArn | None = Field(
        default=None,
        description="An existing role, by its ARN (path and all), in the cluster's account or "
        "another account of its partition, instead of `roleName`: the stack creates no role and "
        "attaches no policy, and serves this role in its state (`servedBy`): kiam's server may "
        "assume exactly this ARN, the namespace admits it, and Pod Identity or IRSA serve it. A "
        "role in another account is served by Pod Identity through a role the stack creates in "
        "the cluster's account for EKS to chain through (the association's `targetRoleArn`). "
        "The trust policy stays its owner's: the stack output `applications` gives, per state, "
        "the statements it must hold (`trust`), and `python -m tools.kiam_usage` checks them.",
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
        "IRSA serves the role to; required unless `servedBy` is `kiam`. With `roleArn` it may be "
        "given while kiam serves the role, so that the stack output gives the statements the "
        "next state needs before the move.",
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
        if (self.role_name is None) == (self.role_arn is None):
            raise ValueError(
                "give roleName (a role the stack creates) or roleArn (a role that exists "
                "already), not both"
                if self.role_name is not None
                else "needs roleName (a role the stack creates) or roleArn (a role that exists "
                "already)"
            )
        if self.role_arn is not None:
            owners = [
                key
                for key, given in (
                    ("path", self.path is not None),
                    ("managedPolicyArns", bool(self.managed_policy_arns)),
                    ("inlinePolicies", bool(self.inline_policies)),
                )
                if given
            ]
            if owners:
                raise ValueError(
                    f"{' and '.join(owners)} belong to a role the stack creates: role "
                    f"{self.role_arn} (roleArn) exists already, and its owner sets its path and "
                    "policies"
                )
        if self.served_by.successor and self.service_account is None:
            raise ValueError(
                f"servedBy {self.served_by.value} needs serviceAccount: the service account, in "
                f"namespace {self.namespace}, that the role is served to"
            )
        # An existing role may name its service account while kiam serves it: its owner then
        # learns the statements the next state needs before the move (`trust.next`).
        if not self.served_by.successor and self.service_account is not None and self.owned:
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

    @property
    def owned(self) -> bool:
        """The stack creates the role (`roleName`), rather than serving one that exists (`roleArn`)."""
        return self.role_arn is None

    def role_path(self, iam: IamSettings) -> str:
        """The role's IAM path: an existing role's own, or a created one's `path`, or
        `kiam:iam.applicationRolePath`."""
        if self.role_arn is not None:
            return role_arn_parts(self.role_arn).path
        return self.path or iam.application_role_path

    def arn(self, partition: str, account_id: str, iam: IamSettings) -> str:
        """The role's ARN: `roleArn`, or the one IAM gives the role the stack creates in the
        cluster's partition and account."""
        if self.role_arn is not None:
            return self.role_arn
        assert self.role_name is not None  # one of the two, by `_check`
        return role_arn(partition, account_id, self.role_path(iam), self.role_name)

    def chained(self, account_id: str) -> bool:
        """Pod Identity reaches the role through a role the stack creates in the cluster's
        account (`chain_role_needed`)."""
        return self.role_arn is not None and chain_role_needed(
            self.role_arn, account_id, self.served_by
        )

    @property
    def reads_oidc_issuer(self) -> bool:
        """IRSA serves it, or it is an existing role at `kiam` whose next state IRSA may serve:
        the statement its owner must add names the cluster's OIDC issuer."""
        return self.served_by.irsa or (
            self.role_arn is not None
            and self.service_account is not None
            and any(state.irsa for state in self.served_by.forward)
        )

    @property
    def display_name(self) -> str:
        """How messages name the role: its name, or an existing role's ARN."""
        return self.role_arn or self.role_name or ""


def chain_role_needed(role_arn_: str, account_id: str, served_by: ServedBy) -> bool:
    """Whether an existing role is reached through a chain role: it lives in another account than
    the cluster's, and its path is Pod Identity's (`kiam`, `kiam+podIdentity`, `podIdentity`). EKS
    Pod Identity assumes a role of the cluster's account, then the association's `targetRoleArn`
    in any account, which trusts exactly that first role's ARN (contracts/pod_identity.py, "Target
    IAM Roles"). The chain role exists from `kiam` on, so that the owner can trust it before the
    association that uses it exists; its name, hence its ARN, is generated under
    `kiam:iam.kiamRolePath`."""
    return role_arn_parts(role_arn_).account_id != account_id and not served_by.irsa

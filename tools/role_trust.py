"""Whether each role that exists already (`roleArn`) trusts what serves it: the statements the
stack output `applications.<app>.trust` asks of it (`required` now, `next` before each next
state), looked for in the role's trust policy as IAM returns it (GetRole).

IAM is read with the caller's own AWS credentials (boto3's default chain), in the caller's
account only: a role of another account is reported as not checked, with the account to read it
from, rather than looked up by name in the wrong account. A statement is found when one of the
role's statements says the same: `Sid` aside (a name, not a grant), and a single value the same
as a one-element list, in any order (the IAM User Guide's policy grammar,
"IAM JSON policy elements": `Action`, `Resource`, principals and condition values take a string
or an array).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kiam_eks.contracts.iam import role_arn_parts
from kiam_eks.settings.stack import StackSettings


class IamReader(Protocol):
    """What the check reads of IAM."""

    def caller_account(self) -> str:
        """The account the caller's credentials belong to (STS GetCallerIdentity)."""
        ...

    def trust_policy(self, role_name: str) -> dict[str, Any] | None:
        """The role's trust policy (GetRole's AssumeRolePolicyDocument); None if no such role."""
        ...


class Boto3Iam:
    """`IamReader` over boto3's default credential chain (the environment, a profile, SSO...)."""

    def __init__(self) -> None:
        try:
            import boto3  # type: ignore[import-untyped]
        except ImportError as error:  # an optional tool dependency
            raise RuntimeError(
                "--check-trust reads IAM with boto3: pip install 'boto3>=1.34,<2.0'"
            ) from error
        self._iam = boto3.client("iam")
        self._sts = boto3.client("sts")

    def caller_account(self) -> str:
        return str(self._sts.get_caller_identity()["Account"])

    def trust_policy(self, role_name: str) -> dict[str, Any] | None:
        try:
            role = self._iam.get_role(RoleName=role_name)["Role"]
        except self._iam.exceptions.NoSuchEntityException:
            return None
        document = role["AssumeRolePolicyDocument"]  # boto3 decodes and parses it
        return dict(document)


@dataclass(frozen=True)
class TrustCheck:
    """One existing role's trust against what the stack asks of it."""

    application: str
    role_arn: str
    required: list[dict[str, Any]]
    next: dict[str, list[dict[str, Any]]]
    checked: bool
    """Whether IAM was read; `reason` says why not."""
    reason: str | None = None
    missing: list[dict[str, Any]] = field(default_factory=list)
    """Required now and absent: pods created now would not get credentials from it."""
    missing_for_next: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """By next state, what it adds and the role does not hold yet: add it before moving."""

    @property
    def holds_required(self) -> bool:
        return self.checked and not self.missing

    def as_json(self) -> dict[str, Any]:
        return {
            "roleArn": self.role_arn,
            "checked": self.checked,
            "reason": self.reason,
            "required": self.required,
            "next": self.next,
            "missing": self.missing,
            "missingForNext": self.missing_for_next,
        }

    def notes(self) -> list[str]:
        """What the operator (or the role's owner) must do, in words."""
        if not self.checked:
            return [f"trust of {self.role_arn} not checked: {self.reason}"]
        out = []
        if self.missing:
            out.append(
                f"its owner must add {len(self.missing)} statement(s) to the trust of "
                f"{self.role_arn} (trust.missing) before pods are recreated"
            )
        for state, statements in sorted(self.missing_for_next.items()):
            if statements:
                out.append(
                    f"before moving to {state}, its owner must add {len(statements)} "
                    f"statement(s) to the trust of {self.role_arn} (trust.missingForNext)"
                )
        return out


def trust_checks(
    settings: StackSettings, outputs: Mapping[str, Any], iam: IamReader | None
) -> list[TrustCheck]:
    """A check per application that names an existing role, from the stack's outputs (what its
    last update asked of each role) and, where `iam` is given and the role is in its account,
    the role's trust policy."""
    applications = outputs.get("applications") or {}
    caller = iam.caller_account() if iam is not None else None
    checks = []
    for app, settings_of_app in sorted(settings.applications.items()):
        arn = settings_of_app.role_arn
        if arn is None:
            continue
        asked = (applications.get(app) or {}).get("trust")
        asked = asked if isinstance(asked, Mapping) else None
        required = list((asked or {}).get("required") or [])
        following = {str(k): list(v) for k, v in ((asked or {}).get("next") or {}).items()}
        document, reason = _trust_of(arn, asked is not None, iam, caller)
        if document is None:
            checks.append(TrustCheck(app, arn, required, following, False, reason))
            continue
        held = list(_statements(document))
        checks.append(
            TrustCheck(
                app,
                arn,
                required,
                following,
                True,
                missing=[s for s in required if not holds(held, s)],
                missing_for_next={
                    state: [s for s in statements if not holds(held, s)]
                    for state, statements in following.items()
                },
            )
        )
    return checks


def _trust_of(
    arn: str, asked: bool, iam: IamReader | None, caller: str | None
) -> tuple[dict[str, Any] | None, str | None]:
    """The role's trust policy, or None and why it was not read."""
    parts = role_arn_parts(arn)
    if not asked:
        return None, (
            "the stack's outputs have no trust for it yet (run `pulumi up` first, then pass its "
            "outputs)"
        )
    if iam is None:
        return None, "IAM not read"
    if parts.account_id != caller:
        return None, (
            f"the role is in account {parts.account_id} and the caller's credentials in "
            f"{caller}: run again with credentials of {parts.account_id}"
        )
    document = iam.trust_policy(parts.name)
    return (document, None) if document is not None else (None, f"IAM has no role {parts.name}")


def holds(statements: Sequence[Any], wanted: Mapping[str, Any]) -> bool:
    """Whether one of `statements` says exactly what `wanted` says."""
    return any(_normal(s) == _normal(wanted) for s in statements if isinstance(s, Mapping))


def _statements(document: Mapping[str, Any]) -> list[Any]:
    found = document.get("Statement")
    return list(found) if isinstance(found, list) else [found]


def _normal(value: Any) -> Any:
    """A statement with `Sid` dropped and every string-or-list as a sorted tuple."""
    if isinstance(value, Mapping):
        return {k: _normal(v) for k, v in value.items() if k != "Sid"}
    if isinstance(value, list | tuple):
        return tuple(sorted(str(v) for v in value))
    if isinstance(value, str):
        return (value,)
    return value

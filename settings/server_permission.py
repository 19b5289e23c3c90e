"""The kiam-server role's permission: `sts:AssumeRole` on exactly the application roles, written
within IAM's quotas.

What the server may assume is a list of ARN patterns (one per path of the roles the stack
creates) and exact ARNs (each existing role kiam serves). One ARN costs 50 to 80 characters, so
a role's inline policies (10,240 characters together) hold about 140 of them: a long-lived
cluster names many more. The list is therefore spread over documents in a fixed order: the
inline policy first, then customer managed policies of at most 6,144 characters attached to the
server role, at most `kiam:iam.managedPoliciesPerRole` of them (contracts/iam_quotas.py). That
keeps the permission exact (no wildcard the stack file did not ask for) and holds over a
thousand role ARNs within IAM's default quotas; past that the stack is refused before anything
is registered, naming the quota and the ways out.

A resource stays in the document the last update put it in (`previous`, from the stack's
installed facts) and new ones fill the first document with room: so no update moves an ARN from
one document to another, and the permission never narrows while the engine updates the
documents one by one. Only where the old placement cannot take the new list (it would need more
documents than are allowed) is the list laid out afresh.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from kiam_eks.contracts.iam import role_arn
from kiam_eks.contracts.iam_quotas import (
    MANAGED_POLICIES_PER_ROLE_MAX,
    MANAGED_POLICIES_QUOTA_CODE,
    MANAGED_POLICY_CHARACTERS,
    ROLE_INLINE_POLICY_CHARACTERS,
)
from kiam_eks.settings.applications import ApplicationSettings
from kiam_eks.settings.iam import IamSettings
from kiam_eks.settings.policy_document import policy_characters

PolicyDocument = dict[str, Any]
SID = "AssumeApplicationRoles"


def assumable(
    iam: IamSettings, applications: Iterable[ApplicationSettings]
) -> tuple[list[str], list[str]]:
    """What the server's permission is built from (`application_role_patterns`): the path of
    every role the stack creates, whatever serves it (moving an application off kiam never
    changes those patterns, nor widens them back on rollback: a role kiam no longer serves stops
    trusting the server instead), and each existing role's exact ARN while kiam serves it (its
    trust is its owner's, so kiam cannot reach it afterwards whatever that trust still says)."""
    apps = list(applications)
    return (
        [a.role_path(iam) for a in apps if a.owned],
        [a.role_arn for a in apps if a.role_arn is not None and a.served_by.kiam],
    )


def application_role_patterns(
    partition: str,
    account_id: str,
    iam: IamSettings,
    application_paths: Iterable[str] = (),
    existing_role_arns: Iterable[str] = (),
) -> list[str]:
    """The narrowest ARN patterns covering the application roles the server may assume.

    One pattern for the configured path and prefix, and one more for each application path below
    it that the first does not already cover: IAM's `*` matches `/` too, so `role/apps/*` covers
    every sub-path, but `role/apps/app-*` does not cover `role/apps/team/app-x` (issue 11). A
    sub-path pattern keeps the prefix, so it is never broader than the settings allow. Then each
    existing role (`roleArn`) no pattern covers, as its exact ARN: never a pattern, since the
    stack knows nothing else of that path or account.
    """
    if iam.allow_any_role:
        return _with_exact([role_arn(partition, account_id, "/", "*")], existing_role_arns)
    prefix = iam.application_role_name_prefix
    base = role_arn(partition, account_id, iam.application_role_path, prefix)
    # Every pattern is a literal followed by one `*` (paths and prefixes cannot hold `*` or `?`),
    # so one covers another exactly when its literal is a prefix of the other's.
    literals = [base]
    for path in sorted(set(application_paths)):
        literal = role_arn(partition, account_id, path, prefix)
        if not any(literal.startswith(known) for known in literals):
            literals.append(literal)
    return _with_exact([f"{literal}*" for literal in literals], existing_role_arns)


def _with_exact(patterns: list[str], arns: Iterable[str]) -> list[str]:
    """`patterns` (each a literal and one trailing `*`), then each of `arns` none covers."""
    literals = [p.removesuffix("*") for p in patterns]
    exact = {a for a in arns if not any(a.startswith(literal) for literal in literals)}
    return [*patterns, *sorted(exact)]


def assume_role_policy(
    resource: str | Sequence[str], sid: str, actions: Sequence[str] = ("sts:AssumeRole",)
) -> PolicyDocument:
    """Permission to call sts:AssumeRole (and `actions` beside it, such as sts:TagSession for a
    Pod Identity chain) on ARNs or ARN patterns, and nothing else."""
    # One pattern stays a plain string: the document of a stack without sub-paths is unchanged.
    if not isinstance(resource, str):
        resource = resource[0] if len(resource) == 1 else list(resource)
    action: str | list[str] = actions[0] if len(actions) == 1 else list(actions)
    return {
        "Version": "2012-10-17",
        "Statement": [{"Sid": sid, "Effect": "Allow", "Action": action, "Resource": resource}],
    }


class PermissionTooLargeError(ValueError):
    """The permission does not fit the server role's documents within IAM's quotas."""


def capacities(managed_policies_per_role: int) -> list[int]:
    """How many characters each of the server role's documents may hold, in order: its inline
    policy, then one customer managed policy per attachment the account's quota allows (the
    server role has no other managed policy)."""
    return [ROLE_INLINE_POLICY_CHARACTERS] + [MANAGED_POLICY_CHARACTERS] * managed_policies_per_role


def place(
    resources: Sequence[str],
    managed_policies_per_role: int,
    previous: Sequence[Sequence[str]] | None = None,
) -> list[list[str]]:
    """`resources` laid out over the server role's documents (the inline policy first): each
    where `previous` had it, the others in the first document with room. Raises
    `PermissionTooLargeError` where even a fresh layout needs more documents than IAM allows."""
    limits = capacities(managed_policies_per_role)
    if previous:
        kept = _fill(resources, limits, previous)
        if kept is not None:
            return kept
    fresh = _fill(resources, limits, [])
    if fresh is None:
        raise PermissionTooLargeError(_too_large(resources, managed_policies_per_role))
    return fresh


def documents(placement: Sequence[Sequence[str]]) -> list[PolicyDocument]:
    """The policy document of each placed list of resources."""
    return [assume_role_policy(resources, SID) for resources in placement]


def _fill(
    resources: Sequence[str], limits: Sequence[int], previous: Sequence[Sequence[str]]
) -> list[list[str]] | None:
    wanted = dict.fromkeys(resources)
    placed: list[list[str]] = [[r for r in old if r in wanted] for old in previous[: len(limits)]]
    sizes = [_size(p) for p in placed]
    if any(size > limit for size, limit in zip(sizes, limits, strict=False)):
        return None
    seen = {r for p in placed for r in p}
    for resource in wanted:
        if resource in seen:
            continue
        for index, limit in enumerate(limits):
            if index == len(placed):
                placed.append([])
                sizes.append(_size([]))
            grown = _grown(sizes[index], placed[index], resource)
            if grown <= limit:
                placed[index].append(resource)
                sizes[index] = grown
                break
        else:
            return None
    # A document left empty is dropped: those after it move up one place, and the engine
    # updates each in place, so every resource stays allowed throughout.
    return [p for p in placed if p]


def _size(resources: Sequence[str]) -> int:
    return policy_characters(assume_role_policy(resources, SID)) if resources else 0


def _grown(size: int, resources: Sequence[str], resource: str) -> int:
    """The size of the document once `resource` joins `resources` (whose document is `size`)."""
    if not resources:
        return _size([resource])
    if len(resources) == 1:
        return _size([*resources, resource])
    return size + len(resource) + 3  # its quotes and a comma


def _too_large(resources: Sequence[str], managed_policies_per_role: int) -> str:
    exact = sum(1 for r in resources if "*" not in r)
    characters = sum(len(r) + 3 for r in resources)
    room = (
        f"its inline policy ({ROLE_INLINE_POLICY_CHARACTERS:,} characters) and "
        f"kiam:iam.managedPoliciesPerRole ({managed_policies_per_role}) customer managed "
        f"policies of {MANAGED_POLICY_CHARACTERS:,} characters"
    )
    ways = (
        f'raise the account\'s IAM quota "Managed policies per role" (Service Quotas, '
        f"{MANAGED_POLICIES_QUOTA_CODE}) and then kiam:iam.managedPoliciesPerRole (up to "
        f"{MANAGED_POLICIES_PER_ROLE_MAX})"
        if managed_policies_per_role < MANAGED_POLICIES_PER_ROLE_MAX
        else "none is left to raise"
    )
    return (
        f"kiam:applications: the kiam-server role would assume {len(resources)} ARNs and "
        f"patterns ({exact} roles by exact ARN, about {characters:,} characters as IAM counts "
        f"them), more than IAM lets one role hold: {room} (IAM quotas; the update would fail "
        f"half way with LimitExceeded). Ways out: {ways}; or create the applications' roles in "
        "this stack (roleName) under a team path, which one pattern covers; or move applications "
        "off kiam (servedBy, docs/leaving-kiam.md)"
    )

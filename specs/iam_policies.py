"""IAM policy documents and ARNs of the kiam chain, as pure functions of plain values."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

# Both stay importable from here for the settings check and the stand-ins that reach for them.
from kiam_eks.contracts.iam import pod_role_annotation as pod_role_annotation
from kiam_eks.contracts.iam import role_arn as role_arn
from kiam_eks.settings.applications import ApplicationSettings
from kiam_eks.settings.iam import IamSettings

PolicyDocument = dict[str, Any]


def role_base_arn(partition: str, account_id: str, iam: IamSettings) -> str:
    """kiam's `--role-base-arn`: pods may annotate a bare role name under the application path."""
    return role_arn(partition, account_id, iam.application_role_path, "")


def application_path(iam: IamSettings, application: ApplicationSettings) -> str:
    """An application role's IAM path (`ApplicationSettings.role_path`), for the e2e stand-ins."""
    return application.role_path(iam)


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


def ec2_trust_policy() -> PolicyDocument:
    """Trust for an EC2 instance role (the server nodes)."""
    return _trust({"Service": "ec2.amazonaws.com"})


def role_trust_policy(principal_role_arn: str) -> PolicyDocument:
    """Trust for a role that exactly one other role may assume."""
    return _trust({"AWS": principal_role_arn})


def assume_role_policy(
    resource: str | list[str], sid: str, actions: Sequence[str] = ("sts:AssumeRole",)
) -> PolicyDocument:
    """Permission to call sts:AssumeRole (and `actions` beside it, such as sts:TagSession for a
    Pod Identity chain) on ARNs or ARN patterns, and nothing else."""
    # One pattern stays a plain string: the document of a stack without sub-paths is unchanged.
    if isinstance(resource, list) and len(resource) == 1:
        resource = resource[0]
    action: str | list[str] = actions[0] if len(actions) == 1 else list(actions)
    return {
        "Version": "2012-10-17",
        "Statement": [{"Sid": sid, "Effect": "Allow", "Action": action, "Resource": resource}],
    }


def _trust(principal: dict[str, str]) -> PolicyDocument:
    return {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": principal, "Action": "sts:AssumeRole"}],
    }

"""IAM policy documents and ARNs of the kiam chain, as pure functions of plain values."""

from __future__ import annotations

from typing import Any

# Both stay importable from here for the settings check and the stand-ins that reach for them.
from kiam_eks.contracts.iam import pod_role_annotation as pod_role_annotation
from kiam_eks.contracts.iam import role_arn as role_arn
from kiam_eks.settings.applications import ApplicationSettings
from kiam_eks.settings.iam import IamSettings

# The server's permission is built where the settings check it against IAM's quotas.
from kiam_eks.settings.server_permission import (
    application_role_patterns as application_role_patterns,
)
from kiam_eks.settings.server_permission import assumable as assumable
from kiam_eks.settings.server_permission import assume_role_policy as assume_role_policy

PolicyDocument = dict[str, Any]


def role_base_arn(partition: str, account_id: str, iam: IamSettings) -> str:
    """kiam's `--role-base-arn`: pods may annotate a bare role name under the application path."""
    return role_arn(partition, account_id, iam.application_role_path, "")


def application_path(iam: IamSettings, application: ApplicationSettings) -> str:
    """An application role's IAM path (`ApplicationSettings.role_path`), for the e2e stand-ins."""
    return application.role_path(iam)


def ec2_trust_policy() -> PolicyDocument:
    """Trust for an EC2 instance role (the server nodes)."""
    return _trust({"Service": "ec2.amazonaws.com"})


def role_trust_policy(principal_role_arn: str) -> PolicyDocument:
    """Trust for a role that exactly one other role may assume."""
    return _trust({"AWS": principal_role_arn})


def _trust(principal: dict[str, str]) -> PolicyDocument:
    return {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": principal, "Action": "sts:AssumeRole"}],
    }

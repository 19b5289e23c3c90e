"""IAM stand-ins: the ARNs the IAM components would export, computed from the settings."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pulumi

from components import policies
from settings.applications import ApplicationSettings
from settings.stack import StackSettings


@dataclass(frozen=True)
class ComputedRoles:
    """`KiamRoles` without AWS: the roles' ARNs as IAM would give them (their names are the
    Pulumi names the real roles get, without the random suffix)."""

    node_role_arn: str
    server_role_arn: str
    role_base_arn: str
    application_role_pattern: str
    node_role_policies: Sequence[pulumi.Resource] = field(default_factory=list)

    @classmethod
    def of(cls, name: str, settings: StackSettings) -> ComputedRoles:
        cluster, iam = settings.cluster, settings.iam
        role = f"arn:{cluster.partition}:iam::{cluster.account_id}:role{iam.kiam_role_path}"
        return cls(
            node_role_arn=f"{role}{name}-server-node",
            server_role_arn=f"{role}{name}-server",
            role_base_arn=policies.role_base_arn(cluster.partition, cluster.account_id, iam),
            application_role_pattern=policies.application_role_pattern(
                cluster.partition, cluster.account_id, iam
            ),
        )


@dataclass(frozen=True)
class ComputedApplicationRole:
    """`ApplicationAccess` without AWS: the role's ARN from its path and fixed name."""

    role_arn: str
    pod_annotation: dict[str, str]
    service_account_annotation: dict[str, str]

    @classmethod
    def of(cls, app: ApplicationSettings, settings: StackSettings) -> ComputedApplicationRole:
        cluster = settings.cluster
        path = app.path or settings.iam.application_role_path
        arn = f"arn:{cluster.partition}:iam::{cluster.account_id}:role{path}{app.role_name}"
        return cls(
            role_arn=arn,
            pod_annotation={"iam.amazonaws.com/role": app.role_name},
            service_account_annotation={"eks.amazonaws.com/role-arn": arn},
        )

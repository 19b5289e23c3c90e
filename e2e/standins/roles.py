"""IAM stand-ins: the ARNs and annotations the IAM components would export, computed from the
settings by the same pure functions the components use.

They create no IAM resource, so the IAM guarantees have no role of the stack to judge; they still
follow each application from its settings (its role's ARN as IAM writes it) to the server's flags
and the namespace annotation (`application-reachable`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pulumi

from kiam_eks.contracts import iam as aws_iam
from kiam_eks.contracts import names
from kiam_eks.contracts.labels import IRSA_ANNOTATION, ROLE_ANNOTATION
from kiam_eks.settings.applications import ApplicationSettings
from kiam_eks.settings.stack import StackSettings
from kiam_eks.specs import iam_policies


@dataclass(frozen=True)
class ComputedRoles:
    """`KiamRoles` without AWS: the roles' ARNs as IAM would give them (their names are the
    Pulumi names the real roles get, without the random suffix)."""

    node_role_arn: str
    server_role_arn: str
    role_base_arn: str
    application_role_patterns: list[str]
    node_role_policies: Sequence[pulumi.Resource] = field(default_factory=list)

    @classmethod
    def of(cls, name: str, settings: StackSettings) -> ComputedRoles:
        cluster, iam = settings.cluster, settings.iam
        partition, account = cluster.partition, cluster.account_id
        paths, existing = iam_policies.assumable(iam, settings.applications.values())
        return cls(
            node_role_arn=aws_iam.role_arn(
                partition, account, iam.kiam_role_path, names.node_role_name(name)
            ),
            server_role_arn=aws_iam.role_arn(
                partition, account, iam.kiam_role_path, names.server_role_name(name)
            ),
            role_base_arn=iam_policies.role_base_arn(partition, account, iam),
            application_role_patterns=iam_policies.application_role_patterns(
                partition, account, iam, paths, existing
            ),
        )


@dataclass(frozen=True)
class ComputedApplicationRole:
    """`ApplicationAccess` without AWS: the role's ARN from its path and fixed name."""

    role_arn: str
    pod_annotation: dict[str, str]
    service_account_annotation: dict[str, str]
    owner_trust: None = None
    """The stack writes the trust of the roles it creates; roles that exist already (`roleArn`)
    are not modelled here yet."""

    @classmethod
    def of(
        cls, app: ApplicationSettings, settings: StackSettings, role_base_arn: str
    ) -> ComputedApplicationRole:
        if not app.owned:
            raise ValueError(
                f"the e2e stand-ins model only roles the stack creates, not roleArn {app.role_arn}"
            )
        cluster = settings.cluster
        arn = app.arn(cluster.partition, cluster.account_id, settings.iam)
        return cls(
            role_arn=arn,
            pod_annotation={ROLE_ANNOTATION: iam_policies.pod_role_annotation(arn, role_base_arn)},
            service_account_annotation={IRSA_ANNOTATION: arn},
        )

"""IAM stand-ins: the ARNs and annotations the IAM components would export, computed from the
settings by the same pure functions the components use.

They create no IAM resource, so the IAM guarantees have no role of the stack to judge; they still
follow each application from its settings (its role's ARN as IAM writes it) to the server's flags
and the namespace annotation (`application-reachable`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi

from kiam_eks.components.cloud import KiamRoles
from kiam_eks.contracts import iam as aws_iam
from kiam_eks.contracts import names
from kiam_eks.contracts.labels import IRSA_ANNOTATION, ROLE_ANNOTATION
from kiam_eks.settings.applications import ApplicationSettings
from kiam_eks.settings.stack import StackSettings
from kiam_eks.specs import iam_policies
from kiam_eks.specs.trust_policies import owner_trust


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
class ComputedExistingRole:
    """`ApplicationAccess` of a role that exists already (`roleArn`), without AWS: its ARN as
    given, and, for a role of another account on the Pod Identity path, the chain role's ARN as
    IAM would write it from its name prefix (without the unique suffix IAM appends)."""

    role_arn: str
    pod_annotation: dict[str, str]
    service_account_annotation: dict[str, str]
    association_role_arn: str
    target_role_arn: str | None
    owner_trust: dict[str, Any]

    @classmethod
    def of(
        cls,
        app: ApplicationSettings,
        settings: StackSettings,
        roles: KiamRoles,
        oidc_issuer: str | None = None,
    ) -> ComputedExistingRole:
        """`roles`: the computed ones, or a retired stack's (`RetiredRoles`: no server role)."""
        assert app.role_arn is not None
        server_role_arn = roles.server_role_arn
        assert isinstance(server_role_arn, str), server_role_arn  # computed, never an Output
        cluster = settings.cluster
        chained = aws_iam.role_arn_parts(app.role_arn).account_id != cluster.account_id
        chain = (
            aws_iam.role_arn(
                cluster.partition,
                cluster.account_id,
                settings.iam.kiam_role_path,
                names.chain_role_name_prefix(app.namespace),
            )
            if chained and not app.served_by.irsa
            else None
        )
        return cls(
            role_arn=app.role_arn,
            pod_annotation={
                ROLE_ANNOTATION: iam_policies.pod_role_annotation(app.role_arn, roles.role_base_arn)
            },
            service_account_annotation={IRSA_ANNOTATION: app.role_arn},
            association_role_arn=chain or app.role_arn,
            target_role_arn=app.role_arn if chain else None,
            owner_trust=owner_trust(
                app,
                server_role_arn=server_role_arn,
                oidc_issuer=oidc_issuer,
                chain_role_arn=chain,
                partition=cluster.partition,
                account_id=cluster.account_id,
                cluster_name=cluster.name,
            ),
        )


@dataclass(frozen=True)
class ComputedApplicationRole:
    """`ApplicationAccess` without AWS: the role's ARN from its path and fixed name."""

    role_arn: str
    pod_annotation: dict[str, str]
    service_account_annotation: dict[str, str]
    owner_trust: None = None
    """The stack writes the trust of the roles it creates (`ComputedExistingRole` for the others)."""
    target_role_arn: None = None
    """An association names the role itself."""

    @property
    def association_role_arn(self) -> str:
        return self.role_arn

    @classmethod
    def of(
        cls, app: ApplicationSettings, settings: StackSettings, role_base_arn: str
    ) -> ComputedApplicationRole:
        cluster = settings.cluster
        arn = app.arn(cluster.partition, cluster.account_id, settings.iam)
        return cls(
            role_arn=arn,
            pod_annotation={ROLE_ANNOTATION: iam_policies.pod_role_annotation(arn, role_base_arn)},
            service_account_annotation={IRSA_ANNOTATION: arn},
        )

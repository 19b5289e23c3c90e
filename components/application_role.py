"""An application role pods assume through kiam, optionally also through IRSA for one service account."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws

from contracts.iam import role_arn
from contracts.labels import IRSA_ANNOTATION, ROLE_ANNOTATION
from settings.applications import ApplicationSettings
from specs import iam_policies


@dataclass(frozen=True, kw_only=True)
class ApplicationRoleArgs:
    """Inputs of `ApplicationRole`."""

    settings: ApplicationSettings
    """The application's role settings."""
    path: str
    """IAM path of the role (inside the pattern the kiam server may assume)."""
    server_role_arn: pulumi.Input[str]
    """The kiam-server role, the only kiam principal the role trusts."""
    role_base_arn: str
    """kiam's `--role-base-arn`: the pod annotation is the role's ARN relative to it."""
    oidc_issuer: pulumi.Input[str] | None = None
    """The cluster's OIDC issuer URL, when the application is also trusted through IRSA."""
    account_id: str
    """The stack's account: the role's ARN, hence its pod annotation, names it."""
    partition: str = "aws"


class ApplicationRole(pulumi.ComponentResource):
    """The role, its managed and inline policies, and the annotations that select it."""

    role: aws.iam.Role
    """The application role."""
    role_arn: pulumi.Output[str]
    """Its ARN (`ApplicationAccess`)."""
    pod_annotation: dict[str, str]
    """Pod annotation that makes kiam hand out this role: its ARN relative to `--role-base-arn`."""
    service_account_annotation: pulumi.Output[dict[str, str]]
    """Service-account annotation that selects the role through IRSA (once trusted for it)."""

    def __init__(
        self, name: str, args: ApplicationRoleArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("kiam:index:ApplicationRole", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        s = args.settings
        irsa = s.served_by.irsa
        # Known before the role exists: IAM's ARN format is fixed, and the AWS provider is pinned
        # to this account. What kiam resolves the annotation to is checked against the role's
        # real ARN by the `application-reachable` guarantee.
        annotation = iam_policies.pod_role_annotation(
            role_arn(args.partition, args.account_id, args.path, s.role_name),
            args.role_base_arn,
        )
        trust = pulumi.Output.all(args.server_role_arn, args.oidc_issuer if irsa else None).apply(
            lambda parts: json.dumps(
                application_trust_policy(
                    parts[0],
                    oidc_issuer=parts[1],
                    partition=args.partition,
                    account_id=args.account_id,
                    namespace=s.namespace,
                    service_account=s.service_account if irsa else None,
                )
            )
        )
        self.role = aws.iam.Role(
            name,
            # A fixed name: it is the interface pods annotate.
            name=s.role_name,
            path=args.path,
            description=f"kiam application role for namespace {s.namespace}",
            assume_role_policy=trust,
            max_session_duration=3600,
            opts=child,
        )
        for arn in s.managed_policy_arns:
            aws.iam.RolePolicyAttachment(
                f"{name}-{arn.rsplit('/', 1)[-1]}", role=self.role.name, policy_arn=arn, opts=child
            )
        for policy_name, document in s.inline_policies.items():
            aws.iam.RolePolicy(
                f"{name}-{policy_name}",
                name=policy_name,
                role=self.role.name,
                policy=json.dumps(document),
                opts=child,
            )
        self.role_arn = self.role.arn
        self.pod_annotation = {ROLE_ANNOTATION: annotation}
        self.service_account_annotation = self.role.arn.apply(lambda arn: {IRSA_ANNOTATION: arn})
        self.register_outputs(
            {
                "role_arn": self.role.arn,
                "pod_annotation": self.pod_annotation,
                "service_account_annotation": self.service_account_annotation,
            }
        )


def application_trust_policy(
    server_role_arn: str,
    *,
    oidc_issuer: str | None,
    partition: str,
    account_id: str,
    namespace: str,
    service_account: str | None,
) -> iam_policies.PolicyDocument:
    """Trust for the kiam-server role, plus IRSA for one service account when asked."""
    statements: list[dict[str, Any]] = [
        {"Effect": "Allow", "Principal": {"AWS": server_role_arn}, "Action": "sts:AssumeRole"}
    ]
    if service_account is not None and oidc_issuer:
        provider = oidc_issuer.removeprefix("https://")
        statements.append(
            {
                "Effect": "Allow",
                "Principal": {
                    "Federated": f"arn:{partition}:iam::{account_id}:oidc-provider/{provider}"
                },
                "Action": "sts:AssumeRoleWithWebIdentity",
                "Condition": {
                    "StringEquals": {
                        f"{provider}:sub": f"system:serviceaccount:{namespace}:{service_account}",
                        f"{provider}:aud": "sts.amazonaws.com",
                    }
                },
            }
        )
    return {"Version": "2012-10-17", "Statement": statements}

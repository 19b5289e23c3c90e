"""An application role, trusted by whatever serves it in its state (`servedBy`): the kiam-server
role, EKS Pod Identity for one service account, IRSA for one service account, or two of them while
the application moves."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from kiam_eks.contracts import tokens
from kiam_eks.contracts.iam import role_arn
from kiam_eks.contracts.labels import IRSA_ANNOTATION, ROLE_ANNOTATION
from kiam_eks.settings.applications import ApplicationSettings
from kiam_eks.specs import iam_policies
from kiam_eks.specs.trust_policies import application_trust_policy


@dataclass(frozen=True, kw_only=True)
class ServedRoleArgs:
    """What serving an application's role needs, whoever owns the role (`ApplicationRoleArgs`,
    and `ExistingApplicationRoleArgs` for a role that exists already)."""

    settings: ApplicationSettings
    """The application's role settings; `served_by` says whom the role trusts."""
    server_role_arn: pulumi.Input[str]
    """The kiam-server role, the only kiam principal the role trusts (while kiam serves it)."""
    role_base_arn: str
    """kiam's `--role-base-arn`: the pod annotation is the role's ARN relative to it."""
    oidc_issuer: pulumi.Input[str] | None = None
    """The cluster's OIDC issuer URL, when the application is served through IRSA."""
    cluster_name: pulumi.Input[str]
    """The EKS cluster, to which a Pod Identity trust is narrowed (another resource's output, or
    `kiam:cluster.name`)."""
    account_id: str
    """The stack's account: the role's ARN, hence its pod annotation, names it."""
    partition: str = "aws"


@dataclass(frozen=True, kw_only=True)
class ApplicationRoleArgs(ServedRoleArgs):
    """Inputs of `ApplicationRole`."""

    path: str
    """IAM path of the role (inside the pattern the kiam server may assume)."""


class ApplicationRole(pulumi.ComponentResource):
    """The role, its managed and inline policies, and the annotations that select it.

    Its attributes are declared in `__init__`, not on the class, as `ExistingApplicationRole`'s
    are: the SDK resolves a component class's annotations at every registration of it."""

    def __init__(
        self, name: str, args: ApplicationRoleArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(tokens.APPLICATION_ROLE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        s = args.settings
        assert s.role_name is not None, "the stack creates the role roleName names"
        served_by = s.served_by
        # Known before the role exists: IAM's ARN format is fixed, and the AWS provider is pinned
        # to this account. What kiam resolves the annotation to is checked against the role's
        # real ARN by the `application-reachable` guarantee.
        annotation = iam_policies.pod_role_annotation(
            role_arn(args.partition, args.account_id, args.path, s.role_name),
            args.role_base_arn,
        )
        # Only what the state trusts is an input: a role kiam no longer serves does not wait for
        # (or name) the kiam-server role, and one IRSA does not serve never looks the issuer up.
        trust = pulumi.Output.all(
            args.server_role_arn if served_by.kiam else None,
            args.oidc_issuer if served_by.irsa else None,
            args.cluster_name,
        ).apply(
            lambda parts: json.dumps(
                application_trust_policy(
                    served_by,
                    server_role_arn=parts[0],
                    oidc_issuer=parts[1],
                    partition=args.partition,
                    account_id=args.account_id,
                    cluster_name=parts[2],
                    namespace=s.namespace,
                    service_account=s.service_account,
                )
            )
        )
        self.owner_trust: None = None
        """The stack writes this role's trust itself (`ApplicationAccess`)."""
        self.target_role_arn: None = None
        """An association names the role itself (`ApplicationAccess`)."""
        self.role: aws.iam.Role = aws.iam.Role(
            name,
            # A fixed name: it is the interface pods annotate.
            name=s.role_name,
            path=args.path,
            description=f"kiam application role for namespace {s.namespace}",
            assume_role_policy=trust,
            max_session_duration=3600,
            opts=child,
        )
        """The application role."""
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
        self.role_arn: pulumi.Output[str] = self.role.arn
        """Its ARN (`ApplicationAccess`)."""
        self.association_role_arn: pulumi.Output[str] = self.role.arn
        """Its ARN, which an association names (`ApplicationAccess`)."""
        self.pod_annotation: dict[str, str] = {ROLE_ANNOTATION: annotation}
        """Pod annotation that makes kiam hand out this role: its ARN relative to
        `--role-base-arn`."""
        self.service_account_annotation: pulumi.Output[dict[str, str]] = self.role.arn.apply(
            lambda arn: {IRSA_ANNOTATION: arn}
        )
        """Service-account annotation that selects the role through IRSA (once trusted for it)."""
        self.register_outputs(
            {
                "role_arn": self.role.arn,
                "pod_annotation": self.pod_annotation,
                "service_account_annotation": self.service_account_annotation,
            }
        )

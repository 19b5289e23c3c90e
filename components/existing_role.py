"""An application role that exists already (`roleArn`), in the cluster's account or another: the
stack owns only how it is served. Its trust policy stays its owner's, so the component states the
statements that policy must hold, now and for the next state; a role in another account reaches
Pod Identity through a role of the cluster's account that EKS chains through (`targetRoleArn`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws

from kiam_eks.components.application_role import ServedRoleArgs
from kiam_eks.components.known import when_known
from kiam_eks.contracts import names, pod_identity, tokens
from kiam_eks.contracts.labels import IRSA_ANNOTATION, ROLE_ANNOTATION
from kiam_eks.specs import iam_policies
from kiam_eks.specs.trust_policies import owner_trust, pod_identity_statement


@dataclass(frozen=True, kw_only=True)
class ExistingApplicationRoleArgs(ServedRoleArgs):
    """Inputs of `ExistingApplicationRole`; `settings.role_arn` names the role."""

    chain_role_path: str
    """IAM path of the role EKS chains through for a role in another account
    (`kiam:iam.kiamRolePath`: no application pattern of the server covers it)."""


class ExistingApplicationRole(pulumi.ComponentResource):
    """What serves an existing role: nothing of IAM in the cluster's account, or, for a role in
    another account on the Pod Identity path, the role EKS assumes first and its permission to
    assume exactly the target.

    Its attributes are declared in `__init__`, not on the class: the SDK resolves a component
    class's annotations into types at every registration of it (`pulumi._types.resource_types`,
    uncached), half a millisecond each for this class, and a stack registers one of these for
    every existing role it serves (issue 39: 800 of 1,000 applications)."""

    def __init__(
        self,
        name: str,
        args: ExistingApplicationRoleArgs,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(tokens.EXISTING_APPLICATION_ROLE, name, None, opts)
        s = args.settings
        assert s.role_arn is not None, "an existing role is named by roleArn"
        self.role_arn: str = s.role_arn
        """The role's ARN, as given (`ApplicationAccess`)."""
        self.pod_annotation: dict[str, str] = {
            ROLE_ANNOTATION: iam_policies.pod_role_annotation(s.role_arn, args.role_base_arn)
        }
        """What a pod annotates so that kiam resolves it to `role_arn`."""
        self.service_account_annotation: dict[str, str] = {IRSA_ANNOTATION: s.role_arn}
        """IRSA's service-account annotation: the role's ARN."""
        self.chain_role: aws.iam.Role | None = (
            self._chain_role(name, args) if s.chained(args.account_id) else None
        )
        """The cluster account's role EKS Pod Identity assumes before the target (role
        chaining); None for a role in the cluster's account, or on the IRSA path."""
        self.association_role_arn: pulumi.Input[str] = (
            self.chain_role.arn if self.chain_role is not None else s.role_arn
        )
        """The association's `roleArn`: the chain role, or the role itself in the cluster's
        account."""
        self.target_role_arn: str | None = s.role_arn if self.chain_role is not None else None
        """The association's `targetRoleArn`: the role, where EKS chains to it; else None."""
        self.owner_trust: pulumi.Output[dict[str, Any]] = pulumi.Output.all(
            args.server_role_arn,
            args.oidc_issuer,
            self.chain_role.arn if self.chain_role is not None else None,
            args.cluster_name,
        ).apply(
            lambda known: owner_trust(
                s,
                server_role_arn=known[0],
                oidc_issuer=known[1],
                chain_role_arn=known[2],
                partition=args.partition,
                account_id=args.account_id,
                cluster_name=known[3],
            )
        )
        """The trust statements the role's owner must keep (`required`) and add before each
        next state (`next`, by state): the stack output `applications.<app>.trust`."""
        self.register_outputs(
            {
                "role_arn": self.role_arn,
                "pod_annotation": self.pod_annotation,
                "owner_trust": self.owner_trust,
            }
        )

    def _chain_role(self, name: str, args: ExistingApplicationRoleArgs) -> aws.iam.Role:
        """The role EKS Pod Identity assumes first: trusted by Pod Identity for this cluster,
        namespace (and service account, once given), allowed only to assume and tag its target."""
        s = args.settings
        assert s.role_arn is not None
        child = pulumi.ResourceOptions(parent=self)
        role = aws.iam.Role(
            f"{name}-chain",
            # Generated, so two clusters of one account never collide; nothing refers to it by
            # name (the association takes its ARN).
            name_prefix=names.chain_role_name_prefix(s.namespace),
            path=args.chain_role_path,
            description=when_known(
                args.cluster_name,
                lambda cluster_name: (
                    f"EKS Pod Identity chain to {s.role_arn} for namespace "
                    f"{s.namespace} of EKS cluster {cluster_name}"
                ),
            ),
            assume_role_policy=when_known(
                args.cluster_name,
                lambda cluster_name: json.dumps(
                    {
                        "Version": "2012-10-17",
                        "Statement": [
                            pod_identity_statement(
                                account_id=args.account_id,
                                cluster_name=cluster_name,
                                namespace=s.namespace,
                                service_account=s.service_account,
                            )
                        ],
                    }
                ),
            ),
            # EKS caches chained credentials for 59 minutes (pod-id-assign-target-role); a chain
            # is capped at an hour whatever a role allows.
            max_session_duration=3600,
            opts=child,
        )
        aws.iam.RolePolicy(
            f"{name}-chain-assume-target",
            role=role.name,
            policy=json.dumps(
                iam_policies.assume_role_policy(
                    s.role_arn, "AssumeTargetRole", pod_identity.CHAIN_ROLE_ACTIONS
                )
            ),
            opts=child,
        )
        return role

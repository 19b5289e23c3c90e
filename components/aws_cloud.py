"""The AWS cloud side of kiam: IAM roles, an EKS managed node group, pulumi-tls certificates, and
EKS Pod Identity's associations and agent add-on. `Kiam` uses it unless given another cloud side
(the e2e stand-ins); it alone brings in the AWS and TLS SDKs."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import pulumi
import pulumi_aws as aws

from kiam_eks.components.application_role import (
    ApplicationRole,
    ApplicationRoleArgs,
    ServedRoleArgs,
)
from kiam_eks.components.cloud import ApplicationAccess, KiamRoles
from kiam_eks.components.existing_role import ExistingApplicationRole, ExistingApplicationRoleArgs
from kiam_eks.components.iam import Iam, IamArgs
from kiam_eks.components.node_group import NodeGroupArgs, ServerNodeGroup
from kiam_eks.components.pod_identity import agent_addon, association
from kiam_eks.components.tls_authority import PulumiTlsAuthority
from kiam_eks.settings.applications import ApplicationSettings
from kiam_eks.settings.stack import StackSettings
from kiam_eks.specs import iam_policies


class AwsCloud:
    """`CloudSide` for a real EKS cluster; every resource is a child of the component asking."""

    def __init__(
        self,
        settings: StackSettings,
        oidc_issuer: pulumi.Input[str] | None,
        cluster_name: pulumi.Input[str] | None = None,
        *,
        subnet_ids: pulumi.Input[Sequence[pulumi.Input[str]]] | None = None,
    ) -> None:
        self.settings = settings
        self.oidc_issuer = oidc_issuer
        """The cluster's OIDC issuer URL; needed only by applications also trusted through IRSA."""
        self.cluster_name: pulumi.Input[str] = (
            settings.cluster.name if cluster_name is None else cluster_name
        )
        """What every resource naming the cluster names: `kiam:cluster.name`, or the output of
        the cluster resource a program passed to `Kiam` (its settings then hold a stand-in
        name, `public_args.CLUSTER_NAME_FROM_OUTPUT`, which nothing here reads)."""
        self.subnet_ids: pulumi.Input[Sequence[pulumi.Input[str]]] = (
            [subnet.id for subnet in settings.node_group.subnets]
            if subnet_ids is None
            else subnet_ids
        )
        """The server nodes' subnets: `kiam:nodeGroup.subnets`, or the outputs a program passed
        to `Kiam` (`public_args.SUBNETS_FROM_OUTPUTS` in the settings then, read by nothing)."""
        self.certificate_authority = PulumiTlsAuthority()

    def roles(
        self,
        name: str,
        opts: pulumi.ResourceOptions,
        previous_server_permission: Sequence[Sequence[str]] | None = None,
    ) -> Iam:
        s = self.settings
        paths, existing = iam_policies.assumable(s.iam, s.applications.values())
        return Iam(
            name,
            IamArgs(
                cluster=s.cluster,
                cluster_name=self.cluster_name,
                iam=s.iam,
                application_paths=paths,
                existing_role_arns=existing,
                previous_server_permission=previous_server_permission,
            ),
            opts,
        )

    def server_nodes(
        self, name: str, roles: KiamRoles, opts: pulumi.ResourceOptions
    ) -> ServerNodeGroup:
        s = self.settings
        return ServerNodeGroup(
            name,
            NodeGroupArgs(
                cluster_name=self.cluster_name,
                kubernetes_version=s.cluster.kubernetes_version,
                subnet_ids=self.subnet_ids,
                settings=s.node_group,
                node_role_arn=roles.node_role_arn,
                node_role_policies=roles.node_role_policies,
            ),
            opts,
        )

    def application_role(
        self,
        name: str,
        settings: ApplicationSettings,
        roles: KiamRoles,
        opts: pulumi.ResourceOptions,
    ) -> ApplicationRole | ExistingApplicationRole:
        s = self.settings
        served = ServedRoleArgs(
            settings=settings,
            server_role_arn=roles.server_role_arn,
            role_base_arn=roles.role_base_arn,
            oidc_issuer=self.oidc_issuer,
            cluster_name=self.cluster_name,
            partition=s.cluster.partition,
            account_id=s.cluster.account_id,
        )
        common = {f.name: getattr(served, f.name) for f in dataclasses.fields(served)}
        if not settings.owned:
            return ExistingApplicationRole(
                name,
                ExistingApplicationRoleArgs(**common, chain_role_path=s.iam.kiam_role_path),
                opts,
            )
        return ApplicationRole(
            name, ApplicationRoleArgs(**common, path=settings.role_path(s.iam)), opts
        )

    def pod_identity_association(
        self,
        name: str,
        settings: ApplicationSettings,
        access: ApplicationAccess,
        opts: pulumi.ResourceOptions,
    ) -> aws.eks.PodIdentityAssociation:
        # A child of the application's role component (application_role), as it has always been:
        # its URN on every running install.
        assert isinstance(access, ApplicationRole | ExistingApplicationRole), access
        return association(
            name,
            cluster_name=self.cluster_name,
            settings=settings,
            role_arn=access.association_role_arn,
            target_role_arn=access.target_role_arn,
            opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(parent=access)),
        )

    def pod_identity_agent(self, name: str, opts: pulumi.ResourceOptions) -> aws.eks.Addon | None:
        s = self.settings
        if not s.pod_identity_agent.manage_addon:
            # Checked when the providers were created (program/providers.py), before any other
            # resource was registered: a missing add-on has stopped the program by now.
            return None
        return agent_addon(
            name, cluster_name=self.cluster_name, settings=s.pod_identity_agent, opts=opts
        )

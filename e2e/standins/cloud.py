"""The cloud side of the real-engine tests: kwok nodes, computed IAM ARNs, a local CA."""

from __future__ import annotations

from pathlib import Path

import pulumi

from components.cloud import KiamRoles
from e2e.standins.certificates import LocalAuthority
from e2e.standins.nodes import KwokNodeGroup, KwokNodeGroupArgs
from e2e.standins.roles import ComputedApplicationRole, ComputedRoles
from settings.applications import ApplicationSettings
from settings.stack import StackSettings


class KwokCloud:
    """`CloudSide` on a kwok-backed control plane; only the node group creates resources."""

    def __init__(self, settings: StackSettings, state_dir: Path) -> None:
        self.settings = settings
        self.certificate_authority = LocalAuthority(state_dir / "certificates")

    def roles(self, name: str, opts: pulumi.ResourceOptions) -> ComputedRoles:
        return ComputedRoles.of(name, self.settings)

    def server_nodes(
        self, name: str, roles: KiamRoles, opts: pulumi.ResourceOptions
    ) -> KwokNodeGroup:
        s = self.settings
        return KwokNodeGroup(
            name,
            KwokNodeGroupArgs(
                settings=s.node_group,
                region=s.cluster.region,
                kubernetes_version=s.cluster.kubernetes_version,
            ),
            opts,
        )

    def application_role(
        self,
        name: str,
        settings: ApplicationSettings,
        roles: KiamRoles,
        opts: pulumi.ResourceOptions,
    ) -> ComputedApplicationRole:
        return ComputedApplicationRole.of(settings, self.settings, roles.role_base_arn)

    # Placeholders that keep `KwokCloud` a `CloudSide` (components/cloud.py); the stand-ins of the
    # association and the add-on replace them (e2e/standins, their own helper).
    def pod_identity_association(
        self,
        name: str,
        settings: ApplicationSettings,
        role_arn: pulumi.Input[str],
        opts: pulumi.ResourceOptions,
    ) -> pulumi.Resource:
        return pulumi.ComponentResource("kiam:e2e:PodIdentityAssociation", name, None, opts)

    def pod_identity_agent(self, name: str, opts: pulumi.ResourceOptions) -> pulumi.Resource | None:
        return None

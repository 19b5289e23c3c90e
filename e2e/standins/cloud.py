"""The cloud side of the real-engine tests: kwok nodes, computed IAM ARNs, a local CA, and EKS Pod
Identity's association and agent add-on as objects of the control plane."""

from __future__ import annotations

import base64
import functools
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace

import pulumi
import yaml

from e2e.standins import pod_identity
from e2e.standins.certificates import LocalAuthority
from e2e.standins.nodes import KwokNodeGroup, KwokNodeGroupArgs
from e2e.standins.roles import ComputedApplicationRole, ComputedExistingRole, ComputedRoles
from kiam_eks.components.cloud import ApplicationAccess, KiamRoles
from kiam_eks.contracts.kubeconfig import current_context
from kiam_eks.contracts.pod_identity import AGENT_ADDON
from kiam_eks.program.kube_api import KubeApi
from kiam_eks.settings.applications import ApplicationSettings
from kiam_eks.settings.stack import StackSettings

# The API server's OpenID Provider Configuration (Kubernetes documentation, "Managing Service
# Accounts", "Service account issuer discovery").
OIDC_DISCOVERY = "/.well-known/openid-configuration"


class KwokCloud:
    """`CloudSide` on a kwok-backed control plane: the node group, and Pod Identity's association
    and add-on, create resources; `cluster` is the control plane they run on (None under the mock
    engine, which has no cluster to check the add-on in)."""

    def __init__(
        self, settings: StackSettings, state_dir: Path, cluster: KubeApi | None = None
    ) -> None:
        self.settings = settings
        self.certificate_authority = LocalAuthority(state_dir / "certificates")
        self.cluster = cluster

    def roles(
        self,
        name: str,
        opts: pulumi.ResourceOptions,
        previous_server_permission: Sequence[Sequence[str]] | None = None,
    ) -> ComputedRoles:
        # No IAM documents here: the roles' ARNs are computed (ComputedRoles).
        return ComputedRoles.of(name, self.settings)

    @functools.cached_property
    def oidc_issuer(self) -> str | None:
        """The cluster's OIDC issuer, where AWS reads EKS's (`identity.oidc.issuer`,
        program/providers.py): EKS's issuer is the one of the API server's service account
        tokens, which the API server publishes in its discovery document (Kubernetes, "Service
        account issuer discovery": `/.well-known/openid-configuration`, its `issuer`). None under
        the mock engine, which has no cluster."""
        if self.cluster is None:
            return None
        return str(self.cluster.get(OIDC_DISCOVERY)["issuer"])

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
    ) -> ComputedApplicationRole | ComputedExistingRole:
        if not settings.owned:
            issuer = self.oidc_issuer if settings.reads_oidc_issuer else None
            return ComputedExistingRole.of(settings, self.settings, roles, issuer)
        return ComputedApplicationRole.of(settings, self.settings, roles.role_base_arn)

    def pod_identity_association(
        self,
        name: str,
        settings: ApplicationSettings,
        access: ApplicationAccess,
        opts: pulumi.ResourceOptions,
    ) -> pulumi.Resource:
        # The computed role is no resource: the association is a child of the install.
        if settings.service_account is None:  # the settings refuse Pod Identity without one
            raise ValueError(f"application role {settings.display_name} has no serviceAccount")
        return pod_identity.association(
            name,
            self.settings.cluster.name,
            settings.namespace,
            settings.service_account,
            access.association_role_arn,
            opts,
            target_role_arn=access.target_role_arn,
        )

    def pod_identity_agent(self, name: str, opts: pulumi.ResourceOptions) -> pulumi.Resource | None:
        agent = self.settings.pod_identity_agent
        if agent.manage_addon:
            return pod_identity.agent_daemon_set(
                name, self.settings.cluster.name, agent.addon_version, opts
            )
        if self.cluster is not None and not pod_identity.agent_in_cluster(self.cluster):
            raise pulumi.RunError(missing_agent_message(self.settings.cluster.name))
        return None


def missing_agent_message(cluster: str) -> str:
    """Why the program stops when an application needs the agent and the cluster lacks it."""
    return (
        f"cluster {cluster} has no {AGENT_ADDON} add-on, which Pod Identity needs "
        "on the nodes: install it, or set kiam:podIdentityAgent.manageAddon: true"
    )


def described_cluster(kubeconfig: Path) -> SimpleNamespace:
    """The control plane as `aws.eks.get_cluster` describes an EKS cluster: its `endpoint` and
    `certificate_authorities[0].data`, the base64 of its CA's PEM (EKS's
    `certificateAuthority.data`), read from the control plane's own kubeconfig."""
    cluster = current_context(yaml.safe_load(kubeconfig.read_text())).cluster
    data = (
        cluster.get("certificate-authority-data")
        or base64.b64encode(Path(cluster["certificate-authority"]).read_bytes()).decode()
    )
    return SimpleNamespace(
        endpoint=cluster["server"], certificate_authorities=[SimpleNamespace(data=data)]
    )

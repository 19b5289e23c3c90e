"""The cloud side of kiam: what the composition needs from outside Kubernetes, as interfaces.

`Kiam` builds every Kubernetes object itself and asks a `CloudSide` for the rest: the IAM chain,
the dedicated nodes, the certificates, the application roles and, for applications EKS Pod
Identity serves, their associations and the agent add-on. `__main__.py` hands it the AWS
one (`components.aws_cloud`: IAM roles, an EKS managed node group, pulumi-tls); the real-engine tests
hand it stand-ins (`e2e/standins`) that produce the same values from the same settings. Nothing
here imports a cloud SDK, so the composition runs wherever pulumi-kubernetes does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import pulumi

from kiam_eks.settings.applications import ApplicationSettings
from kiam_eks.settings.tls import TlsSettings


class KiamRoles(Protocol):
    """The IAM chain: the server nodes' role and the kiam-server role it alone may assume."""

    @property
    def node_role_arn(self) -> pulumi.Input[str]:
        """Instance role of the dedicated server nodes."""
        ...

    @property
    def server_role_arn(self) -> pulumi.Input[str]:
        """kiam's `--assume-role-arn`."""
        ...

    @property
    def role_base_arn(self) -> str:
        """kiam's `--role-base-arn`."""
        ...

    @property
    def application_role_patterns(self) -> list[str]:
        """The ARN patterns of the application roles the server may assume."""
        ...

    @property
    def node_role_policies(self) -> Sequence[pulumi.Resource]:
        """What must exist before nodes can join (their role's policy attachments)."""
        ...


class ServerNodes(Protocol):
    """The dedicated, tainted node group the servers run on."""

    @property
    def node_group_name(self) -> pulumi.Output[str]:
        """The group's generated name, on every node as `eks.amazonaws.com/nodegroup`. It changes
        whenever the group is replaced, and only once the new group's nodes exist."""
        ...


class ApplicationAccess(Protocol):
    """One application role and the annotations that select it."""

    @property
    def role_arn(self) -> pulumi.Input[str]:
        """The role's ARN."""
        ...

    @property
    def pod_annotation(self) -> dict[str, str]:
        """Pod annotation that makes kiam hand out the role."""
        ...

    @property
    def service_account_annotation(self) -> pulumi.Input[dict[str, str]]:
        """Service-account annotation that selects the role through IRSA (once trusted for it)."""
        ...

    @property
    def association_role_arn(self) -> pulumi.Input[str]:
        """What a Pod Identity association names as its `roleArn`: the role itself, or the
        cluster account's role EKS chains through to a role of another account."""
        ...

    @property
    def target_role_arn(self) -> str | None:
        """The association's `targetRoleArn` where EKS chains to the role, else None."""
        ...

    @property
    def owner_trust(self) -> pulumi.Input[dict[str, Any]] | None:
        """For a role that exists already (`roleArn`), the trust statements its owner must keep
        and add (`components/existing_role.py`); None for a role the stack creates."""
        ...


@dataclass(frozen=True, kw_only=True)
class CertificateRequest:
    """What one kiam certificate must say; the issuer may not add or drop anything."""

    common_name: str
    dns_names: list[str]
    ip_addresses: list[str]
    uses: list[str]
    """Key and extended key usages, in pulumi-tls's vocabulary (`server_auth`, ...)."""
    validity_hours: int
    early_renewal_hours: int
    organization: str = "kiam"


@dataclass(frozen=True, kw_only=True)
class KeyPair:
    """A certificate and its private key, PEM encoded (the key is secret)."""

    cert_pem: pulumi.Input[str]
    key_pem: pulumi.Input[str]


class CertificateAuthority(Protocol):
    """Issues kiam's CA and leaf certificates. Whatever it creates is a child of `opts.parent`
    (the TLS component), under the name it is given."""

    def new_ca(self, name: str, settings: TlsSettings, opts: pulumi.ResourceOptions) -> KeyPair:
        """A new private CA for kiam."""
        ...

    def issue(
        self, name: str, request: CertificateRequest, ca: KeyPair, opts: pulumi.ResourceOptions
    ) -> KeyPair:
        """A leaf certificate and key for `request`, signed by `ca`."""
        ...


class CloudSide(Protocol):
    """Everything kiam needs from outside Kubernetes, created as children of `opts.parent`."""

    @property
    def certificate_authority(self) -> CertificateAuthority:
        """Issues the certificates of kiam's mutual TLS."""
        ...

    def roles(
        self,
        name: str,
        opts: pulumi.ResourceOptions,
        previous_server_permission: Sequence[Sequence[str]] | None = None,
    ) -> KiamRoles:
        """The node role and the kiam-server role (its permission laid out as the last update
        laid it, `previous_server_permission`, where known: settings/server_permission.py)."""
        ...

    def server_nodes(
        self, name: str, roles: KiamRoles, opts: pulumi.ResourceOptions
    ) -> ServerNodes:
        """The dedicated node group, whose nodes run as `roles.node_role_arn`."""
        ...

    def application_role(
        self,
        name: str,
        settings: ApplicationSettings,
        roles: KiamRoles,
        opts: pulumi.ResourceOptions,
    ) -> ApplicationAccess:
        """A role pods of one namespace may assume through whatever serves it
        (`settings.served_by`): the kiam server, EKS Pod Identity or IRSA."""
        ...

    def pod_identity_association(
        self,
        name: str,
        settings: ApplicationSettings,
        access: ApplicationAccess,
        opts: pulumi.ResourceOptions,
    ) -> pulumi.Resource:
        """The EKS Pod Identity association of settings.namespace/settings.service_account to the
        role `access` (what `application_role` returned): a child of that role where it is a
        resource, otherwise of opts.parent (the install)."""
        ...

    def pod_identity_agent(self, name: str, opts: pulumi.ResourceOptions) -> pulumi.Resource | None:
        """The eks-pod-identity-agent add-on when kiam:podIdentityAgent.manageAddon is true (a child
        of opts.parent); otherwise None, after checking the cluster has it."""
        ...

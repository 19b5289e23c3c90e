"""kiam's mutual TLS: a CA, the server and agent certificates, as `kubernetes.io/tls` Secrets.

The certificates come from the stack's `CertificateAuthority` (pulumi-tls on AWS, a local CA in the
real-engine tests); what they must say, and the Secrets that carry them, are decided here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pulumi

from kiam_eks.components import kubernetes_objects as kube
from kiam_eks.components.cloud import CertificateAuthority, CertificateRequest, KeyPair
from kiam_eks.contracts import tokens
from kiam_eks.contracts.labels import TLS_SECRET_TYPE
from kiam_eks.settings.tls import TlsSettings

LOOPBACK = (
    "127.0.0.1"  # `kiam health` probes the server on loopback: the certificate must cover it.
)
BASE_USES = ["digital_signature", "key_encipherment"]


@dataclass(frozen=True, kw_only=True)
class TlsArgs:
    """Inputs of `Tls`."""

    settings: TlsSettings
    """Lifetimes and early renewal."""
    namespace: pulumi.Input[str]
    """Namespace of the Secrets."""
    server_dns_names: list[str]
    """DNS SANs of the server certificate (every name of the Service, and localhost)."""
    authority: CertificateAuthority | None
    """Issues the CA (unless `existing_ca` is given) and the leaf certificates; None with
    `provided`."""
    existing_ca: tuple[str, str] | None = None
    """A running install's CA (certificate PEM, private key PEM) to sign with instead of a new
    one, so its agents and servers and the new ones trust each other during a migration."""
    provided: ProvidedCertificates | None = None
    """Certificates the caller issued (the Kubernetes-side component, `KiamKubernetes`): stored
    as they are, nothing issued here."""


@dataclass(frozen=True, kw_only=True)
class ProvidedCertificates:
    """kiam's CA certificate and the server's and agent's key pairs, issued by the caller: they
    must say what `certificate_requests` asks for (the server's names: `server_dns_names`)."""

    ca_cert_pem: pulumi.Input[str]
    server: KeyPair
    agent: KeyPair


def certificate_requests(args: TlsArgs) -> dict[str, CertificateRequest]:
    """The server and agent certificates, by role: exactly the names and uses kiam needs."""
    s = args.settings

    def request(role: str, dns: list[str], ips: list[str], uses: list[str]) -> CertificateRequest:
        return CertificateRequest(
            common_name=f"kiam-{role}",
            dns_names=dns,
            ip_addresses=ips,
            uses=[*BASE_USES, *uses],
            validity_hours=s.cert_validity_hours,
            early_renewal_hours=s.early_renewal_hours,
        )

    return {
        # The server also dials itself as a client in its `kiam health` probe.
        "server": request(
            "server", args.server_dns_names, [LOOPBACK], ["server_auth", "client_auth"]
        ),
        "agent": request("agent", [], [], ["client_auth"]),
    }


class Tls(pulumi.ComponentResource):
    """CA, server and agent certificates, stored as `kubernetes.io/tls` Secrets with `ca.crt`."""

    server_secret: kube.Secret
    """Server certificate, key and CA."""
    agent_secret: kube.Secret
    """Agent certificate, key and CA."""
    ca_cert_pem: pulumi.Output[str]
    """The CA certificate (public)."""

    def __init__(
        self, name: str, args: TlsArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(tokens.TLS, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        leaf_of = self._leaves(name, args, child)

        def secret(role: str) -> kube.Secret:
            leaf = leaf_of(role)
            # Updated in place, never replaced (the stack's Kubernetes provider has
            # enableSecretMutable, program/kubernetes.py), and mounted as a directory (not
            # subPath), so the kubelet swaps renewed files under a running kiam, which reloads them.
            return kube.Secret(
                f"{name}-{role}",
                # Not the upstream `kiam-<role>-tls`: a running install's Secrets keep their names.
                metadata={"name": f"kiam-{role}-certificate", "namespace": args.namespace},
                type=TLS_SECRET_TYPE,
                string_data=pulumi.Output.secret(
                    {"tls.crt": leaf.cert_pem, "tls.key": leaf.key_pem, "ca.crt": self.ca_cert_pem}
                ),
                opts=child,
            )

        self.server_secret = secret("server")
        self.agent_secret = secret("agent")
        self.register_outputs(
            {
                "server_secret": self.server_secret,
                "agent_secret": self.agent_secret,
                "ca_cert_pem": self.ca_cert_pem,
            }
        )

    def _leaves(
        self, name: str, args: TlsArgs, child: pulumi.ResourceOptions
    ) -> Callable[[str], KeyPair]:
        """Sets `ca_cert_pem`; returns what gives each role's key pair: the caller's, or one
        issued by the authority when first asked (each leaf registered just before its Secret)."""
        if args.provided is not None:
            provided = args.provided
            self.ca_cert_pem = pulumi.Output.from_input(provided.ca_cert_pem)
            return {"server": provided.server, "agent": provided.agent}.__getitem__
        authority = args.authority
        if authority is None:
            raise ValueError("TlsArgs needs an authority or provided certificates")
        if args.existing_ca is not None:
            ca = KeyPair(
                cert_pem=args.existing_ca[0], key_pem=pulumi.Output.secret(args.existing_ca[1])
            )
        else:
            ca = authority.new_ca(f"{name}-ca", args.settings, child)
        self.ca_cert_pem = pulumi.Output.from_input(ca.cert_pem)
        requests = certificate_requests(args)
        return lambda role: authority.issue(f"{name}-{role}", requests[role], ca, child)

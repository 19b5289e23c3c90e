"""A private CA and the server and agent certificates for kiam's mutual TLS, as Kubernetes Secrets."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s
import pulumi_tls as tls

from settings.tls import TlsSettings

LOOPBACK = (
    "127.0.0.1"  # `kiam health` probes the server on loopback: the certificate must cover it.
)


@dataclass(frozen=True, kw_only=True)
class TlsArgs:
    """Inputs of `KiamTls`."""

    settings: TlsSettings
    """Lifetimes and early renewal."""
    namespace: pulumi.Input[str]
    """Namespace of the Secrets."""
    server_dns_names: list[str]
    """DNS SANs of the server certificate (every name of the Service, and localhost)."""
    existing_ca: tuple[str, str] | None = None
    """A running install's CA (certificate PEM, private key PEM) to sign with instead of a new
    one, so its agents and servers and the new ones trust each other during a migration."""


class KiamTls(pulumi.ComponentResource):
    """CA, server and agent certificates, stored as `kubernetes.io/tls` Secrets with `ca.crt`."""

    server_secret: k8s.core.v1.Secret
    """Server certificate, key and CA."""
    agent_secret: k8s.core.v1.Secret
    """Agent certificate, key and CA."""
    ca_cert_pem: pulumi.Output[str]
    """The CA certificate (public)."""

    def __init__(
        self, name: str, args: TlsArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("kiam:index:Tls", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        s = args.settings
        ca_key_pem: pulumi.Input[str]
        if args.existing_ca is not None:
            self.ca_cert_pem = pulumi.Output.from_input(args.existing_ca[0])
            ca_key_pem = pulumi.Output.secret(args.existing_ca[1])
        else:
            ca_key = _key(f"{name}-ca", child)
            ca_key_pem = ca_key.private_key_pem
            # No early renewal for the CA: a new CA must reach agents and servers together, a
            # planned rotation (README, Operations), not something a routine `pulumi up` starts.
            self.ca_cert_pem = tls.SelfSignedCert(
                f"{name}-ca",
                private_key_pem=ca_key.private_key_pem,
                is_ca_certificate=True,
                subject={"common_name": "kiam-ca", "organization": "kiam"},
                validity_period_hours=s.ca_validity_hours,
                allowed_uses=["cert_signing", "crl_signing", "digital_signature"],
                opts=child,
            ).cert_pem

        def leaf(
            role: str, dns_names: list[str], ip_addresses: list[str], uses: list[str]
        ) -> k8s.core.v1.Secret:
            key = _key(f"{name}-{role}", child)
            request = tls.CertRequest(
                f"{name}-{role}",
                private_key_pem=key.private_key_pem,
                subject={"common_name": f"kiam-{role}", "organization": "kiam"},
                dns_names=dns_names,
                ip_addresses=ip_addresses,
                opts=child,
            )
            cert = tls.LocallySignedCert(
                f"{name}-{role}",
                cert_request_pem=request.cert_request_pem,
                ca_private_key_pem=ca_key_pem,
                ca_cert_pem=self.ca_cert_pem,
                validity_period_hours=s.cert_validity_hours,
                early_renewal_hours=s.early_renewal_hours,
                allowed_uses=uses,
                opts=child,
            )
            # Updated in place, never replaced, and mounted as a directory (not subPath), so the
            # kubelet swaps renewed files under a running kiam, which reloads them.
            return k8s.core.v1.Secret(
                f"{name}-{role}",
                # Not the upstream `kiam-<role>-tls`: a running install's Secrets keep their names.
                metadata={"name": f"kiam-{role}-certificate", "namespace": args.namespace},
                type="kubernetes.io/tls",
                string_data=pulumi.Output.secret(
                    {
                        "tls.crt": cert.cert_pem,
                        "tls.key": key.private_key_pem,
                        "ca.crt": self.ca_cert_pem,
                    }
                ),
                opts=child,
            )

        base_uses = ["digital_signature", "key_encipherment"]
        # The server also dials itself as a client in its `kiam health` probe.
        self.server_secret = leaf(
            "server", args.server_dns_names, [LOOPBACK], [*base_uses, "server_auth", "client_auth"]
        )
        self.agent_secret = leaf("agent", [], [], [*base_uses, "client_auth"])
        self.register_outputs(
            {
                "server_secret": self.server_secret,
                "agent_secret": self.agent_secret,
                "ca_cert_pem": self.ca_cert_pem,
            }
        )


def _key(name: str, opts: pulumi.ResourceOptions) -> tls.PrivateKey:
    return tls.PrivateKey(name, algorithm="ECDSA", ecdsa_curve="P256", opts=opts)

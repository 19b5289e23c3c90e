"""The certificate authority of AWS stacks: pulumi-tls keys and certificates, kept in state."""

from __future__ import annotations

import pulumi
import pulumi_tls as tls

from kiam_eks.components.cloud import CertificateRequest, KeyPair
from kiam_eks.settings.tls import TlsSettings


class PulumiTlsAuthority:
    """Issues with pulumi-tls: keys and certificates live in the stack's (encrypted) state, and a
    `pulumi up` within `earlyRenewalHours` of a leaf's expiry re-issues it."""

    def new_ca(self, name: str, settings: TlsSettings, opts: pulumi.ResourceOptions) -> KeyPair:
        key = _key(name, opts)
        # No early renewal for the CA: a new CA must reach agents and servers together, a
        # planned rotation (docs/operations.md, Certificates), not something a routine `pulumi up` starts.
        cert = tls.SelfSignedCert(
            name,
            private_key_pem=key.private_key_pem,
            is_ca_certificate=True,
            subject={"common_name": "kiam-ca", "organization": "kiam"},
            validity_period_hours=settings.ca_validity_hours,
            allowed_uses=["cert_signing", "crl_signing", "digital_signature"],
            opts=opts,
        )
        return KeyPair(cert_pem=cert.cert_pem, key_pem=key.private_key_pem)

    def issue(
        self, name: str, request: CertificateRequest, ca: KeyPair, opts: pulumi.ResourceOptions
    ) -> KeyPair:
        key = _key(name, opts)
        csr = tls.CertRequest(
            name,
            private_key_pem=key.private_key_pem,
            subject={"common_name": request.common_name, "organization": request.organization},
            dns_names=request.dns_names,
            ip_addresses=request.ip_addresses,
            opts=opts,
        )
        cert = tls.LocallySignedCert(
            name,
            cert_request_pem=csr.cert_request_pem,
            ca_private_key_pem=ca.key_pem,
            ca_cert_pem=ca.cert_pem,
            validity_period_hours=request.validity_hours,
            early_renewal_hours=request.early_renewal_hours,
            allowed_uses=request.uses,
            opts=opts,
        )
        return KeyPair(cert_pem=cert.cert_pem, key_pem=key.private_key_pem)


def _key(name: str, opts: pulumi.ResourceOptions) -> tls.PrivateKey:
    return tls.PrivateKey(name, algorithm="ECDSA", ecdsa_curve="P256", opts=opts)

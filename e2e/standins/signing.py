"""Real X.509 certificates for the stand-in CA (e2e/standins/certificates.py) and the harness's
own TLS endpoints: ECDSA P-256 keys, with the subject, names, addresses and usages asked for."""

from __future__ import annotations

import datetime
import ipaddress

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kiam_eks.components.cloud import CertificateRequest

_EXTENDED = {
    "server_auth": ExtendedKeyUsageOID.SERVER_AUTH,
    "client_auth": ExtendedKeyUsageOID.CLIENT_AUTH,
}
_KEY_USAGES = {
    "digital_signature", "key_encipherment", "cert_signing", "crl_signing",
}  # fmt: skip


def make_ca(common_name: str, validity_hours: int) -> tuple[str, str]:
    """A self-signed CA certificate and its key (ECDSA P-256, as pulumi-tls makes them here)."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = _name(common_name, "kiam")
    builder = (
        _builder(subject, subject, key.public_key(), validity_hours)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            _key_usage(["cert_signing", "crl_signing", "digital_signature"]), critical=True
        )
    )
    return _pem(builder.sign(key, hashes.SHA256())), _key_pem(key)


def make_leaf(request: CertificateRequest, ca_cert_pem: str, ca_key_pem: str) -> tuple[str, str]:
    """A certificate for `request`, signed by the CA, and its new key."""
    ca_cert = x509.load_pem_x509_certificate(ca_cert_pem.encode())
    ca_key = serialization.load_pem_private_key(ca_key_pem.encode(), password=None)
    # A running install's CA (adoption) may be RSA; ours are ECDSA.
    if not isinstance(ca_key, (ec.EllipticCurvePrivateKey, rsa.RSAPrivateKey)):
        raise ValueError(
            f"the CA key is a {type(ca_key).__name__}: only ECDSA and RSA CAs sign here"
        )
    key = ec.generate_private_key(ec.SECP256R1())
    builder = _builder(
        _name(request.common_name, request.organization),
        ca_cert.subject,
        key.public_key(),
        request.validity_hours,
    ).add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
    builder = builder.add_extension(
        _key_usage([u for u in request.uses if u in _KEY_USAGES]), critical=True
    )
    extended = [_EXTENDED[u] for u in request.uses if u in _EXTENDED]
    if extended:
        builder = builder.add_extension(x509.ExtendedKeyUsage(extended), critical=False)
    names: list[x509.GeneralName] = [x509.DNSName(n) for n in request.dns_names]
    names += [x509.IPAddress(ipaddress.ip_address(a)) for a in request.ip_addresses]
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    unknown = set(request.uses) - _KEY_USAGES - set(_EXTENDED)
    if unknown:
        raise ValueError(f"the stand-in CA does not know the usages {sorted(unknown)}")
    return _pem(builder.sign(ca_key, hashes.SHA256())), _key_pem(key)


def _name(common_name: str, organization: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization),
        ]
    )


def _builder(
    subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey, hours: int
) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        # A little in the past, like pulumi-tls, so clocks a few minutes apart agree.
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=hours))
    )


def _key_usage(uses: list[str]) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature="digital_signature" in uses,
        content_commitment=False,
        key_encipherment="key_encipherment" in uses,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign="cert_signing" in uses,
        crl_sign="crl_signing" in uses,
        encipher_only=False,
        decipher_only=False,
    )


def _pem(cert: x509.Certificate) -> str:
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def _key_pem(key: ec.EllipticCurvePrivateKey) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()

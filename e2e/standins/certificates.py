"""A certificate authority without pulumi-tls: real X.509 certificates (e2e/standins/signing.py),
with exactly the subject, names, addresses and usages the TLS component requests.

Certificates are kept in a directory keyed by what was requested, so the same request gives the
same PEMs on every run (a second `pulumi up` is a no-op) and a changed request a new certificate,
as pulumi-tls would. Only a request not yet issued loads the signing code: pulumi-tls signs in its
own plugin process, so a program run that issues nothing new pays none of it here either.

It registers no resource: the `server-certificate` guarantee reads the certificate it issued in
the server's Secret, as it reads the request of a pulumi-tls one.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import pulumi

from kiam_eks.components.cloud import CertificateRequest, KeyPair
from kiam_eks.settings.tls import TlsSettings


class LocalAuthority:
    """`CertificateAuthority` that signs locally; `directory` keeps what it issued."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def new_ca(self, name: str, settings: TlsSettings, opts: pulumi.ResourceOptions) -> KeyPair:
        def make() -> tuple[str, str]:
            from e2e.standins.signing import make_ca

            return make_ca("kiam-ca", settings.ca_validity_hours)

        cert, key = self._cached({"ca": name, "hours": settings.ca_validity_hours}, make)
        return KeyPair(cert_pem=cert, key_pem=pulumi.Output.secret(key))

    def issue(
        self, name: str, request: CertificateRequest, ca: KeyPair, opts: pulumi.ResourceOptions
    ) -> KeyPair:
        def signed(ca_pems: list[str]) -> tuple[str, str]:
            def make() -> tuple[str, str]:
                from e2e.standins.signing import make_leaf

                return make_leaf(request, ca_pems[0], ca_pems[1])

            return self._cached({"leaf": name, "request": request.__dict__, "ca": ca_pems[0]}, make)

        pair = pulumi.Output.all(ca.cert_pem, ca.key_pem).apply(signed)
        return KeyPair(
            cert_pem=pair.apply(lambda p: p[0]),
            key_pem=pulumi.Output.secret(pair.apply(lambda p: p[1])),
        )

    def _cached(self, request: object, make: Callable[[], tuple[str, str]]) -> tuple[str, str]:
        digest = hashlib.sha256(json.dumps(request, sort_keys=True).encode()).hexdigest()[:24]
        cert_file = self.directory / f"{digest}.crt"
        key_file = self.directory / f"{digest}.key"
        if not (cert_file.exists() and key_file.exists()):
            self.directory.mkdir(parents=True, exist_ok=True)
            cert, key = make()
            key_file.write_text(key)
            key_file.chmod(0o600)
            cert_file.write_text(cert)
        return cert_file.read_text(), key_file.read_text()

"""TLS: a CA, server and agent certificates with the right names and uses, kept secret, mounted whole."""

from __future__ import annotations

from kiam_eks.contracts import tokens
from tests.conftest import types_and_names
from tools.mock_engine import Recording

KEY, CA, CSR, LEAF, SECRET = (
    "tls:index/privateKey:PrivateKey",
    "tls:index/selfSignedCert:SelfSignedCert",
    "tls:index/certRequest:CertRequest",
    "tls:index/locallySignedCert:LocallySignedCert",
    "kubernetes:core/v1:Secret",
)


def test_children_and_parentage(base_run: Recording) -> None:
    component = base_run.one(tokens.TLS)
    assert types_and_names(base_run.children_of(component.urn)) == {
        (KEY, "kiam-tls-ca"),
        (KEY, "kiam-tls-server"),
        (KEY, "kiam-tls-agent"),
        (CA, "kiam-tls-ca"),
        (CSR, "kiam-tls-server"),
        (CSR, "kiam-tls-agent"),
        (LEAF, "kiam-tls-server"),
        (LEAF, "kiam-tls-agent"),
        (SECRET, "kiam-tls-server"),
        (SECRET, "kiam-tls-agent"),
    }


def test_server_certificate_names_every_form_of_the_service_and_loopback(
    base_run: Recording,
) -> None:
    request = base_run.one(CSR, "kiam-tls-server")
    assert request.inputs["dnsNames"] == [
        "kiam-server",
        "kiam-server.kiam",
        "kiam-server.kiam.svc",
        "kiam-server.kiam.svc.cluster.local",
        "localhost",
    ]
    assert request.inputs["ipAddresses"] == ["127.0.0.1"]
    host = base_run.stack_outputs["serverAddress"].rsplit(":", 1)[0]
    assert host in request.inputs["dnsNames"]


def test_certificate_uses_and_lifetimes(base_run: Recording) -> None:
    server, agent = base_run.one(LEAF, "kiam-tls-server"), base_run.one(LEAF, "kiam-tls-agent")
    assert server.inputs["allowedUses"] == [
        "digital_signature",
        "key_encipherment",
        "server_auth",
        "client_auth",
    ]
    assert agent.inputs["allowedUses"] == ["digital_signature", "key_encipherment", "client_auth"]
    for leaf in (server, agent):
        assert (leaf.inputs["validityPeriodHours"], leaf.inputs["earlyRenewalHours"]) == (8760, 720)
    ca = base_run.one(CA)
    assert ca.inputs["isCaCertificate"] is True
    assert ca.inputs["validityPeriodHours"] == 87600
    assert "earlyRenewalHours" not in ca.inputs
    keys = base_run.by_type(KEY)
    assert sorted(k.name for k in keys) == ["kiam-tls-agent", "kiam-tls-ca", "kiam-tls-server"]
    assert {k.inputs["algorithm"] for k in keys} == {"ECDSA"}


def test_secrets_are_tls_secrets_whose_payload_stays_secret(base_run: Recording) -> None:
    for role in ("server", "agent"):
        secret = base_run.one(SECRET, f"kiam-tls-{role}")
        assert secret.inputs["type"] == "kubernetes.io/tls"
        assert secret.inputs["metadata"] == {
            "name": f"kiam-{role}-certificate",
            "namespace": "kiam",
        }
        assert sorted(secret.inputs["stringData"]) == ["ca.crt", "tls.crt", "tls.key"]
        assert secret.secret_paths == ("stringData",)
        key = base_run.one(KEY, f"kiam-tls-{role}")
        assert secret.inputs["stringData"]["tls.key"] == key.outputs["privateKeyPem"]


def test_private_keys_reach_certificates_only_as_secrets(base_run: Recording) -> None:
    leaves, requests = base_run.by_type(LEAF), base_run.by_type(CSR)
    assert sorted(leaf.name for leaf in leaves) == ["kiam-tls-agent", "kiam-tls-server"]
    assert sorted(request.name for request in requests) == ["kiam-tls-agent", "kiam-tls-server"]
    for leaf in leaves:
        assert "caPrivateKeyPem" in leaf.secret_paths
    for request in requests:
        assert "privateKeyPem" in request.secret_paths

"""The guarantees run unchanged on the real-engine suite's cloud side (e2e/standins): the stack the
e2e deploys, built here through the mock engine, keeps every guarantee, and a breakage of what the
stand-ins produce is caught, so the e2e turns no guarantee off."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from e2e.standins.cloud import KwokCloud
from e2e.standins.signing import make_ca, make_leaf
from kiam_eks.components.cloud import CertificateRequest
from kiam_eks.invariants import UNKNOWN, Resource, Violation, check_all
from kiam_eks.invariants.expected import Expected
from kiam_eks.invariants.recorded import resources_from_recording
from kiam_eks.invariants.x509 import dns_names
from kiam_eks.program.kubernetes import kubernetes_provider
from kiam_eks.program.stack import build, export_outputs
from kiam_eks.settings.loader import settings_from_values
from kiam_eks.settings.stack import StackSettings
from tests import guarantee_views as g
from tests.conftest import EXAMPLE_STACKS, example_config
from tools.mock_engine import MockEngine

SECRET = "kubernetes:core/v1:Secret"
DAEMON_SET = "kubernetes:apps/v1:DaemonSet"
PATCH = "kubernetes:core/v1:NamespacePatch"


def settings_of(config: dict[str, Any]) -> StackSettings:
    values = {k.removeprefix("kiam:"): v for k, v in config.items() if k.startswith("kiam:")}
    return settings_from_values(values, "test")


def standin_resources(
    stack: str, state: Path, config: dict[str, Any] | None = None
) -> list[Resource]:
    """The e2e program (e2e/program/__main__.py) under the mock engine: the same composition
    with the stand-in cloud side, and a Kubernetes provider."""
    config = example_config(stack) if config is None else config
    settings = settings_of(config)

    def program() -> None:
        provider = kubernetes_provider(settings, "apiVersion: v1\nkind: Config\n")
        cloud = KwokCloud(settings, state)
        export_outputs(build(settings, [provider], cloud=cloud), settings)

    cluster = settings.cluster
    engine = MockEngine(
        account_id=cluster.account_id, region=cluster.region, stack=stack, config=config
    )
    return resources_from_recording(engine.run(program))


@pytest.fixture(scope="module")
def production(tmp_path_factory: pytest.TempPathFactory) -> list[Resource]:
    return standin_resources("production", tmp_path_factory.mktemp("state"))


PRODUCTION = Expected.of(settings_of(example_config("production")))


@pytest.mark.parametrize("stack", EXAMPLE_STACKS)
def test_every_example_stack_on_the_stand_ins_keeps_every_guarantee(
    stack: str, tmp_path: Path
) -> None:
    resources = standin_resources(stack, tmp_path)
    # Nothing of AWS or pulumi-tls: the guarantees judge what the stand-ins produce.
    assert not [r.type for r in resources if r.type.startswith(("aws:", "tls:"))]
    assert check_all(resources, Expected.of(settings_of(example_config(stack)))) == []


def with_server_certificate(resources: list[Resource], pem: Any) -> list[Resource]:
    def change(r: Resource) -> Resource:
        if r.type != SECRET or r.inputs["metadata"]["name"] != "kiam-server-certificate":
            return r
        data = {**r.inputs["stringData"], "tls.crt": pem}
        return dataclasses.replace(r, inputs={**r.inputs, "stringData": data})

    return [change(r) for r in resources]


def test_a_certificate_issued_outside_the_stack_is_judged_itself(
    production: list[Resource],
) -> None:
    """The stand-in CA creates no resource: the guarantee reads the certificate in the Secret."""
    ca_cert, ca_key = make_ca("kiam-ca", 24)
    request = CertificateRequest(
        common_name="kiam-server",
        dns_names=["kiam-server", "localhost"],
        ip_addresses=["127.0.0.1"],
        uses=["digital_signature", "key_encipherment", "server_auth"],
        validity_hours=24,
        early_renewal_hours=1,
    )
    short, _ = make_leaf(request, ca_cert, ca_key)
    agent = next(r for r in production if r.type == DAEMON_SET and r.name == "kiam-agent")
    assert check_all(with_server_certificate(production, short), PRODUCTION) == [
        Violation(
            "server-certificate",
            agent.urn,
            "dials kiam-server.kiam.svc.cluster.local, which the server certificate does not name",
        )
    ]
    assert check_all(with_server_certificate(production, UNKNOWN), PRODUCTION) == []


def test_an_application_the_stand_ins_make_unreachable_is_caught(
    production: list[Resource],
) -> None:
    """No IAM resource exists on the stand-ins; the application is still followed from its
    settings (its role's ARN as IAM writes it) to the namespace that must admit it."""

    def change(r: Resource) -> Resource:
        if r.type != PATCH or r.inputs["metadata"]["name"] != "orders":
            return r
        metadata = {**r.inputs["metadata"], "annotations": {"iam.amazonaws.com/permitted": "x"}}
        return dataclasses.replace(r, inputs={**r.inputs, "metadata": metadata})

    arn = "arn:aws:iam::444455556666:role/kiam-apps/production/orders-api"
    assert check_all([change(r) for r in production], PRODUCTION) == [
        Violation(
            "application-reachable",
            "stack",
            f"application orders: namespace orders permits 'x', which does not admit {arn}",
        )
    ]


def test_the_dns_names_of_a_certificate_are_read_as_x509_writes_them() -> None:
    ca_cert, ca_key = make_ca("kiam-ca", 24)
    many = [f"name-{i}.kiam.svc.cluster.local" for i in range(40)]  # past 127 bytes: long form
    request = CertificateRequest(
        common_name="kiam-server",
        dns_names=["kiam-server", *many],
        ip_addresses=["127.0.0.1"],
        uses=["digital_signature", "key_encipherment", "server_auth", "client_auth"],
        validity_hours=24,
        early_renewal_hours=1,
    )
    leaf, _ = make_leaf(request, ca_cert, ca_key)
    assert dns_names(leaf) == ["kiam-server", *many]
    assert dns_names(ca_cert) == []  # a CA without subjectAltName
    assert dns_names("not a certificate") is None
    assert dns_names("-----BEGIN CERTIFICATE-----\n!!\n-----END CERTIFICATE-----") is None


def test_an_association_the_stand_ins_record_is_judged_like_eks_one(
    production: list[Resource],
) -> None:
    """On the stand-ins an association is a Kubernetes object whose data holds the four fields
    of EKS's (e2e/standins): found by what it records, judged against the settings like the EKS
    resource. Here orders is judged as moving to Pod Identity instead of IRSA."""
    config = example_config("production")
    orders = config["kiam:applications"]["orders"]
    orders["servedBy"] = "kiam+podIdentity"
    moving = Expected.of(settings_of(config))
    arn = "arn:aws:iam::444455556666:role/kiam-apps/production/orders-api"
    parent = (
        "urn:pulumi:production::kiam::kiam:index:Kiam$kiam:index:ApplicationRole::kiam-app-orders"
    )

    def association(service_account: str) -> Resource:
        return Resource(
            urn=f"{parent}$kubernetes:core/v1:ConfigMap::kiam-app-orders-pod-identity",
            type="kubernetes:core/v1:ConfigMap",
            name="kiam-app-orders-pod-identity",
            parent=parent,
            inputs={
                "metadata": {"name": f"orders.{service_account}", "namespace": "kiam-e2e-aws"},
                "data": {
                    "clusterName": "production",
                    "namespace": "orders",
                    "serviceAccount": service_account,
                    "roleArn": arn,
                },
            },
        )

    assert check_all([*production, association("orders-api")], moving) == []
    assert check_all(production, moving) == [
        Violation(
            "pod-identity",
            "stack",
            "application orders: no Pod Identity association of production/orders/orders-api "
            "names its role",
        )
    ]
    other = association("default")
    assert check_all([*production, other], moving) == [
        Violation(
            "pod-identity",
            "stack",
            "application orders: no Pod Identity association of production/orders/orders-api "
            "names its role",
        ),
        Violation(
            "pod-identity",
            other.urn,
            "application orders: the association of production/orders/default names its role, "
            "which only production/orders/orders-api may obtain",
        ),
    ]


def test_roles_that_exist_already_on_the_stand_ins_keep_every_guarantee(tmp_path: Path) -> None:
    """Existing roles (tests/test_existing_roles.py) on the stand-ins: no IAM, the association a
    ConfigMap whose data chains to the role of another account (`targetRoleArn`), as EKS's."""
    for ledger, reports in (("kiam", "kiam"), ("kiam+podIdentity", "podIdentity")):
        config = g.existing_config(ledger, reports)
        resources = standin_resources("test", tmp_path / ledger, config)
        assert check_all(resources, Expected.of(settings_of(config))) == []
    associations = {
        r.inputs["metadata"]["name"]: r.inputs["data"]
        for r in resources
        if r.type == "kubernetes:core/v1:ConfigMap" and "pod-identity" in r.name
    }
    assert associations == {
        "pod-identity.ledger.api": {
            "clusterName": "test",
            "namespace": "ledger",
            "serviceAccount": "api",
            "roleArn": g.LEDGER_ARN,
        },
        "pod-identity.reports.reporter": {
            "clusterName": "test",
            "namespace": "reports",
            "serviceAccount": "reporter",
            "roleArn": "arn:aws:iam::111122223333:role/kiam/kiam-chain-reports-",
            "targetRoleArn": g.REPORTS_ARN,
        },
    }

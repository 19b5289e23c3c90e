"""The real-engine stand-ins produce what the real parts produce: a node group whose name changes
exactly when EKS would replace it, nodes labelled and tainted as EKS does, certificates with
exactly the requested names and usages, and the cluster shape a stack expects."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pulumi
import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID

from components.tls import TlsArgs, certificate_requests
from contracts import names
from e2e.harness.shape import UNTOLERATED_TAINT, shape_of
from e2e.standins.certificates import LocalAuthority, make_ca
from e2e.standins.nodes import KwokNodeGroup, KwokNodeGroupArgs, group_arguments
from settings.loader import settings_from_values
from settings.node_group import NodeGroupSettings
from settings.stack import StackSettings
from settings.tls import TlsSettings
from tests.conftest import base_config, example_config, run_component, run_program
from tests.test_node_changes import CHANGES as NODE_CHANGES
from tests.test_node_changes import NODE_GROUP
from tools.mock_engine import Recording

SUBNETS = [
    {"id": "subnet-00000000000000001", "zone": "eu-west-1a"},
    {"id": "subnet-00000000000000002", "zone": "eu-west-1b"},
]


def _group(**changes: Any) -> NodeGroupSettings:
    return NodeGroupSettings.model_validate({"subnets": SUBNETS, "minSize": 2, **changes})


def _arguments(settings: NodeGroupSettings, version: str = "1.33") -> dict[str, Any]:
    return group_arguments(settings, version)


@pytest.mark.parametrize("setting", sorted(NODE_CHANGES))
def test_each_setting_moves_the_same_argument_in_the_stand_in_as_in_the_real_group(
    setting: str, base_run: Recording
) -> None:
    # The real group's arguments, through the mock engine, before and after the change.
    changed_run = run_program(base_config(**NODE_CHANGES[setting]))
    real_before, real_after = (r.one(NODE_GROUP).inputs for r in (base_run, changed_run))
    real = {
        k for k in real_before.keys() | real_after.keys() if real_before.get(k) != real_after.get(k)
    }
    # The stand-in's, from the same two stacks' settings.
    before, after = (_settings(c) for c in (base_config(), base_config(**NODE_CHANGES[setting])))
    standin_before = _arguments(before.node_group, before.cluster.kubernetes_version)
    standin_after = _arguments(after.node_group, after.cluster.kubernetes_version)
    standin = {k for k in standin_before if standin_before[k] != standin_after[k]}
    assert standin == real
    assert set(standin_before) <= set(real_before)


def test_one_node_per_desired_node_labelled_and_tainted_as_eks_does() -> None:
    settings = _group(desiredSize=3, maxSize=4, minSize=3, labels={"team": "platform"})
    rec = run_component(
        lambda: KwokNodeGroup(
            "nodes",
            KwokNodeGroupArgs(settings=settings, region="eu-west-1", kubernetes_version="1.33"),
        )
    )
    component = rec.one("kiam:e2e:KwokNodeGroup").urn
    config_map = rec.one("kubernetes:core/v1:ConfigMap")
    assert config_map.parent == component
    # The arguments whose change makes a new group, replaced on any change, create first.
    assert config_map.delete_before_replace is False
    assert config_map.replace_on_changes == ("data",)
    assert sorted(config_map.inputs["data"]) == [
        "amiType", "capacityType", "instanceTypes", "launchTemplate", "subnetIds", "taints",
        "version",
    ]  # fmt: skip
    assert config_map.inputs["data"]["taints"] == (
        '[{"effect": "NO_SCHEDULE", "key": "dedicated", "value": "kiam-server"}]'
    )

    group = config_map.outputs["metadata"]["name"]
    assert group.startswith("nodes-")
    # Sorted: the mock engine records registrations in the order they complete, which varies.
    nodes = sorted(rec.by_type("kubernetes:core/v1:Node"), key=lambda n: n.name)
    assert [n.name for n in nodes] == ["nodes-0", "nodes-1", "nodes-2"]
    assert all(n.parent == component for n in nodes)
    first = nodes[0].inputs
    assert first["metadata"]["name"] == f"{group}-0"
    assert first["metadata"]["annotations"] == {"kwok.x-k8s.io/node": "fake"}
    assert first["metadata"]["labels"] == {
        "team": "platform",
        "dedicated": "kiam-server",
        "eks.amazonaws.com/nodegroup": group,
        "eks.amazonaws.com/capacityType": "ON_DEMAND",
        "node.kubernetes.io/instance-type": "t3.medium",
        "topology.kubernetes.io/zone": "eu-west-1a",
        "topology.kubernetes.io/region": "eu-west-1",
        "kubernetes.io/hostname": f"{group}-0",
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "type": "kwok",
    }
    assert first["spec"]["taints"] == [
        {"key": "dedicated", "value": "kiam-server", "effect": "NoSchedule"}
    ]
    zones = [n.inputs["metadata"]["labels"]["topology.kubernetes.io/zone"] for n in nodes]
    assert zones == ["eu-west-1a", "eu-west-1b", "eu-west-1a"]


def _settings(config: dict[str, Any]) -> StackSettings:
    return settings_from_values({k.removeprefix("kiam:"): v for k, v in config.items()}, "test")


def _issue(directory: Path, tls: TlsSettings) -> dict[str, tuple[str, str]]:
    """What the TLS component would request, issued by the stand-in authority."""
    authority = LocalAuthority(directory)
    args = TlsArgs(
        settings=tls,
        namespace="kiam",
        server_dns_names=names.service_dns_names("kiam-server", "kiam", "cluster.local"),
        authority=authority,
    )
    issued: dict[str, tuple[str, str]] = {}

    def program() -> None:
        ca = authority.new_ca("tls-ca", tls, pulumi.ResourceOptions())
        for role, request in certificate_requests(args).items():
            pair = authority.issue(f"tls-{role}", request, ca, pulumi.ResourceOptions())
            pulumi.Output.all(pair.cert_pem, pair.key_pem, ca.cert_pem).apply(
                lambda p, role=role: issued.__setitem__(role, (p[0], p[2]))
            )

    run_component(program)
    return issued


def test_certificates_carry_exactly_the_requested_names_and_usages(tmp_path: Path) -> None:
    issued = _issue(tmp_path, TlsSettings())
    server = x509.load_pem_x509_certificate(issued["server"][0].encode())
    ca = x509.load_pem_x509_certificate(issued["server"][1].encode())
    assert server.subject.rfc4514_string() == "O=kiam,CN=kiam-server"
    sans = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == [
        "kiam-server",
        "kiam-server.kiam",
        "kiam-server.kiam.svc",
        "kiam-server.kiam.svc.cluster.local",
        "localhost",
    ]
    assert [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert list(server.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value) == [
        ExtendedKeyUsageOID.SERVER_AUTH,
        ExtendedKeyUsageOID.CLIENT_AUTH,
    ]
    usage = server.extensions.get_extension_for_class(x509.KeyUsage).value
    assert (usage.digital_signature, usage.key_encipherment, usage.key_cert_sign) == (
        True,
        True,
        False,
    )
    assert (server.not_valid_after_utc - server.not_valid_before_utc).total_seconds() == (
        8760 * 3600 + 300
    )
    public_key = ca.public_key()
    assert isinstance(public_key, ec.EllipticCurvePublicKey)
    server.verify_directly_issued_by(ca)
    agent = x509.load_pem_x509_certificate(issued["agent"][0].encode())
    assert list(agent.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value) == [
        ExtendedKeyUsageOID.CLIENT_AUTH
    ]
    with pytest.raises(x509.ExtensionNotFound):
        agent.extensions.get_extension_for_class(x509.SubjectAlternativeName)


def test_the_same_request_gives_the_same_certificate_and_a_new_one_a_new_certificate(
    tmp_path: Path,
) -> None:
    first, again = _issue(tmp_path, TlsSettings()), _issue(tmp_path, TlsSettings())
    assert first == again  # a second `pulumi up` is a no-op
    renewed = _issue(tmp_path, TlsSettings(cert_validity_hours=4380))
    assert renewed["server"][0] != first["server"][0]
    assert renewed["server"][1] == first["server"][1]  # the CA stays


def test_an_adopted_ca_signs_the_leaves(tmp_path: Path) -> None:
    cert, key = make_ca("running-install-ca", 24 * 365)
    authority = LocalAuthority(tmp_path)
    issued: list[str] = []

    def program() -> None:
        from components.cloud import KeyPair

        args = TlsArgs(
            settings=TlsSettings(),
            namespace="kube-system",
            server_dns_names=["kiam-server"],
            authority=authority,
        )
        pair = authority.issue(
            "tls-agent",
            certificate_requests(args)["agent"],
            KeyPair(cert_pem=cert, key_pem=key),
            pulumi.ResourceOptions(),
        )
        pulumi.Output.from_input(pair.cert_pem).apply(issued.append)

    run_component(program)
    leaf = x509.load_pem_x509_certificate(issued[0].encode())
    leaf.verify_directly_issued_by(x509.load_pem_x509_certificate(cert.encode()))


def test_the_cluster_shape_of_the_production_example() -> None:
    shape = shape_of(_settings(example_config("production")))
    assert shape.node_names == ["worker-0", "worker-1", "worker-2", "tolerated-0", "untolerated-0"]
    gpu = next(n for n in shape.nodes if n["metadata"]["name"] == "tolerated-0")
    assert gpu["spec"]["taints"] == [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    ]
    untolerated = next(n for n in shape.nodes if n["metadata"]["name"] == "untolerated-0")
    assert untolerated["spec"]["taints"] == [UNTOLERATED_TAINT]
    zones = [n["metadata"]["labels"]["topology.kubernetes.io/zone"] for n in shape.nodes[:3]]
    assert zones == ["us-east-1a", "us-east-1b", "us-east-1c"]


def test_the_cluster_shape_has_the_namespaces_applications_name() -> None:
    config = base_config(
        applications={
            "billing": {"namespace": "billing", "roleName": "billing-api"},
            "search": {"namespace": "search", "roleName": "search-api"},
        }
    )
    assert shape_of(_settings(config)).namespaces == ["billing", "search"]


def test_a_namespace_whose_annotation_is_taken_over_carries_it_as_found() -> None:
    found = "arn:aws:iam::111122223333:role/kiam-apps/legacy-.*"
    config = base_config(existingPermitted={"legacy": found})
    shape = shape_of(_settings(config))
    assert shape.namespaces == ["legacy"]
    assert shape.namespace_annotations == {"legacy": {"iam.amazonaws.com/permitted": found}}


def test_the_composition_needs_no_cloud_sdk() -> None:
    """The composition and the stand-ins import neither pulumi-aws nor pulumi-tls: the e2e runs
    them where those providers do not exist, and only `program.aws_cloud` brings them in."""
    import subprocess
    import sys

    probe = (
        "import sys, components.kiam, program.stack, program.kubernetes, e2e.standins.cloud;"
        "print(sorted(m for m in ('pulumi_aws', 'pulumi_tls') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
    done = subprocess.run(
        [sys.executable, "-c", probe.replace("program.stack", "program.aws_cloud")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "['pulumi_aws', 'pulumi_tls']"

"""The real-engine stand-ins produce what the real parts produce: a node group whose name changes
exactly when EKS would replace it, nodes labelled and tainted as EKS does, certificates with
exactly the requested names and usages, and the cluster shape a stack expects."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any, cast

import pulumi
import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID

from e2e.harness.app_pods import Workload, admitted_pod
from e2e.harness.kube import Kube
from e2e.harness.shape import UNTOLERATED_TAINT, shape_of
from e2e.harness.toolchain import REPO
from e2e.harness.watcher import Application, credentials
from e2e.standins import pod_identity
from e2e.standins.certificates import LocalAuthority
from e2e.standins.cloud import KwokCloud
from e2e.standins.nodes import KwokNodeGroup, KwokNodeGroupArgs, group_arguments
from e2e.standins.roles import ComputedApplicationRole
from e2e.standins.signing import make_ca
from kiam_eks.components.tls import TlsArgs, certificate_requests
from kiam_eks.contracts import names
from kiam_eks.contracts.agent_rule import Rule
from kiam_eks.contracts.pod_identity import ASSOCIATION_REPLACE_FIELDS
from kiam_eks.program.kube_api import KubeApi
from kiam_eks.settings.applications import ServedBy
from kiam_eks.settings.loader import settings_from_values
from kiam_eks.settings.node_group import NodeGroupSettings
from kiam_eks.settings.stack import StackSettings
from kiam_eks.settings.tls import TlsSettings
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
    # Every argument, one annotation each; replaced, create first, on those EKS replaces a group
    # for and those the program's own options for the group name (replaceOnChanges).
    assert config_map.delete_before_replace is False
    assert config_map.replace_on_changes == tuple(
        f"metadata.annotations.{a}"
        for a in (
            "subnetIds", "instanceTypes", "capacityType", "amiType", "launchTemplate", "taints",
            "version",
        )
    )  # fmt: skip
    assert sorted(config_map.inputs["metadata"]["annotations"]) == sorted(_arguments(settings))
    assert config_map.inputs["metadata"]["annotations"]["taints"] == (
        '[{"effect": "NO_SCHEDULE", "key": "dedicated", "value": "kiam-server"}]'
    )
    assert "data" not in config_map.inputs

    group = config_map.outputs["metadata"]["name"]
    assert group.startswith("nodes-")
    # Sorted: the mock engine records registrations in the order they complete, which varies.
    nodes = sorted(rec.by_type("kubernetes:core/v1:Node"), key=lambda n: n.name)
    assert [n.name for n in nodes] == ["nodes-0", "nodes-1", "nodes-2"]
    assert all(n.parent == component for n in nodes)
    first = nodes[0].inputs
    software = first["metadata"]["name"].removeprefix(f"{group}-").split("-")[0]
    assert first["metadata"]["name"] == f"{group}-{software}-0" and len(software) == 5
    # Applied with force, as EKS applies a group's labels and taints to its nodes.
    assert first["metadata"]["annotations"] == {
        "kwok.x-k8s.io/node": "fake",
        "pulumi.com/patchForce": "true",
    }
    assert first["metadata"]["labels"] == {
        "team": "platform",
        "dedicated": "kiam-server",
        "eks.amazonaws.com/nodegroup": group,
        "eks.amazonaws.com/capacityType": "ON_DEMAND",
        "node.kubernetes.io/instance-type": "t3.medium",
        "topology.kubernetes.io/zone": "eu-west-1a",
        "topology.kubernetes.io/region": "eu-west-1",
        "kubernetes.io/hostname": f"{group}-{software}-0",
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "type": "kwok",
    }
    assert first["spec"]["taints"] == [
        {"key": "dedicated", "value": "kiam-server", "effect": "NoSchedule"}
    ]
    zones = [n.inputs["metadata"]["labels"]["topology.kubernetes.io/zone"] for n in nodes]
    assert zones == ["eu-west-1a", "eu-west-1b", "eu-west-1a"]


def test_the_stand_in_group_is_replaced_on_what_the_programs_options_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without the program's replaceOnChanges, only what EKS itself replaces a group for replaces
    the stand-in: a taint or a version then takes EKS's in-place path, as on AWS."""
    from e2e.standins import nodes

    monkeypatch.setattr(nodes, "replacement_options", lambda: pulumi.ResourceOptions())
    settings = _group()
    rec = run_component(
        lambda: KwokNodeGroup(
            "nodes",
            KwokNodeGroupArgs(settings=settings, region="eu-west-1", kubernetes_version="1.33"),
        )
    )
    assert rec.one("kubernetes:core/v1:ConfigMap").replace_on_changes == tuple(
        f"metadata.annotations.{a}"
        for a in ("subnetIds", "instanceTypes", "capacityType", "amiType")
    )


def test_a_version_update_in_place_rolls_the_groups_nodes_under_the_same_group() -> None:
    """The Kubernetes version and the launch template's content are what a node runs: changed in
    place (EKS's version update), the group keeps its name and gets new Nodes."""

    def node_names(version: str, disk: int) -> list[str]:
        rec = run_component(
            lambda: KwokNodeGroup(
                "nodes",
                KwokNodeGroupArgs(
                    settings=_group(diskSizeGiB=disk),
                    region="eu-west-1",
                    kubernetes_version=version,
                ),
            )
        )
        return sorted(
            n.inputs["metadata"]["name"].split("-", 2)[2]
            for n in rec.by_type("kubernetes:core/v1:Node")
        )

    same = node_names("1.33", 20)
    assert node_names("1.33", 20) == same
    assert node_names("1.34", 20) != same
    assert node_names("1.33", 30) != same


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


def test_the_stand_in_cloud_loads_no_signing_code_until_a_certificate_is_made() -> None:
    # pulumi-tls signs in its own plugin process: a program run that issues nothing new (every
    # no-change `up`) pays for none of it, and neither does one on the stand-ins.
    code = "import sys, e2e.standins.cloud; print(sorted(m for m in sys.modules if m.startswith(('cryptography', 'e2e.standins.signing'))))"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"


def test_an_adopted_ca_signs_the_leaves(tmp_path: Path) -> None:
    cert, key = make_ca("running-install-ca", 24 * 365)
    authority = LocalAuthority(tmp_path)
    issued: list[str] = []

    def program() -> None:
        from kiam_eks.components.cloud import KeyPair

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
    them where those providers do not exist, and only `components.aws_cloud` brings them in."""
    import subprocess
    import sys

    probe = (
        "import sys, components.kiam, program.stack, program.kubernetes, e2e.standins.cloud;"
        "print(sorted(m for m in ('pulumi_aws', 'pulumi_tls') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
    done = subprocess.run(
        [sys.executable, "-c", probe.replace("program.stack", "components.aws_cloud")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "['pulumi_aws', 'pulumi_tls']"


# --- EKS Pod Identity's stand-ins, the admission and the credential judge ------------------------

APP_VALUES = {"namespace": "billing", "roleName": "billing-api"}
ROLE_ARN = "arn:aws:iam::111122223333:role/kiam-apps/billing-api"
BASE_ARN = "arn:aws:iam::111122223333:role/kiam-apps/"


class FakeCluster:
    """The few reads the stand-ins and the admission make, from a dict of objects by path."""

    def __init__(self, objects: dict[str, Any]) -> None:
        self.objects = objects

    def get_or_none(self, path: str) -> Any:
        return self.objects.get(path)

    def get(self, path: str) -> Any:
        return self.objects[path]

    def items(self, path: str) -> list[dict[str, Any]]:
        return list(self.objects.get(path, []))


def _pod_identity_settings(**agent: Any) -> StackSettings:
    values = {
        "applications": {
            "billing": {**APP_VALUES, "servedBy": "kiam+podIdentity", "serviceAccount": "api"}
        },
        "podIdentityAgent": agent,
    }
    return _settings(base_config(**values))


def test_the_association_is_one_object_per_namespace_and_service_account(tmp_path: Path) -> None:
    settings = _pod_identity_settings()
    cloud = KwokCloud(settings, tmp_path)
    app = settings.applications["billing"]
    rec = run_component(
        lambda: cloud.pod_identity_association(
            "kiam-app-billing-pod-identity",
            app,
            ComputedApplicationRole.of(app, settings, "arn:aws:iam::111122223333:role/"),
            pulumi.ResourceOptions(delete_before_replace=False),
        )
    )
    (config_map,) = rec.registrations
    assert (config_map.type, config_map.name) == (
        "kubernetes:core/v1:ConfigMap",
        "kiam-app-billing-pod-identity",
    )
    assert config_map.inputs["metadata"] == {
        "name": "pod-identity.billing.api",
        "namespace": "kube-system",
        "labels": {"kiam.e2e/stand-in": "pod-identity-association"},
    }
    # The association's inputs under their pulumi-aws names.
    assert config_map.inputs["data"] == {
        "clusterName": settings.cluster.name,
        "namespace": "billing",
        "serviceAccount": "api",
        "roleArn": ROLE_ARN,
    }
    assert config_map.delete_before_replace is False


def test_the_pair_alone_names_the_association() -> None:
    # The fields whose change replaces an association on AWS that a pair holds give a new name
    # (the engine replaces it); a role ARN is not part of the name.
    assert pod_identity.association_name("billing", "api") == "pod-identity.billing.api"
    names = {
        pod_identity.association_name(namespace, account)
        for namespace in ("billing", "billing-api", "api")
        for account in ("api", "billing", "api-billing")
    }
    assert len(names) == 9
    assert set(ASSOCIATION_REPLACE_FIELDS) == {"clusterName", "namespace", "serviceAccount"}
    assert set(ASSOCIATION_REPLACE_FIELDS) < set(
        pod_identity.association_data("c", "n", "s", ROLE_ARN)
    )


def test_a_managed_agent_is_the_add_on_s_daemon_set_kept_when_unmanaged(tmp_path: Path) -> None:
    settings = _pod_identity_settings(manageAddon=True, addonVersion="v1.3.4-eksbuild.1")
    cloud = KwokCloud(settings, tmp_path, cast(KubeApi, FakeCluster({})))
    rec = run_component(
        lambda: cloud.pod_identity_agent("kiam-pod-identity-agent", pulumi.ResourceOptions())
    )
    (agent,) = rec.registrations
    assert (agent.type, agent.name) == ("kubernetes:apps/v1:DaemonSet", "kiam-pod-identity-agent")
    assert agent.inputs["metadata"]["name"] == "eks-pod-identity-agent"
    assert agent.inputs["metadata"]["namespace"] == "kube-system"
    template = agent.inputs["spec"]["template"]["spec"]
    assert template["hostNetwork"] is True
    assert template["tolerations"] == [{"operator": "Exists"}]
    (container,) = template["containers"]
    assert container["image"] == "eks/eks-pod-identity-agent:v1.3.4-eksbuild.1"
    assert container["args"] == [
        "--port", "80", "--cluster-name", settings.cluster.name, "--probe-port", "2703",
    ]  # fmt: skip
    # The add-on is preserved when the stack stops managing it.
    assert agent.retain_on_delete is True


def test_an_unmanaged_agent_is_looked_for_in_the_cluster(tmp_path: Path) -> None:
    settings = _pod_identity_settings()
    path = "/apis/apps/v1/namespaces/kube-system/daemonsets/eks-pod-identity-agent"
    there = KwokCloud(settings, tmp_path, cast(KubeApi, FakeCluster({path: {"kind": "DaemonSet"}})))
    assert there.pod_identity_agent("agent", pulumi.ResourceOptions()) is None
    missing = KwokCloud(settings, tmp_path, cast(KubeApi, FakeCluster({})))
    with pytest.raises(pulumi.RunError) as refused:
        missing.pod_identity_agent("agent", pulumi.ResourceOptions())
    assert str(refused.value) == (
        f"cluster {settings.cluster.name} has no eks-pod-identity-agent add-on, which Pod "
        "Identity needs on the nodes: install it, or set kiam:podIdentityAgent.manageAddon: true"
    )


ASSOCIATIONS = "/api/v1/namespaces/kube-system/configmaps?labelSelector=kiam.e2e/stand-in=pod-identity-association"


def _association(namespace: str, account: str, role: str = ROLE_ARN) -> dict[str, Any]:
    return {"data": pod_identity.association_data("dev", namespace, account, role)}


@pytest.mark.parametrize(
    ("objects", "env"),
    [
        ({}, {}),
        (
            {ASSOCIATIONS: [_association("billing", "api")]},
            {
                "AWS_CONTAINER_CREDENTIALS_FULL_URI": "http://169.254.170.23/v1/credentials",
                "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE": "/var/run/secrets/pods.eks.amazonaws.com/serviceaccount/eks-pod-identity-token",
            },
        ),
        # Another pair's association wires nothing here.
        ({ASSOCIATIONS: [_association("billing", "default")]}, {}),
        (
            {
                "/api/v1/namespaces/billing/serviceaccounts/api": {
                    "metadata": {"annotations": {"eks.amazonaws.com/role-arn": ROLE_ARN}}
                }
            },
            {
                "AWS_ROLE_ARN": ROLE_ARN,
                "AWS_WEB_IDENTITY_TOKEN_FILE": "/var/run/secrets/eks.amazonaws.com/serviceaccount/token",
            },
        ),
    ],
)
def test_a_pod_is_wired_by_what_exists_when_it_is_admitted(
    objects: dict[str, Any], env: dict[str, str]
) -> None:
    workload = Workload(
        app="billing", namespace="billing", service_account="api", role_annotation="billing-api"
    )
    pod = admitted_pod(cast(Kube, FakeCluster(objects)), workload, "billing-1-0")
    (container,) = pod["spec"]["containers"]
    assert {e["name"]: e["value"] for e in container.get("env", [])} == env
    assert pod["spec"]["serviceAccountName"] == "api"
    assert pod["metadata"]["annotations"] == {"iam.amazonaws.com/role": "billing-api"}
    assert len(pod["spec"].get("volumes", [])) == (1 if env else 0)


def _pod(
    env: dict[str, str], annotation: str | None = None, account: str = "api"
) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "p",
            "namespace": "billing",
            "annotations": {"iam.amazonaws.com/role": annotation} if annotation else {},
        },
        "spec": {
            "serviceAccountName": account,
            "containers": [
                {"name": "app", "env": [{"name": k, "value": v} for k, v in env.items()]}
            ],
        },
    }


POD_IDENTITY_ENV = {
    "AWS_CONTAINER_CREDENTIALS_FULL_URI": "http://169.254.170.23/v1/credentials",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE": "/t",
}
IRSA_ENV = {"AWS_ROLE_ARN": ROLE_ARN, "AWS_WEB_IDENTITY_TOKEN_FILE": "/t"}
PERMITS = f"{BASE_ARN}billing-api"
ASSOCIATED = {("billing", "api"): pod_identity.association_data("dev", "billing", "api", ROLE_ARN)}
# A role of another account reached by role chaining: EKS hands out the target's credentials.
CHAIN_ARN = "arn:aws:iam::111122223333:role/kiam/kiam-chain-billing-"
CHAINED = {
    ("billing", "api"): pod_identity.association_data(
        "dev", "billing", "api", CHAIN_ARN, target_role_arn=ROLE_ARN
    )
}
KIAM_ONLY = frozenset({ServedBy.KIAM})


class _Served:
    """A kiam chain that serves every pod (the cases above judge what comes before it)."""

    def serves(self, pod: dict[str, Any]) -> Any:
        from e2e.harness.kiam_chain import Verdict

        return Verdict(True, "agent on worker-0 to server-old")


SERVED: Any = _Served()


@pytest.mark.parametrize(
    ("pod", "permitted", "associations", "agent", "states", "expected"),
    [
        (
            _pod({}, "billing-api"),
            PERMITS,
            {},
            False,
            KIAM_ONLY,
            ("kiam", True, "permitted by its namespace; agent on worker-0 to server-old"),
        ),
        (
            _pod({}, "billing-api"),
            "",
            {},
            False,
            KIAM_ONLY,
            ("kiam", False, "its namespace does not permit the role"),
        ),
        (
            _pod({}, "other"),
            PERMITS,
            {},
            False,
            KIAM_ONLY,
            ("kiam", False, f"annotated for {BASE_ARN}other"),
        ),
        # Pod Identity wins over kiam: the chain reaches the metadata API last.
        (
            _pod(POD_IDENTITY_ENV, "billing-api"),
            PERMITS,
            ASSOCIATED,
            True,
            KIAM_ONLY,
            ("podIdentity", True, f"associated to {ROLE_ARN}"),
        ),
        (
            _pod(POD_IDENTITY_ENV, "billing-api"),
            PERMITS,
            {},
            True,
            KIAM_ONLY,
            ("podIdentity", False, "no association for api"),
        ),
        (
            _pod(POD_IDENTITY_ENV, account="default"),
            PERMITS,
            ASSOCIATED,
            True,
            KIAM_ONLY,
            ("podIdentity", False, "no association for default"),
        ),
        (
            _pod(POD_IDENTITY_ENV),
            "",
            ASSOCIATED,
            False,
            KIAM_ONLY,
            ("podIdentity", False, "no eks-pod-identity-agent"),
        ),
        (
            _pod(POD_IDENTITY_ENV),
            "",
            CHAINED,
            True,
            KIAM_ONLY,
            ("podIdentity", True, f"associated to {ROLE_ARN}"),
        ),
        (
            # The chain role without its target: pods would get the chain role's credentials.
            _pod(POD_IDENTITY_ENV),
            "",
            {("billing", "api"): pod_identity.association_data("dev", "billing", "api", CHAIN_ARN)},
            True,
            KIAM_ONLY,
            ("podIdentity", False, f"associated to {CHAIN_ARN}"),
        ),
        (
            _pod(IRSA_ENV, "billing-api"),
            PERMITS,
            {},
            False,
            frozenset({ServedBy.KIAM_AND_IRSA}),
            ("irsa", True, "web identity, trusted"),
        ),
        (
            _pod(IRSA_ENV, "billing-api"),
            PERMITS,
            {},
            False,
            KIAM_ONLY,
            ("irsa", False, "the role does not trust the service account"),
        ),
        (
            _pod({}),
            PERMITS,
            ASSOCIATED,
            True,
            KIAM_ONLY,
            ("none", False, "no wiring and no kiam annotation"),
        ),
    ],
)
def test_a_pod_s_credentials_are_the_first_source_its_sdk_finds(
    pod: dict[str, Any],
    permitted: str,
    associations: dict[tuple[str, str], dict[str, Any]],
    agent: bool,
    states: frozenset[ServedBy],
    expected: tuple[str, bool, str],
) -> None:
    app = Application("billing", "billing", ROLE_ARN, BASE_ARN)
    found = credentials(pod, app, permitted, associations, agent, states, SERVED)
    assert (found.source, found.works, found.why) == expected


# --- the kiam chain: rule, agent, server, certificate ------------------------------------------

WORKER = "worker-0"


class FakeModel:
    """The rule model's answers for one node, without a cluster."""

    def __init__(self, rules: list[Rule], secrets: dict[str, list[tuple[int, dict[str, str]]]]):
        self.rules, self.secrets = rules, secrets

    def destination(self, node: str, t: float | None = None) -> Rule | None:
        from kiam_eks.contracts.agent_rule import NodeRules

        return NodeRules(list(self.rules)).destination("eni0a1b2c3d4e5") if node == WORKER else None

    def created_at(self, uid: str) -> int | None:
        return {"server-old": 5, "server-new": 20}.get(uid)

    def secret_versions(self, namespace: str, name: str) -> list[tuple[int, dict[str, str]]]:
        return self.secrets.get(name, [])


def _tls_data(dns: list[str]) -> dict[str, str]:
    import base64

    from cryptography import x509 as cx509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = cx509.Name([cx509.NameAttribute(NameOID.COMMON_NAME, "kiam-server")])
    import datetime

    now = datetime.datetime.now(datetime.UTC)
    cert = (
        cx509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(cx509.SubjectAlternativeName([cx509.DNSName(d) for d in dns]), False)
        .sign(key, hashes.SHA256())
    )
    return {"tls.crt": base64.b64encode(cert.public_bytes(serialization.Encoding.PEM)).decode()}


HOST = "kiam-server.kiam.svc.cluster.local"
NEW_HOST = "kiam-grpc.kiam.svc.cluster.local"


def _agent(port: int = 8181, host: str = HOST, ready: bool = True) -> dict[str, Any]:
    return {
        "metadata": {"name": "agent", "uid": "agent"},
        "spec": {
            "nodeName": WORKER,
            "containers": [
                {
                    "command": ["/kiam"],
                    "args": [
                        "agent",
                        "--iptables",
                        f"--port={port}",
                        f"--server-address={host}:9610",
                    ],
                }
            ],
        },
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def _server(uid: str, ip: str = "10.0.0.9", bind: int = 9610) -> dict[str, Any]:
    return {
        "metadata": {"name": uid, "uid": uid, "namespace": "kiam"},
        "spec": {
            "containers": [{"args": ["server", f"--bind=0.0.0.0:{bind}"]}],
            "volumes": [{"name": "tls", "secret": {"secretName": "kiam-server-certificate"}}],
        },
        "status": {"podIP": ip, "conditions": [{"type": "Ready", "status": "True"}]},
    }


def _chain(
    rules: list[Rule],
    agents: list[dict[str, Any]],
    servers: list[dict[str, Any]],
    versions: list[tuple[int, list[str]]],
    endpoints: set[str] | None = None,
) -> Any:
    from e2e.harness.kiam_chain import ChainState

    secrets = {"kiam-server-certificate": [(r, _tls_data(d)) for r, d in versions]}
    return ChainState(
        agents=agents,
        servers=servers,
        # The old and the new Service, both listing the server (until the old one goes).
        ready_endpoints={
            service: endpoints if endpoints is not None else {"10.0.0.9"}
            for service in ("kiam-server", "kiam-grpc")
        },
        model=cast(Any, FakeModel(rules, secrets)),
    )


RULE = Rule("10.0.1.1", 8181, "eni+")
OLD_NAMES = [HOST, "localhost"]


@pytest.mark.parametrize(
    ("chain", "expected"),
    [
        (
            lambda: _chain([RULE], [_agent()], [_server("server-old")], [(1, OLD_NAMES)]),
            (True, "agent on worker-0 to server-old"),
        ),
        (
            lambda: _chain([], [_agent()], [_server("server-old")], [(1, OLD_NAMES)]),
            (False, "no kiam rule on worker-0: the node's own metadata service"),
        ),
        # The old rule first, the agent on another port: connection refused.
        (
            lambda: _chain(
                [RULE, Rule("10.0.1.1", 8282, "eni+")],
                [_agent(port=8282)],
                [_server("server-old")],
                [(1, OLD_NAMES)],
            ),
            (
                False,
                "worker-0's rule sends it to port 8181, where nothing listens: its agent listens "
                "on 8282",
            ),
        ),
        (
            lambda: _chain(
                [RULE], [_agent(ready=False)], [_server("server-old")], [(1, OLD_NAMES)]
            ),
            (False, "worker-0's rule sends it to port 8181: no Ready agent there"),
        ),
        (
            lambda: _chain(
                [RULE], [_agent()], [_server("server-old")], [(1, OLD_NAMES)], endpoints=set()
            ),
            (
                False,
                f"the agent on worker-0 dials {HOST}:9610: no Ready server there names {HOST} on "
                "9610",
            ),
        ),
        (
            lambda: _chain([RULE], [_agent()], [_server("server-old", bind=443)], [(1, OLD_NAMES)]),
            (
                False,
                f"the agent on worker-0 dials {HOST}:9610: no Ready server there names {HOST} on "
                "9610",
            ),
        ),
        # A server created before the Secret named the new host may still serve the old one.
        (
            lambda: _chain(
                [RULE],
                [_agent(host=NEW_HOST)],
                [_server("server-old")],
                [(1, OLD_NAMES), (10, [*OLD_NAMES, NEW_HOST])],
            ),
            (
                False,
                f"the agent on worker-0 dials {NEW_HOST}:9610: no Ready server there names "
                f"{NEW_HOST} on 9610",
            ),
        ),
        # One created after it has loaded it.
        (
            lambda: _chain(
                [RULE],
                [_agent(host=NEW_HOST)],
                [_server("server-new")],
                [(1, OLD_NAMES), (10, [*OLD_NAMES, NEW_HOST])],
            ),
            (True, "agent on worker-0 to server-new"),
        ),
        # A name the Secret dropped since the server started may be gone from what it serves.
        (
            lambda: _chain(
                [RULE],
                [_agent()],
                [_server("server-new")],
                [(1, [*OLD_NAMES, NEW_HOST]), (30, [NEW_HOST])],
            ),
            (
                False,
                f"the agent on worker-0 dials {HOST}:9610: no Ready server there names {HOST} on "
                "9610",
            ),
        ),
    ],
)
def test_kiam_serves_a_pod_only_through_rule_agent_server_and_certificate(
    chain: Any, expected: tuple[bool, str]
) -> None:
    pod = {"metadata": {"name": "p"}, "spec": {"nodeName": WORKER}}
    verdict = chain().serves(pod)
    assert (verdict.works, verdict.why) == expected


def test_a_kiam_pod_the_chain_cannot_serve_is_not_served() -> None:
    app = Application("billing", "billing", ROLE_ARN, BASE_ARN)
    unserved = _chain([], [_agent()], [_server("server-old")], [(1, OLD_NAMES)])
    found = credentials(
        _pod({}, "billing-api") | {"spec": {"nodeName": WORKER, "containers": []}},
        app,
        PERMITS,
        {},
        False,
        KIAM_ONLY,
        unserved,
    )
    assert (found.source, found.works, found.why) == (
        "kiam",
        False,
        "no kiam rule on worker-0: the node's own metadata service",
    )


def test_the_oidc_issuer_is_the_api_servers_own_from_its_discovery_document(
    tmp_path: Path,
) -> None:
    # Kubernetes, "Managing Service Accounts", "Service account issuer discovery": the API
    # server serves its OpenID Provider Configuration at /.well-known/openid-configuration,
    # whose `issuer` is the one of its service account tokens, EKS's OIDC issuer.
    settings = _pod_identity_settings()
    issuer = "https://oidc.eks.eu-west-1.amazonaws.com/id/4D967A30111BF29F0EBA01C448B375C1"
    cluster = FakeCluster({"/.well-known/openid-configuration": {"issuer": issuer}})
    assert KwokCloud(settings, tmp_path, cast(KubeApi, cluster)).oidc_issuer == issuer
    # Under the mock engine there is no cluster to ask.
    assert KwokCloud(settings, tmp_path).oidc_issuer is None

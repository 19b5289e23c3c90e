"""KiamKubernetes, the public Kubernetes-side component: the same servers and agents as `Kiam`'s
from arguments any language passes, its outputs, and every bad argument refused before anything
is registered."""

from __future__ import annotations

from typing import Any

import pulumi
import pytest

from kiam_eks import ArgumentsError, KiamKubernetes, KiamKubernetesArgs
from kiam_eks.contracts import tokens
from tests.conftest import run_component, types_and_names
from tools.mock_engine import Recording

ACCOUNT = "111122223333"
SERVER_ROLE = f"arn:aws:iam::{ACCOUNT}:role/kiam/kiam-iam-server"
APP_ROLE = f"arn:aws:iam::{ACCOUNT}:role/kiam/team-a/billing"
ARGS: KiamKubernetesArgs = {
    "node_group_name": "kiam-server-20260101",
    "server_role_arn": SERVER_ROLE,
    "role_base_arn": f"arn:aws:iam::{ACCOUNT}:role/",
    "region": "eu-west-1",
    "ca_certificate_pem": "CA PEM",
    "server_certificate_pem": "SERVER PEM",
    "server_private_key_pem": "SERVER KEY",
    "agent_certificate_pem": "AGENT PEM",
    "agent_private_key_pem": "AGENT KEY",
    "permitted_roles": {"team-a": [APP_ROLE]},
}
SECRET, DEPLOYMENT, DAEMON_SET = tokens.SECRET, tokens.DEPLOYMENT, tokens.DAEMON_SET


def run(**changes: Any) -> Recording:
    args = {**ARGS, **changes}
    return run_component(lambda: KiamKubernetes("kiam", args))  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def recording() -> Recording:
    return run()


def test_the_exact_resources_and_their_parents(recording: Recording) -> None:
    top = recording.one(tokens.KIAM_KUBERNETES)
    assert types_and_names(recording.children_of(top.urn)) == {
        (tokens.TLS, "kiam-tls"),
        (tokens.SERVER, "kiam-server"),
        (tokens.AGENT, "kiam-agent"),
        (tokens.NAMESPACE, "kiam-namespace"),
        (tokens.NAMESPACE_PERMISSIONS, "kiam-permissions"),
    }
    assert types_and_names(recording.children_of(recording.one(tokens.TLS).urn)) == {
        (SECRET, "kiam-tls-server"),
        (SECRET, "kiam-tls-agent"),
    }
    assert types_and_names(recording.registrations) - types_and_names(
        [top, *recording.children_of(top.urn)]
    ) == {
        (SECRET, "kiam-tls-server"),
        (SECRET, "kiam-tls-agent"),
        ("kubernetes:core/v1:ServiceAccount", "kiam-server"),
        ("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole", "kiam-server"),
        (tokens.CLUSTER_ROLE_BINDING, "kiam-server"),
        (tokens.SERVICE, "kiam-server"),
        (tokens.PDB, "kiam-server"),
        (DEPLOYMENT, "kiam-server"),
        ("kubernetes:core/v1:ServiceAccount", "kiam-agent"),
        (DAEMON_SET, "kiam-agent"),
        (tokens.NAMESPACE_PATCH, "kiam-permissions-team-a"),
    }


def test_the_certificates_given_are_stored_as_they_are_and_secret(recording: Recording) -> None:
    for role in ("server", "agent"):
        secret = recording.one(SECRET, f"kiam-tls-{role}")
        assert secret.inputs["stringData"] == {
            "tls.crt": f"{role.upper()} PEM",
            "tls.key": f"{role.upper()} KEY",
            "ca.crt": "CA PEM",
        }
        assert secret.secret_paths == ("stringData",)
        assert secret.inputs["metadata"] == {
            "name": f"kiam-{role}-certificate",
            "namespace": "kiam",
        }


def test_the_servers_assume_the_given_role_on_the_given_node_group(recording: Recording) -> None:
    deployment = recording.one(DEPLOYMENT)
    args = deployment.inputs["spec"]["template"]["spec"]["containers"][0]["args"]
    assert f"--assume-role-arn={SERVER_ROLE}" in args
    assert f"--role-base-arn=arn:aws:iam::{ACCOUNT}:role/" in args
    assert "--region=eu-west-1" in args
    spec = deployment.inputs["spec"]["template"]["spec"]
    assert spec["nodeSelector"] == {"eks.amazonaws.com/nodegroup": "kiam-server-20260101"}
    # Exactly the group's taint, and a node gone unhealthy for 30 s (kiam:server.
    # unhealthyNodeTolerationSeconds), not the default 300 s.
    assert spec["tolerations"] == [
        {"key": "dedicated", "operator": "Equal", "value": "kiam-server", "effect": "NoSchedule"},
        {
            "key": "node.kubernetes.io/not-ready",
            "operator": "Exists",
            "tolerationSeconds": 30,
            "effect": "NoExecute",
        },
        {
            "key": "node.kubernetes.io/unreachable",
            "operator": "Exists",
            "tolerationSeconds": 30,
            "effect": "NoExecute",
        },
    ]


def test_the_agents_wait_for_the_servers_and_never_run_on_their_nodes(
    recording: Recording,
) -> None:
    agents = recording.one(DAEMON_SET)
    assert recording.one(DEPLOYMENT).urn in agents.dependencies
    affinity = agents.inputs["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
    assert affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] == [
        {"matchExpressions": [{"key": "dedicated", "operator": "NotIn", "values": ["kiam-server"]}]}
    ]
    container = agents.inputs["spec"]["template"]["spec"]["containers"][0]
    assert "--server-address=kiam-server.kiam.svc.cluster.local:9610" in container["args"]


def test_the_permitted_roles_are_the_namespaces_annotation(recording: Recording) -> None:
    patch = recording.one(tokens.NAMESPACE_PATCH)
    assert patch.inputs["metadata"]["name"] == "team-a"
    assert patch.inputs["metadata"]["annotations"] == {
        "iam.amazonaws.com/permitted": "^(arn:aws:iam::111122223333:role/kiam/team-a/billing)$"
    }


OUTPUTS = (
    "server_address",
    "server_dns_names",
    "namespace",
    "server_deployment_name",
    "agent_daemon_set_name",
)


def test_the_outputs() -> None:
    def build() -> None:
        kiam = KiamKubernetes("kiam", ARGS)
        for name in OUTPUTS:
            pulumi.export(name, getattr(kiam, name))

    assert run_component(build).stack_outputs == {
        "server_address": "kiam-server.kiam.svc.cluster.local:9610",
        "server_dns_names": [
            "kiam-server",
            "kiam-server.kiam",
            "kiam-server.kiam.svc",
            "kiam-server.kiam.svc.cluster.local",
            "localhost",
        ],
        "namespace": "kiam",
        "server_deployment_name": "kiam-server",
        "agent_daemon_set_name": "kiam-agent",
    }


def test_the_same_kubernetes_objects_as_the_whole_install(base_run: Recording) -> None:
    """Given what `Kiam` made on AWS (its role ARNs and node group name), the Kubernetes side
    alone renders every server and agent object exactly as the whole install does."""
    outputs = base_run.stack_outputs
    alone = run(
        node_group_name=outputs["nodeGroupName"],
        server_role_arn=outputs["serverRoleArn"],
        role_base_arn=outputs["roleBaseArn"],
        permitted_roles={},
    )
    compared = [
        (DEPLOYMENT, "kiam-server"),
        (DAEMON_SET, "kiam-agent"),
        (tokens.SERVICE, "kiam-server"),
        (tokens.PDB, "kiam-server"),
        (tokens.CLUSTER_ROLE_BINDING, "kiam-server"),
        ("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole", "kiam-server"),
        ("kubernetes:core/v1:ServiceAccount", "kiam-server"),
        ("kubernetes:core/v1:ServiceAccount", "kiam-agent"),
        (tokens.NAMESPACE, "kiam-namespace"),
    ]
    for type_, name in compared:
        assert alone.one(type_, name).inputs == base_run.one(type_, name).inputs, (type_, name)


def test_an_output_for_the_server_role_is_checked_once_known() -> None:
    with pytest.raises(Exception, match="server_role_arn \\(serverRoleArn\\): must be an IAM role"):
        run(server_role_arn=pulumi.Output.from_input("kiam-server"))


# A cluster domain of 233 characters: the name agents dial, `kiam-server.kiam.svc.<domain>`, is 254.
LONG_DOMAIN = ".".join(["a" * 60] * 3 + ["b" * 50])


@pytest.mark.parametrize(
    ("changes", "problems"),
    [
        (
            {"server": {"replicas": 1}},
            ["server.replicas: Input should be greater than or equal to 2 (got 1)"],
        ),
        (
            # The same rule, and the same words, as the stack file's (settings/kubernetes_side.py).
            {"server": {"replicas": 4}},
            [
                "node_group.minSize must be at least server.replicas (got 3 nodes for 4 servers): "
                "hard anti-affinity puts one server per node, so the extra servers would stay "
                "Pending"
            ],
        ),
        (
            {"region": "mars-1", "namespace": {"name": "Kiam"}},
            [
                "region: 'mars-1' is not an AWS region such as eu-west-1",
                "namespace.name: 'Kiam' is not a DNS-1123 label (a-z, 0-9, -; 63 at most)",
            ],
        ),
        (
            {"namespace": {"name": "kube-system"}},
            [
                "namespace.create must be false for 'kube-system': every cluster has it, so "
                "creating it would fail with AlreadyExists"
            ],
        ),
        (
            {"agent": {"tolerations": [{"operator": "Exists"}]}},
            [
                "agent.tolerations[0] tolerates the server taint dedicated=kiam-server:NoSchedule: "
                "agents must never run on server nodes (they would expose the nodes' credentials)"
            ],
        ),
        (
            {"cluster_domain": LONG_DOMAIN},
            [
                f"cluster_domain {LONG_DOMAIN!r} makes the name agents dial, "
                "<server.serviceName>.<namespace.name>.svc.<clusterDomain>, 254 characters: DNS "
                "allows 253"
            ],
        ),
        (
            {"role_base_arn": "arn:aws:iam::111122223333:role", "server_role_arn": "kiam"},
            [
                "role_base_arn (roleBaseArn): must be an IAM role ARN prefix ending in `/`, such "
                "as arn:aws:iam::111122223333:role/ (got 'arn:aws:iam::111122223333:role')",
                "server_role_arn (serverRoleArn): must be an IAM role ARN, such as "
                "arn:aws:iam::111122223333:role/kiam-server (got 'kiam')",
            ],
        ),
        (
            {"permitted_roles": {"Team_A": [APP_ROLE], "team-b": ["billing"]}},
            [
                "permitted_roles (permittedRoles)['Team_A']: 'Team_A' is not a DNS-1123 label "
                "(a-z, 0-9, -; 63 at most) (a namespace)",
                "permitted_roles (permittedRoles)['team-b']: must be an IAM role ARN, such as "
                "arn:aws:iam::111122223333:role/kiam-server (got 'billing')",
            ],
        ),
        (
            {"node_group": {"taint": {"effect": "NoSchedule"}}},
            [
                "node_group.taint.effect: Input should be 'NO_SCHEDULE' or 'NO_EXECUTE' "
                '(got "NoSchedule")'
            ],
        ),
        (
            # The group is made elsewhere: of `Kiam`'s node group settings, only these two.
            {"node_group": {"min_size": 3, "subnets": []}},
            ["node_group.subnets: is not a known setting (allowed here: minSize, taint)"],
        ),
        (
            # An argument of version 0.1.0: named, with what is allowed now.
            {"server_replicas": 2},
            [
                "server_replicas: is not an argument of KiamKubernetes (allowed: agent, "
                "agent_certificate_pem, agent_private_key_pem, ca_certificate_pem, "
                "cluster_domain, namespace, node_group, node_group_name, permitted_roles, "
                "region, role_base_arn, server, server_certificate_pem, "
                "server_private_key_pem, server_role_arn)"
            ],
        ),
    ],
)
def test_bad_arguments_are_refused_before_anything_is_registered(
    changes: dict[str, Any], problems: list[str]
) -> None:
    with pytest.raises(ArgumentsError) as refused:
        run(**changes)
    assert refused.value.problems == problems
    noun = "problem" if len(problems) == 1 else "problems"
    assert str(refused.value).startswith(
        f"KiamKubernetes 'kiam': invalid arguments ({len(problems)} {noun}):\n  - "
    )


def test_a_missing_region_is_named() -> None:
    args = {k: v for k, v in ARGS.items() if k != "region"}
    with pytest.raises(ArgumentsError) as refused:
        run_component(lambda: KiamKubernetes("kiam", args))  # type: ignore[arg-type]
    assert refused.value.problems == ["region: is required"]


def test_numbers_from_the_engine_are_read_as_the_settings_read_them() -> None:
    """Other languages' numbers reach the provider as floats (protobuf's Struct): 3.0 is 3."""
    recording = run(server={"replicas": 3.0}, node_group={"min_size": 4.0})
    spec = recording.one(DEPLOYMENT).inputs["spec"]
    assert spec["replicas"] == 3
    # A spare node: a new server starts before an old one stops (components/server.py).
    assert spec["strategy"]["rollingUpdate"] == {"maxSurge": 1, "maxUnavailable": 0}

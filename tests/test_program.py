"""The whole program: every example stack, providers, outputs, ordering, and a node group replacement."""

from __future__ import annotations

import json
from typing import cast

import pytest

from kiam_eks.contracts import tokens
from tests.conftest import EXAMPLE_STACKS, base_config, example_config, pod_spec, run_program
from tools.mock_engine import Recording

KIAM_CHILDREN = {
    (tokens.IAM, "kiam-iam"),
    (tokens.SERVER_NODE_GROUP, "kiam-server-nodes"),
    ("kubernetes:core/v1:Namespace", "kiam-namespace"),
    (tokens.TLS, "kiam-tls"),
    (tokens.SERVER, "kiam-server"),
    (tokens.AGENT, "kiam-agent"),
}


# Every resource one stack creates; component tests pin down what each one is.
STACK_RESOURCES = {
    ("pulumi:providers:aws", "aws"),
    ("pulumi:providers:kubernetes", "kubernetes"),
    (tokens.KIAM, "kiam"),
    *KIAM_CHILDREN,
    ("aws:iam/role:Role", "kiam-iam-server-node"),
    ("aws:iam/role:Role", "kiam-iam-server"),
    (
        "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
        "kiam-iam-server-node-AmazonEKSWorkerNodePolicy",
    ),
    (
        "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
        "kiam-iam-server-node-AmazonEKS_CNI_Policy",
    ),
    (
        "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
        "kiam-iam-server-node-AmazonEC2ContainerRegistryReadOnly",
    ),
    ("aws:iam/rolePolicy:RolePolicy", "kiam-iam-server-node-assume-server"),
    ("aws:iam/rolePolicy:RolePolicy", "kiam-iam-server-assume-applications"),
    ("aws:ec2/launchTemplate:LaunchTemplate", "kiam-server-nodes-launch-template"),
    ("aws:eks/nodeGroup:NodeGroup", "kiam-server-nodes"),
    ("tls:index/privateKey:PrivateKey", "kiam-tls-ca"),
    ("tls:index/privateKey:PrivateKey", "kiam-tls-server"),
    ("tls:index/privateKey:PrivateKey", "kiam-tls-agent"),
    ("tls:index/selfSignedCert:SelfSignedCert", "kiam-tls-ca"),
    ("tls:index/certRequest:CertRequest", "kiam-tls-server"),
    ("tls:index/certRequest:CertRequest", "kiam-tls-agent"),
    ("tls:index/locallySignedCert:LocallySignedCert", "kiam-tls-server"),
    ("tls:index/locallySignedCert:LocallySignedCert", "kiam-tls-agent"),
    ("kubernetes:core/v1:Secret", "kiam-tls-server"),
    ("kubernetes:core/v1:Secret", "kiam-tls-agent"),
    ("kubernetes:core/v1:ServiceAccount", "kiam-server"),
    ("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole", "kiam-server"),
    ("kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding", "kiam-server"),
    ("kubernetes:core/v1:Service", "kiam-server"),
    ("kubernetes:policy/v1:PodDisruptionBudget", "kiam-server"),
    ("kubernetes:apps/v1:Deployment", "kiam-server"),
    ("kubernetes:core/v1:ServiceAccount", "kiam-agent"),
    ("kubernetes:apps/v1:DaemonSet", "kiam-agent"),
}


# What an example stack's applications add (production's orders role is also trusted via IRSA).
EXAMPLE_APPLICATION_RESOURCES = {
    "dev": set(),
    "production": {
        (tokens.APPLICATION_ROLE, "kiam-app-orders"),
        ("aws:iam/role:Role", "kiam-app-orders"),
        ("aws:iam/rolePolicy:RolePolicy", "kiam-app-orders-queue"),
        (tokens.NAMESPACE_PERMISSIONS, "kiam-permissions"),
        ("kubernetes:core/v1:NamespacePatch", "kiam-permissions-orders"),
        # payments, moving to Pod Identity: its role and policy, its association, the agent
        # add-on the stack manages, and kiam's permission while kiam still serves it.
        (tokens.APPLICATION_ROLE, "kiam-app-payments"),
        ("aws:iam/role:Role", "kiam-app-payments"),
        (
            "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
            "kiam-app-payments-AmazonDynamoDBReadOnlyAccess",
        ),
        (
            "aws:eks/podIdentityAssociation:PodIdentityAssociation",
            "kiam-app-payments-pod-identity",
        ),
        ("aws:eks/addon:Addon", "kiam-pod-identity-agent"),
        ("kubernetes:core/v1:NamespacePatch", "kiam-permissions-payments"),
    },
}


@pytest.mark.parametrize("stack", EXAMPLE_STACKS)
def test_every_example_stack_plans_cleanly(stack: str) -> None:
    rec = run_program(example_config(stack), stack=stack)
    expected = STACK_RESOURCES | EXAMPLE_APPLICATION_RESOURCES[stack]
    assert [(r.type, r.name) for r in rec.registrations if (r.type, r.name) not in expected] == []
    assert {(r.type, r.name) for r in rec.registrations} == expected
    urns = [r.urn for r in rec.registrations]
    assert len(set(urns)) == len(urns) == len(expected), "the real engine rejects duplicate URNs"


def test_exact_top_level_shape(base_run: Recording) -> None:
    kiam = base_run.one(tokens.KIAM)
    stack_children = {
        (r.type, r.name)
        for r in base_run.registrations
        if r.parent.split("::")[2] == "pulumi:pulumi:Stack"
    }
    assert stack_children == {
        ("pulumi:providers:aws", "aws"),
        ("pulumi:providers:kubernetes", "kubernetes"),
        (tokens.KIAM, "kiam"),
    }
    assert {(r.type, r.name) for r in base_run.children_of(kiam.urn)} == KIAM_CHILDREN


def test_every_resource_uses_the_stack_providers(base_run: Recording) -> None:
    aws = base_run.one("pulumi:providers:aws")
    k8s = base_run.one("pulumi:providers:kubernetes")
    for r in base_run.registrations:
        if not r.custom or r.type.startswith("pulumi:providers:"):
            continue
        package = r.type.split(":")[0]
        expected = {"aws": aws, "kubernetes": k8s}.get(package)
        if expected is None:
            assert package == "tls"
            continue
        assert r.provider == f"{expected.urn}::{expected.id}", r.urn


def test_aws_provider_is_pinned_to_the_account_and_region(base_run: Recording) -> None:
    aws = base_run.one("pulumi:providers:aws")
    assert aws.inputs["region"] == "eu-west-1"
    assert json.loads(aws.inputs["allowedAccountIds"]) == ["111122223333"]


def test_kubernetes_provider_execs_the_aws_cli_by_default(base_run: Recording) -> None:
    k8s = base_run.one("pulumi:providers:kubernetes")
    assert k8s.secret_paths == ("kubeconfig",)
    kubeconfig = json.loads(k8s.inputs["kubeconfig"])
    assert kubeconfig["clusters"][0]["cluster"]["server"].endswith(
        ".gr7.eu-west-1.eks.amazonaws.com"
    )
    assert kubeconfig["users"][0]["user"]["exec"]["args"] == [
        "eks", "get-token", "--cluster-name", "test", "--region", "eu-west-1",
    ]  # fmt: skip
    assert k8s.inputs["clusterIdentifier"] == "test"


def test_kubernetes_provider_can_embed_a_token() -> None:
    rec = run_program(base_config(cluster={"kubernetesAuth": "token"}))
    kubeconfig = json.loads(rec.one("pulumi:providers:kubernetes").inputs["kubeconfig"])
    assert kubeconfig["users"][0]["user"] == {"token": "k8s-aws-v1.mock-token"}


def test_outputs(base_run: Recording) -> None:
    group = base_run.one("aws:eks/nodeGroup:NodeGroup")
    assert base_run.stack_outputs == {
        "nodeRoleArn": base_run.one("aws:iam/role:Role", "kiam-iam-server-node").outputs["arn"],
        "serverRoleArn": base_run.one("aws:iam/role:Role", "kiam-iam-server").outputs["arn"],
        "roleBaseArn": "arn:aws:iam::111122223333:role/kiam-apps/",
        "applicationRolePatterns": ["arn:aws:iam::111122223333:role/kiam-apps/*"],
        "nodeGroupName": group.outputs["nodeGroupName"],
        "serverAddress": "kiam-server.kiam.svc.cluster.local:9610",
        "namespace": "kiam",
        "applications": {},
        "installed": {
            "version": 1,
            "cluster": {"name": "test", "accountId": "111122223333", "region": "eu-west-1"},
            "retired": False,
            "namespace": {"name": "kiam", "owner": "stack"},
            "server": {
                "serviceName": "kiam-server",
                "clusterDomain": "cluster.local",
                "grpcPort": 9610,
            },
            "agents": {
                "daemonSet": "kiam-agent",
                "port": 8181,
                "removesRuleOnExit": False,
                "hostInterface": "eni+",
                "tolerations": [],
            },
            "adoption": None,
            "roleBaseArn": "arn:aws:iam::111122223333:role/kiam-apps/",
            "kiamRolePath": "/kiam/",
            "applications": {},
            "existingPermitted": {},
        },
    }


def test_namespace_is_privileged_for_the_agent_or_left_alone() -> None:
    rec = run_program(base_config())
    ns = rec.one("kubernetes:core/v1:Namespace")
    assert ns.inputs["metadata"] == {
        "name": "kiam",
        "labels": {"pod-security.kubernetes.io/enforce": "privileged"},
    }
    existing = run_program(base_config(namespace={"name": "kube-system", "create": False}))
    assert existing.by_type("kubernetes:core/v1:Namespace") == []
    assert (
        existing.one("kubernetes:apps/v1:Deployment").inputs["metadata"]["namespace"]
        == "kube-system"
    )


def test_replacing_the_node_group_moves_the_servers_with_it() -> None:
    """A change that forces a new node group gives it a new name; the Deployment follows, so the
    engine updates (and awaits) it before deleting the old group."""
    before = run_program(base_config())
    after = run_program(base_config(node_group={"instanceTypes": ["m6i.large"]}))
    names = []
    for rec in (before, after):
        group = rec.one("aws:eks/nodeGroup:NodeGroup")
        deployment = rec.one("kubernetes:apps/v1:Deployment")
        name = group.outputs["nodeGroupName"]
        assert pod_spec(deployment)["nodeSelector"] == {"eks.amazonaws.com/nodegroup": name}
        assert group.urn in deployment.property_dependencies["spec"]
        assert group.urn in deployment.dependencies
        assert group.delete_before_replace is False
        assert "nodeGroupName" not in group.inputs
        names.append(name)
    assert names[0] != names[1]
    assert all(n.startswith("kiam-server-") for n in names)


def test_an_in_place_node_group_change_keeps_the_name() -> None:
    before = run_program(base_config())
    after = run_program(base_config(node_group={"maxSize": 5, "labels": {"team": "a"}}))
    assert (
        before.one("aws:eks/nodeGroup:NodeGroup").outputs["nodeGroupName"]
        == after.one("aws:eks/nodeGroup:NodeGroup").outputs["nodeGroupName"]
    )


def test_two_kiam_components_do_not_collide() -> None:
    from kiam_eks.components.kiam import Kiam, KiamArgs
    from kiam_eks.components.public_args import arguments_of
    from kiam_eks.settings.loader import settings_from_values
    from tests.conftest import run_component

    values = {k.removeprefix("kiam:"): v for k, v in base_config().items()}
    args = cast(KiamArgs, arguments_of(settings_from_values(values, "test")))

    def both() -> None:
        Kiam("blue", args)
        Kiam("green", args)

    rec = run_component(both)
    urns = [r.urn for r in rec.registrations]
    assert len(urns) == 2 * (len(STACK_RESOURCES) - 2)  # two of everything but the providers
    assert len(set(urns)) == len(urns)


def test_an_image_bump_changes_only_what_runs_the_image(base_run: Recording) -> None:
    """A reviewer's preview of a kiam upgrade shows the Deployment and the DaemonSet, nothing else:
    the version label lives only on the objects that run the image."""
    image = "quay.io/uswitch/kiam:v4.3"
    bumped = run_program(base_config(server={"image": image}, agent={"image": image}))
    before = {r.urn: r.inputs for r in base_run.registrations}
    after = {r.urn: r.inputs for r in bumped.registrations}
    assert before.keys() == after.keys()
    changed = {bumped.by_urn(urn).type for urn in after if after[urn] != before[urn]}
    assert changed == {"kubernetes:apps/v1:Deployment", "kubernetes:apps/v1:DaemonSet"}

"""The IAM chain: exact roles, trust principals, actions and resources."""

from __future__ import annotations

import json

import pytest

from kiam_eks.components.iam import Iam, IamArgs
from kiam_eks.contracts import tokens
from kiam_eks.settings.cluster import ClusterSettings
from kiam_eks.settings.iam import IamSettings
from tests.conftest import run_component, types_and_names
from tools.mock_engine import Recording

CLUSTER = ClusterSettings(
    name="test", account_id="111122223333", region="eu-west-1", kubernetes_version="1.33"
)
ROLE, POLICY, ATTACHMENT = (
    "aws:iam/role:Role",
    "aws:iam/rolePolicy:RolePolicy",
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
)


BUILT: list[Iam] = []


def build(
    iam: IamSettings | None = None,
    cluster: ClusterSettings = CLUSTER,
    application_paths: tuple[str, ...] = (),
) -> Recording:
    BUILT.clear()
    return run_component(
        lambda: BUILT.append(
            Iam(
                "iam",
                IamArgs(
                    cluster=cluster,
                    cluster_name=cluster.name,
                    iam=iam or IamSettings(),
                    application_paths=application_paths,
                ),
            )
        )
    )


def test_creates_exactly_the_chain() -> None:
    rec = build()
    assert types_and_names(rec.registrations) == {
        (tokens.IAM, "iam"),
        (ROLE, "iam-server-node"),
        (ROLE, "iam-server"),
        (ATTACHMENT, "iam-server-node-AmazonEKSWorkerNodePolicy"),
        (ATTACHMENT, "iam-server-node-AmazonEKS_CNI_Policy"),
        (ATTACHMENT, "iam-server-node-AmazonEC2ContainerRegistryReadOnly"),
        (POLICY, "iam-server-node-assume-server"),
        (POLICY, "iam-server-assume-applications"),
    }
    component = rec.one(tokens.IAM)
    assert {r.parent for r in rec.registrations if r.custom} == {component.urn}


def test_node_role_is_an_ec2_role_with_the_worker_policies() -> None:
    rec = build()
    node = rec.one(ROLE, "iam-server-node")
    assert json.loads(node.inputs["assumeRolePolicy"]) == {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "ec2.amazonaws.com"},
                "Action": "sts:AssumeRole",
            }
        ],
    }
    assert node.inputs["path"] == "/kiam/"
    assert "tags" not in node.inputs  # the checks find it as the node group's role
    assert sorted(a.inputs["policyArn"] for a in rec.by_type(ATTACHMENT)) == [
        "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly",
        "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
        "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
    ]
    assert {a.inputs["role"] for a in rec.by_type(ATTACHMENT)} == {node.outputs["name"]}


def test_only_the_node_role_may_assume_the_server_role_and_it_may_assume_nothing_else() -> None:
    rec = build()
    node, server = rec.one(ROLE, "iam-server-node"), rec.one(ROLE, "iam-server")
    assert json.loads(server.inputs["assumeRolePolicy"]) == {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"AWS": node.outputs["arn"]},
                "Action": "sts:AssumeRole",
            }
        ],
    }
    assert server.property_dependencies["assumeRolePolicy"] == (node.urn,)
    assert server.inputs["maxSessionDuration"] == 3600
    node_policy = rec.one(POLICY, "iam-server-node-assume-server")
    assert node_policy.inputs["role"] == node.outputs["name"]
    assert json.loads(node_policy.inputs["policy"])["Statement"] == [
        {
            "Sid": "AssumeKiamServerRole",
            "Effect": "Allow",
            "Action": "sts:AssumeRole",
            "Resource": server.outputs["arn"],
        }
    ]


@pytest.mark.parametrize(
    ("iam", "pattern", "base"),
    [
        (
            IamSettings(),
            "arn:aws:iam::111122223333:role/kiam-apps/*",
            "arn:aws:iam::111122223333:role/kiam-apps/",
        ),
        (
            IamSettings(application_role_path="/apps/", application_role_name_prefix="k8s-"),
            "arn:aws:iam::111122223333:role/apps/k8s-*",
            "arn:aws:iam::111122223333:role/apps/",
        ),
        (
            IamSettings(application_role_path="/", application_role_name_prefix="eks-"),
            "arn:aws:iam::111122223333:role/eks-*",
            "arn:aws:iam::111122223333:role/",
        ),
        (
            IamSettings(application_role_path="/", allow_any_role=True),
            "arn:aws:iam::111122223333:role/*",
            "arn:aws:iam::111122223333:role/",
        ),
    ],
)
def test_server_role_may_assume_only_the_configured_pattern(
    iam: IamSettings, pattern: str, base: str
) -> None:
    rec = build(iam)
    server = rec.one(ROLE, "iam-server")
    policy = rec.one(POLICY, "iam-server-assume-applications")
    assert policy.inputs["role"] == server.outputs["name"]
    assert json.loads(policy.inputs["policy"])["Statement"] == [
        {
            "Sid": "AssumeApplicationRoles",
            "Effect": "Allow",
            "Action": "sts:AssumeRole",
            "Resource": pattern,
        }
    ]
    assert "tags" not in server.inputs  # the checks find it as the servers' role
    assert BUILT[0].role_base_arn == base
    assert BUILT[0].application_role_patterns == [pattern]


BASE = "arn:aws:iam::111122223333:role/kiam-apps/"


@pytest.mark.parametrize(
    ("iam", "paths", "patterns"),
    [
        # A prefix: each sub-path needs its own pattern, with the prefix (kiam issue #11).
        (
            IamSettings(application_role_name_prefix="app-"),
            ("/kiam-apps/", "/kiam-apps/team-b/", "/kiam-apps/team-a/", "/kiam-apps/team-a/"),
            [f"{BASE}app-*", f"{BASE}team-a/app-*", f"{BASE}team-b/app-*"],
        ),
        # IAM's `*` crosses `/`: a sub-path the base pattern already covers adds nothing.
        (
            IamSettings(application_role_name_prefix="app-"),
            ("/kiam-apps/app-team/", "/kiam-apps/team-a/"),
            [f"{BASE}app-*", f"{BASE}team-a/app-*"],
        ),
        (IamSettings(), ("/kiam-apps/team-a/", "/kiam-apps/team-a/x/"), [f"{BASE}*"]),
        (
            IamSettings(application_role_path="/", allow_any_role=True),
            ("/anywhere/",),
            ["arn:aws:iam::111122223333:role/*"],
        ),
    ],
)
def test_one_pattern_per_application_path_the_base_does_not_cover(
    iam: IamSettings, paths: tuple[str, ...], patterns: list[str]
) -> None:
    rec = build(iam, application_paths=paths)
    statement = json.loads(rec.one(POLICY, "iam-server-assume-applications").inputs["policy"])[
        "Statement"
    ]
    assert statement == [
        {
            "Sid": "AssumeApplicationRoles",
            "Effect": "Allow",
            "Action": "sts:AssumeRole",
            "Resource": patterns if len(patterns) > 1 else patterns[0],
        }
    ]
    assert BUILT[0].application_role_patterns == patterns


def test_partition_follows_the_region() -> None:
    china = ClusterSettings(
        name="c", account_id="111122223333", region="cn-north-1", kubernetes_version="1.33"
    )
    rec = build(cluster=china)
    assert {a.inputs["policyArn"].split(":")[1] for a in rec.by_type(ATTACHMENT)} == {"aws-cn"}
    assert (
        json.loads(rec.one(POLICY, "iam-server-assume-applications").inputs["policy"])["Statement"][
            0
        ]["Resource"]
        == "arn:aws-cn:iam::111122223333:role/kiam-apps/*"
    )


def test_two_instances_do_not_collide() -> None:
    def both() -> None:
        Iam("a", IamArgs(cluster=CLUSTER, cluster_name=CLUSTER.name, iam=IamSettings()))
        Iam("b", IamArgs(cluster=CLUSTER, cluster_name=CLUSTER.name, iam=IamSettings()))

    rec = run_component(both)
    urns = [r.urn for r in rec.registrations]
    assert len(urns) == 16
    assert len(set(urns)) == len(urns)


def test_kiam_role_names_start_with_the_prefix_the_pattern_rule_assumes(
    base_run: Recording,
) -> None:
    """AWS names a role given no `name` after its Pulumi name (plus a suffix); settings/iam.py
    keeps the application-role pattern off every name starting with the prefix."""
    from kiam_eks.contracts import names

    own = [r.name for r in base_run.by_type(ROLE) if "name" not in r.inputs]
    assert own == ["kiam-iam-server-node", "kiam-iam-server"]
    assert all(name.startswith(names.OWN_ROLE_NAME_PREFIX) for name in own)

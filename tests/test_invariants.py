"""Each guarantee holds for every example stack, and each check catches its own breakage exactly."""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Callable
from typing import Any

import pytest

from kiam_eks.invariants import UNKNOWN, Resource, Violation, check_all
from kiam_eks.invariants.recorded import resources_from_recording
from tests.conftest import EXAMPLE_STACKS, base_config, example_config, expected_of, run_program
from tools.mock_engine import Recording, run_main

DEPLOYMENT = "kubernetes:apps/v1:Deployment"
DAEMON_SET = "kubernetes:apps/v1:DaemonSet"
BASE_EXPECTED = expected_of(base_config())


@pytest.mark.parametrize("stack", EXAMPLE_STACKS)
def test_every_example_stack_keeps_every_guarantee(stack: str) -> None:
    rec = run_program(example_config(stack), stack=stack)
    assert check_all(resources_from_recording(rec), expected_of(example_config(stack))) == []


@pytest.fixture(scope="module")
def resources(base_run: Recording) -> list[Resource]:
    return resources_from_recording(base_run)


def find(resources: list[Resource], type_: str, name: str | None = None) -> Resource:
    return next(r for r in resources if r.type == type_ and (name is None or r.name == name))


def mutate(
    resources: list[Resource],
    type_: str,
    change: Callable[[dict[str, Any]], Any],
    name: str | None = None,
    **fields: Any,
) -> list[Resource]:
    """A copy of the resources with one resource's inputs (and optionally other fields) changed."""
    target = find(resources, type_, name)
    inputs = copy.deepcopy(dict(target.inputs))
    change(inputs)
    changed = dataclasses.replace(target, inputs=inputs, **fields)
    return [changed if r is target else r for r in resources]


def pod(inputs: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = inputs["spec"]["template"]["spec"]
    return spec


def args(inputs: dict[str, Any]) -> list[str]:
    result: list[str] = pod(inputs)["containers"][0]["args"]
    return result


def without_flag(flag: str) -> Callable[[dict[str, Any]], None]:
    def change(inputs: dict[str, Any]) -> None:
        pod(inputs)["containers"][0]["args"] = [
            a for a in args(inputs) if not a.startswith(flag + "=")
        ]

    return change


def replace_flag(flag: str, value: str) -> Callable[[dict[str, Any]], None]:
    def change(inputs: dict[str, Any]) -> None:
        pod(inputs)["containers"][0]["args"] = [
            f"{flag}={value}" if a.startswith(flag + "=") else a for a in args(inputs)
        ]

    return change


def urn(resources: list[Resource], type_: str, name: str | None = None) -> str:
    return find(resources, type_, name).urn


ROLE_TYPE = "aws:iam/role:Role"
ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
POLICY_ATTACHMENT = "aws:iam/policyAttachment:PolicyAttachment"
ADMIN = "arn:aws:iam::aws:policy/AdministratorAccess"


def attachment_urn(role: str, type_: str = ATTACHMENT) -> str:
    return f"urn:pulumi:test::kiam::kiam:index:Iam${type_}::{role}-admin"


def attach(
    resources: list[Resource], role: str, arn: str, type_: str = ATTACHMENT
) -> list[Resource]:
    """The resources and one more managed policy on a role, attached as the program would
    write it: the role's name taken from the role (`role`, or `roles` for a PolicyAttachment)."""
    target = find(resources, ROLE_TYPE, role)
    prop = "roles" if type_ == POLICY_ATTACHMENT else "role"
    name = target.outputs["name"]
    attachment = Resource(
        urn=attachment_urn(role, type_),
        type=type_,
        name=f"{role}-admin",
        inputs={prop: [name] if prop == "roles" else name, "policyArn": arn},
        dependencies=frozenset({target.urn}),
        property_dependencies={prop: frozenset({target.urn}), "policyArn": frozenset()},
    )
    return [*resources, attachment]


def test_baseline_has_no_violation(resources: list[Resource]) -> None:
    assert check_all(resources, BASE_EXPECTED) == []


# (description, mutation producing the broken resources, the exact violations expected)
Case = tuple[
    str,
    Callable[[list[Resource]], list[Resource]],
    Callable[[list[Resource]], list[tuple[str, str, str]]],
]

CASES: list[Case] = [
    (
        "1 soft anti-affinity",
        lambda rs: mutate(rs, DEPLOYMENT, lambda i: pod(i)["affinity"].update(podAntiAffinity={})),
        lambda rs: [
            (
                "server-anti-affinity",
                urn(rs, DEPLOYMENT),
                "no required pod anti-affinity on kubernetes.io/hostname selecting server pods only",
            )
        ],
    ),
    (
        "1 anti-affinity selector also matches agents",
        lambda rs: mutate(
            rs,
            DEPLOYMENT,
            lambda i: pod(i)["affinity"]["podAntiAffinity"][
                "requiredDuringSchedulingIgnoredDuringExecution"
            ][0]["labelSelector"].update(matchLabels={"app.kubernetes.io/name": "kiam"}),
        ),
        lambda rs: [
            (
                "server-anti-affinity",
                urn(rs, DEPLOYMENT),
                "no required pod anti-affinity on kubernetes.io/hostname selecting server pods only",
            )
        ],
    ),
    (
        "2 tolerates unschedulable",
        lambda rs: mutate(
            rs,
            DEPLOYMENT,
            lambda i: pod(i)["tolerations"].append(
                {
                    "key": "node.kubernetes.io/unschedulable",
                    "operator": "Exists",
                    "effect": "NoSchedule",
                }
            ),
        ),
        lambda rs: [
            (
                "server-tolerations",
                urn(rs, DEPLOYMENT),
                "tolerates node.kubernetes.io/unschedulable, so drains would not move it",
            )
        ],
    ),
    (
        "2 tolerates everything",
        lambda rs: mutate(
            rs, DEPLOYMENT, lambda i: pod(i)["tolerations"].append({"operator": "Exists"})
        ),
        lambda rs: [
            (
                "server-tolerations",
                urn(rs, DEPLOYMENT),
                "tolerates every taint (operator Exists with no key)",
            )
        ],
    ),
    (
        "2 misses the dedicated taint and the pin",
        lambda rs: mutate(
            rs, DEPLOYMENT, lambda i: (pod(i)["tolerations"].pop(0), pod(i).pop("nodeSelector"))
        ),
        lambda rs: [
            (
                "server-tolerations",
                urn(rs, DEPLOYMENT),
                "does not tolerate the dedicated taint dedicated=kiam-server:NoSchedule",
            ),
            (
                "server-tolerations",
                urn(rs, DEPLOYMENT),
                "is not pinned to the dedicated node group (nodeSelector eks.amazonaws.com/nodegroup)",
            ),
        ],
    ),
    (
        "3 PDB allows two down",
        lambda rs: mutate(
            rs,
            "kubernetes:policy/v1:PodDisruptionBudget",
            lambda i: i["spec"].update(maxUnavailable=2),
        ),
        lambda rs: [
            (
                "server-disruption-budget",
                urn(rs, "kubernetes:policy/v1:PodDisruptionBudget"),
                "allows 2 disruptions of 3 servers; must be exactly 1 and fewer than the replicas",
            )
        ],
    ),
    (
        "3 PDB selects something else",
        lambda rs: mutate(
            rs,
            "kubernetes:policy/v1:PodDisruptionBudget",
            lambda i: i["spec"]["selector"].update(matchLabels={"app": "kiam"}),
        ),
        lambda rs: [
            (
                "server-disruption-budget",
                urn(rs, DEPLOYMENT),
                "no PodDisruptionBudget selects exactly its pods",
            )
        ],
    ),
    (
        "4 Service has a cluster IP",
        lambda rs: mutate(rs, "kubernetes:core/v1:Service", lambda i: i["spec"].pop("clusterIP")),
        lambda rs: [
            (
                "server-service",
                urn(rs, "kubernetes:core/v1:Service"),
                "is not headless (clusterIP: None)",
            )
        ],
    ),
    (
        "4 Service selects other pods",
        lambda rs: mutate(
            rs, "kubernetes:core/v1:Service", lambda i: i["spec"].update(selector={"app": "kiam"})
        ),
        lambda rs: [
            (
                "server-service",
                urn(rs, "kubernetes:core/v1:Service"),
                "its selector is not the server pods' selector",
            )
        ],
    ),
    (
        "4 agent dials no --server-address",
        lambda rs: mutate(rs, DAEMON_SET, without_flag("--server-address")),
        lambda rs: [
            ("server-service", urn(rs, DAEMON_SET), "needs exactly one --server-address"),
            ("ordering", urn(rs, DEPLOYMENT), "does not wait for its Service"),
        ],
    ),
    (
        "4 the Service agents dial is not the stack's",
        lambda rs: without_resource(rs, "kubernetes:core/v1:Service", "kiam-server"),
        lambda rs: [
            (
                "server-service",
                urn(rs, DAEMON_SET),
                "--server-address host kiam-server.kiam.svc.cluster.local is not a Service of "
                "this stack",
            ),
            ("ordering", urn(rs, DEPLOYMENT), "does not wait for its Service"),
        ],
    ),
    (
        "5 agent dials a name the certificate lacks",
        lambda rs: mutate(
            rs,
            "tls:index/certRequest:CertRequest",
            lambda i: i.update(dnsNames=["kiam-server", "localhost"]),
            name="kiam-tls-server",
        ),
        lambda rs: [
            (
                "server-certificate",
                urn(rs, DAEMON_SET),
                "dials kiam-server.kiam.svc.cluster.local, which the server certificate does not name",
            )
        ],
    ),
    (
        "6 agent tolerates the server taint",
        lambda rs: mutate(
            rs,
            DAEMON_SET,
            lambda i: pod(i)["tolerations"].append({"key": "dedicated", "operator": "Exists"}),
        ),
        lambda rs: [
            (
                "agent-placement",
                urn(rs, DAEMON_SET),
                "tolerates the server taint dedicated=kiam-server",
            )
        ],
    ),
    (
        "6 agent without node affinity",
        lambda rs: mutate(rs, DAEMON_SET, lambda i: pod(i).pop("affinity")),
        lambda rs: [
            (
                "agent-placement",
                urn(rs, DAEMON_SET),
                "no required node affinity keeps it off nodes labelled dedicated=kiam-server",
            )
        ],
    ),
    (
        "7 no assume-role ARN",
        lambda rs: mutate(rs, DEPLOYMENT, without_flag("--assume-role-arn")),
        lambda rs: [
            ("server-args", urn(rs, DEPLOYMENT), "needs exactly one non-empty --assume-role-arn")
        ],
    ),
    (
        "7 no metrics address",
        lambda rs: mutate(rs, DEPLOYMENT, without_flag("--prometheus-listen-addr")),
        lambda rs: [
            (
                "server-args",
                urn(rs, DEPLOYMENT),
                "needs exactly one non-empty --prometheus-listen-addr",
            )
        ],
    ),
    (
        "7 role base ARN autodetected",
        lambda rs: mutate(rs, DEPLOYMENT, lambda i: args(i).append("--role-base-arn-autodetect")),
        lambda rs: [
            (
                "server-args",
                urn(rs, DEPLOYMENT),
                "autodetects --role-base-arn (needs the metadata API from the pod); set it "
                "explicitly",
            )
        ],
    ),
    (
        "7 session of 15m",
        lambda rs: mutate(rs, DEPLOYMENT, replace_flag("--session-duration", "15m")),
        lambda rs: [
            (
                "server-args",
                urn(rs, DEPLOYMENT),
                "session duration ['15m'] is not above 15m and at most 60m",
            )
        ],
    ),
    (
        "7 session flags repeated",
        lambda rs: mutate(
            rs,
            DEPLOYMENT,
            lambda i: args(i).extend(["--session-duration=30m", "--session-refresh=1m"]),
        ),
        lambda rs: [
            (
                "server-args",
                urn(rs, DEPLOYMENT),
                "repeats --session-duration and --session-refresh",
            )
        ],
    ),
    (
        "7 refresh not below duration",
        lambda rs: mutate(rs, DEPLOYMENT, replace_flag("--session-refresh", "1h")),
        lambda rs: [
            (
                "server-args",
                urn(rs, DEPLOYMENT),
                "session refresh 1h is not below the session duration 60m",
            )
        ],
    ),
    (
        "8 server role may assume any role",
        lambda rs: mutate(
            rs,
            "aws:iam/rolePolicy:RolePolicy",
            lambda i: i.update(policy=i["policy"].replace("role/kiam-apps/*", "role/*")),
            name="kiam-iam-server-assume-applications",
        ),
        lambda rs: [
            (
                "iam-least-privilege",
                urn(rs, "aws:iam/rolePolicy:RolePolicy", "kiam-iam-server-assume-applications"),
                "sts:AssumeRole on arn:aws:iam::111122223333:role/* without allowAnyRole: true",
            )
        ],
    ),
    (
        "8 node role may assume more than the server role",
        lambda rs: mutate(
            rs,
            "aws:iam/rolePolicy:RolePolicy",
            lambda i: i.update(
                policy=json.dumps(
                    {
                        "Statement": [
                            {
                                "Effect": "Allow",
                                "Action": "sts:AssumeRole",
                                "Resource": "arn:aws:iam::111122223333:role/other",
                            }
                        ]
                    }
                )
            ),
            name="kiam-iam-server-node-assume-server",
        ),
        lambda rs: [
            (
                "iam-least-privilege",
                urn(rs, "aws:iam/rolePolicy:RolePolicy", "kiam-iam-server-node-assume-server"),
                "lets the server nodes assume arn:aws:iam::111122223333:role/other, not only the kiam-server role",
            )
        ],
    ),
    (
        "8 wildcard action",
        lambda rs: mutate(
            rs,
            "aws:iam/rolePolicy:RolePolicy",
            lambda i: i.update(policy=i["policy"].replace('"sts:AssumeRole"', '"sts:*"')),
            name="kiam-iam-server-assume-applications",
        ),
        lambda rs: [
            (
                "iam-least-privilege",
                urn(rs, "aws:iam/rolePolicy:RolePolicy", "kiam-iam-server-assume-applications"),
                "grants ['sts:*']; kiam's roles need only sts:AssumeRole",
            )
        ],
    ),
    (
        "8 server role trusts the whole account",
        lambda rs: mutate(
            rs,
            "aws:iam/role:Role",
            lambda i: i.update(
                assumeRolePolicy=json.dumps(
                    {
                        "Statement": [
                            {
                                "Effect": "Allow",
                                "Principal": {"AWS": "arn:aws:iam::111122223333:root"},
                                "Action": "sts:AssumeRole",
                            }
                        ]
                    }
                )
            ),
            name="kiam-iam-server",
        ),
        lambda rs: [
            (
                "iam-least-privilege",
                urn(rs, "aws:iam/role:Role", "kiam-iam-server"),
                "trust admits {'AWS': 'arn:aws:iam::111122223333:root'}, not only the server node role",
            )
        ],
    ),
    (
        "8 AdministratorAccess attached to the node role",
        lambda rs: attach(rs, "kiam-iam-server-node", ADMIN),
        lambda rs: [
            (
                "iam-least-privilege",
                attachment_urn("kiam-iam-server-node"),
                f"gives the server node role the managed policy {ADMIN}, beyond the EKS node policies",
            )
        ],
    ),
    (
        "8 AdministratorAccess attached to the server role",
        lambda rs: attach(rs, "kiam-iam-server", ADMIN),
        lambda rs: [
            (
                "iam-least-privilege",
                attachment_urn("kiam-iam-server"),
                f"gives the kiam-server role the managed policy {ADMIN}, while it needs none",
            )
        ],
    ),
    (
        "8 AdministratorAccess attached to the server role among other roles",
        lambda rs: attach(rs, "kiam-iam-server", ADMIN, type_=POLICY_ATTACHMENT),
        lambda rs: [
            (
                "iam-least-privilege",
                attachment_urn("kiam-iam-server", POLICY_ATTACHMENT),
                f"gives the kiam-server role the managed policy {ADMIN}, while it needs none",
            )
        ],
    ),
    (
        "8 the server role's own managedPolicyArns",
        lambda rs: mutate(
            rs, ROLE_TYPE, lambda i: i.update(managedPolicyArns=[ADMIN]), name="kiam-iam-server"
        ),
        lambda rs: [
            (
                "iam-least-privilege",
                urn(rs, ROLE_TYPE, "kiam-iam-server"),
                f"gives the kiam-server role the managed policy {ADMIN}, while it needs none",
            )
        ],
    ),
    (
        "8 the node role's own inlinePolicies",
        lambda rs: mutate(
            rs,
            ROLE_TYPE,
            lambda i: i.update(
                inlinePolicies=[
                    {
                        "name": "everything",
                        "policy": json.dumps(
                            {"Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
                        ),
                    }
                ]
            ),
            name="kiam-iam-server-node",
        ),
        lambda rs: [
            (
                "iam-least-privilege",
                urn(rs, ROLE_TYPE, "kiam-iam-server-node"),
                "grants ['*']; kiam's roles need only sts:AssumeRole",
            ),
            (
                "iam-least-privilege",
                urn(rs, ROLE_TYPE, "kiam-iam-server-node"),
                "sts:AssumeRole on * without allowAnyRole: true",
            ),
            (
                "iam-least-privilege",
                urn(rs, ROLE_TYPE, "kiam-iam-server-node"),
                "lets the server nodes assume *, not only the kiam-server role",
            ),
        ],
    ),
    (
        "8 the node role lacks an EKS node policy",
        lambda rs: [r for r in rs if r.name != "kiam-iam-server-node-AmazonEKS_CNI_Policy"],
        lambda rs: [
            (
                "iam-least-privilege",
                urn(rs, ROLE_TYPE, "kiam-iam-server-node"),
                "the server node role lacks the managed policy "
                "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
            )
        ],
    ),
    (
        "8 the node group runs as a role of no stack",
        lambda rs: mutate(
            rs,
            "aws:eks/nodeGroup:NodeGroup",
            lambda i: i.update(nodeRoleArn="arn:aws:iam::111122223333:role/elsewhere"),
            property_dependencies={
                **find(rs, "aws:eks/nodeGroup:NodeGroup").property_dependencies,
                "nodeRoleArn": frozenset(),
            },
        ),
        lambda rs: [
            (
                "iam-least-privilege",
                urn(rs, "aws:eks/nodeGroup:NodeGroup"),
                "runs its nodes as a role that is not one of this stack's",
            ),
            (
                "iam-least-privilege",
                urn(rs, ROLE_TYPE, "kiam-iam-server"),
                "its trust policy is not built from the server node role",
            ),
        ],
    ),
    (
        "8 the servers are given a role of no stack",
        lambda rs: [r for r in rs if r.name != "kiam-iam-server" or r.type != ROLE_TYPE],
        lambda rs: [
            (
                "iam-least-privilege",
                urn(rs, DEPLOYMENT),
                "is given a role (--assume-role-arn) that is not one of this stack's",
            )
        ],
    ),
    (
        "9 fixed node group name",
        lambda rs: mutate(
            rs, "aws:eks/nodeGroup:NodeGroup", lambda i: i.update(nodeGroupName="kiam")
        ),
        lambda rs: [
            (
                "node-group-replacement",
                urn(rs, "aws:eks/nodeGroup:NodeGroup"),
                "has a fixed nodeGroupName: a replacement would collide",
            )
        ],
    ),
    (
        "9 delete before replace",
        lambda rs: mutate(
            rs, "aws:eks/nodeGroup:NodeGroup", lambda i: None, delete_before_replace=True
        ),
        lambda rs: [
            (
                "node-group-replacement",
                urn(rs, "aws:eks/nodeGroup:NodeGroup"),
                "is delete-before-replace: servers would lose their nodes first",
            )
        ],
    ),
    (
        "9 rolled in place on a taint change",
        lambda rs: mutate(
            rs,
            "aws:eks/nodeGroup:NodeGroup",
            lambda i: None,
            replace_on_changes=("launchTemplate", "version", "releaseVersion"),
        ),
        lambda rs: [
            (
                "node-group-replacement",
                urn(rs, "aws:eks/nodeGroup:NodeGroup"),
                "is not replaced on a change of taints: EKS would roll it into the running "
                "nodes, where a new NO_EXECUTE taint evicts every server at once",
            )
        ],
    ),
    (
        "9 group tainted otherwise than the settings ask",
        lambda rs: mutate(
            rs,
            "aws:eks/nodeGroup:NodeGroup",
            lambda i: i.update(
                taints=[{"key": "dedicated", "value": "other", "effect": "NO_SCHEDULE"}]
            ),
        ),
        lambda rs: [
            (
                "node-group-replacement",
                urn(rs, "aws:eks/nodeGroup:NodeGroup"),
                "is tainted [{'key': 'dedicated', 'value': 'other', 'effect': 'NO_SCHEDULE'}], not "
                "with the taint kiam:nodeGroup.taint asks for ([{'key': 'dedicated', 'value': "
                "'kiam-server', 'effect': 'NO_SCHEDULE'}])",
            )
        ],
    ),
    (
        "9 skip await",
        lambda rs: mutate(
            rs,
            DEPLOYMENT,
            lambda i: i["metadata"].update(annotations={"pulumi.com/skipAwait": "true"}),
        ),
        lambda rs: [
            (
                "node-group-replacement",
                urn(rs, DEPLOYMENT),
                "skips the rollout wait (pulumi.com/skipAwait)",
            )
        ],
    ),
    (
        "9 the provider's own Deployment wait",
        lambda rs: mutate(rs, DEPLOYMENT, lambda i: i["metadata"].pop("annotations")),
        lambda rs: [
            (
                "node-group-replacement",
                urn(rs, DEPLOYMENT),
                "is not held until its rollout is done: pulumi.com/waitFor must wait for "
                "updatedReplicas, replicas, availableReplicas to reach 3 (it is None); the "
                "provider's own Deployment wait can return with one new server Ready, and the "
                "old nodes go",
            )
        ],
    ),
    (
        "9 a wait for fewer servers than the Deployment runs",
        lambda rs: mutate(rs, DEPLOYMENT, lambda i: i["spec"].update(replicas=4.0)),
        lambda rs: [
            (
                "node-group-replacement",
                urn(rs, DEPLOYMENT),
                "is not held until its rollout is done: pulumi.com/waitFor must wait for "
                "updatedReplicas, replicas, availableReplicas to reach 4 (it is "
                '["jsonpath={.status.updatedReplicas}=3", "jsonpath={.status.replicas}=3", '
                '"jsonpath={.status.availableReplicas}=3"]); the provider\'s own Deployment wait '
                "can return with one new server Ready, and the old nodes go",
            )
        ],
    ),
    (
        "9 Deployment does not follow the node group",
        lambda rs: mutate(
            rs,
            DEPLOYMENT,
            lambda i: None,
            property_dependencies={
                "spec": find(rs, DEPLOYMENT).property_dependencies["spec"]
                - {urn(rs, "aws:eks/nodeGroup:NodeGroup")}
            },
        ),
        lambda rs: [
            (
                "node-group-replacement",
                urn(rs, DEPLOYMENT),
                "its spec does not follow the node group's name",
            )
        ],
    ),
    (
        "10 agents do not wait for servers",
        lambda rs: mutate(rs, DAEMON_SET, lambda i: None, dependencies=frozenset()),
        lambda rs: [
            ("ordering", urn(rs, DAEMON_SET), "is not created after the server Deployment is Ready")
        ],
    ),
    (
        "10 servers do not wait for RBAC",
        lambda rs: mutate(
            rs,
            DEPLOYMENT,
            lambda i: None,
            dependencies=find(rs, DEPLOYMENT).dependencies
            - {urn(rs, "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding")},
        ),
        lambda rs: [("ordering", urn(rs, DEPLOYMENT), "does not wait for its ClusterRoleBinding")],
    ),
    (
        "11 server escalates and adds a capability",
        lambda rs: mutate(
            rs,
            DEPLOYMENT,
            lambda i: pod(i)["containers"][0].update(
                securityContext={
                    "allowPrivilegeEscalation": True,
                    "readOnlyRootFilesystem": True,
                    "capabilities": {"drop": ["ALL"], "add": ["NET_ADMIN"]},
                }
            ),
        ),
        lambda rs: [
            (
                "container-privileges",
                urn(rs, DEPLOYMENT),
                "adds capabilities ['NET_ADMIN'] beyond none",
            ),
            (
                "container-privileges",
                urn(rs, DEPLOYMENT),
                "does not set allowPrivilegeEscalation: false",
            ),
        ],
    ),
    (
        "11 agent privileged without requests",
        lambda rs: mutate(
            rs,
            DAEMON_SET,
            lambda i: pod(i)["containers"][0].update(
                securityContext={
                    "privileged": True,
                    "allowPrivilegeEscalation": False,
                    "readOnlyRootFilesystem": True,
                    "capabilities": {"drop": ["ALL"]},
                },
                resources={},
            ),
        ),
        lambda rs: [
            ("container-privileges", urn(rs, DAEMON_SET), "has no CPU and memory requests"),
            ("container-privileges", urn(rs, DAEMON_SET), "has no memory limit"),
            ("container-privileges", urn(rs, DAEMON_SET), "runs privileged"),
        ],
    ),
    (
        "11 server root filesystem writable",
        lambda rs: mutate(
            rs,
            DEPLOYMENT,
            lambda i: pod(i)["containers"][0]["securityContext"].update(
                readOnlyRootFilesystem=False
            ),
        ),
        lambda rs: [
            (
                "container-privileges",
                urn(rs, DEPLOYMENT),
                "does not set readOnlyRootFilesystem: true",
            )
        ],
    ),
    (
        "11 agent keeps the capabilities it does not add",
        lambda rs: mutate(
            rs,
            DAEMON_SET,
            lambda i: pod(i)["containers"][0]["securityContext"]["capabilities"].pop("drop"),
        ),
        lambda rs: [
            ("container-privileges", urn(rs, DAEMON_SET), "does not drop ALL capabilities")
        ],
    ),
]


@pytest.mark.parametrize(("description", "breaks", "expected"), CASES, ids=[c[0] for c in CASES])
def test_each_check_catches_its_breakage_exactly(
    resources: list[Resource],
    description: str,
    breaks: Callable[[list[Resource]], list[Resource]],
    expected: Callable[[list[Resource]], list[tuple[str, str, str]]],
) -> None:
    assert check_all(breaks(resources), BASE_EXPECTED) == sorted(
        Violation(*v) for v in expected(resources)
    )


def test_every_check_is_exercised_by_a_breakage(
    resources: list[Resource],
    app_resources: list[Resource],
    change_baselines: dict[str, list[Resource]],
) -> None:
    from kiam_eks.invariants import CHECKS

    exercised = {v[0] for _, _, expected in CASES for v in expected(resources)}
    exercised |= {v[0] for _, _, expected in APP_CASES for v in expected(app_resources)}
    exercised |= {v[0] for _, _, _, expected in WAY_OUT_CASES for v in expected(app_resources)}
    exercised |= {
        CHANGE for _, base, _, _, expected in CHANGE_CASES if expected(change_baselines[base])
    }
    assert exercised == set(CHECKS) - {"presence"}


# `presence`, no guarantee of its own: missing parts are violations, not vacuous passes.
PRESENCE_CASES: list[Case] = [
    (
        "no part of kiam at all",
        lambda rs: [],
        lambda rs: [
            ("presence", "stack", "no kiam agent DaemonSet found"),
            ("presence", "stack", "no kiam node group found"),
            ("presence", "stack", "no kiam server Deployment found"),
        ],
    ),
]


@pytest.mark.parametrize(
    ("description", "breaks", "expected"), PRESENCE_CASES, ids=[c[0] for c in PRESENCE_CASES]
)
def test_missing_parts_are_violations_not_vacuous_passes(
    resources: list[Resource],
    description: str,
    breaks: Callable[[list[Resource]], list[Resource]],
    expected: Callable[[list[Resource]], list[tuple[str, str, str]]],
) -> None:
    assert check_all(breaks(resources), BASE_EXPECTED) == sorted(
        Violation(*v) for v in expected(resources)
    )


def test_unknown_values_are_not_judged(resources: list[Resource]) -> None:
    """During preview the server args (built from a role ARN) are unknown: no verdict until `up`."""
    unknown = mutate(resources, DEPLOYMENT, lambda i: pod(i)["containers"][0].update(args=UNKNOWN))
    assert check_all(unknown, BASE_EXPECTED) == []
    broken = mutate(
        resources, DEPLOYMENT, lambda i: pod(i)["containers"][0].update(args=["server"])
    )
    assert {v.id for v in check_all(broken, BASE_EXPECTED)} == {"server-args"}


# 12. Applications: one at the base path, one with its own path and IRSA, under a name prefix
# (the issue #11 scenario). Each case below breaks one link between the pieces.
ROLE = "aws:iam/role:Role"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
PATCH = "kubernetes:core/v1:NamespacePatch"
STACK = "pulumi:pulumi:Stack"
BASE = "arn:aws:iam::111122223333:role/kiam-apps/"
BILLING, SEARCH = f"{BASE}app-billing", f"{BASE}team-a/app-search"
APP_CONFIG = base_config(
    iam={"applicationRoleNamePrefix": "app-"},
    applications={
        "billing": {"namespace": "billing", "roleName": "app-billing"},
        "search": {
            "namespace": "search",
            "roleName": "app-search",
            "path": "/kiam-apps/team-a/",
            "servedBy": "kiam+irsa",
            "serviceAccount": "indexer",
        },
    },
)


APP_EXPECTED = expected_of(APP_CONFIG)


@pytest.fixture(scope="module")
def app_resources() -> list[Resource]:
    return resources_from_recording(run_program(APP_CONFIG))


def server_arn(rs: list[Resource]) -> str:
    arn: str = find(rs, ROLE, "kiam-iam-server").outputs["arn"]
    return arn


def set_permitted(value: str) -> Callable[[dict[str, Any]], None]:
    return lambda i: i["metadata"]["annotations"].update({"iam.amazonaws.com/permitted": value})


def set_trust(statements: Callable[[list[Any]], list[Any]]) -> Callable[[dict[str, Any]], None]:
    def change(inputs: dict[str, Any]) -> None:
        trust = json.loads(inputs["assumeRolePolicy"])
        trust["Statement"] = statements(trust["Statement"])
        inputs["assumeRolePolicy"] = json.dumps(trust)

    return change


def set_server_patterns(patterns: list[str]) -> Callable[[dict[str, Any]], None]:
    def change(inputs: dict[str, Any]) -> None:
        policy = json.loads(inputs["policy"])
        policy["Statement"][0]["Resource"] = patterns
        inputs["policy"] = json.dumps(policy)

    return change


def app_urn(rs: list[Resource], app: str) -> str:
    return urn(rs, ROLE, f"kiam-app-{app}")


def without_resource(rs: list[Resource], type_: str, name: str) -> list[Resource]:
    return [r for r in rs if r is not find(rs, type_, name)]


REACHABLE = "application-reachable"
APP_CASES: list[Case] = [
    (
        "12 the server's pattern misses a sub-path (issue 11, reason 1)",
        lambda rs: mutate(
            rs,
            ROLE_POLICY,
            set_server_patterns([f"{BASE}app-*"]),
            name="kiam-iam-server-assume-applications",
        ),
        lambda rs: [
            (
                REACHABLE,
                app_urn(rs, "search"),
                f"the kiam-server role's policy does not allow sts:AssumeRole on {SEARCH}",
            )
        ],
    ),
    (
        "12 the pod annotation is the bare role name (issue 11, reason 2)",
        lambda rs: mutate(
            rs,
            STACK,
            lambda i: i["applications"]["search"]["podAnnotation"].update(
                {"iam.amazonaws.com/role": "app-search"}
            ),
        ),
        lambda rs: [
            (
                REACHABLE,
                app_urn(rs, "search"),
                f"pod annotation iam.amazonaws.com/role: app-search resolves against "
                f"--role-base-arn={BASE} to {BASE}app-search, not {SEARCH}",
            )
        ],
    ),
    (
        "12 the namespace permits the role name, which kiam never matches",
        lambda rs: mutate(rs, PATCH, set_permitted("app-billing"), name="kiam-permissions-billing"),
        lambda rs: [
            (
                REACHABLE,
                app_urn(rs, "billing"),
                f"namespace billing permits 'app-billing', which does not admit {BILLING}",
            )
        ],
    ),
    (
        "12 kiam anchors only the ends of an alternation",
        lambda rs: mutate(
            rs,
            PATCH,
            set_permitted(f"{BILLING}|kiam-apps/team-a/.*"),
            name="kiam-permissions-billing",
        ),
        lambda rs: [
            (
                REACHABLE,
                app_urn(rs, "billing"),
                f"namespace billing permits '{BILLING}|kiam-apps/team-a/.*', which also admits "
                f"{SEARCH} of namespace search",
            )
        ],
    ),
    (
        "12 without strict matching an unanchored regexp admits another namespace's role",
        lambda rs: mutate(
            mutate(rs, PATCH, set_permitted("kiam-apps/"), name="kiam-permissions-billing"),
            DEPLOYMENT,
            lambda i: args(i).append("--disable-strict-namespace-regexp"),
        ),
        lambda rs: [
            (
                REACHABLE,
                app_urn(rs, "billing"),
                f"namespace billing permits 'kiam-apps/', which also admits {SEARCH} of "
                "namespace search",
            )
        ],
    ),
    (
        "12 a regexp Go's RE2 does not compile",
        lambda rs: mutate(
            rs, PATCH, set_permitted("^(?=arn:).*app-billing$"), name="kiam-permissions-billing"
        ),
        lambda rs: [
            (
                REACHABLE,
                app_urn(rs, "billing"),
                "namespace billing permits '^(?=arn:).*app-billing$': it uses a lookahead `(?=`, "
                "which Go's regexp (kiam's) does not compile",
            )
        ],
    ),
    (
        "12 no namespace annotation for an application",
        lambda rs: without_resource(rs, PATCH, "kiam-permissions-search"),
        lambda rs: [
            (
                REACHABLE,
                app_urn(rs, "search"),
                "namespace search has no iam.amazonaws.com/permitted annotation in this stack",
            )
        ],
    ),
    (
        "12 the role trusts IRSA but not the kiam-server role",
        lambda rs: mutate(rs, ROLE, set_trust(lambda st: st[1:]), name="kiam-app-search"),
        lambda rs: [
            (
                REACHABLE,
                app_urn(rs, "search"),
                f"does not trust the kiam-server role {server_arn(rs)} with sts:AssumeRole",
            )
        ],
    ),
    (
        "12 IRSA trusts every service account of the namespace",
        lambda rs: mutate(
            rs,
            ROLE,
            set_trust(
                lambda st: [
                    st[0],
                    {
                        **st[1],
                        "Condition": {
                            "StringLike": {
                                k: v.replace(":indexer", ":*")
                                for k, v in st[1]["Condition"]["StringEquals"].items()
                            }
                        },
                    },
                ]
            ),
            name="kiam-app-search",
        ),
        lambda rs: [
            (
                REACHABLE,
                app_urn(rs, "search"),
                "does not trust exactly system:serviceaccount:search:indexer through IRSA",
            )
        ],
    ),
    (
        "12 a role without IRSA trusts a web identity",
        lambda rs: mutate(
            rs,
            ROLE,
            set_trust(
                lambda st: [
                    *st,
                    json.loads(find(rs, ROLE, "kiam-app-search").inputs["assumeRolePolicy"])[
                        "Statement"
                    ][1],
                ]
            ),
            name="kiam-app-billing",
        ),
        lambda rs: [
            (
                REACHABLE,
                app_urn(rs, "billing"),
                "trusts web identities (IRSA), which servedBy kiam does not serve it through",
            )
        ],
    ),
    (
        "8 a managed policy on an application role its settings do not list",
        lambda rs: attach(rs, "kiam-app-billing", ADMIN),
        lambda rs: [
            (
                "iam-least-privilege",
                attachment_urn("kiam-app-billing"),
                f"gives application role app-billing the managed policy {ADMIN}, which its "
                "settings do not list",
            )
        ],
    ),
    (
        "8 an inline policy on an application role its settings do not list",
        lambda rs: mutate(
            rs,
            ROLE_TYPE,
            lambda i: i.update(
                inlinePolicies=[
                    {
                        "name": "extra",
                        "policy": json.dumps(
                            {"Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}
                        ),
                    }
                ]
            ),
            name="kiam-app-search",
        ),
        lambda rs: [
            (
                "iam-least-privilege",
                app_urn(rs, "search"),
                "gives application role app-search the inline policy 'extra', which its "
                "settings do not list",
            )
        ],
    ),
    (
        "12 an application's role is not the one its settings name",
        lambda rs: mutate(
            rs, ROLE, lambda i: i.update(name="app-billing-old"), name="kiam-app-billing"
        ),
        lambda rs: [
            (
                REACHABLE,
                "stack",
                "application billing: no role app-billing at path /kiam-apps/ in this stack",
            )
        ],
    ),
]


def test_applications_baseline_has_no_violation(app_resources: list[Resource]) -> None:
    assert check_all(app_resources, APP_EXPECTED) == []
    assert len([r for r in app_resources if r.name.startswith("kiam-app-") and r.type == ROLE]) == 2


@pytest.mark.parametrize(
    ("description", "breaks", "expected"), APP_CASES, ids=[c[0] for c in APP_CASES]
)
def test_application_reachable_catches_each_broken_link_exactly(
    app_resources: list[Resource],
    description: str,
    breaks: Callable[[list[Resource]], list[Resource]],
    expected: Callable[[list[Resource]], list[tuple[str, str, str]]],
) -> None:
    assert check_all(breaks(app_resources), APP_EXPECTED) == sorted(
        Violation(*v) for v in expected(app_resources)
    )


def unknown_arn(rs: list[Resource], name: str) -> list[Resource]:
    """As during a preview that creates the role: no ARN yet."""
    return mutate(rs, ROLE, lambda i: None, name=name, outputs={})


def test_a_new_role_is_judged_at_preview_from_its_path_and_name_when_the_server_exists(
    app_resources: list[Resource],
) -> None:
    broken = APP_CASES[0][1](app_resources)
    preview = unknown_arn(broken, "kiam-app-search")
    assert check_all(preview, APP_EXPECTED) == check_all(broken, APP_EXPECTED) != []


def test_applications_are_not_judged_on_unknown_values(app_resources: list[Resource]) -> None:
    """First preview of a stack: no role has an ARN; the server's flags and the namespace
    annotations are built from ARNs, so they are unknown too. Nothing is judged until `up`."""
    for case in APP_CASES[:2]:
        broken = case[1](app_resources)
        for name in ("kiam-iam-server", "kiam-app-billing", "kiam-app-search"):
            broken = unknown_arn(broken, name)
        assert check_all(broken, APP_EXPECTED) == []
    bare_name = APP_CASES[1][1](app_resources)
    assert (
        check_all(
            mutate(bare_name, DEPLOYMENT, lambda i: pod(i)["containers"][0].update(args=UNKNOWN)),
            APP_EXPECTED,
        )
        == []
    )
    name_not_arn = APP_CASES[2][1](app_resources)
    assert (
        check_all(
            mutate(name_not_arn, PATCH, set_permitted(UNKNOWN), name="kiam-permissions-billing"),
            APP_EXPECTED,
        )
        == []
    )


# The facts the check relies on, as kiam v4.2 and IAM state them.


@pytest.mark.parametrize(
    ("pattern", "value", "matches"),
    [
        ("arn:aws:iam::1:role/kiam-apps/*", "arn:aws:iam::1:role/kiam-apps/team-a/x", True),
        (
            "arn:aws:iam::1:role/kiam-apps/app-*",
            "arn:aws:iam::1:role/kiam-apps/team-a/app-x",
            False,
        ),
        ("arn:aws:iam::1:role/kiam-apps/app-*", "arn:aws:iam::1:role/kiam-apps/app-", True),
        ("arn:aws:iam::1:role/a?c", "arn:aws:iam::1:role/abc", True),
        ("arn:aws:iam::1:role/a?c", "arn:aws:iam::1:role/ac", False),
        ("arn:aws:iam::1:role/App", "arn:aws:iam::1:role/app", False),
        ("arn:aws:iam::*:role/a.b", "arn:aws:iam::1:role/a.b", True),
        ("arn:aws:iam::1:role/a.b", "arn:aws:iam::1:role/axb", False),
        ("arn:aws:iam::1:role/${aws:username}", "arn:aws:iam::1:role/x", False),
        ("*", "anything/at:all", True),
    ],
)
def test_iam_glob_matching(pattern: str, value: str, matches: bool) -> None:
    from kiam_eks.invariants.iam_documents import glob_matches

    assert glob_matches(pattern, value) is matches


ARN = "arn:aws:iam::1:role/apps/x"


@pytest.mark.parametrize(
    ("statements", "allowed"),
    [
        (
            [{"Effect": "Allow", "Action": "sts:AssumeRole", "Resource": "arn:aws:iam::1:role/*"}],
            True,
        ),
        ([{"Effect": "Allow", "Action": "STS:assume*", "Resource": [ARN]}], True),
        ([{"Effect": "Allow", "Action": "sts:AssumeRoleWithSAML", "Resource": ARN}], False),
        (
            [
                {"Effect": "Allow", "Action": "sts:AssumeRole", "Resource": ARN},
                {"Effect": "Deny", "Action": "sts:*", "Resource": "arn:aws:iam::1:role/apps/*"},
            ],
            False,
        ),
        (
            [
                {"Effect": "Allow", "Action": "sts:AssumeRole", "Resource": ARN},
                {"Effect": "Deny", "Action": "sts:AssumeRole", "NotResource": "arn:other"},
            ],
            False,
        ),
        (
            [
                {
                    "Effect": "Allow",
                    "Action": "sts:AssumeRole",
                    "Resource": ARN,
                    "Condition": {"Bool": {"aws:SecureTransport": "true"}},
                }
            ],
            False,
        ),
        ([{"Effect": "Allow", "Action": "sts:AssumeRole", "NotResource": "arn:other"}], False),
    ],
)
def test_allows_only_what_certainly_applies(statements: list[Any], allowed: bool) -> None:
    from kiam_eks.invariants.iam_documents import allows

    assert allows(statements, "sts:AssumeRole", ARN) is allowed


def test_allowing_judges_each_resource_by_its_own_statements() -> None:
    """`allowing` (what guarantee 8 reads 1,000 ARNs with) answers per resource: an exact ARN
    allows only itself, a wildcard what it matches, a Deny only where it applies."""
    from kiam_eks.invariants.iam_documents import allowing, allows

    other = "arn:aws:iam::1:role/apps/other"
    denied = "arn:aws:iam::1:role/denied/x"
    statements = [
        {
            "Effect": "Allow",
            "Action": "sts:AssumeRole",
            "Resource": [ARN, "arn:aws:iam::1:role/denied/*"],
        },
        {"Effect": "Deny", "Action": "sts:AssumeRole", "Resource": "arn:aws:iam::1:role/denied/x"},
        {"Effect": "Allow", "Action": "iam:PassRole", "Resource": other},
    ]
    judge = allowing(statements, "sts:AssumeRole")
    verdicts = {arn: judge(arn) for arn in (ARN, other, denied, "arn:aws:iam::1:role/denied/y")}
    assert verdicts == {
        ARN: True,
        other: False,
        denied: False,
        "arn:aws:iam::1:role/denied/y": True,
    }
    assert verdicts == {arn: allows(statements, "sts:AssumeRole", arn) for arn in verdicts}


@pytest.mark.parametrize(
    ("annotation", "permitted", "args", "granted"),
    [
        ("team-a/x", f"^({BASE}team-a/x)$", [f"--role-base-arn={BASE}"], f"{BASE}team-a/x"),
        # The bare name resolves to a role directly under the base, which the namespace refuses.
        ("x", f"^({BASE}team-a/x)$", [f"--role-base-arn={BASE}"], None),
        (f"{BASE}team-a/x", f"^({BASE}team-a/x)$", [f"--role-base-arn={BASE}"], f"{BASE}team-a/x"),
        ("team-a/x", "", [f"--role-base-arn={BASE}"], None),
        ("team-a/x", f"^({BASE}team-a/x)$", [], None),
    ],
)
def test_granted_role_is_what_kiam_would_assume_for_a_live_pod(
    annotation: str, permitted: str, args: list[str], granted: str | None
) -> None:
    from kiam_eks.invariants.kiam_rules import granted_role

    assert granted_role(annotation, permitted, ["server", *args]) == granted


def test_the_node_group_is_whatever_the_cloud_side_created_under_the_server_nodes() -> None:
    """No guarantee knows a stand-in: the group is what sits under `kiam-server-nodes`, of any
    type, and the taint the servers must tolerate is the one the settings ask for, not one read
    from Nodes (whose dry runs carry Kubernetes' own `node.kubernetes.io/not-ready`)."""
    from kiam_eks.invariants.view import KiamView

    parent = "urn:pulumi:e2e::kiam::kiam:index:Kiam$kiam:e2e:KwokNodeGroup::kiam-server-nodes"
    node = Resource(
        urn=f"{parent}$kubernetes:core/v1:Node::kiam-server-nodes-0",
        type="kubernetes:core/v1:Node",
        name="kiam-server-nodes-0",
        parent=parent,
        inputs={
            "spec": {"taints": [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]}
        },
    )
    elsewhere = Resource(urn="urn:other", type=node.type, name="other", inputs={"spec": {}})
    config = base_config(
        node_group={"taint": {"key": "role", "value": "kiam", "effect": "NO_EXECUTE"}}
    )
    view = KiamView([node, elsewhere], expected_of(config))
    assert view.node_groups == [node]
    assert view.server_taints() == [{"key": "role", "value": "kiam", "effect": "NoExecute"}]


def test_the_guarantees_are_numbered_as_checks_runs_them() -> None:
    """The numbers the docstrings (and so the pack's descriptions), the README and docs cite:
    `presence` first and unnumbered, then 1 to 16 in the order `CHECKS` runs them."""
    from kiam_eks.invariants import CHECKS

    ids = list(CHECKS)
    assert ids[0] == "presence"
    assert [(CHECKS[i].__doc__ or "").split(".", 1)[0] for i in ids[1:]] == [
        str(n) for n in range(1, len(ids))
    ]
    assert len(ids) == 17


# 13 to 15, and 8 and 12 by state: the way out of kiam (issue 18). Each case builds the resources
# of a state from the two-application run (tests/guarantee_views.py), breaks one thing, and is
# judged against that state's settings.
from tests import guarantee_views as g  # noqa: E402

POD_IDENTITY, OFF_KIAM, RETIRED = "pod-identity", "off-kiam", "retired"
PAYER = g.pod_identity_statement("billing", "payer")
NARROWED = (
    'exactly Allow sts:AssumeRole and sts:TagSession under {"StringEquals": '
    '{"aws:SourceAccount": "111122223333", "aws:RequestTag/eks-cluster-name": "test", '
    '"aws:RequestTag/kubernetes-namespace": "billing", '
    '"aws:RequestTag/kubernetes-service-account": "payer"}}'
)


def billing_role(rs: list[Resource]) -> Resource:
    return g.find(rs, ROLE, "kiam-app-billing")


def search_role(rs: list[Resource]) -> Resource:
    return g.find(rs, ROLE, "kiam-app-search")


def association_urn(name: str) -> str:
    return f"{g.COMPONENT}${g.ASSOCIATION}::{name}"


def moved_with_association(rs: list[Resource], association: Resource) -> list[Resource]:
    moved = g.moved(rs)
    old = g.find(moved, g.ASSOCIATION, "kiam-app-billing-pod-identity")
    return g.replace(moved, old, association)


def moved_with_condition(condition: dict[str, Any]) -> Callable[[list[Resource]], list[Resource]]:
    return lambda rs: g.set_trust(g.moved(rs), "billing", [{**PAYER, "Condition": condition}])


def retired_with(type_: str, name: str) -> Callable[[list[Resource]], list[Resource]]:
    """The retired stack still holding one of kiam's objects."""
    return lambda rs: [*g.retired(rs), g.find(rs, type_, name)]


def not_exactly(statement: dict[str, Any]) -> str:
    return (
        "application billing: its role trusts pods.eks.amazonaws.com by "
        f"{json.dumps(statement, sort_keys=True)}, not {NARROWED}"
    )


def removes(what: str) -> str:
    return f"is {what}, which kiam:retire removes"


WITH_INLINE = g.config()
WITH_INLINE["kiam:applications"]["billing"]["inlinePolicies"] = {
    "read": {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*"}],
    }
}

READ_ONLY = "arn:aws:iam::aws:policy/ReadOnlyAccess"
WITH_MANAGED = g.config()
WITH_MANAGED["kiam:applications"]["billing"]["managedPolicyArns"] = [READ_ONLY]

# (description, the state's config, the breakage, the exact violations)
WayOutCase = tuple[
    str,
    dict[str, Any],
    Callable[[list[Resource]], list[Resource]],
    Callable[[list[Resource]], list[tuple[str, str, str]]],
]
WAY_OUT_CASES: list[WayOutCase] = [
    (
        "13 a Pod Identity application without its association",
        g.MOVED_CONFIG,
        lambda rs: g.without(g.moved(rs), g.ASSOCIATION, "kiam-app-billing-pod-identity"),
        lambda rs: [
            (
                POD_IDENTITY,
                billing_role(rs).urn,
                "application billing: no Pod Identity association of test/billing/payer names "
                "its role",
            )
        ],
    ),
    (
        "13 the association is another service account's",
        g.MOVED_CONFIG,
        lambda rs: moved_with_association(
            rs, g.association(billing_role(rs), "billing", "billing", "other", g.BILLING)
        ),
        lambda rs: [
            (
                POD_IDENTITY,
                billing_role(rs).urn,
                "application billing: no Pod Identity association of test/billing/payer names "
                "its role",
            ),
            (
                POD_IDENTITY,
                association_urn("kiam-app-billing-pod-identity"),
                "application billing: the association of test/billing/other names its role, "
                "which only test/billing/payer may obtain",
            ),
        ],
    ),
    (
        "13 a second association, of another namespace, names the role",
        g.MOVED_CONFIG,
        lambda rs: [
            *g.moved(rs),
            g.association(billing_role(rs), "billing", "search", "payer", g.BILLING, "extra"),
        ],
        lambda rs: [
            (
                POD_IDENTITY,
                association_urn("extra"),
                "application billing: the association of test/search/payer names its role, "
                "which only test/billing/payer may obtain",
            )
        ],
    ),
    (
        "13 the association of its service account names another application's role",
        g.MOVED_CONFIG,
        lambda rs: moved_with_association(
            rs, g.association(search_role(rs), "billing", "billing", "payer", g.SEARCH)
        ),
        lambda rs: [
            (
                POD_IDENTITY,
                billing_role(rs).urn,
                "application billing: no Pod Identity association of test/billing/payer names "
                "its role",
            ),
            (
                POD_IDENTITY,
                association_urn("kiam-app-billing-pod-identity"),
                f"application billing: the association of test/billing/payer names {g.SEARCH}, "
                f"not its role {g.BILLING}",
            ),
            (
                POD_IDENTITY,
                association_urn("kiam-app-billing-pod-identity"),
                "application search: the association of test/billing/payer names its role, "
                "which servedBy kiam+irsa does not serve through Pod Identity",
            ),
        ],
    ),
    (
        "13 two associations of its service account name its role",
        g.MOVED_CONFIG,
        lambda rs: [
            *g.moved(rs),
            g.association(billing_role(rs), "billing", "billing", "payer", g.BILLING, "second"),
        ],
        lambda rs: [
            (
                POD_IDENTITY,
                billing_role(rs).urn,
                "application billing: 2 Pod Identity associations of test/billing/payer name "
                "its role; EKS allows one",
            )
        ],
    ),
    (
        "13 after a rollback to kiam the association is left behind",
        g.KIAM_CONFIG,
        lambda rs: [
            *rs,
            g.association(billing_role(rs), "billing", "billing", "payer", g.BILLING),
        ],
        lambda rs: [
            (
                POD_IDENTITY,
                association_urn("kiam-app-billing-pod-identity"),
                "application billing: the association of test/billing/payer names its role, "
                "which servedBy kiam does not serve through Pod Identity",
            )
        ],
    ),
    (
        "13 the trust admits every service account of the namespace",
        g.MOVED_CONFIG,
        moved_with_condition(
            {
                "StringEquals": {
                    k: v
                    for k, v in PAYER["Condition"]["StringEquals"].items()
                    if not k.endswith("service-account")
                },
                "StringLike": {"aws:RequestTag/kubernetes-service-account": "*"},
            }
        ),
        lambda rs: [
            (
                POD_IDENTITY,
                billing_role(rs).urn,
                not_exactly(
                    {
                        **PAYER,
                        "Condition": {
                            "StringEquals": {
                                k: v
                                for k, v in PAYER["Condition"]["StringEquals"].items()
                                if not k.endswith("service-account")
                            },
                            "StringLike": {"aws:RequestTag/kubernetes-service-account": "*"},
                        },
                    }
                ),
            )
        ],
    ),
    (
        "13 the trust is not narrowed to the account",
        g.MOVED_CONFIG,
        moved_with_condition(
            {
                "StringEquals": {
                    k: v
                    for k, v in PAYER["Condition"]["StringEquals"].items()
                    if k != "aws:SourceAccount"
                }
            }
        ),
        lambda rs: [
            (
                POD_IDENTITY,
                billing_role(rs).urn,
                not_exactly(
                    {
                        **PAYER,
                        "Condition": {
                            "StringEquals": {
                                k: v
                                for k, v in PAYER["Condition"]["StringEquals"].items()
                                if k != "aws:SourceAccount"
                            }
                        },
                    }
                ),
            )
        ],
    ),
    (
        "13 the trust lets Pod Identity do more than assume and tag",
        g.MOVED_CONFIG,
        lambda rs: g.set_trust(
            g.moved(rs),
            "billing",
            [{**PAYER, "Action": ["sts:AssumeRole", "sts:TagSession", "sts:*"]}],
        ),
        lambda rs: [
            (
                POD_IDENTITY,
                billing_role(rs).urn,
                not_exactly({**PAYER, "Action": ["sts:AssumeRole", "sts:TagSession", "sts:*"]}),
            )
        ],
    ),
    (
        "13 a Pod Identity role that does not trust Pod Identity",
        g.MOVED_CONFIG,
        lambda rs: g.set_trust(g.moved(rs), "billing", []),
        lambda rs: [
            (
                POD_IDENTITY,
                billing_role(rs).urn,
                "application billing: its role does not trust pods.eks.amazonaws.com",
            )
        ],
    ),
    (
        "13 and 8 a role Pod Identity does not serve trusts Pod Identity",
        g.KIAM_CONFIG,
        lambda rs: g.set_trust(
            rs,
            "search",
            [*g.trust_of(search_role(rs)), g.pod_identity_statement("search", "indexer")],
        ),
        lambda rs: [
            (
                POD_IDENTITY,
                search_role(rs).urn,
                "application search: its role trusts pods.eks.amazonaws.com, though servedBy "
                "kiam+irsa is not Pod Identity",
            ),
            (
                "iam-least-privilege",
                search_role(rs).urn,
                "trust admits {'Service': 'pods.eks.amazonaws.com'}: application roles trust the "
                "kiam-server role, IRSA and EKS Pod Identity only",
            ),
        ],
    ),
    (
        "14 the namespace still admits a moved application",
        g.MOVED_CONFIG,
        lambda rs: [*g.moved(rs), g.find(rs, PATCH, "kiam-permissions-billing")],
        lambda rs: [
            (
                OFF_KIAM,
                billing_role(rs).urn,
                f"application billing: namespace billing permits '^({g.BILLING})$', which still "
                f"admits {g.BILLING} though servedBy podIdentity is no longer kiam",
            )
        ],
    ),
    (
        "14 a role moved to Pod Identity still trusts the kiam-server role",
        g.MOVED_CONFIG,
        lambda rs: g.set_trust(g.moved(rs), "billing", [*g.trust_of(billing_role(rs)), PAYER]),
        lambda rs: [
            (
                OFF_KIAM,
                billing_role(rs).urn,
                f"application billing: its role still trusts the AWS principal "
                f"'{server_arn(rs)}' though servedBy podIdentity is no longer kiam: it must "
                "trust no kiam-server role",
            )
        ],
    ),
    (
        "14 a role moved to IRSA still trusts the kiam-server role",
        g.IRSA_CONFIG,
        lambda rs: g.set_trust(g.irsa_only(rs), "search", g.trust_of(search_role(rs))),
        lambda rs: [
            (
                OFF_KIAM,
                search_role(rs).urn,
                f"application search: its role still trusts the AWS principal "
                f"'{server_arn(rs)}' though servedBy irsa is no longer kiam: it must trust no "
                "kiam-server role",
            )
        ],
    ),
    (
        "12 a moving application's namespace no longer admits it",
        g.MOVING_CONFIG,
        lambda rs: g.without(g.moving(rs), PATCH, "kiam-permissions-billing"),
        lambda rs: [
            (
                REACHABLE,
                billing_role(rs).urn,
                "namespace billing has no iam.amazonaws.com/permitted annotation in this stack",
            )
        ],
    ),
    (
        "12 a moving role lost its kiam-server trust",
        g.MOVING_CONFIG,
        lambda rs: g.set_trust(g.moving(rs), "billing", [PAYER]),
        lambda rs: [
            (
                REACHABLE,
                billing_role(rs).urn,
                f"does not trust the kiam-server role {server_arn(rs)} with sts:AssumeRole",
            )
        ],
    ),
    (
        "12 an application moved to IRSA keeps its IRSA check",
        g.IRSA_CONFIG,
        lambda rs: g.set_trust(
            g.irsa_only(rs),
            "search",
            [
                {
                    **g.trust_of(search_role(rs))[1],
                    "Condition": {
                        "StringLike": {
                            k: v.replace(":indexer", ":*")
                            for k, v in g.trust_of(search_role(rs))[1]["Condition"][
                                "StringEquals"
                            ].items()
                        }
                    },
                }
            ],
        ),
        lambda rs: [
            (
                REACHABLE,
                search_role(rs).urn,
                "does not trust exactly system:serviceaccount:search:indexer through IRSA",
            )
        ],
    ),
    (
        "8 an application role lacks an inline policy its settings give",
        WITH_INLINE,
        lambda rs: rs,
        lambda rs: [
            (
                "iam-least-privilege",
                billing_role(rs).urn,
                "application role app-billing lacks the inline policy 'read'",
            )
        ],
    ),
    (
        "8 an application role's inline policy is not the one its settings give",
        WITH_INLINE,
        lambda rs: g.replace(
            rs,
            billing_role(rs),
            g.with_inputs(
                billing_role(rs),
                inlinePolicies=[
                    {
                        "name": "read",
                        "policy": json.dumps(
                            {
                                "Version": "2012-10-17",
                                "Statement": [
                                    {"Effect": "Allow", "Action": "s3:*", "Resource": "*"}
                                ],
                            }
                        ),
                    }
                ],
            ),
        ),
        lambda rs: [
            (
                "iam-least-privilege",
                billing_role(rs).urn,
                "gives application role app-billing an inline policy 'read' other than its "
                "settings give",
            )
        ],
    ),
    (
        "8 an application role lacks a managed policy its settings give",
        WITH_MANAGED,
        lambda rs: rs,
        lambda rs: [
            (
                "iam-least-privilege",
                billing_role(rs).urn,
                f"application role app-billing lacks the managed policy {READ_ONLY}",
            )
        ],
    ),
    (
        "15 a retired stack keeps kiam's Service",
        g.RETIRED_CONFIG,
        retired_with("kubernetes:core/v1:Service", "kiam-server"),
        lambda rs: [
            (
                RETIRED,
                urn(rs, "kubernetes:core/v1:Service", "kiam-server"),
                removes("kiam's kiam-server (Service)"),
            )
        ],
    ),
    (
        "15 a retired stack keeps kiam's RBAC",
        g.RETIRED_CONFIG,
        retired_with("kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding", "kiam-server"),
        lambda rs: [
            (
                RETIRED,
                urn(
                    rs, "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding", "kiam-server"
                ),
                removes("kiam's kiam-server (ClusterRoleBinding)"),
            )
        ],
    ),
    (
        "15 a retired stack keeps a TLS Secret",
        g.RETIRED_CONFIG,
        retired_with("kubernetes:core/v1:Secret", "kiam-tls-server"),
        lambda rs: [
            (
                RETIRED,
                urn(rs, "kubernetes:core/v1:Secret", "kiam-tls-server"),
                removes("a TLS Secret (kiam's certificates)"),
            )
        ],
    ),
    (
        "15 a retired stack keeps kiam's certificate authority",
        g.RETIRED_CONFIG,
        retired_with("tls:index/selfSignedCert:SelfSignedCert", "kiam-tls-ca"),
        lambda rs: [
            (
                RETIRED,
                urn(rs, "tls:index/selfSignedCert:SelfSignedCert", "kiam-tls-ca"),
                removes("a certificate or key of kiam's (pulumi-tls)"),
            )
        ],
    ),
    (
        "15 a retired stack keeps the server nodes' launch template",
        g.RETIRED_CONFIG,
        retired_with("aws:ec2/launchTemplate:LaunchTemplate", "kiam-server-nodes-launch-template"),
        lambda rs: [
            (
                RETIRED,
                urn(
                    rs, "aws:ec2/launchTemplate:LaunchTemplate", "kiam-server-nodes-launch-template"
                ),
                removes("part of kiam's dedicated server nodes"),
            )
        ],
    ),
    (
        "15 a retired stack keeps the server node role and its policy",
        g.RETIRED_CONFIG,
        lambda rs: [
            *g.retired(rs),
            g.find(rs, ROLE, "kiam-iam-server-node"),
            g.find(rs, ATTACHMENT, "kiam-iam-server-node-AmazonEKSWorkerNodePolicy"),
        ],
        lambda rs: [
            (
                RETIRED,
                urn(rs, ROLE, "kiam-iam-server-node"),
                removes("an IAM role that is no application's (kiam's)"),
            ),
            (
                RETIRED,
                urn(rs, ATTACHMENT, "kiam-iam-server-node-AmazonEKSWorkerNodePolicy"),
                removes("a policy of no application's role (kiam's)"),
            ),
        ],
    ),
    (
        "15 retiring kiam took an application role with it",
        g.RETIRED_CONFIG,
        lambda rs: g.without(g.retired(rs), ROLE, "kiam-app-search"),
        lambda rs: [
            (
                REACHABLE,
                "stack",
                "application search: no role app-search at path /kiam-apps/team-a/ in this stack",
            ),
            (
                RETIRED,
                "stack",
                "application search: no role app-search at path /kiam-apps/team-a/; retiring "
                "kiam keeps every application role",
            ),
        ],
    ),
]


@pytest.mark.parametrize(
    ("description", "config", "breaks", "expected"),
    WAY_OUT_CASES,
    ids=[c[0] for c in WAY_OUT_CASES],
)
def test_the_way_out_of_kiam_catches_each_breakage_exactly(
    app_resources: list[Resource],
    description: str,
    config: dict[str, Any],
    breaks: Callable[[list[Resource]], list[Resource]],
    expected: Callable[[list[Resource]], list[tuple[str, str, str]]],
) -> None:
    assert check_all(breaks(app_resources), expected_of(config)) == sorted(
        Violation(*v) for v in expected(app_resources)
    )


@pytest.mark.parametrize(
    ("state", "build", "config"),
    [
        ("kiam", lambda rs: rs, g.KIAM_CONFIG),
        ("kiam+podIdentity", g.moving, g.MOVING_CONFIG),
        ("podIdentity", g.moved, g.MOVED_CONFIG),
        ("irsa", g.irsa_only, g.IRSA_CONFIG),
        ("retired", g.retired, g.RETIRED_CONFIG),
    ],
)
def test_every_state_of_the_way_out_keeps_every_guarantee(
    app_resources: list[Resource],
    state: str,
    build: Callable[[list[Resource]], list[Resource]],
    config: dict[str, Any],
) -> None:
    assert check_all(build(app_resources), expected_of(config)) == []


def test_a_state_is_judged_against_its_own_settings(app_resources: list[Resource]) -> None:
    """The kiam stack judged as if billing had moved: every guarantee of the move speaks."""
    assert check_all(app_resources, expected_of(g.MOVED_CONFIG)) == sorted(
        [
            Violation(
                POD_IDENTITY,
                billing_role(app_resources).urn,
                "application billing: no Pod Identity association of test/billing/payer names "
                "its role",
            ),
            Violation(
                POD_IDENTITY,
                billing_role(app_resources).urn,
                "application billing: its role does not trust pods.eks.amazonaws.com",
            ),
            Violation(
                OFF_KIAM,
                billing_role(app_resources).urn,
                f"application billing: namespace billing permits '^({g.BILLING})$', which still "
                f"admits {g.BILLING} though servedBy podIdentity is no longer kiam",
            ),
            Violation(
                OFF_KIAM,
                billing_role(app_resources).urn,
                f"application billing: its role still trusts the AWS principal "
                f"'{server_arn(app_resources)}' though servedBy podIdentity is no longer kiam: "
                "it must trust no kiam-server role",
            ),
        ]
    )


def test_a_retired_stack_is_judged_not_flagged_for_missing_servers(
    app_resources: list[Resource],
) -> None:
    """Without kiam:retire the same resources lack every part of kiam; with it, none is missed."""
    retired = g.retired(app_resources)
    assert check_all(retired, expected_of(g.RETIRED_CONFIG)) == []
    not_retired = expected_of(
        g.config(billing=("podIdentity", "payer"), search=("irsa", "indexer"))
    )
    assert [v for v in check_all(retired, not_retired) if v.id == "presence"] == [
        Violation("presence", "stack", "no kiam agent DaemonSet found"),
        Violation("presence", "stack", "no kiam node group found"),
        Violation("presence", "stack", "no kiam server Deployment found"),
    ]


def test_the_agents_retirement_patch_is_no_kiam_object(app_resources: list[Resource]) -> None:
    """Retirement rolls the agents through a patch before they go: a patch owns fields of the
    DaemonSet, not the DaemonSet, so a retired stack may keep it."""
    agents = g.find(app_resources, DAEMON_SET, "kiam-agent")
    patch = Resource(
        urn=agents.urn.replace(DAEMON_SET, "kubernetes:apps/v1:DaemonSetPatch") + "-retirement",
        type="kubernetes:apps/v1:DaemonSetPatch",
        name="kiam-agent-retirement",
        inputs={"metadata": dict(agents.inputs["metadata"])},
    )
    assert check_all([*g.retired(app_resources), patch], expected_of(g.RETIRED_CONFIG)) == []
    daemon_set = check_all(
        [*g.retired(app_resources), dataclasses.replace(patch, type=DAEMON_SET)],
        expected_of(g.RETIRED_CONFIG),
    )
    assert [v for v in daemon_set if v.id == RETIRED] == [
        Violation(RETIRED, patch.urn, removes("kiam's kiam-agent (DaemonSet)"))
    ]


def test_an_association_is_found_by_what_it_records() -> None:
    """The EKS resource by its type, or the same four fields as a stand-in's data."""
    from kiam_eks.invariants.pod_identity import associations
    from kiam_eks.invariants.view import KiamView

    fields = {"clusterName": "c", "namespace": "n", "serviceAccount": "s", "roleArn": "arn:r"}
    eks = Resource(urn="urn:a", type=g.ASSOCIATION, name="a", inputs=fields)
    standin = Resource(
        urn="urn:b", type="kubernetes:core/v1:ConfigMap", name="b", inputs={"data": fields}
    )
    partial = Resource(
        urn="urn:c",
        type="kubernetes:core/v1:ConfigMap",
        name="c",
        inputs={"data": {k: v for k, v in fields.items() if k != "roleArn"}},
    )
    found = associations(KiamView([eks, standin, partial]))
    assert [(a.source.urn, a.describe(), a.role_arn, a.role_prop) for a in found] == [
        ("urn:a", "c/n/s", "arn:r", "roleArn"),
        ("urn:b", "c/n/s", "arn:r", "data"),
    ]


def test_unknown_association_fields_are_not_judged(app_resources: list[Resource]) -> None:
    """During a preview the association's role ARN is unknown; its property dependency still
    names the role, and its other fields are judged once known."""
    moved = g.moved(app_resources)
    old = g.find(moved, g.ASSOCIATION, "kiam-app-billing-pod-identity")
    preview = g.replace(moved, old, g.with_inputs(old, roleArn=UNKNOWN, serviceAccount=UNKNOWN))
    assert check_all(preview, expected_of(g.MOVED_CONFIG)) == []


def test_the_pod_identity_facts_as_aws_states_them() -> None:
    """EKS user guide, pod-id-role and pod-id-abac; pulumi-aws's type token."""
    from kiam_eks.invariants import pod_identity as p

    assert p.POD_IDENTITY_ASSOCIATION == "aws:eks/podIdentityAssociation:PodIdentityAssociation"
    assert p.ASSOCIATION_FIELDS == ("clusterName", "namespace", "serviceAccount", "roleArn")
    assert p.POD_IDENTITY_SERVICE == "pods.eks.amazonaws.com"
    assert p.POD_IDENTITY_ACTIONS == ("sts:AssumeRole", "sts:TagSession")
    assert p.SOURCE_ACCOUNT_KEY == "aws:SourceAccount"
    assert p.CLUSTER_TAG_KEY == "aws:RequestTag/eks-cluster-name"
    assert p.NAMESPACE_TAG_KEY == "aws:RequestTag/kubernetes-namespace"
    assert p.SERVICE_ACCOUNT_TAG_KEY == "aws:RequestTag/kubernetes-service-account"


# 16, the change from the last update: each case renders a stack, and judges it against facts of
# a last update it would strand something of (the same as rendering a stack that strands them).
from kiam_eks.invariants.expected import Expected  # noqa: E402
from kiam_eks.settings.agent import TolerationSettings  # noqa: E402
from kiam_eks.settings.applications import ServedBy  # noqa: E402
from kiam_eks.settings.loader import settings_from_values as _values  # noqa: E402
from kiam_eks.transitions.installed import Installed, installed_by  # noqa: E402

CHANGE = "change"
RETIRED_CONFIG = {**base_config(), "kiam:retire": True}


def _settings(config: dict[str, Any]) -> Any:
    return _values({k.removeprefix("kiam:"): v for k, v in config.items()}, "test config")


def _facts(config: dict[str, Any], **changes: Any) -> Installed:
    """What an update of `config` left, with `changes` to its facts."""
    facts = installed_by(_settings(config), None)
    return facts.model_copy(update=changes)


def _agents(config: dict[str, Any], **changes: Any) -> Any:
    facts = installed_by(_settings(config), None)
    assert facts.agents is not None
    return facts.agents.model_copy(update=changes)


def _server(config: dict[str, Any], **changes: Any) -> Any:
    facts = installed_by(_settings(config), None)
    assert facts.server is not None
    return facts.server.model_copy(update=changes)


def _application(config: dict[str, Any], app: str, **changes: Any) -> dict[str, Any]:
    facts = installed_by(_settings(config), None)
    return {
        **facts.applications,
        app: facts.applications[app].model_copy(update=changes),
    }


# (description, baseline, the settings judged, the last update's facts, the exact violations)
ChangeCase = tuple[
    str,
    str,
    dict[str, Any],
    Callable[[], Installed],
    Callable[[list[Resource]], list[tuple[str, str, str]]],
]
CHANGE_CASES: list[ChangeCase] = [
    (
        "16 agents retired without the roll to --iptables-remove",
        "retired",
        RETIRED_CONFIG,
        lambda: _facts(base_config()),
        lambda rs: [
            (
                CHANGE,
                "stack",
                "retires the agents of kiam-agent without first rolling them to "
                "--iptables-remove: every node would keep their rule",
            )
        ],
    ),
    (
        "16 the retirement rolls the agents onto another port",
        "retiring",
        RETIRED_CONFIG,
        lambda: _facts(base_config(), agents=_agents(base_config(), port=9000)),
        lambda rs: [
            (
                CHANGE,
                urn(rs, "kubernetes:apps/v1:DaemonSetPatch"),
                "rolls the agents onto port 8181 and interface eni+, while every node's rule "
                "names port 9000 and interface eni+: each agent would remove only its own rule",
            )
        ],
    ),
    (
        "16 the running agents' DaemonSet is gone",
        "base",
        base_config(),
        lambda: _facts(base_config(), agents=_agents(base_config(), daemon_set="kiam-agents")),
        lambda rs: [
            (
                CHANGE,
                "stack",
                "no longer has the agent DaemonSet kiam-agents, whose agents keep their rule "
                "when they stop",
            )
        ],
    ),
    (
        "16 the agents move to another port",
        "base",
        base_config(),
        lambda: _facts(base_config(), agents=_agents(base_config(), port=9000)),
        lambda rs: [
            (
                CHANGE,
                urn(rs, DAEMON_SET),
                "moves the agents to port 8181, while every node's rule sends pods to 9000 and "
                "the running agents keep it",
            )
        ],
    ),
    (
        "16 the agents tolerate less than the running ones",
        "base",
        base_config(),
        lambda: _facts(
            base_config(),
            agents=_agents(
                base_config(),
                tolerations=(TolerationSettings(key="batch", operator="Exists"),),
            ),
        ),
        lambda rs: [
            (
                CHANGE,
                urn(rs, DAEMON_SET),
                "no longer tolerates what the running agents tolerate (1 tolerations): their "
                "agents would be deleted with their rule in place",
            )
        ],
    ),
    (
        "16 the servers listen on another port",
        "base",
        base_config(),
        lambda: _facts(base_config(), server=_server(base_config(), grpc_port=443)),
        lambda rs: [
            (
                CHANGE,
                urn(rs, DEPLOYMENT),
                "binds 0.0.0.0:9610, while the running agents dial port 443",
            ),
        ],
    ),
    (
        "16 the certificate drops the name the running agents dial",
        "base",
        base_config(),
        lambda: _facts(base_config(), server=_server(base_config(), service_name="kiam-old")),
        lambda rs: [
            (
                CHANGE,
                "stack",
                "the server certificate does not name kiam-old.kiam.svc.cluster.local, which "
                "the running agents dial",
            ),
            (
                CHANGE,
                urn(rs, DEPLOYMENT),
                "does not restart onto the certificate naming kiam-old.kiam.svc.cluster.local "
                "while agents move to another address",
            ),
        ],
    ),
    (
        "16 the namespace the stack created is dropped",
        "no-namespace",
        base_config(namespace={"create": False}),
        lambda: _facts(base_config()),
        lambda rs: [
            (
                CHANGE,
                "stack",
                "no longer has namespace kiam, which it created: it would be deleted with "
                "everything in it",
            )
        ],
    ),
    (
        "16 the namespace is released but not kept on delete",
        "base",
        base_config(namespace={"create": False}),
        lambda: _facts(base_config()),
        lambda rs: [
            (
                CHANGE,
                urn(rs, "kubernetes:core/v1:Namespace"),
                "is released but not kept on delete: the next update would delete it",
            )
        ],
    ),
    (
        "16 an application moves to another role",
        "applications",
        APP_CONFIG,
        lambda: _facts(
            APP_CONFIG,
            applications=_application(APP_CONFIG, "billing", role_arn=f"{BASE}app-billing-v1"),
        ),
        lambda rs: [
            (
                CHANGE,
                "stack",
                f"application billing moves from role {BASE}app-billing-v1 to {BASE}app-billing",
            )
        ],
    ),
    (
        "16 an application moves to another namespace",
        "applications",
        APP_CONFIG,
        lambda: _facts(
            APP_CONFIG, applications=_application(APP_CONFIG, "billing", namespace="legacy")
        ),
        lambda rs: [
            (CHANGE, "stack", "application billing moves from namespace legacy to billing")
        ],
    ),
    (
        "16 an application skips a servedBy step",
        "applications",
        APP_CONFIG,
        lambda: _facts(
            APP_CONFIG,
            applications=_application(
                APP_CONFIG, "search", served_by=ServedBy.POD_IDENTITY, service_account="indexer"
            ),
        ),
        lambda rs: [(CHANGE, "stack", "application search skips from podIdentity to kiam+irsa")],
    ),
]


def change_baseline_resources(
    base: list[Resource], applications: list[Resource]
) -> dict[str, list[Resource]]:
    """The stacks the change cases break, by the name each case gives (its second item)."""
    return {
        "base": base,
        "applications": applications,
        "retired": resources_from_recording(run_program(RETIRED_CONFIG)),
        # The `pulumi up` that retires an install: it reads the install's outputs.
        "retiring": resources_from_recording(
            run_main(
                RETIRED_CONFIG,
                stack="test",
                last_outputs=run_program(base_config()).stack_outputs,
            )
        ),
        "no-namespace": resources_from_recording(
            run_program(base_config(namespace={"create": False}))
        ),
        # Roles that exist already (tests/test_existing_roles.py), served by kiam and moved.
        "existing": resources_from_recording(run_program(g.EXISTING_CONFIG)),
        "existing-moved": resources_from_recording(run_program(g.EXISTING_MOVED_CONFIG)),
    }


@pytest.fixture(scope="module")
def change_baselines(
    resources: list[Resource], app_resources: list[Resource]
) -> dict[str, list[Resource]]:
    return change_baseline_resources(resources, app_resources)


@pytest.mark.parametrize(
    ("description", "baseline", "config", "previous", "expected"),
    CHANGE_CASES,
    ids=[c[0] for c in CHANGE_CASES],
)
def test_the_change_guarantee_catches_each_stranding_exactly(
    change_baselines: dict[str, list[Resource]],
    description: str,
    baseline: str,
    config: dict[str, Any],
    previous: Callable[[], Installed],
    expected: Callable[[list[Resource]], list[tuple[str, str, str]]],
) -> None:
    rs = change_baselines[baseline]
    judged = Expected.of(_settings(config), previous())
    assert [v for v in check_all(rs, judged) if v.id == CHANGE] == sorted(
        Violation(*v) for v in expected(rs)
    )


def test_the_change_guarantee_holds_for_a_change_of_nothing(
    change_baselines: dict[str, list[Resource]],
) -> None:
    for baseline, config in (("base", base_config()), ("applications", APP_CONFIG)):
        same = Expected.of(_settings(config), _facts(config))
        assert check_all(change_baselines[baseline], same) == [], baseline

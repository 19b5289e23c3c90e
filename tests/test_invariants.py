"""Each guarantee holds for every example stack, and each check catches its own breakage exactly."""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Callable
from typing import Any

import pytest

from invariants import UNKNOWN, Resource, Violation, check_all
from invariants.recorded import resources_from_recording
from tests.conftest import EXAMPLE_STACKS, example_config, run_program
from tools.mock_engine import Recording

DEPLOYMENT = "kubernetes:apps/v1:Deployment"
DAEMON_SET = "kubernetes:apps/v1:DaemonSet"


@pytest.mark.parametrize("stack", EXAMPLE_STACKS)
def test_every_example_stack_keeps_every_guarantee(stack: str) -> None:
    rec = run_program(example_config(stack), stack=stack)
    assert check_all(resources_from_recording(rec)) == []


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


def test_baseline_has_no_violation(resources: list[Resource]) -> None:
    assert check_all(resources) == []


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
        "4 agent dials a name the certificate lacks",
        lambda rs: mutate(
            rs,
            "tls:index/certRequest:CertRequest",
            lambda i: i.update(dnsNames=["kiam-server", "localhost"]),
            name="kiam-tls-server",
        ),
        lambda rs: [
            (
                "server-service",
                urn(rs, DAEMON_SET),
                "dials kiam-server.kiam.svc.cluster.local, which the server certificate does not name",
            )
        ],
    ),
    (
        "5 agent tolerates the server taint",
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
        "5 agent without node affinity",
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
        "6 no assume-role ARN",
        lambda rs: mutate(rs, DEPLOYMENT, without_flag("--assume-role-arn")),
        lambda rs: [
            ("server-args", urn(rs, DEPLOYMENT), "needs exactly one non-empty --assume-role-arn")
        ],
    ),
    (
        "6 no metrics address",
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
        "6 session of 15m",
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
        "6 refresh not below duration",
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
        "7 server role may assume any role",
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
        "7 node role may assume more than the server role",
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
        "7 wildcard action",
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
        "7 server role trusts the whole account",
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
        "8 fixed node group name",
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
        "8 delete before replace",
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
        "8 skip await",
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
        "8 Deployment does not follow the node group",
        lambda rs: mutate(rs, DEPLOYMENT, lambda i: None, property_dependencies={}),
        lambda rs: [
            (
                "node-group-replacement",
                urn(rs, DEPLOYMENT),
                "its spec does not follow the node group's name",
            )
        ],
    ),
    (
        "9 agents do not wait for servers",
        lambda rs: mutate(rs, DAEMON_SET, lambda i: None, dependencies=frozenset()),
        lambda rs: [
            ("ordering", urn(rs, DAEMON_SET), "is not created after the server Deployment is Ready")
        ],
    ),
    (
        "9 servers do not wait for RBAC",
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
        "10 server escalates and adds a capability",
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
        "10 agent privileged without requests",
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
]


@pytest.mark.parametrize(("description", "breaks", "expected"), CASES, ids=[c[0] for c in CASES])
def test_each_check_catches_its_breakage_exactly(
    resources: list[Resource],
    description: str,
    breaks: Callable[[list[Resource]], list[Resource]],
    expected: Callable[[list[Resource]], list[tuple[str, str, str]]],
) -> None:
    assert check_all(breaks(resources)) == sorted(Violation(*v) for v in expected(resources))


def test_every_check_is_exercised_by_a_breakage(resources: list[Resource]) -> None:
    from invariants import CHECKS

    exercised = {v[0] for _, _, expected in CASES for v in expected(resources)}
    assert exercised == set(CHECKS) - {"presence"}


def test_missing_parts_are_violations_not_vacuous_passes() -> None:
    assert check_all([]) == [
        Violation(
            "iam-least-privilege",
            "stack",
            "expected one server-node and one server role (tag kiam:role)",
        ),
        Violation("presence", "stack", "no kiam agent DaemonSet found"),
        Violation("presence", "stack", "no kiam node group found"),
        Violation("presence", "stack", "no kiam server Deployment found"),
    ]


def test_unknown_values_are_not_judged(resources: list[Resource]) -> None:
    """During preview the server args (built from a role ARN) are unknown: no verdict until `up`."""
    unknown = mutate(resources, DEPLOYMENT, lambda i: pod(i)["containers"][0].update(args=UNKNOWN))
    assert check_all(unknown) == []
    broken = mutate(
        resources, DEPLOYMENT, lambda i: pod(i)["containers"][0].update(args=["server"])
    )
    assert {v.id for v in check_all(broken)} == {"server-args"}

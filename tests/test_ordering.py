"""The plan's ordering edges are checked, not recited: each edge a run lacks is printed with ✗
and why, and fails the plan."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from kiam_eks.contracts.tokens import (
    CLUSTER_ROLE_BINDING,
    DAEMON_SET,
    DEPLOYMENT,
    NODE_GROUP,
    ROLE_POLICY_ATTACHMENT,
    SECRET,
    SERVICE,
)
from tests.conftest import example_config, run_program
from tests.test_adoption import adoption_config
from tools import mock_engine, plan
from tools.mock_engine import Recording, Registration
from tools.ordering import ordering_edges

ATTACHMENT = "RolePolicyAttachment kiam-iam-server-node-"
NODE_POLICIES = f"{ATTACHMENT}AmazonEC2ContainerRegistryReadOnly, {ATTACHMENT}AmazonEKSWorkerNodePolicy, {ATTACHMENT}AmazonEKS_CNI_Policy"
NODES_JOIN = "nodes join only with the worker and CNI policies (else EKS fails the group)"
REPLACED = "NodeGroup kiam-server-nodes is replaced create-before-delete: the new group is up before the old one drains"
FOLLOWS = "a replacement group is created, servers roll onto it and are Ready, then the old group is drained"
SERVERS_WAIT = "servers start with their RBAC, certificate and Service in place"
AGENTS_WAIT = "agents start once the servers are Ready, with their certificate"
DEV_EDGES = [
    f"✓ NodeGroup kiam-server-nodes waits for {NODE_POLICIES}: {NODES_JOIN}",
    f"✓ {REPLACED}",
    f"✓ Deployment kiam-server follows NodeGroup kiam-server-nodes's name (nodeSelector): {FOLLOWS}",
    "✓ Deployment kiam-server waits for ClusterRoleBinding kiam-server, Secret kiam-tls-server, "
    f"Service kiam-server: {SERVERS_WAIT}",
    f"✓ DaemonSet kiam-agent waits for Deployment kiam-server (Ready), Secret kiam-tls-agent: {AGENTS_WAIT}",
]


@pytest.fixture(scope="module")
def dev_run() -> Recording:
    return run_program(example_config("dev"), stack="dev")


def changed(recording: Recording, type_: str, change: Callable[[Registration], Any]) -> Recording:
    """The recording with the one registration of `type_` replaced by `change(it)`."""
    return Recording(
        registrations=[change(r) if r.type == type_ else r for r in recording.registrations],
        stack_outputs=recording.stack_outputs,
    )


def without_dependency(recording: Recording, type_: str, on: str, name: str) -> Recording:
    """The recording in which the `type_` resource no longer waits for the `on` resource `name`."""
    urns = {r.urn for r in recording.registrations if (r.type, r.name) == (on, name)}
    assert len(urns) == 1
    return changed(
        recording,
        type_,
        lambda r: dataclasses.replace(
            r,
            dependencies=tuple(u for u in r.dependencies if u not in urns),
            property_dependencies={
                k: tuple(u for u in v if u not in urns) for k, v in r.property_dependencies.items()
            },
        ),
    )


def test_every_edge_of_the_dev_stack_is_checked_and_holds(dev_run: Recording) -> None:
    assert [str(edge) for edge in ordering_edges(dev_run)] == DEV_EDGES


@pytest.mark.parametrize(
    ("mutate", "line"),
    [
        (
            lambda rec: without_dependency(rec, DAEMON_SET, DEPLOYMENT, "kiam-server"),
            f"✗ DaemonSet kiam-agent waits for Deployment kiam-server (Ready), Secret kiam-tls-agent: "
            f"{AGENTS_WAIT}: no dependency on Deployment kiam-server",
        ),
        (
            lambda rec: without_dependency(rec, DAEMON_SET, SECRET, "kiam-tls-agent"),
            f"✗ DaemonSet kiam-agent waits for Deployment kiam-server (Ready), Secret kiam-tls-agent: "
            f"{AGENTS_WAIT}: no dependency on Secret kiam-tls-agent",
        ),
        (
            lambda rec: without_dependency(rec, DEPLOYMENT, SERVICE, "kiam-server"),
            "✗ Deployment kiam-server waits for ClusterRoleBinding kiam-server, Secret kiam-tls-server, "
            f"Service kiam-server: {SERVERS_WAIT}: no dependency on Service kiam-server",
        ),
        (
            lambda rec: without_dependency(rec, DEPLOYMENT, CLUSTER_ROLE_BINDING, "kiam-server"),
            "✗ Deployment kiam-server waits for ClusterRoleBinding kiam-server, Secret kiam-tls-server, "
            f"Service kiam-server: {SERVERS_WAIT}: no dependency on ClusterRoleBinding kiam-server",
        ),
        (
            lambda rec: without_dependency(rec, DEPLOYMENT, NODE_GROUP, "kiam-server-nodes"),
            f"✗ Deployment kiam-server follows the node group's name (nodeSelector): {FOLLOWS}: its "
            "spec takes nothing from NodeGroup kiam-server-nodes",
        ),
        (
            lambda rec: changed(
                rec, NODE_GROUP, lambda r: dataclasses.replace(r, delete_before_replace=True)
            ),
            f"✗ {REPLACED}: it is delete-before-replace",
        ),
        (
            lambda rec: without_dependency(
                rec, NODE_GROUP, ROLE_POLICY_ATTACHMENT, "kiam-iam-server-node-AmazonEKS_CNI_Policy"
            ),
            f"✗ NodeGroup kiam-server-nodes waits for {NODE_POLICIES}: {NODES_JOIN}: no dependency "
            f"on {ATTACHMENT}AmazonEKS_CNI_Policy",
        ),
    ],
    ids=[
        "agents-before-servers",
        "agents-before-their-secret",
        "servers-before-service",
        "servers-before-rbac",
        "servers-not-following-the-group",
        "group-delete-before-replace",
        "group-before-cni-policy",
    ],
)
def test_a_missing_edge_is_reported_with_what_is_missing(
    dev_run: Recording, mutate: Callable[[Recording], Recording], line: str
) -> None:
    edges = [str(edge) for edge in ordering_edges(mutate(dev_run))]
    assert [e for e in edges if e.startswith("✗")] == [line]
    assert len(edges) == len(DEV_EDGES)


def test_the_plan_prints_a_missing_edge_and_exits_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def run_without_agent_ordering(config: Any, **kwargs: Any) -> Recording:
        recording = real_run(config, **kwargs)
        return without_dependency(recording, DAEMON_SET, DEPLOYMENT, "kiam-server")

    real_run = mock_engine.run_main
    monkeypatch.setattr(mock_engine, "run_main", run_without_agent_ordering)
    # Guarantee 9 judges this edge too: silenced, so the exit code is the ordering check's alone.
    monkeypatch.setattr(plan, "check_all", lambda resources: [])
    assert plan.main(["--stack", "dev", "--no-validate"]) == 1
    out = capsys.readouterr().out
    assert (
        "\nOrdering\n"
        + "\n".join(f"  {line}" for line in DEV_EDGES[:4])
        + "\n  ✗ DaemonSet kiam-agent waits for Deployment kiam-server (Ready), Secret "
        f"kiam-tls-agent: {AGENTS_WAIT}: no dependency on Deployment kiam-server\n"
        "\nGuarantees\n  ✓ all invariants hold\n"
    ) in out


def test_while_the_running_install_keeps_its_agents_and_service_no_edge_names_them() -> None:
    edges = [str(edge) for edge in ordering_edges(run_program(adoption_config("servers")))]
    assert edges[3:] == [
        "✓ Deployment kiam-server waits for ClusterRoleBinding kiam-server, Secret "
        f"kiam-tls-server: {SERVERS_WAIT}",
    ]

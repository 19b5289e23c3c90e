"""`kiam:retire`: one `pulumi up` rolls the agents to remove their iptables rule, then removes the
install (agents first), keeping every application role and what serves it now."""

from __future__ import annotations

from typing import Any

import pytest

from kiam_eks.components.agent_retirement import retiring_agent_flags
from kiam_eks.components.stack_state import READ_STACK_RESOURCES
from kiam_eks.contracts import names, tokens
from kiam_eks.settings.loader import settings_from_values
from tests.conftest import base_config, only_container, run_program, types_and_names
from tests.test_adoption import adoption_config
from tools.mock_engine import Invoke, Recording, run_main

# An application that has moved to IRSA: what `kiam:retire` allows.
MOVED = {
    "billing": {
        "namespace": "billing",
        "roleName": "billing-api",
        "servedBy": "irsa",
        "serviceAccount": "api",
    }
}
KIAM = tokens.KIAM
RETIREMENT = tokens.AGENT_RETIREMENT
AGENT_ARGS_KEPT_RULE = [
    "agent",
    "--json-log",
    "--level=info",
    "--iptables",
    "--no-iptables-remove",
]


def installed_config() -> dict[str, Any]:
    return base_config(applications=MOVED)


def retired_config() -> dict[str, Any]:
    return {**installed_config(), "kiam:retire": True}


def retiring_run(config: dict[str, Any]) -> Recording:
    """The `pulumi up` that retires kiam: `config` with `kiam:retire`, run on a stack whose last
    update installed kiam with the same settings (its outputs are what that run exported)."""
    install = run_program({k: v for k, v in config.items() if k != "kiam:retire"})
    return run_main(config, stack="test", last_outputs=install.stack_outputs)


@pytest.fixture(scope="module")
def installed() -> Recording:
    return run_program(installed_config())


@pytest.fixture(scope="module")
def retired(installed: Recording) -> Recording:
    """The retiring `pulumi up`: the stack's last outputs are the install's."""
    return run_main(retired_config(), stack="test", last_outputs=installed.stack_outputs)


@pytest.fixture(scope="module")
def after_retirement(retired: Recording) -> Recording:
    """Any later `pulumi up` (after a `pulumi refresh` too): the last outputs are the retired
    stack's."""
    return run_main(retired_config(), stack="test", last_outputs=retired.stack_outputs)


def _application_part(recording: Recording) -> set[tuple[str, str]]:
    """What serves the applications: their roles and the namespaces' permission patches."""
    return {
        (r.type, r.name)
        for r in recording.registrations
        if tokens.APPLICATION_ROLE in r.urn or tokens.NAMESPACE_PERMISSIONS in r.urn
    }


def test_retire_mode_registers_the_agent_retirement_and_the_applications_only(
    installed: Recording, retired: Recording
) -> None:
    application = _application_part(installed)
    assert {
        (tokens.APPLICATION_ROLE, "kiam-app-billing"),
        (tokens.ROLE, "kiam-app-billing"),
    } <= application
    assert types_and_names(retired.registrations) == {
        ("pulumi:providers:aws", "aws"),
        ("pulumi:providers:kubernetes", "kubernetes"),
        (KIAM, "kiam"),
        (RETIREMENT, "kiam-agent-retirement"),
        (tokens.DAEMON_SET_PATCH, "kiam-agent-retirement"),
        *application,
    }


def test_what_retirement_removes_is_the_whole_install_and_nothing_of_the_applications(
    installed: Recording, retired: Recording
) -> None:
    removed = types_and_names(installed.registrations) - types_and_names(retired.registrations)
    kept = types_and_names(installed.registrations) & types_and_names(retired.registrations)
    # Every component of the install goes, with everything under it.
    assert {(t, n) for t, n in removed if t.startswith("kiam:index:")} == {
        (tokens.IAM, "kiam-iam"),
        (tokens.SERVER_NODE_GROUP, "kiam-server-nodes"),
        (tokens.TLS, "kiam-tls"),
        (tokens.SERVER, "kiam-server"),
        (tokens.AGENT, "kiam-agent"),
    }
    install_components = {r.urn for r in installed.registrations if (r.type, r.name) in removed}
    for reg in installed.registrations:
        if (reg.type, reg.name) in removed and not reg.type.startswith("kiam:index:"):
            assert reg.parent in install_components or (reg.type, reg.name) == (
                tokens.NAMESPACE,
                "kiam-namespace",
            ), f"{reg.type} {reg.name} is not part of the kiam install"
    # Everything of the application stays, under the same names.
    application = _application_part(installed)
    assert application and application <= kept


def test_the_patch_rolls_the_running_agents_to_remove_their_rule(
    installed: Recording, retired: Recording
) -> None:
    patch = retired.one(tokens.DAEMON_SET_PATCH)
    running = only_container(installed.one(tokens.DAEMON_SET))["args"]
    assert running[:5] == AGENT_ARGS_KEPT_RULE
    # The same command line, with the rule removed on exit spelled out in place of keeping it.
    assert patch.inputs == {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": "kiam-agent",
            "namespace": "kiam",
            "annotations": {"pulumi.com/patchForce": "true"},
        },
        "spec": {
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "10%"}},
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "kiam-agent",
                            "args": [
                                "agent",
                                "--json-log",
                                "--level=info",
                                "--iptables",
                                "--iptables-remove",
                                *running[5:],
                            ],
                        }
                    ]
                }
            },
        },
    }
    assert (
        "--no-iptables-remove"
        not in patch.inputs["spec"]["template"]["spec"]["containers"][0]["args"]
    )


def last_update_read(recording: Recording) -> Invoke:
    """The program's one read of what the stack's last update left."""
    [read] = [i for i in recording.invokes if i.token == READ_STACK_RESOURCES]
    return read


def root_outputs(read: Invoke) -> dict[str, Any]:
    roots = [r for r in read.answer["outputs"].values() if r["type"] == tokens.STACK]
    return roots[0]["outputs"] if roots else {}


def test_retirement_reads_this_stacks_own_last_update_before_registering_anything(
    installed: Recording, retired: Recording
) -> None:
    assert installed.reads == retired.reads == []  # no StackReference any more
    read = last_update_read(retired)
    assert read.args == {"stackName": "organization/kiam/test"}
    assert read.registered_before == 0
    # As the engine hands them over: the exported values (numbers as floats, nulls left out).
    assert sorted(root_outputs(read)) == sorted(installed.stack_outputs)
    assert root_outputs(read)["serverAddress"] == installed.stack_outputs["serverAddress"]


def test_once_retired_nothing_is_left_to_roll(
    retired: Recording, after_retirement: Recording
) -> None:
    assert "serverAddress" not in retired.stack_outputs
    # Everything the retiring up registered but the patch: the next up forgets it (kept in the
    # cluster's history only), and a refresh that forgot it already leaves nothing to apply again.
    assert types_and_names(after_retirement.registrations) == types_and_names(
        retired.registrations
    ) - {(tokens.DAEMON_SET_PATCH, "kiam-agent-retirement")}
    assert sorted(root_outputs(last_update_read(after_retirement))) == sorted(retired.stack_outputs)
    assert after_retirement.stack_outputs == retired.stack_outputs


def test_a_new_stack_retired_from_its_first_up_rolls_nothing() -> None:
    new = run_program(retired_config())  # no checkpoint yet: no outputs to read
    assert new.by_type(tokens.DAEMON_SET_PATCH) == []
    assert last_update_read(new).answer["outputs"] == {}
    assert sorted(new.stack_outputs) == ["applications", "installed"]


def test_the_patch_is_kept_on_delete_and_waits_as_long_as_a_rollout(retired: Recording) -> None:
    patch = retired.one(tokens.DAEMON_SET_PATCH)
    component = retired.one(RETIREMENT)
    assert patch.retain_on_delete is True
    assert patch.parent == component.urn
    assert component.parent == retired.one(KIAM).urn
    assert patch.dependencies == ()
    # Awaited as long as the DaemonSet's own rollout (kiam:agent.rollout): 10% of the nodes at a
    # time take at most 10 restarts of 30 s, waited for twice over.
    assert patch.custom_timeouts == {"create": "10m", "update": "10m"}
    assert patch.ignore_changes == ()


def test_the_patch_follows_the_agent_settings() -> None:
    config = {
        **retired_config(),
        "kiam:agent": {"hostInterface": "cali+", "port": 8282, "logLevel": "debug"},
    }
    args = only_container(retiring_run(config).one(tokens.DAEMON_SET_PATCH))["args"]
    settings = settings_from_values(
        {k.removeprefix("kiam:"): v for k, v in config.items()}, "test config"
    )
    server_address = names.agent_server_address(
        settings.server.service_name, "kiam", "cluster.local", settings.server.grpc_port
    )
    assert args == retiring_agent_flags(settings.agent, server_address=server_address)
    assert args[:5] == ["agent", "--json-log", "--level=debug", "--iptables", "--iptables-remove"]
    assert "--host-interface=cali+" in args and "--port=8282" in args


def test_after_an_adoption_the_patch_targets_the_adopted_daemon_set() -> None:
    config = adoption_config("complete")
    config["kiam:adoption"] = {**config["kiam:adoption"], "agentDaemonSetName": "kiam-agents-v1"}
    patch = retiring_run({**config, "kiam:retire": True}).one(tokens.DAEMON_SET_PATCH)
    assert patch.inputs["metadata"]["name"] == "kiam-agents-v1"
    assert patch.inputs["metadata"]["namespace"] == "kube-system"


def _deletion_rounds(installed: Recording, retired: Recording) -> dict[tuple[str, str], int]:
    """The engine's delete schedule for what `retired` no longer registers (pulumi/pulumi
    pkg/resource/deploy/step_generator.go `ScheduleDeletes`): a resource is deleted in the first
    round after every resource that depends on it, or is its child, is gone."""
    gone = types_and_names(installed.registrations) - types_and_names(retired.registrations)
    regs = [r for r in installed.registrations if (r.type, r.name) in gone]
    by_urn = {r.urn: r for r in regs}
    dependents: dict[str, set[str]] = {r.urn: set() for r in regs}
    for r in regs:
        for on in {*r.dependencies, *(d for ds in r.property_dependencies.values() for d in ds)}:
            if on in dependents:
                dependents[on].add(r.urn)
        if r.parent in dependents:
            dependents[r.parent].add(r.urn)
    rounds: dict[tuple[str, str], int] = {}
    left, index = set(by_urn), 0
    while left:
        ready = {u for u in left if not (dependents[u] & left)}
        assert ready, "a dependency cycle among the deleted resources"
        for u in ready:
            rounds[(by_urn[u].type, by_urn[u].name)] = index
        left -= ready
        index += 1
    return rounds


def test_the_recorded_dependencies_delete_agents_first(
    installed: Recording, retired: Recording
) -> None:
    rounds = _deletion_rounds(installed, retired)
    agents = rounds[(tokens.DAEMON_SET, "kiam-agent")]
    servers = rounds[(tokens.DEPLOYMENT, "kiam-server")]
    # The agents go in the first round (their pods stop first: foreground deletion), with only
    # what neither they nor a running server need to stop: the servers' disruption budget and
    # the IAM permissions of roles that, once retired, serve no application.
    assert agents == 0
    assert {k for k, v in rounds.items() if v == 0} == {
        (tokens.DAEMON_SET, "kiam-agent"),
        (tokens.PDB, "kiam-server"),
        (tokens.ROLE_POLICY, "kiam-iam-server-node-assume-server"),
        (tokens.ROLE_POLICY, "kiam-iam-server-assume-applications"),
    }
    # Everything the servers run on or with goes after them.
    assert servers == 1
    after_servers = [
        (tokens.SERVICE, "kiam-server"),
        (tokens.CLUSTER_ROLE_BINDING, "kiam-server"),
        (tokens.SECRET, "kiam-tls-server"),
        (tokens.NODE_GROUP, "kiam-server-nodes"),
        (tokens.ROLE, "kiam-iam-server"),
        (tokens.ROLE, "kiam-iam-server-node"),
        (tokens.NAMESPACE, "kiam-namespace"),
    ]
    assert {k: rounds[k] > servers for k in after_servers} == {k: True for k in after_servers}
    # The dedicated nodes go after the servers; kiam's roles after the nodes that used them.
    nodes = rounds[(tokens.NODE_GROUP, "kiam-server-nodes")]
    assert rounds[(tokens.ROLE, "kiam-iam-server-node")] > nodes


def test_the_retired_stack_exports_only_the_applications(
    installed: Recording, retired: Recording
) -> None:
    assert sorted(installed.stack_outputs) == [
        "applicationRolePatterns",
        "applications",
        "installed",
        "namespace",
        "nodeGroupName",
        "nodeRoleArn",
        "roleBaseArn",
        "serverAddress",
        "serverRoleArn",
    ]
    assert sorted(retired.stack_outputs) == ["applications", "installed"]
    assert retired.stack_outputs["installed"]["retired"] is True
    assert (
        retired.stack_outputs["applications"]["billing"]["roleArn"]
        == (installed.stack_outputs["applications"]["billing"]["roleArn"])
    )

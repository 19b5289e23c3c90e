"""invariants/transitions.py: what the mutants the other tests let live would change."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

from kiam_eks.invariants import Resource, Violation, check_all
from kiam_eks.invariants.expected import Expected
from kiam_eks.invariants.model import UNKNOWN
from kiam_eks.invariants.recorded import resources_from_recording
from kiam_eks.transitions.installed import Installed
from tests import guarantee_views as g
from tests.conftest import base_config, run_program
from tests.test_adoption import adoption_config
from tests.test_invariants import RETIRED_CONFIG, _agents, _application, _facts, _server, _settings

CHANGE = "change"


def changes(
    resources: list[Resource], config: dict[str, Any], previous: Installed
) -> list[Violation]:
    """What guarantee 16 says of `config` rendered as `resources`, after `previous`."""
    return [
        v for v in check_all(resources, Expected.of(_settings(config), previous)) if v.id == CHANGE
    ]


@pytest.fixture(scope="module")
def base() -> list[Resource]:
    return resources_from_recording(run_program(base_config()))


def test_agents_that_keep_their_tolerations_lose_none() -> None:
    config = base_config(agent={"tolerations": [{"key": "pool", "operator": "Exists"}]})
    rendered = resources_from_recording(run_program(config))
    assert changes(rendered, config, _facts(config)) == []


@pytest.mark.parametrize(
    "facts",
    [
        {"retired": True},  # kiam retired last time: no running agent dials the old port
        {"namespace": None},  # an update older than the namespace fact: not judged
    ],
)
def test_the_servers_are_judged_only_against_a_running_install_whose_facts_are_known(
    base: list[Resource], facts: dict[str, Any]
) -> None:
    config = base_config()
    previous = _facts(config, server=_server(config, grpc_port=9611), **facts)
    assert changes(base, config, previous) == []


def test_a_running_install_dialling_another_port_is_judged(base: list[Resource]) -> None:
    config = base_config()
    previous = _facts(config, server=_server(config, grpc_port=9611))
    (violation,) = changes(base, config, previous)
    assert violation.reason == "binds 0.0.0.0:9610, while the running agents dial port 9611"


def test_one_servedby_step_is_no_skip() -> None:
    config = g.MOVING_CONFIG  # billing: kiam -> kiam+podIdentity
    rendered = resources_from_recording(run_program(config))
    assert changes(rendered, config, _facts(g.KIAM_CONFIG)) == []


def test_retiring_agents_that_remove_their_rule_on_exit_needs_no_roll() -> None:
    rendered = resources_from_recording(run_program(RETIRED_CONFIG))
    previous = _facts(base_config(), agents=_agents(base_config(), removes_rule_on_exit=True))
    assert changes(rendered, RETIRED_CONFIG, previous) == []


@pytest.mark.parametrize(
    ("phase", "stranded"),
    [
        ("takeover", False),  # kept on delete while taking over: the running install has them
        ("complete", True),
    ],
)
def test_the_running_agents_may_go_only_while_a_takeover_keeps_them(
    phase: str, stranded: bool
) -> None:
    config = adoption_config(phase)
    rendered = resources_from_recording(run_program(config))
    previous = _facts(config, agents=_agents(config, daemon_set="gone"))
    assert [v.reason for v in changes(rendered, config, previous)] == (
        ["no longer has the agent DaemonSet gone, whose agents keep their rule when they stop"]
        if stranded
        else []
    )


def test_a_namespace_released_last_time_may_be_forgotten_now() -> None:
    config = base_config(namespace={"create": False})
    rendered = resources_from_recording(run_program(config))
    facts = _facts(base_config())
    assert facts.namespace is not None
    released = facts.namespace.model_copy(update={"owner": "released"})
    assert changes(rendered, config, facts.model_copy(update={"namespace": released})) == []


def test_a_new_application_does_not_hide_the_next_ones_change_of_role() -> None:
    config = g.KIAM_CONFIG
    rendered = resources_from_recording(run_program(config))
    old = "arn:aws:iam::111122223333:role/kiam-apps/old-search"
    applications = _application(config, "search", role_arn=old)
    del applications["billing"]  # billing is new in this update
    assert [
        v.reason for v in changes(rendered, config, _facts(config, applications=applications))
    ] == [f"application search moves from role {old} to {g.SEARCH}"]


def _with_unknown_args(resource: Resource) -> Resource:
    """A twin of a workload whose container arguments are not known yet (a preview)."""
    inputs = copy.deepcopy(dict(resource.inputs))
    inputs["spec"]["template"]["spec"]["containers"][0]["args"] = UNKNOWN
    return dataclasses.replace(resource, urn=resource.urn + "-twin", inputs=inputs)


@pytest.mark.parametrize(
    ("workload", "facts", "reason"),
    [
        (
            "kubernetes:apps/v1:Deployment",
            lambda config: {"server": _server(config, grpc_port=9611)},
            "binds 0.0.0.0:9610, while the running agents dial port 9611",
        ),
        (
            "kubernetes:apps/v1:DaemonSet",
            lambda config: {"agents": _agents(config, port=9000)},
            "moves the agents to port 8181, while every node's rule sends pods to 9000 and the "
            "running agents keep it",
        ),
    ],
)
def test_a_workload_not_known_yet_does_not_hide_the_next_one(
    base: list[Resource], workload: str, facts: Any, reason: str
) -> None:
    config = base_config()
    real = next(r for r in base if r.type == workload)
    previous = _facts(config, **facts(config))
    assert [
        (v.resource, v.reason) for v in changes([_with_unknown_args(real), *base], config, previous)
    ] == [(real.urn, reason)]


def test_two_servedby_steps_at_once_are_a_skip() -> None:
    config = g.MOVED_CONFIG  # billing: kiam -> podIdentity
    rendered = resources_from_recording(run_program(config))
    assert [v.reason for v in changes(rendered, config, _facts(g.KIAM_CONFIG))] == [
        "application billing skips from kiam to podIdentity"
    ]

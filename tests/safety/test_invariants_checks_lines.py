"""invariants/checks.py: what the mutants the other tests let live would change (the module's run
is not finished: docs/testing.md)."""

from __future__ import annotations

import copy
import dataclasses

from invariants import Resource, Violation, check_all
from tests.conftest import base_config, expected_of


def test_a_second_node_affinity_term_that_admits_server_nodes_is_caught(
    base_resources: list[Resource],
) -> None:
    # Node selector terms are ORed: one that does not exclude the server nodes admits them.
    agent = next(r for r in base_resources if r.type == "kubernetes:apps/v1:DaemonSet")
    inputs = copy.deepcopy(dict(agent.inputs))
    affinity = inputs["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
    affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"].append(
        {"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]}
    )
    rs = [dataclasses.replace(agent, inputs=inputs) if r is agent else r for r in base_resources]
    assert check_all(rs, expected_of(base_config())) == [
        Violation(
            "agent-placement",
            agent.urn,
            "no required node affinity keeps it off nodes labelled dedicated=kiam-server",
        )
    ]

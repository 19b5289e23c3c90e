"""settings/stack.py: what the mutants the other tests let live would change."""

from __future__ import annotations

import pytest

from tests.conftest import base_config
from tests.safety import problems, stack_settings


def test_as_many_server_nodes_at_least_as_servers() -> None:
    assert problems(base_config(node_group={"minSize": 3}, server={"replicas": 3})) == []
    assert problems(
        base_config(node_group={"minSize": 2, "desiredSize": 3}, server={"replicas": 3})
    ) == [
        "kiam:nodeGroup.minSize must be at least kiam:server.replicas (got 2 nodes for 3 "
        "servers): hard anti-affinity puts one server per node, so the extra servers would stay "
        "Pending"
    ]


def _domain(length: int) -> str:
    """A cluster domain of exactly `length` characters, in labels of at most 63."""
    labels, left = [], length
    while left > 63:
        labels.append("a" * 62)
        left -= 63
    labels.append("b" * left)
    domain = ".".join(labels)
    assert len(domain) == length
    return domain


@pytest.mark.parametrize("over", [0, 1])
def test_the_name_agents_dial_may_be_exactly_253_characters(over: int) -> None:
    base = stack_settings(base_config())
    prefix = f"{base.server.service_name}.{base.namespace.name}.svc."
    domain = _domain(253 - len(prefix) + over)
    found = problems(base_config(cluster={"clusterDomain": domain}))
    assert found == (
        [
            f"kiam:cluster.clusterDomain {domain!r} makes the name agents dial, "
            "<kiam:server.serviceName>.<kiam:namespace.name>.svc.<clusterDomain>, "
            "254 characters: DNS allows 253"
        ]
        if over
        else []
    )


def test_as_many_managed_policies_as_the_quota_and_no_more() -> None:
    def with_policies(count: int) -> list[str]:
        arns = [f"arn:aws:iam::aws:policy/P{i}" for i in range(count)]
        app = {"namespace": "team", "roleName": "app", "managedPolicyArns": arns}
        return problems(base_config(applications={"a": app}))

    assert with_policies(10) == []
    assert with_policies(11) == [
        "kiam:applications.a.managedPolicyArns lists 11 policies: IAM attaches at most "
        "kiam:iam.managedPoliciesPerRole (10) to a role (raise the quota, then that setting, "
        "up to 20)"
    ]


def test_two_applications_of_one_role_name_are_refused_as_such() -> None:
    app = {"namespace": "team", "roleName": "app"}
    assert problems(base_config(applications={"a": app, "b": dict(app)})) == [
        "kiam:applications use the role name app more than once"
    ]


def test_an_application_without_a_service_account_does_not_hide_two_sharing_one() -> None:
    shared = {"namespace": "team", "servedBy": "podIdentity", "serviceAccount": "api"}
    applications = {
        "a": {"namespace": "team", "roleName": "app-a"},
        "b": {**shared, "roleName": "app-b"},
        "c": {**shared, "roleName": "app-c"},
    }
    assert problems(base_config(applications=applications)) == [
        "kiam:applications.b and kiam:applications.c both serve a role to service account api "
        "in namespace team: a service account gets one role"
    ]

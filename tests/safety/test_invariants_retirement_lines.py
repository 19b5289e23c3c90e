"""invariants/retirement.py: what the mutants the other tests let live would change."""

from __future__ import annotations

import dataclasses

import pytest

from kiam_eks.invariants import Resource, Violation, check_all
from tests import guarantee_views as g
from tests.conftest import expected_of

RETIRED = "retired"
NODES = "urn:pulumi:test::kiam::kiam:index:Kiam$kiam:index:ServerNodeGroup::kiam-server-nodes"


@pytest.fixture(scope="module")
def retired(kiam: list[Resource]) -> list[Resource]:
    return g.retired(kiam)


def judged(resources: list[Resource]) -> list[Violation]:
    """What guarantee 15 says of a retired stack's resources."""
    return [v for v in check_all(resources, expected_of(g.RETIRED_CONFIG)) if v.id == RETIRED]


def extra(urn: str, type_: str, **fields: object) -> Resource:
    return Resource(urn=urn, type=type_, name=urn.rsplit("::", 1)[1], inputs={}, **fields)  # type: ignore[arg-type]


def test_an_opaque_secret_of_the_applications_is_not_kiams(retired: list[Resource]) -> None:
    secret = dataclasses.replace(
        extra(
            "urn:pulumi:test::kiam::kubernetes:core/v1:Secret::app-config",
            "kubernetes:core/v1:Secret",
        ),
        inputs={"type": "Opaque", "metadata": {"name": "app-config"}},
    )
    assert judged([*retired, secret]) == []


def test_a_tls_typed_object_that_is_no_secret_is_not_taken_for_one(retired: list[Resource]) -> None:
    other = dataclasses.replace(
        extra(
            "urn:pulumi:test::kiam::kubernetes:core/v1:ConfigMap::x", "kubernetes:core/v1:ConfigMap"
        ),
        inputs={"type": "kubernetes.io/tls", "metadata": {"name": "x"}},
    )
    assert judged([*retired, other]) == []


def test_whatever_the_cloud_side_made_for_the_server_nodes_is_reported(
    retired: list[Resource],
) -> None:
    # The e2e's stand-in for the group is a ConfigMap under the component, no EKS type.
    stand_in = extra(
        "urn:pulumi:test::kiam::kubernetes:core/v1:ConfigMap::kiam-server-nodes",
        "kubernetes:core/v1:ConfigMap",
        parent=NODES,
    )
    assert judged([*retired, stand_in]) == [
        Violation(
            RETIRED,
            stand_in.urn,
            "is part of kiam's dedicated server nodes, which kiam:retire removes",
        )
    ]


def test_an_eks_node_group_anywhere_is_reported(retired: list[Resource]) -> None:
    group = extra(
        "urn:pulumi:test::kiam::aws:eks/nodeGroup:NodeGroup::other", "aws:eks/nodeGroup:NodeGroup"
    )
    assert judged([*retired, group]) == [
        Violation(
            RETIRED,
            group.urn,
            "is part of kiam's dedicated server nodes, which kiam:retire removes",
        )
    ]

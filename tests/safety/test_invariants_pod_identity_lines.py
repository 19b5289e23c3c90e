"""invariants/pod_identity.py: what the mutants the other tests let live would change."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from kiam_eks.invariants import Resource, Violation, check_all
from kiam_eks.invariants.model import UNKNOWN
from kiam_eks.invariants.pod_identity import Association
from tests import guarantee_views as g
from tests.conftest import expected_of
from tests.test_invariants import PAYER, billing_role, not_exactly

POD_IDENTITY = "pod-identity"


def judged(resources: list[Resource]) -> list[Violation]:
    """What guarantee 13 says of billing moved to Pod Identity."""
    return [v for v in check_all(resources, expected_of(g.MOVED_CONFIG)) if v.id == POD_IDENTITY]


def trusting(kiam: list[Resource], statement: dict[str, Any]) -> list[Resource]:
    return g.set_trust(g.moved(kiam), "billing", [statement])


def test_a_list_of_two_accounts_is_not_read_as_its_first(kiam: list[Resource]) -> None:
    # IAM reads a one-element list as its value; two values admit either account.
    equals = PAYER["Condition"]["StringEquals"]
    statement = {
        **PAYER,
        "Condition": {"StringEquals": {**equals, "aws:SourceAccount": [g.ACCOUNT, "444455556666"]}},
    }
    assert judged(trusting(kiam, statement)) == [
        Violation(POD_IDENTITY, billing_role(kiam).urn, not_exactly(statement))
    ]


def test_a_one_element_list_reads_as_its_value(kiam: list[Resource]) -> None:
    equals = PAYER["Condition"]["StringEquals"]
    statement = {
        **PAYER,
        "Condition": {"StringEquals": {**equals, "aws:SourceAccount": [g.ACCOUNT]}},
    }
    assert judged(trusting(kiam, statement)) == []


def test_the_exact_trust_with_every_key_iam_allows_there_is_exact(kiam: list[Resource]) -> None:
    assert judged(trusting(kiam, {"Sid": "PodIdentity", **PAYER})) == []


def test_an_association_is_a_frozen_value(kiam: list[Resource]) -> None:
    association = Association(
        source=kiam[0],
        cluster="test",
        namespace="billing",
        service_account="payer",
        role_arn=g.BILLING,
        role_prop="roleArn",
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        association.role_arn = g.SEARCH  # type: ignore[misc]


def test_at_preview_an_association_built_from_another_role_names_that_role(
    kiam: list[Resource],
) -> None:
    # Its role ARN is not known yet; the role it is built from says which role it names.
    rs = g.moved(kiam)
    association = next(r for r in rs if r.type == g.ASSOCIATION)
    search = g.find(kiam, g.ROLE, "kiam-app-search")
    previewed = dataclasses.replace(
        association,
        inputs={**association.inputs, "roleArn": UNKNOWN},
        property_dependencies={
            **association.property_dependencies,
            "roleArn": frozenset({search.urn}),
        },
    )
    billing = billing_role(kiam).urn
    assert [
        (v.resource, v.reason)
        for v in judged(g.replace(rs, association, previewed))
        if "billing" in v.reason.split(":")[0]
    ] == [
        (
            billing,
            "application billing: no Pod Identity association of test/billing/payer names its role",
        ),
        (
            association.urn,
            "application billing: the association of test/billing/payer names the role "
            f"app-search, not its role {g.BILLING}",
        ),
    ]

"""invariants/applications.py: what the mutants the other tests let live would change."""

from __future__ import annotations

import dataclasses

import pytest

from kiam_eks.invariants import Resource, Violation, check_all
from kiam_eks.invariants.applications import _Application, _Server
from kiam_eks.invariants.model import UNKNOWN
from tests import guarantee_views as g
from tests.conftest import expected_of
from tests.test_invariants import server_arn

OFF_KIAM, REACHABLE = "off-kiam", "application-reachable"


def permitting(name: str, value: object) -> Resource:
    return Resource(
        urn=f"urn:pulumi:test::kiam::kubernetes:core/v1:NamespacePatch::{name}",
        type="kubernetes:core/v1:NamespacePatch",
        name=name,
        inputs={
            "metadata": {"name": "billing", "annotations": {"iam.amazonaws.com/permitted": value}}
        },
    )


def test_a_value_not_known_yet_does_not_hide_the_next_one(kiam: list[Resource]) -> None:
    # billing moved to Pod Identity; its namespace still admits its role through a second patch.
    rs = [*g.moved(kiam), permitting("unknown", UNKNOWN), permitting("stale", ".*")]
    off_kiam = [v for v in check_all(rs, expected_of(g.MOVED_CONFIG)) if v.id == OFF_KIAM]
    assert off_kiam == [
        Violation(
            OFF_KIAM,
            g.find(kiam, g.ROLE, "kiam-app-billing").urn,
            f"application billing: namespace billing permits '.*', which still admits "
            f"{g.BILLING} though servedBy podIdentity is no longer kiam",
        )
    ]


def namespace_permitting(namespace: str, name: str, value: object) -> Resource:
    return Resource(
        urn=f"urn:pulumi:test::kiam::kubernetes:core/v1:NamespacePatch::{name}",
        type="kubernetes:core/v1:NamespacePatch",
        name=name,
        inputs={
            "metadata": {"name": namespace, "annotations": {"iam.amazonaws.com/permitted": value}}
        },
    )


def test_an_unknown_value_does_not_hide_the_next_one_that_admits_another_namespaces_role(
    kiam: list[Resource],
) -> None:
    rs = [
        *kiam,
        namespace_permitting("billing", "unknown", UNKNOWN),
        namespace_permitting("billing", "wide", ".*"),
    ]
    reachable = [v for v in check_all(rs, expected_of(g.KIAM_CONFIG)) if v.id == REACHABLE]
    assert reachable == [
        Violation(
            REACHABLE,
            g.find(kiam, g.ROLE, "kiam-app-billing").urn,
            f"namespace billing permits '.*', which also admits {g.SEARCH} of namespace search",
        )
    ]


def test_an_irsa_trust_of_no_oidc_provider_is_not_exact(kiam: list[Resource]) -> None:
    role = g.find(kiam, g.ROLE, "kiam-app-search")
    kiam_statement, irsa = g.trust_of(role)
    cognito = {**irsa, "Principal": {"Federated": "cognito-identity.amazonaws.com"}}
    rs = g.set_trust(kiam, "search", [kiam_statement, cognito])
    assert check_all(rs, expected_of(g.KIAM_CONFIG)) == [
        Violation(
            REACHABLE,
            role.urn,
            "does not trust exactly system:serviceaccount:search:indexer through IRSA",
        )
    ]


def test_without_any_server_a_namespace_is_matched_strictly_as_kiam_would(
    kiam: list[Resource],
) -> None:
    # Retired: no server is left to say how it matches; kiam's default (strict) still admits.
    rs = [*g.retired(kiam), permitting("stale", ".*")]
    off_kiam = [v for v in check_all(rs, expected_of(g.RETIRED_CONFIG)) if v.id == OFF_KIAM]
    assert off_kiam == [
        Violation(
            OFF_KIAM,
            g.find(kiam, g.ROLE, "kiam-app-billing").urn,
            "application billing: namespace billing permits '.*', which still admits "
            f"{g.BILLING} though servedBy podIdentity is no longer kiam",
        )
    ]


def test_a_value_kiam_cannot_compile_admits_nothing_it_is_not_matched(
    kiam: list[Resource],
) -> None:
    rs = [*g.moved(kiam), permitting("broken", "(")]
    assert [v for v in check_all(rs, expected_of(g.MOVED_CONFIG)) if v.id == OFF_KIAM] == []


def test_without_its_role_in_the_stack_the_arn_the_settings_give_is_judged(
    kiam: list[Resource],
) -> None:
    rs = [*g.without(g.moved(kiam), g.ROLE, "kiam-app-billing"), permitting("stale", ".*")]
    assert [v for v in check_all(rs, expected_of(g.MOVED_CONFIG)) if v.id == OFF_KIAM] == [
        Violation(
            OFF_KIAM,
            "stack",
            "application billing: namespace billing permits '.*', which still admits "
            f"{g.BILLING} though servedBy podIdentity is no longer kiam",
        )
    ]


def test_what_the_check_knows_of_a_server_and_an_application_is_a_frozen_value() -> None:
    server = _Server(role_base_arn=g.BASE, strict=True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        server.strict = False  # type: ignore[misc]
    app = _Application(settings=None, role=None, annotation=None, arn=g.BILLING)  # type: ignore[arg-type]
    with pytest.raises(dataclasses.FrozenInstanceError):
        app.arn = g.SEARCH  # type: ignore[misc]


def test_a_missing_role_does_not_stop_the_next_application_being_judged(
    kiam: list[Resource],
) -> None:
    search = g.find(kiam, g.ROLE, "kiam-app-search")
    irsa_only = g.trust_of(search)[1:]
    rs = g.set_trust(g.without(kiam, g.ROLE, "kiam-app-billing"), "search", irsa_only)
    assert reachable(rs) == [
        Violation(
            REACHABLE,
            "stack",
            "application billing: no role app-billing at path /kiam-apps/ in this stack",
        ),
        Violation(
            REACHABLE,
            search.urn,
            f"does not trust the kiam-server role {server_arn(kiam)} with sts:AssumeRole",
        ),
    ]


def test_a_value_kiam_cannot_compile_does_not_hide_the_next_one(kiam: list[Resource]) -> None:
    rs = [
        *kiam,
        namespace_permitting("billing", "broken", "("),
        namespace_permitting("billing", "wide", ".*"),
    ]
    billing = g.find(kiam, g.ROLE, "kiam-app-billing").urn
    assert reachable(rs) == [
        Violation(
            REACHABLE,
            billing,
            "namespace billing permits '(': it is not a regular expression (missing ), "
            "unterminated subpattern at position 0)",
        ),
        Violation(
            REACHABLE,
            billing,
            f"namespace billing permits '.*', which also admits {g.SEARCH} of namespace search",
        ),
    ]


def test_only_the_kiam_server_role_itself_is_its_trust(kiam: list[Resource]) -> None:
    other = {
        "Effect": "Allow",
        "Principal": {"AWS": "arn:aws:iam::111122223333:role/other"},
        "Action": "sts:AssumeRole",
    }
    rs = g.set_trust(kiam, "billing", [other])
    assert reachable(rs) == [
        Violation(
            REACHABLE,
            g.find(kiam, g.ROLE, "kiam-app-billing").urn,
            f"does not trust the kiam-server role {server_arn(kiam)} with sts:AssumeRole",
        )
    ]


def reachable(resources: list[Resource]) -> list[Violation]:
    """What guarantee 12 says of the applications' stack."""
    return [v for v in check_all(resources, expected_of(g.KIAM_CONFIG)) if v.id == REACHABLE]


def test_without_any_server_kiams_default_strict_matching_is_used(kiam: list[Resource]) -> None:
    # Strictly (^...$ around the whole ARN) `app-billing` admits nothing; unanchored it would.
    rs = [*g.retired(kiam), permitting("stale", "app-billing")]
    assert [v for v in check_all(rs, expected_of(g.RETIRED_CONFIG)) if v.id == OFF_KIAM] == []


def test_a_stack_with_roles_but_no_server_role_lets_the_server_assume_none(
    kiam: list[Resource],
) -> None:
    rs = g.without(kiam, g.ROLE, "kiam-iam-server")
    denied = "the kiam-server role's policy does not allow sts:AssumeRole on"
    assert [(v.resource, v.reason) for v in reachable(rs) if v.reason.startswith(denied)] == [
        (g.find(kiam, g.ROLE, "kiam-app-billing").urn, f"{denied} {g.BILLING}"),
        (g.find(kiam, g.ROLE, "kiam-app-search").urn, f"{denied} {g.SEARCH}"),
    ]

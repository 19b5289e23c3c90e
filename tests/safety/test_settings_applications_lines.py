"""settings/applications.py: what the mutants the other tests let live would change."""

from __future__ import annotations

from typing import Any

import pytest

from kiam_eks.settings.applications import ApplicationSettings, ServedBy
from kiam_eks.settings.iam import IamSettings
from kiam_eks.settings.policy_document import ROLE_INLINE_POLICY_CHARACTERS, policy_characters
from tests.safety import model_problems

APP = {"namespace": "team-a", "roleName": "app"}


@pytest.mark.parametrize(
    ("state", "kiam", "pod_identity", "irsa", "successor", "after", "before"),
    [
        ("kiam", True, False, False, False, None, None),
        ("kiam+podIdentity", True, True, False, True, "podIdentity", "kiam"),
        ("podIdentity", False, True, False, True, None, "kiam+podIdentity"),
        ("kiam+irsa", True, False, True, True, "irsa", "kiam"),
        ("irsa", False, False, True, True, None, "kiam+irsa"),
    ],
)
def test_each_state_says_who_serves_the_role_and_where_it_moves(
    state: str,
    kiam: bool,
    pod_identity: bool,
    irsa: bool,
    successor: bool,
    after: str | None,
    before: str | None,
) -> None:
    served = ServedBy(state)
    assert (served.kiam, served.pod_identity, served.irsa, served.successor) == (
        kiam,
        pod_identity,
        irsa,
        successor,
    )
    assert (served.next, served.previous) == (
        ServedBy(after) if after else None,
        ServedBy(before) if before else None,
    )


def test_a_successor_needs_the_service_account_and_kiam_alone_takes_none() -> None:
    assert model_problems(ApplicationSettings, {**APP, "servedBy": "kiam+irsa"}) == [
        ": Value error, servedBy kiam+irsa needs serviceAccount: the service account, in "
        "namespace team-a, that the role is served to"
    ]
    assert model_problems(ApplicationSettings, {**APP, "serviceAccount": "app"}) == [
        ": Value error, serviceAccount is used only when servedBy is kiam+podIdentity, "
        "podIdentity, kiam+irsa or irsa: remove it, or move the application on"
    ]
    assert (
        model_problems(
            ApplicationSettings, {**APP, "servedBy": "podIdentity", "serviceAccount": "app"}
        )
        == []
    )


@pytest.mark.parametrize(
    ("irsa", "account"), [({"serviceAccount": "app"}, "app"), (True, "<the service account>")]
)
def test_the_old_irsa_key_says_what_replaced_it(irsa: Any, account: str) -> None:
    assert model_problems(ApplicationSettings, {**APP, "irsa": irsa}) == [
        ": Value error, irsa is now two keys: servedBy: kiam+irsa and serviceAccount: "
        f"{account} (docs/leaving-kiam.md)"
    ]


def test_each_managed_policy_name_once() -> None:
    arns = [
        "arn:aws:iam::aws:policy/ReadOnlyAccess",
        "arn:aws:iam::111122223333:policy/team/ReadOnlyAccess",
        "arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess",
    ]
    assert model_problems(ApplicationSettings, {**APP, "managedPolicyArns": arns}) == [
        ": Value error, managedPolicyArns lists the policy name ReadOnlyAccess more than once: "
        "attach each policy once"
    ]
    assert model_problems(ApplicationSettings, {**APP, "managedPolicyArns": arns[1:]}) == []


def _document(characters: int) -> dict[str, Any]:
    """A valid policy document of exactly this many characters as IAM counts them."""
    document: dict[str, Any] = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "s3:GetObject", "Resource": ""}],
    }
    bare = policy_characters({**document, "Statement": [{**document["Statement"][0]}]})
    document["Statement"][0]["Resource"] = "arn:aws:s3:::" + "a" * (characters - bare - 13)
    assert policy_characters(document) == characters
    return document


def test_inline_policies_of_exactly_the_role_quota_and_one_character_more() -> None:
    limit = ROLE_INLINE_POLICY_CHARACTERS
    assert (
        model_problems(ApplicationSettings, {**APP, "inlinePolicies": {"p": _document(limit)}})
        == []
    )
    assert model_problems(
        ApplicationSettings, {**APP, "inlinePolicies": {"p": _document(limit + 1)}}
    ) == [
        f": Value error, inlinePolicies total {limit + 1} characters without white space: IAM "
        f"allows {limit} per role (move some into managed policies)"
    ]


def test_the_role_path_is_its_own_else_the_stacks() -> None:
    iam = IamSettings()
    assert ApplicationSettings.model_validate(APP).role_path(iam) == "/kiam-apps/"
    own = ApplicationSettings.model_validate({**APP, "path": "/kiam-apps/team-a/"})
    assert own.role_path(iam) == "/kiam-apps/team-a/"

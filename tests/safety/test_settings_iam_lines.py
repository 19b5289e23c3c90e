"""settings/iam.py: what the mutants the other tests let live would change."""

from __future__ import annotations

from tests.conftest import base_config
from tests.safety import problems


def test_a_path_of_exactly_iams_512_characters_is_allowed_and_one_more_refused() -> None:
    assert problems(base_config(iam={"applicationRolePath": "/" + "a" * 510 + "/"})) == []
    assert problems(base_config(iam={"applicationRolePath": "/" + "a" * 511 + "/"})) == [
        "kiam:iam.applicationRolePath: the path is 513 characters: IAM allows 512"
    ]


def test_the_managed_policy_quota_is_10_to_20() -> None:
    assert problems(base_config(iam={"managedPoliciesPerRole": 10})) == []
    assert problems(base_config(iam={"managedPoliciesPerRole": 20})) == []
    assert problems(base_config(iam={"managedPoliciesPerRole": 9})) == [
        "kiam:iam.managedPoliciesPerRole: Input should be greater than or equal to 10 (got 9)"
    ]
    assert problems(base_config(iam={"managedPoliciesPerRole": 21})) == [
        "kiam:iam.managedPoliciesPerRole: Input should be less than or equal to 20 (got 21)"
    ]

"""IAM's quotas (`contracts.iam_quotas`), spelled out literally with their source, so a wrong
number fails here instead of letting the plan pass what IAM refuses."""

from __future__ import annotations

import json

from kiam_eks.contracts import iam_quotas
from kiam_eks.settings.policy_document import policy_characters


def test_the_quotas_as_the_iam_user_guide_gives_them() -> None:
    # IAM User Guide, "IAM and AWS STS quotas" (quoted verbatim in
    # hashicorp/terraform-provider-aws #45533): "Role policy size can't exceed 10,240
    # characters", "The size of each managed policy can't exceed 6,144 characters"; "Managed
    # policies attached to an IAM role": 10 by default, 20 at most (quota code L-0DA4ABF3);
    # "Role trust policy length": 2,048 by default; white space not counted in any of them.
    assert iam_quotas.ROLE_INLINE_POLICY_CHARACTERS == 10240
    assert iam_quotas.MANAGED_POLICY_CHARACTERS == 6144
    assert iam_quotas.MANAGED_POLICIES_PER_ROLE_DEFAULT == 10
    assert iam_quotas.MANAGED_POLICIES_PER_ROLE_MAX == 20
    assert iam_quotas.MANAGED_POLICIES_QUOTA_CODE == "L-0DA4ABF3"
    assert iam_quotas.TRUST_POLICY_CHARACTERS == 2048
    # CreatePolicy's PolicyName: "Length Constraints: Minimum length of 1. Maximum length of 128."
    assert iam_quotas.POLICY_NAME_CHARACTERS == 128


def test_white_space_is_not_counted_anywhere_in_a_document() -> None:
    """ "IAM and AWS STS quotas": policy sizes count characters "excluding white space"; none of
    the separators' spaces, nor any white space inside a value (a non-breaking space, a line
    separator), counts; a tab is written as the two characters `\\t`, which do."""
    document = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "with\tspace\u00a0and\u2028separators ",
                "Effect": "Allow",
                "Action": "sts:AssumeRole",
                "Resource": ["arn:aws:iam::111122223333:role/é"],
            }
        ],
    }
    text = json.dumps(document, ensure_ascii=False)
    assert policy_characters(document) == sum(1 for c in text if not c.isspace())
    assert policy_characters(document) == len(
        '{"Version":"2012-10-17","Statement":[{"Sid":"with\\tspaceandseparators","Effect":"Allow",'
        '"Action":"sts:AssumeRole","Resource":["arn:aws:iam::111122223333:role/é"]}]}'
    )

"""IAM's role ARN grammar (contracts/iam.py), spelled out: the IAM User Guide, "IAM identifiers",
"IAM ARNs": `arn:partition:iam::account-id:role/role-path/role-name`."""

from __future__ import annotations

import pytest

from contracts.iam import role_arn


@pytest.mark.parametrize(
    ("partition", "path", "name", "arn"),
    [
        ("aws", "/", "kiam-server", "arn:aws:iam::111122223333:role/kiam-server"),
        (
            "aws-cn",
            "/kiam-apps/team-a/",
            "app-billing",
            "arn:aws-cn:iam::111122223333:role/kiam-apps/team-a/app-billing",
        ),
        # No name: the base kiam's --role-base-arn is, to which pods' annotations are appended.
        ("aws-us-gov", "/kiam-apps/", "", "arn:aws-us-gov:iam::111122223333:role/kiam-apps/"),
    ],
)
def test_a_role_arn_holds_partition_account_path_and_name(
    partition: str, path: str, name: str, arn: str
) -> None:
    assert role_arn(partition, "111122223333", path, name) == arn

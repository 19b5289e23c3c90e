"""IAM's ARN grammar, for the program, the settings checks and the guarantees alike.

Source: the IAM User Guide, "IAM identifiers", "IAM ARNs": a role is
`arn:partition:iam::account-id:role/role-path/role-name`, its path (`/` or `/a/b/`) part of it.
"""

from __future__ import annotations


def role_arn(partition: str, account_id: str, path: str, name: str) -> str:
    """The ARN IAM gives a role: its path (`/` or `/a/b/`) and name are both part of it."""
    return f"arn:{partition}:iam::{account_id}:role{path}{name}"

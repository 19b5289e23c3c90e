"""IAM's quotas on the documents and attachments this stack writes: what AWS refuses only when
`pulumi up` is half way (`LimitExceeded`), and neither AWS provider checks at preview
(hashicorp/terraform-provider-aws #45533, open), so the plan checks them instead.

Source: the IAM User Guide, "IAM and AWS STS quotas" (spelled out by
`tests/contracts/test_iam_quotas.py`); white space is not counted in any policy's size. The
API's answers past them, as quoted from real responses: `LimitExceeded: Maximum policy size of
10240 bytes exceeded for role <name>` (PutRolePolicy), `Cannot exceed quota for PolicySize:
6144` (CreatePolicy, CreatePolicyVersion), `Cannot exceed quota for PoliciesPerRole: 10`
(AttachRolePolicy), `Cannot exceed quota for ACLSizePerRole: 2048` (CreateRole,
UpdateAssumeRolePolicy).
"""

from __future__ import annotations

# "Role policy size can't exceed 10,240 characters": all the inline policies of one role
# together. Not adjustable.
ROLE_INLINE_POLICY_CHARACTERS = 10_240
# "The size of each managed policy can't exceed 6,144 characters." Not adjustable.
MANAGED_POLICY_CHARACTERS = 6_144
# "Managed policies attached to an IAM role": 10 by default, up to 20 by a Service Quotas
# request (quota code L-0DA4ABF3); `kiam:iam.managedPoliciesPerRole` says what the account has.
MANAGED_POLICIES_PER_ROLE_DEFAULT = 10
MANAGED_POLICIES_PER_ROLE_MAX = 20
MANAGED_POLICIES_QUOTA_CODE = "L-0DA4ABF3"
# "Role trust policy length": 2,048 characters by default, up to 4,096 by request (L-C07B4B0D).
TRUST_POLICY_CHARACTERS = 2_048
# CreatePolicy's policyNameType: 1 to 128 characters.
POLICY_NAME_CHARACTERS = 128

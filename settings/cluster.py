"""Which EKS cluster, account and region a stack manages, and how Pulumi talks to its API."""

from __future__ import annotations

import re
from functools import cache
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field

from kiam_eks.contracts import names
from kiam_eks.settings.base import DnsName, Model, matching

# The AWS partitions, the regions each holds and its DNS suffix, as botocore's partitions.json
# describes them (`regionRegex`, `dnsSuffix`), most specific first: `us-gov-west-1` would also
# fit `aws`'s pattern.
PARTITIONS = (
    ("aws-us-gov", r"us-gov-[a-z]+-\d+", "amazonaws.com"),
    ("aws-iso", r"us-iso-[a-z]+-\d+", "c2s.ic.gov"),
    ("aws-iso-b", r"us-isob-[a-z]+-\d+", "sc2s.sgov.gov"),
    ("aws-iso-e", r"eu-isoe-[a-z]+-\d+", "cloud.adc-e.uk"),
    ("aws-iso-f", r"us-isof-[a-z]+-\d+", "csp.hci.ic.gov"),
    ("aws-cn", r"cn-[a-z]+-\d+", "amazonaws.com.cn"),
    ("aws-eusc", r"eusc-de-[a-z]+-\d+", "amazonaws.eu"),
    ("aws", r"(us|eu|ap|sa|ca|me|af|il|mx)-[a-z]+-\d+", "amazonaws.com"),
)
_REGION = "|".join(f"({regex})" for _, regex, _ in PARTITIONS)
# The launch template's name prefix starts with the cluster's name (contracts/names.py), and the
# AWS provider allows a name prefix of at most 99 characters (terraform-provider-aws,
# verify.ValidLaunchTemplateName): the rest of the prefix takes 13 of them.
MAX_CLUSTER_NAME = 99 - len(names.launch_template_name_prefix(""))


def _not_a_number(value: object) -> object:
    # The CLI's YAML 1.2 reader takes unquoted digits for a number and drops a leading zero
    # (about one account id in ten has one): proven in e2e/tests/test_bad_input.py.
    if isinstance(value, int) and not isinstance(value, bool):
        raise ValueError(
            f"got the number {value}, not a string: an account id must be quoted in the stack "
            f"file (accountId: '{value:012d}' if that is the account) or set with "
            "`pulumi config set --path --type string kiam:cluster.accountId <id>`"
        )
    return value


class ClusterSettings(Model):
    """`kiam:cluster`: the EKS cluster this stack installs kiam into."""

    name: Annotated[
        str,
        matching(
            rf"[0-9A-Za-z][A-Za-z0-9\-_]{{0,{MAX_CLUSTER_NAME - 1}}}",
            f"an EKS cluster name of at most {MAX_CLUSTER_NAME} characters (the launch template's "
            f"name prefix `{names.launch_template_name_prefix('<name>')}` may have 99)",
        ),
    ] = Field(
        description="Name of the existing EKS cluster (looked up, never created); at most "
        f"{MAX_CLUSTER_NAME} characters, as it also prefixes the launch template's name."
    )
    account_id: Annotated[
        str,
        BeforeValidator(_not_a_number),
        matching(r"\d{12}", "a 12-digit AWS account id"),
    ] = Field(
        description="AWS account id of the cluster; the AWS provider refuses any other account."
    )
    region: Annotated[str, matching(_REGION, "an AWS region such as eu-west-1")] = Field(
        description="AWS region of the cluster; also kiam's regional STS endpoint. Its partition "
        "(`aws`, `aws-cn`, `aws-us-gov`...) is the one of every ARN the program writes."
    )
    # Any minor from 1.25 on, including one newer than the validator's schemas: what EKS runs is
    # not the offline plan's to refuse (it validates against the nearest schemas it has).
    kubernetes_version: Annotated[
        str,
        matching(r"1\.(2[5-9]|[3-9][0-9])", "a Kubernetes minor version from 1.25, such as 1.33"),
    ] = Field(
        description="The cluster's Kubernetes minor version: the server node group runs it and "
        "the offline plan validates rendered manifests against its API schemas (or, for a "
        "version newer than the validator knows, the newest it has, and says so)."
    )
    cluster_domain: DnsName = Field(
        default="cluster.local",
        description="The cluster's DNS domain; the end of the server's name agents dial.",
    )
    kubernetes_auth: Literal["exec", "token"] = Field(
        default="exec",
        description="How Pulumi authenticates to the cluster when no `kiam:kubeconfig` is set: "
        "`exec` runs `aws eks get-token` and refreshes itself during long rollouts; `token` "
        "embeds a 15-minute token from the EKS API (no AWS CLI needed, but a node group "
        "replacement that outlasts the token fails its rollout wait).",
    )

    @property
    def partition(self) -> str:
        """The AWS partition the region belongs to, for ARNs."""
        return partition_of(self.region)

    @property
    def dns_suffix(self) -> str:
        """The DNS suffix of the region's partition (`amazonaws.com`, `amazonaws.com.cn`...)."""
        return next((d for p, _, d in PARTITIONS if p == self.partition), "amazonaws.com")


@cache  # a stack names a few regions; its thousands of ARNs ask for their partition each time
def partition_of(region: str) -> str:
    """The AWS partition of a region (`aws`, `aws-cn`, `aws-us-gov`...); `aws` when unknown."""
    return next((p for p, regex, _ in PARTITIONS if re.fullmatch(regex, region)), "aws")

"""What EKS writes into a pod's containers when Pod Identity or IRSA serves it, and the order in
which the AWS SDKs read it: how `tools.kiam_usage` tells, from a live pod, where its credentials
come from. Each fact is spelled out by `tests/contracts/test_credential_env.py`.

Sources:
- IRSA: the EKS pod identity webhook (github.com/aws/amazon-eks-pod-identity-webhook, the patch
  its test `pkg/handler/testdata/rawPodWithoutVolumes.pod.yaml` expects at commit 3eb38ece)
  adds `AWS_ROLE_ARN` (the service account's `eks.amazonaws.com/role-arn`) and
  `AWS_WEB_IDENTITY_TOKEN_FILE` (`/var/run/secrets/eks.amazonaws.com/serviceaccount/token`) to
  every container of a pod whose service account names a role.
- Pod Identity: the AWS SDKs and Tools Reference Guide, "Container credential provider": "When
  configured, Amazon EKS sets the AWS_CONTAINER_CREDENTIALS_FULL_URI and
  AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE environment variables". The EKS User Guide, "Set up the
  Amazon EKS Pod Identity Agent": the agent listens on `169.254.170.23` (IPv4) and
  `[fd00:ec2::23]` (IPv6); the full URIs on path `/v1/credentials` as AWS's own client of the
  agent defines them (github.com/aws/secrets-store-csi-driver-provider-aws,
  `credential_provider/pod_identity_credential_provider.go`, `podIdentityAgentEndpointIPv4` and
  `...IPv6`). EKS User Guide, "Understand how EKS Pod Identity works": the variables go only into
  pods created after the association exists.
- Order: EKS User Guide, "Use pod identity with the AWS SDK" (pod-id-minimum-sdk) and "Use IRSA
  with the AWS SDK": Pod Identity is the container credential provider, IRSA a step of its own,
  and credentials found earlier in the chain keep being used; the SDKs Reference Guide's
  "Credential provider chain" puts web identity before container credentials, and both before
  the instance metadata service, which kiam intercepts. So a container with either wiring never
  asks kiam, and web identity wins over Pod Identity.
- SDK minimums: "Use pod identity with the AWS SDK" lists the first versions that read the Pod
  Identity variables (an older SDK fails on them instead of falling back to kiam); "Use IRSA with
  the AWS SDK" lists those for web identity.
"""

from __future__ import annotations

# IRSA (web identity), as the pod identity webhook injects it.
ROLE_ARN = "AWS_ROLE_ARN"
WEB_IDENTITY_TOKEN_FILE = "AWS_WEB_IDENTITY_TOKEN_FILE"
WEB_IDENTITY = (ROLE_ARN, WEB_IDENTITY_TOKEN_FILE)

# EKS Pod Identity (container credentials), as EKS injects it.
CONTAINER_CREDENTIALS_FULL_URI = "AWS_CONTAINER_CREDENTIALS_FULL_URI"
CONTAINER_AUTHORIZATION_TOKEN_FILE = "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"
POD_IDENTITY = (CONTAINER_CREDENTIALS_FULL_URI, CONTAINER_AUTHORIZATION_TOKEN_FILE)
# The Pod Identity agent's credentials endpoint, over IPv4 and over IPv6.
POD_IDENTITY_AGENT_URIS = (
    "http://169.254.170.23/v1/credentials",
    "http://[fd00:ec2::23]/v1/credentials",
)

# Where each SDK's first version able to use the wiring is listed.
POD_IDENTITY_MINIMUM_SDK_PAGE = (
    "https://docs.aws.amazon.com/eks/latest/userguide/pod-id-minimum-sdk.html"
)
IRSA_MINIMUM_SDK_PAGE = "https://docs.aws.amazon.com/eks/latest/userguide/iam-roles-for-service-accounts-minimum-sdk.html"
# A few of the Pod Identity minimums, as that page lists them (the rest are on the page).
POD_IDENTITY_MINIMUM_SDKS = (
    ("boto3/botocore", "1.34.41"),
    ("AWS CLI", "1.30.0 / 2.15.0"),
    ("Java v2", "2.21.30"),
    ("Go v2", "release-2023-11-14"),
    ("JavaScript v3", "3.458.0"),
)


def has_web_identity(env: dict[str, str]) -> bool:
    """The container's environment carries IRSA's wiring (both variables, non-empty)."""
    return all(env.get(name) for name in WEB_IDENTITY)


def has_pod_identity(env: dict[str, str]) -> bool:
    """The container's environment carries Pod Identity's wiring: the agent's endpoint as the
    full URI, and a token file."""
    return env.get(CONTAINER_CREDENTIALS_FULL_URI) in POD_IDENTITY_AGENT_URIS and bool(
        env.get(CONTAINER_AUTHORIZATION_TOKEN_FILE)
    )


# The instance metadata service (IMDS) that kiam intercepts and, without kiam, a pod reaches:
# Amazon EC2 User Guide, "Configure the Instance Metadata Service options" (instance metadata
# response hop limit): with IMDSv2 required (`HttpTokens: required`) a token answer travels at
# most the PUT response hop limit; a process in a container is one hop further than the instance.
IMDS_TOKENS_REQUIRED = "required"
IMDS_HOP_LIMIT_INSTANCE_ONLY = 1
"""Only the instance itself gets a token: pods (not host-networked) cannot read the node's role."""
IMDS_HOP_LIMIT_CONTAINERS = 2
"""Containers get a token too (what kiam-server pods need on the dedicated nodes)."""

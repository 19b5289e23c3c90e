"""The environment EKS injects for IRSA and for Pod Identity, spelled out literally with where each
is written (contracts/credential_env.py): `tools.kiam_usage` classifies live pods by it."""

from __future__ import annotations

from kiam_eks.contracts import credential_env


def test_irsa_wiring_as_the_pod_identity_webhook_injects_it() -> None:
    # github.com/aws/amazon-eks-pod-identity-webhook, pkg/handler/testdata/
    # rawPodWithoutVolumes.pod.yaml (commit 3eb38ece): the expected patch adds exactly these two.
    assert credential_env.ROLE_ARN == "AWS_ROLE_ARN"
    assert credential_env.WEB_IDENTITY_TOKEN_FILE == "AWS_WEB_IDENTITY_TOKEN_FILE"
    assert credential_env.WEB_IDENTITY == ("AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE")


def test_pod_identity_wiring_as_eks_injects_it() -> None:
    # AWS SDKs and Tools Reference Guide, "Container credential provider"; EKS User Guide, "Set up
    # the Amazon EKS Pod Identity Agent" (169.254.170.23 and [fd00:ec2::23]);
    # aws/secrets-store-csi-driver-provider-aws pod_identity_credential_provider.go (the paths).
    assert credential_env.CONTAINER_CREDENTIALS_FULL_URI == "AWS_CONTAINER_CREDENTIALS_FULL_URI"
    assert (
        credential_env.CONTAINER_AUTHORIZATION_TOKEN_FILE
        == "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"
    )
    assert credential_env.POD_IDENTITY_AGENT_URIS == (
        "http://169.254.170.23/v1/credentials",
        "http://[fd00:ec2::23]/v1/credentials",
    )


def test_the_sdk_minimum_pages_and_the_pod_identity_minimums_they_list() -> None:
    # EKS User Guide, "Use pod identity with the AWS SDK" and "Use IRSA with the AWS SDK".
    assert (
        credential_env.POD_IDENTITY_MINIMUM_SDK_PAGE
        == "https://docs.aws.amazon.com/eks/latest/userguide/pod-id-minimum-sdk.html"
    )
    assert (
        credential_env.IRSA_MINIMUM_SDK_PAGE
        == "https://docs.aws.amazon.com/eks/latest/userguide/iam-roles-for-service-accounts-minimum-sdk.html"
    )
    assert dict(credential_env.POD_IDENTITY_MINIMUM_SDKS) == {
        "boto3/botocore": "1.34.41",
        "AWS CLI": "1.30.0 / 2.15.0",
        "Java v2": "2.21.30",
        "Go v2": "release-2023-11-14",
        "JavaScript v3": "3.458.0",
    }


TOKEN = "/var/run/secrets/pods.eks.amazonaws.com/serviceaccount/eks-pod-identity-token"


def test_a_container_has_pod_identity_only_with_the_agent_uri_and_a_token_file() -> None:
    wired = {
        "AWS_CONTAINER_CREDENTIALS_FULL_URI": "http://169.254.170.23/v1/credentials",
        "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE": TOKEN,
    }
    assert credential_env.has_pod_identity(wired)
    ipv6 = {**wired, "AWS_CONTAINER_CREDENTIALS_FULL_URI": "http://[fd00:ec2::23]/v1/credentials"}
    assert credential_env.has_pod_identity(ipv6)
    # ECS's task-role agent is a container credential provider too, but not Pod Identity's.
    ecs = {**wired, "AWS_CONTAINER_CREDENTIALS_FULL_URI": "http://169.254.170.2/v2/credentials"}
    assert not credential_env.has_pod_identity(ecs)
    assert not credential_env.has_pod_identity(
        {"AWS_CONTAINER_CREDENTIALS_FULL_URI": "http://169.254.170.23/v1/credentials"}
    )
    assert not credential_env.has_pod_identity(
        {**wired, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE": ""}
    )


def test_a_container_has_web_identity_only_with_both_variables() -> None:
    both = {
        "AWS_ROLE_ARN": "arn:aws:iam::111122223333:role/kiam-apps/billing-api",
        "AWS_WEB_IDENTITY_TOKEN_FILE": "/var/run/secrets/eks.amazonaws.com/serviceaccount/token",
    }
    assert credential_env.has_web_identity(both)
    assert not credential_env.has_web_identity({"AWS_ROLE_ARN": both["AWS_ROLE_ARN"]})
    assert not credential_env.has_web_identity(
        {"AWS_WEB_IDENTITY_TOKEN_FILE": both["AWS_WEB_IDENTITY_TOKEN_FILE"]}
    )


def test_the_metadata_hop_limits() -> None:
    # Amazon EC2 User Guide, "Configure the Instance Metadata Service options": with IMDSv2
    # required, hop limit 1 keeps tokens on the instance; containers need one hop more.
    assert credential_env.IMDS_TOKENS_REQUIRED == "required"
    assert credential_env.IMDS_HOP_LIMIT_INSTANCE_ONLY == 1
    assert credential_env.IMDS_HOP_LIMIT_CONTAINERS == 2

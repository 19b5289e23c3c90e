"""EKS Pod Identity's facts spelled out literally, with where each is written (contracts/pod_identity.py
cites the pages and the provider source): a wrong constant fails here, not in every gate at once."""

from __future__ import annotations

from kiam_eks.contracts import pod_identity, tokens


def test_the_trust_a_pod_identity_role_needs() -> None:
    # EKS user guide, pod-id-role: principal service pods.eks.amazonaws.com, actions
    # sts:AssumeRole and sts:TagSession.
    assert pod_identity.SERVICE_PRINCIPAL == "pods.eks.amazonaws.com"
    assert pod_identity.TRUST_ACTIONS == ("sts:AssumeRole", "sts:TagSession")
    # IAM user guide, "The confused deputy problem": the global condition key.
    assert pod_identity.SOURCE_ACCOUNT_KEY == "aws:SourceAccount"


def test_the_session_tags_that_narrow_it() -> None:
    # EKS user guide, pod-id-role and pod-id-abac: the six session tags, used in a trust policy as
    # aws:RequestTag/<tag>.
    assert pod_identity.SESSION_TAGS == (
        "eks-cluster-arn",
        "eks-cluster-name",
        "kubernetes-namespace",
        "kubernetes-service-account",
        "kubernetes-pod-name",
        "kubernetes-pod-uid",
    )
    assert pod_identity.request_tag(pod_identity.CLUSTER_NAME_TAG) == (
        "aws:RequestTag/eks-cluster-name"
    )
    assert pod_identity.request_tag(pod_identity.NAMESPACE_TAG) == (
        "aws:RequestTag/kubernetes-namespace"
    )
    assert pod_identity.request_tag(pod_identity.SERVICE_ACCOUNT_TAG) == (
        "aws:RequestTag/kubernetes-service-account"
    )


def test_the_agent_add_on() -> None:
    # EKS user guide, pod-id-agent-setup: aws eks create-addon --addon-name eks-pod-identity-agent.
    assert pod_identity.AGENT_ADDON == "eks-pod-identity-agent"


def test_what_the_provider_answers_for_an_add_on_the_cluster_lacks() -> None:
    """terraform-provider-aws: `retry.NotFoundError` says "couldn't find resource"; the data
    source prefixes "reading EKS Add-On (<cluster>:<addon>): "; an add-on's id is
    `<cluster>:<addon>` (`AddonCreateResourceID`), what `pulumi import` takes."""
    assert pod_identity.ADDON_NOT_FOUND == "couldn't find resource"
    assert pod_identity.addon_id("prod", pod_identity.AGENT_ADDON) == "prod:eks-pod-identity-agent"


def test_what_the_worker_nodes_need() -> None:
    # EKS user guide, pod-id-agent-setup, "Agent prerequisites": the node role allows
    # eks-auth:AssumeRoleForPodIdentity, e.g. through AmazonEKSWorkerNodePolicy.
    assert pod_identity.NODE_ROLE_ACTION == "eks-auth:AssumeRoleForPodIdentity"
    assert pod_identity.NODE_ROLE_MANAGED_POLICY == "AmazonEKSWorkerNodePolicy"
    # EKS user guide, pod-identities, considerations: Linux Amazon EC2 nodes only.
    assert pod_identity.SUPPORTED_NODES == "Linux Amazon EC2"


def test_what_replaces_an_association() -> None:
    # terraform-provider-aws internal/service/eks/pod_identity_association.go (00a35305): the three
    # RequiresReplace attributes, in pulumi-aws's input names.
    assert pod_identity.ASSOCIATION_REPLACE_FIELDS == ("clusterName", "namespace", "serviceAccount")


def test_the_type_tokens() -> None:
    # pulumi-aws schema: aws.eks.PodIdentityAssociation and aws.eks.Addon.
    assert tokens.POD_IDENTITY_ASSOCIATION == (
        "aws:eks/podIdentityAssociation:PodIdentityAssociation"
    )
    assert tokens.ADDON == "aws:eks/addon:Addon"


def test_a_role_in_another_account_is_reached_by_role_chaining() -> None:
    # EKS user guide, pod-id-assign-target-role: the Pod Identity role's permission policy has
    # "Action": [ "sts:AssumeRole", "sts:TagSession" ] on the target role; the target's trust
    # allows "Action": [ "sts:AssumeRole", "sts:TagSession" ] to the cluster account's root with
    # "ArnEquals": { "aws:PrincipalARN": <the Pod Identity role> }; "If the association includes
    # both the EKS Pod Identity role ARN and a Target IAM Role, the cached credentials last for
    # 59 minutes."
    assert pod_identity.CHAIN_ROLE_ACTIONS == ("sts:AssumeRole", "sts:TagSession")
    assert pod_identity.TARGET_TRUST_ACTIONS == ("sts:AssumeRole", "sts:TagSession")
    assert pod_identity.PRINCIPAL_ARN_KEY == "aws:PrincipalARN"
    assert pod_identity.CHAINED_CREDENTIALS_MINUTES == 59


def test_the_nodes_pod_identity_does_not_serve_are_told_by_their_labels() -> None:
    # EKS User Guide, "EKS Pod Identity restrictions": "Linux and Windows pods that run on AWS
    # Fargate (Fargate) aren't supported. Pods that run on Windows Amazon EC2 instances aren't
    # supported." A Fargate node: eks.amazonaws.com/compute-type=fargate (AWS's manifests,
    # `NotIn [fargate]`); a Windows node: kubernetes.io/os=windows (the kubelet's runtime.GOOS).
    assert pod_identity.SUPPORTED_NODES == "Linux Amazon EC2"
    assert (pod_identity.COMPUTE_TYPE_LABEL, pod_identity.FARGATE_COMPUTE_TYPE) == (
        "eks.amazonaws.com/compute-type",
        "fargate",
    )
    assert (pod_identity.OS_LABEL, pod_identity.WINDOWS_OS) == ("kubernetes.io/os", "windows")

"""EKS Pod Identity as AWS and the AWS provider define it: the trust a role needs, the session tags
that narrow it, the agent add-on's name, and what replaces an association.

Sources (each spelled out by `tests/contracts/test_pod_identity.py`):
- The trust: the Amazon EKS User Guide, "Create IAM role with trust policy required by EKS Pod
  Identity" (pod-id-role; awsdocs/amazon-eks-user-guide
  latest/ug/manage-access/aws-access/pod-id-role.adoc at 2edffcb14bca54edc61e5a925eb6b3c97fde11f0):
  principal service `pods.eks.amazonaws.com`, actions `sts:AssumeRole` (to assume the role) and
  `sts:TagSession` (to pass its session tags), narrowed with `StringEquals` on
  `aws:RequestTag/<tag>` to one namespace and service account.
- The session tags: the same page and "Grant Pods access to AWS resources based on tags"
  (pod-id-abac, same repository, pod-id-abac.adoc): `eks-cluster-arn`, `eks-cluster-name`,
  `kubernetes-namespace`, `kubernetes-service-account`, `kubernetes-pod-name`, `kubernetes-pod-uid`.
- `aws:SourceAccount`: the IAM User Guide, "The confused deputy problem" (cross-service confused
  deputy prevention: narrow a service principal's trust with `aws:SourceAccount`); EKS Pod Identity
  sets it on its AssumeRole calls (awslabs/mountpoint-s3-csi-driver issue #781: a Pod Identity
  role trusting `pods.eks.amazonaws.com` with `StringEquals aws:SourceAccount` serves credentials).
- The agent: the Amazon EKS User Guide, "Set up the Amazon EKS Pod Identity Agent"
  (pod-id-agent-setup; service-accounts.adoc at 4d52b4d05e3478582e7d10a73cbd9ba9194dd5f7):
  `aws eks create-addon --addon-name eks-pod-identity-agent`, a DaemonSet of that name in
  kube-system.
- The association's replacement: terraform-provider-aws (which pulumi-aws bridges)
  internal/service/eks/pod_identity_association.go at 00a35305dc1b297a6fcdecdfbba33f1e63c3da39:
  `cluster_name`, `namespace` and `service_account` are `RequiresReplace`; `role_arn`,
  `disable_session_tags` and `target_role_arn` are updated in place (UpdatePodIdentityAssociation).
  Create retries only `InvalidParameterException` "Role provided in the request does not exist"
  (IAM propagation), never `ResourceInUseException`, and Delete is one call that does not wait.
- A target role (role chaining): the Amazon EKS User Guide, "Access AWS resources using EKS Pod
  Identity Target IAM Roles" (pod-id-assign-target-role; awsdocs/amazon-eks-user-guide
  latest/ug/manage-access/aws-access/pod-id-assign-target-role.adoc at
  f88ba6c7a08ed86793f94ea89d9feb064ac11742): "The EKS Pod Identity role must be in your EKS
  cluster's account due to IAM PassRole requirements, while the Target IAM Role can be in any
  AWS account"; the Pod Identity role's permission allows `sts:AssumeRole` and `sts:TagSession`
  on the target's ARN; the target trusts the cluster account's root, narrowed by `ArnEquals`
  `aws:PrincipalARN` to the Pod Identity role, for `sts:AssumeRole` and `sts:TagSession`
  (optionally also on the session tags, which are transitive); credentials are cached 59 minutes
  with a target role, 6 hours without. terraform-provider-aws v6.2.0 (#42979) added
  `target_role_arn` to the association; pulumi-aws 7.0.0, this project's lower bound, has it
  (its wheel's pulumi_aws/eks/pod_identity_association.py, `target_role_arn`).
- The add-on as the AWS provider reads and creates it: terraform-provider-aws
  internal/service/eks/addon.go at 00a35305dc1b297a6fcdecdfbba33f1e63c3da39 (`findAddon`: EKS's
  `ResourceNotFoundException` becomes a `retry.NotFoundError`, whose text is "couldn't find
  resource", internal/retry/error.go at 303f32de1d128f99e65d274dc8df16b28e339171), the data source
  `aws_eks_addon` failing with "reading EKS Add-On (<cluster>:<addon>): <that error>"
  (addon_data_source.go), its id `<cluster>:<addon>` (`AddonCreateResourceID`, also what
  `pulumi import aws:eks/addon:Addon` takes); `resourceAddonCreate` calls CreateAddon once more
  only on `InvalidParameterException` (CREATE_FAILED, "does not exist"), so an add-on the cluster
  already has fails the create (EKS answers `ResourceInUseException`).
"""

from __future__ import annotations

SERVICE_PRINCIPAL = "pods.eks.amazonaws.com"
"""The service principal a Pod Identity role trusts."""
TRUST_ACTIONS = ("sts:AssumeRole", "sts:TagSession")
"""What the role's trust allows that principal: assume it, and tag the session."""

SOURCE_ACCOUNT_KEY = "aws:SourceAccount"
"""The global condition key naming the account the service acts for."""
REQUEST_TAG_PREFIX = "aws:RequestTag/"
"""Condition keys on the session tags the service passes: `aws:RequestTag/<tag>`."""
CLUSTER_NAME_TAG = "eks-cluster-name"
NAMESPACE_TAG = "kubernetes-namespace"
SERVICE_ACCOUNT_TAG = "kubernetes-service-account"
SESSION_TAGS = (
    "eks-cluster-arn",
    CLUSTER_NAME_TAG,
    NAMESPACE_TAG,
    SERVICE_ACCOUNT_TAG,
    "kubernetes-pod-name",
    "kubernetes-pod-uid",
)
"""Every session tag EKS Pod Identity adds (unless the association disables session tags)."""

AGENT_ADDON = "eks-pod-identity-agent"
"""The EKS add-on that serves Pod Identity credentials on the nodes."""
ADDON_NOT_FOUND = "couldn't find resource"
"""What the provider's add-on look-up (`aws.eks.get_addon`) says, after "reading EKS Add-On
(<cluster>:<addon>): ", when EKS has no such add-on on the cluster; any other failure is not an
answer about the add-on."""


def addon_id(cluster_name: str, addon: str) -> str:
    """The provider's id of an add-on (`<cluster>:<addon>`), as `pulumi import` takes it."""
    return f"{cluster_name}:{addon}"


NODE_ROLE_ACTION = "eks-auth:AssumeRoleForPodIdentity"
NODE_ROLE_MANAGED_POLICY = "AmazonEKSWorkerNodePolicy"
"""pod-id-agent-setup, "Agent prerequisites": the node role must allow the agent
`eks-auth:AssumeRoleForPodIdentity`; the AWS managed `AmazonEKSWorkerNodePolicy` does (the
worker nodes' role, which this program does not own: docs/leaving-kiam.md says so)."""
SUPPORTED_NODES = "Linux Amazon EC2"
"""The EKS User Guide, "EKS Pod Identity" (pod-identities), considerations: Pod Identity works on
Linux Amazon EC2 nodes only (not Fargate, not Windows)."""

CHAIN_ROLE_ACTIONS = ("sts:AssumeRole", "sts:TagSession")
"""What the association's role (`roleArn`) may do on its target role: assume it, passing the
session tags on (pod-id-assign-target-role, "Update the permission policy")."""
TARGET_TRUST_ACTIONS = ("sts:AssumeRole", "sts:TagSession")
"""What the target role's trust allows the association's role (the same page, the target role's
trust policy with session tags enabled, the default)."""
PRINCIPAL_ARN_KEY = "aws:PrincipalARN"
"""The global condition key the target's trust pins the association's role with (`ArnEquals`)."""
CHAINED_CREDENTIALS_MINUTES = 59
"""How long EKS caches credentials of an association with a target role (6 hours without)."""

COMPUTE_TYPE_LABEL = "eks.amazonaws.com/compute-type"
FARGATE_COMPUTE_TYPE = "fargate"
"""The node label and value of an AWS Fargate node: AWS's own manifests keep their DaemonSets off
Fargate with `eks.amazonaws.com/compute-type NotIn [fargate]` (aws/amazon-vpc-cni-k8s
config/master/aws-k8s-cni.yaml at f3efb24fa4be60109314192b69b89a2dd43b59d9; the EKS User Guide's
kube-proxy affinity), and aws-samples/eks-workshop-v2 (website/docs/fundamentals/fargate/
scheduling.md) shows a Fargate node labelled `eks.amazonaws.com/compute-type=fargate`. The EKS
User Guide, "AWS Fargate considerations": the instance metadata service "isn't available to Pods
that are deployed to Fargate nodes" (so kiam never served them); use IRSA."""
OS_LABEL = "kubernetes.io/os"
WINDOWS_OS = "windows"
"""The kubelet's well-known node label: "For nodes, the kubelet populates this with runtime.GOOS"
(kubernetes.io, "Well-Known Labels, Annotations and Taints"; `LabelOSStable` in
k8s.io/api/core/v1/well_known_labels.go); `windows` on Windows nodes (the EKS User Guide's
Windows sample: the `kubernetes.io/os: windows` nodeSelector)."""

ASSOCIATION_REPLACE_FIELDS = ("clusterName", "namespace", "serviceAccount")
"""`aws.eks.PodIdentityAssociation` inputs whose change replaces the association (its other inputs
are updated in place). A replacement therefore always names another (cluster, namespace, service
account) than the association it replaces."""


def request_tag(tag: str) -> str:
    """The condition key of one session tag."""
    return f"{REQUEST_TAG_PREFIX}{tag}"

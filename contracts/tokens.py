"""Pulumi type tokens of the resources kiam's components create, for code that reads them back
(the invariant checks, the plan's renderers, the mock engine). No Pulumi import: the policy pack
uses these without the cloud SDKs."""

DEPLOYMENT = "kubernetes:apps/v1:Deployment"
DAEMON_SET = "kubernetes:apps/v1:DaemonSet"
# Server-side apply of some fields of a DaemonSet another resource (or nobody) owns.
DAEMON_SET_PATCH = "kubernetes:apps/v1:DaemonSetPatch"
SERVICE = "kubernetes:core/v1:Service"
SECRET = "kubernetes:core/v1:Secret"
NODE = "kubernetes:core/v1:Node"
NAMESPACE = "kubernetes:core/v1:Namespace"
NAMESPACE_PATCH = "kubernetes:core/v1:NamespacePatch"
PDB = "kubernetes:policy/v1:PodDisruptionBudget"
CLUSTER_ROLE_BINDING = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
POD_IDENTITY_ASSOCIATION = "aws:eks/podIdentityAssociation:PodIdentityAssociation"
ADDON = "aws:eks/addon:Addon"
ROLE = "aws:iam/role:Role"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
# A customer managed policy (the kiam-server role's permission past its inline policy).
POLICY = "aws:iam/policy:Policy"
ROLE_POLICY_ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
# Attaches a managed policy to any number of roles, users and groups at once.
POLICY_ATTACHMENT = "aws:iam/policyAttachment:PolicyAttachment"
PRIVATE_KEY = "tls:index/privateKey:PrivateKey"
CERT_REQUEST = "tls:index/certRequest:CertRequest"
SELF_SIGNED_CERT = "tls:index/selfSignedCert:SelfSignedCert"
LOCALLY_SIGNED_CERT = "tls:index/locallySignedCert:LocallySignedCert"
# The root resource; its outputs are the stack outputs.
STACK = "pulumi:pulumi:Stack"
# A read of a stack's last outputs (the engine's builtin provider reads it, in previews too).
STACK_REFERENCE = "pulumi:pulumi:StackReference"


# This package's components (kiam_eks.components), each `kiam:index:<its class name>`: the token a
# Pulumi program in any language names it by (the component provider infers the same from the
# class). A token is part of the URN of the component and of every resource under it, so changing
# one would replace every resource of every running install: tests/test_package.py holds each
# class to its token.
COMPONENT_PACKAGE = "kiam"
KIAM = "kiam:index:Kiam"
# The Kubernetes side alone, for IAM, nodes and certificates made elsewhere (the public layer).
KIAM_KUBERNETES = "kiam:index:KiamKubernetes"
IAM = "kiam:index:Iam"
SERVER_NODE_GROUP = "kiam:index:ServerNodeGroup"
TLS = "kiam:index:Tls"
SERVER = "kiam:index:Server"
AGENT = "kiam:index:Agent"
AGENT_RETIREMENT = "kiam:index:AgentRetirement"
APPLICATION_ROLE = "kiam:index:ApplicationRole"
# An application role that exists already (`roleArn`): what serves it, and its owner's statements.
EXISTING_APPLICATION_ROLE = "kiam:index:ExistingApplicationRole"
NAMESPACE_PERMISSIONS = "kiam:index:NamespacePermissions"
MONITORING = "kiam:index:Monitoring"
COMPONENTS = (
    KIAM,
    KIAM_KUBERNETES,
    IAM,
    SERVER_NODE_GROUP,
    TLS,
    SERVER,
    AGENT,
    AGENT_RETIREMENT,
    APPLICATION_ROLE,
    EXISTING_APPLICATION_ROLE,
    NAMESPACE_PERMISSIONS,
    MONITORING,
)

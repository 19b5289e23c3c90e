"""Names that are interfaces between components: what agents dial and what the certificate covers."""

from __future__ import annotations

# The top component's name (program/stack.py): every child's name starts with it, and so do the
# names of kiam's own IAM roles, which AWS derives from their Pulumi names.
INSTALL_NAME = "kiam"
# What the names of kiam's own roles start with: the server's application-role pattern must never
# cover it (settings/iam.py).
OWN_ROLE_NAME_PREFIX = f"{INSTALL_NAME}-"
# The stack output that says what agents dial (program/stack.py): exported exactly while the stack
# installs kiam, so retirement reads it back from the stack's last outputs to tell a stack that
# still has kiam to roll (components/agent_retirement.py) from one already retired.
SERVER_ADDRESS_OUTPUT = "serverAddress"


def server_nodes_name(install: str) -> str:
    """What the cloud side creates the server nodes under (components/kiam.py): the guarantees
    find the node group, whatever the cloud side made of it (an EKS managed node group, the e2e's
    Nodes), as the children of this component."""
    return f"{install}-server-nodes"


SERVER_NODES = server_nodes_name(INSTALL_NAME)
# The patch that rolls the agents to remove their rule before a retirement deletes them
# (components/agent_retirement.py): found in the stack's state, it tells a retirement that
# stopped half way (transitions/).
RETIREMENT_PATCH = f"{INSTALL_NAME}-agent-retirement"


def pod_identity_agent_name(install: str) -> str:
    """What the cloud side registers the `eks-pod-identity-agent` add-on under
    (components/kiam.py, `kiam:podIdentityAgent.manageAddon`): found in the stack's state, it
    tells an add-on the stack already manages from one someone else installed
    (transitions/, program/providers.py)."""
    return f"{install}-pod-identity-agent"


POD_IDENTITY_AGENT = pod_identity_agent_name(INSTALL_NAME)

SERVER_NAME = "kiam-server"
AGENT_NAME = "kiam-agent"
# The containers the guarantees find kiam's command lines in.
SERVER_CONTAINER = "kiam-server"
AGENT_CONTAINER = "kiam-agent"
# The dedicated node group's name prefix: EKS appends a unique suffix, so a replacement group can
# exist beside the old one.
SERVER_NODE_GROUP_PREFIX = "kiam-server-"
# The headless Service Prometheus finds the host-networked agents' metrics through.
AGENT_METRICS_SERVICE = "kiam-agent-metrics"
# The PrometheusRule holding kiam's alerts.
ALERTS_NAME = "kiam"
TLS_MOUNT = "/etc/kiam/tls"
# kubernetes.io/tls Secret keys; kiam reads the files by these names from the mounted directory.
TLS_FLAGS = [
    f"--cert={TLS_MOUNT}/tls.crt",
    f"--key={TLS_MOUNT}/tls.key",
    f"--ca={TLS_MOUNT}/ca.crt",
]


def service_dns_names(service: str, namespace: str, cluster_domain: str) -> list[str]:
    """Every name a client may use for the server Service, plus `localhost` for in-pod checks."""
    return [
        service,
        f"{service}.{namespace}",
        f"{service}.{namespace}.svc",
        f"{service}.{namespace}.svc.{cluster_domain}",
        "localhost",
    ]


def agent_server_address(service: str, namespace: str, cluster_domain: str, port: int) -> str:
    """What agents pass as `--server-address`: the headless Service's fully qualified name.

    Fully qualified because agents use host networking, so no search path can be assumed; it is
    one of `service_dns_names`, which the server certificate carries.
    """
    return f"{service}.{namespace}.svc.{cluster_domain}:{port}"


def node_role_name(iam_name: str) -> str:
    """The server nodes' instance role, named after the component holding kiam's IAM chain (AWS
    appends a random suffix; the e2e stand-ins use the name as it is)."""
    return f"{iam_name}-server-node"


def chain_role_name_prefix(namespace: str) -> str:
    """The name prefix of the role EKS Pod Identity chains through to an application's role in
    another account (IAM appends a unique suffix; `name_prefix` allows 38 characters)."""
    return f"{OWN_ROLE_NAME_PREFIX}chain-{namespace}"[:37] + "-"


def server_role_name(iam_name: str) -> str:
    """The kiam-server role (`--assume-role-arn`), named like `node_role_name`."""
    return f"{iam_name}-server"


def launch_template_name_prefix(cluster_name: str) -> str:
    """The server nodes' launch template's name prefix: the cluster's name, so two clusters in
    one account never share one, then the node group's prefix."""
    return f"{cluster_name}-{SERVER_NODE_GROUP_PREFIX}"


# The tag the server node group carries (components/node_group.py), valued `<project>/<stack>`:
# EKS names the group from a prefix only when it creates it, so a create that a killed update
# never recorded leaves a group only this tag ties to its stack (tools/interrupted/eks_node_groups.py).
STACK_TAG = "kiam-eks/stack"


def stack_tag_value(project: str, stack: str) -> str:
    return f"{project}/{stack}"

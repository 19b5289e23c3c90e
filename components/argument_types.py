"""`Kiam`'s and `KiamKubernetes`' named argument types: one per section of the stack settings
and one for each application entry, with the settings' snake_case names, types and descriptions.

Generated from the settings models by `python -m tools.argument_types --write`; do not edit
(tests/test_argument_types.py fails when this file and the models disagree). The component
provider reads these classes as the package schema's types (provider/schema.json)."""

# No `from __future__ import annotations`: the component provider reads these annotations as
# types at run time. The docstrings are the schema's descriptions, so each is one line.
from typing import Any, NotRequired, TypedDict


class SubnetOptions(TypedDict):
    """One subnet of the node group; the zone lets the program prove the group spans zones."""

    id: str
    """Subnet id."""
    zone: NotRequired[str]
    """Availability zone of the subnet."""


class TaintOptions(TypedDict):
    """The taint that reserves the node group for kiam servers; the same pair labels its nodes."""

    key: NotRequired[str]
    """Taint (and node label) key; no kubernetes.io/, k8s.io/ or eks.amazonaws.com/ prefix (EKS reserves them). Default `"dedicated"`."""
    value: NotRequired[str]
    """Taint (and node label) value; not empty, as it is also a node label. Default `"kiam-server"`."""
    effect: NotRequired[str]
    """EKS taint effect; PREFER_NO_SCHEDULE is not allowed: it would not dedicate. One of `"NO_SCHEDULE"`, `"NO_EXECUTE"`. Default `"NO_SCHEDULE"`."""


class NodeGroupOptions(TypedDict):
    """`kiam:nodeGroup`: the dedicated managed node group for kiam servers."""

    subnets: list[SubnetOptions]
    """Private subnets for the nodes, in at least two availability zones (give each as `{id, zone}` so the program can check the spread)."""
    instance_types: NotRequired[list[str]]
    """EC2 instance types (at most 20, EKS's limit). Default `["t3.medium"]`."""
    capacity_type: NotRequired[str]
    """ON_DEMAND or SPOT. Spot reclaims nodes with two minutes' notice: only for clusters that can lose a server at any moment. One of `"ON_DEMAND"`, `"SPOT"`. Default `"ON_DEMAND"`."""
    ami_type: NotRequired[str]
    """EKS AMI type. One of `"AL2023_x86_64_STANDARD"`, `"AL2023_ARM_64_STANDARD"`, `"BOTTLEROCKET_x86_64"`, `"BOTTLEROCKET_ARM_64"`. Default `"AL2023_x86_64_STANDARD"`."""
    min_size: NotRequired[int]
    """Minimum number of nodes. Default `3`."""
    desired_size: NotRequired[int]
    """Desired number of nodes. Default `3`."""
    max_size: NotRequired[int]
    """Maximum number of nodes. Default `4`."""
    disk_size_gib: NotRequired[int]
    """Root volume size in GiB (gp3, encrypted). In a stack file `diskSizeGiB`. Default `20`."""
    labels: NotRequired[dict[str, str]]
    """Extra node labels (the taint's key/value label is always set). EKS refuses keys longer than 63 characters or containing kubernetes.io/, k8s.io/ or eks.amazonaws.com/, and empty values."""
    taint: NotRequired[TaintOptions]
    """The dedicating taint."""
    max_unavailable: NotRequired[int]
    """Nodes EKS may take down at once during an update. Default `1`."""


class ContainerResourceOptions(TypedDict):
    """Requests for scheduling and a memory limit; no CPU limit, so kiam is never throttled."""

    cpu_request: str
    """CPU request."""
    memory_request: str
    """Memory request."""
    memory_limit: str
    """Memory limit (at least the request)."""


class ServerOptions(TypedDict):
    """`kiam:server`: the kiam-server Deployment."""

    image: NotRequired[str]
    """kiam image (v4.2+: older clients fail on EKS 1.21+ tokens). Default `"quay.io/uswitch/kiam:v4.2"`."""
    replicas: NotRequired[int]
    """Server pods, one per node (hard anti-affinity). Default `3`."""
    service_name: NotRequired[str]
    """Name of the headless Service the agents dial; it is in the server certificate. A Service name starts with a letter (DNS-1035). Default `"kiam-server"`."""
    grpc_port: NotRequired[int]
    """Port the server listens on and agents dial (when adopting an install, the port its agents dial, often 443). The server runs as non-root with no capabilities either way: a port below 1024 is opened to it with the pod sysctl `net.ipv4.ip_unprivileged_port_start`. Default `9610`."""
    metrics_port: NotRequired[int]
    """Prometheus metrics port. Default `9620`."""
    resources: NotRequired[ContainerResourceOptions]
    """Requests and memory limit."""
    session_duration: NotRequired[str]
    """STS session length: above 15m (15m makes SDKs refresh constantly) and at most 60m (role chaining limit). Default `"60m"`."""
    session_refresh: NotRequired[str]
    """How long before expiry kiam fetches new credentials; below sessionDuration. Above 15m, SDKs never see credentials inside their own refresh window. Default `"20m"`."""
    sync_interval: NotRequired[str]
    """Pod informer resync (`--sync`). Default `"1m"`."""
    max_connection_age: NotRequired[str]
    """The server ends each agent connection after this (GOAWAY), so agents re-resolve the Service and find new servers. Default `"15m"`."""
    max_connection_idle: NotRequired[str]
    """Idle connection lifetime. Default `"15m"`."""
    max_connection_age_grace: NotRequired[str]
    """Grace for in-flight calls after GOAWAY. Default `"15s"`."""
    log_level: NotRequired[str]
    """Log level. One of `"debug"`, `"info"`, `"warn"`, `"error"`. Default `"info"`."""
    priority_class_name: NotRequired[str]
    """Pod priority class; of the `system-` names only the two built-in ones exist. Default `"system-cluster-critical"`."""
    unhealthy_node_toleration_seconds: NotRequired[int]
    """How long a server stays on a not-ready or unreachable node before it is moved (Kubernetes' default is 300). Default `30`."""
    rollout_timeout_minutes: NotRequired[int]
    """How long `pulumi up` waits for the Deployment to become Ready; covers new nodes booting during a node group replacement. Default `20`."""
    extra_args: NotRequired[list[str]]
    """Extra server flags: only flags kiam v4.2's server has, none the program sets, and not --disable-strict-namespace-regexp."""


class TolerationOptions(TypedDict):
    """A toleration for one of the cluster's other tainted node pools."""

    key: NotRequired[str]
    """Taint key; omitted only with Exists."""
    operator: NotRequired[str]
    """Equal or Exists. One of `"Equal"`, `"Exists"`. Default `"Equal"`."""
    value: NotRequired[str]
    """Taint value (with Equal)."""
    effect: NotRequired[str]
    """Taint effect; omitted matches every effect. One of `"NoSchedule"`, `"PreferNoSchedule"`, `"NoExecute"`."""


class AgentRolloutOptions(TypedDict):
    """`kiam:agent.rollout`: how many agents restart at once, and the cluster size it is sized for."""

    max_unavailable: NotRequired[Any]
    """How many agents restart at once when their template changes: a count, or a percentage of the agents (rounded up). Each node's pods are refused by the metadata address only while its own agent restarts; this sets how many nodes are in that moment together, and how long the rollout takes. Default `"10%"`."""
    nodes: NotRequired[int]
    """The most nodes the agents run on (the workload node groups' and autoscalers' maximum): the plan's rollout estimate, and, with a count, how long `pulumi up` waits for a rollout. Default `100`."""
    restart_seconds: NotRequired[int]
    """How long one agent takes to stop, start and turn Ready on this cluster (10 to 25 s on EKS). Default `30`."""


class AgentOptions(TypedDict):
    """`kiam:agent`: the kiam-agent DaemonSet on every node except the server nodes."""

    image: NotRequired[str]
    """kiam image. Default `"quay.io/uswitch/kiam:v4.2"`."""
    host_interface: NotRequired[str]
    """Pod-facing host interfaces to intercept (`eni+` for the EKS VPC CNI, `cali+` for Calico; `!` inverts, `+` is a wildcard). Default `"eni+"`."""
    port: NotRequired[int]
    """Agent port on each node (host network): not one the kubelet or kube-proxy holds (10248-10250, 10256) nor a NodePort (30000-32767). Default `8181`."""
    metrics_port: NotRequired[int]
    """Agent Prometheus port on each node; the same ports are taken as for `port`. Default `9620`."""
    remove_iptables_rule_on_exit: NotRequired[bool]
    """Remove the metadata DNAT rule when the agent stops. Off by default: while an agent restarts, pods then fail closed instead of reaching the node's own role. Default `false`."""
    allowed_metadata_routes: NotRequired[str]
    """Go regexp of extra metadata paths pods may read through the agent (`--allow-route-regexp`); kiam exits at start on one that does not compile. Default `"^$"`."""
    keepalive_time: NotRequired[str]
    """gRPC keepalive ping interval: detects dead servers. At least 10s (gRPC's minimum). Default `"10s"`."""
    keepalive_timeout: NotRequired[str]
    """gRPC keepalive ping timeout: how long a call stuck on a silently lost server waits before it moves to another. At most 3s: a failover costs this and 1.5s more (measured), which must stay below 5s, the agent readiness probe's timeout and the time kiam gives each credential request. Default `"2s"`."""
    gateway_timeout_creation: NotRequired[str]
    """How long the agent waits for a server connection at start-up. Default `"1s"`."""
    tolerations: NotRequired[list[TolerationOptions]]
    """Tolerations for the cluster's other tainted pools, so pods there get credentials. Must not match the server taint."""
    resources: NotRequired[ContainerResourceOptions]
    """Requests and memory limit."""
    rollout: NotRequired[AgentRolloutOptions]
    """How many agents restart at once when their template changes, and the cluster size that sizes the rollout's estimate and `pulumi up`'s wait."""
    log_level: NotRequired[str]
    """Log level. One of `"debug"`, `"info"`, `"warn"`, `"error"`. Default `"info"`."""
    priority_class_name: NotRequired[str]
    """Pod priority class; of the `system-` names only the two built-in ones exist. Default `"system-node-critical"`."""
    extra_args: NotRequired[list[str]]
    """Extra agent flags: only flags kiam v4.2's agent has, none the program sets, and not --allow-ip-query."""


class IamOptions(TypedDict):
    """`kiam:iam`: the narrowest role pattern the kiam server may assume."""

    application_role_path: NotRequired[str]
    """IAM path of the application roles pods may assume; the server may assume only roles under it. Also the `--role-base-arn`, so pods may annotate a bare role name. Default `"/kiam-apps/"`."""
    application_role_name_prefix: NotRequired[str]
    """Optional role-name prefix that narrows the pattern further. Default `""`."""
    allow_any_role: NotRequired[bool]
    """Let the server assume any role in the account (`role/*`). Only with this set may the path be `/` with no prefix. Default `false`."""
    kiam_role_path: NotRequired[str]
    """IAM path of kiam's own roles (node role, server role), and of the roles Pod Identity chains through to an existing role of another account, which stay once kiam is retired. Default `"/kiam/"`."""
    managed_policies_per_role: NotRequired[int]
    """The account's IAM quota "Managed policies per role": 10 unless raised in Service Quotas (up to 20). No application may attach more, and the kiam-server role's permission spreads over its inline policy and at most this many managed policies. Default `10`."""


class TlsOptions(TypedDict):
    """`kiam:tls`: validity and early renewal of the CA and the server and agent certificates."""

    ca_validity_hours: NotRequired[int]
    """CA lifetime (default ten years; at most about 292 years, Go's limit). Default `87600`."""
    cert_validity_hours: NotRequired[int]
    """Server and agent certificate lifetime (default a year). Default `8760`."""
    early_renewal_hours: NotRequired[int]
    """A `pulumi up` this close to expiry re-issues the certificates; kiam reloads them from the mounted Secret without a restart. Default `720`."""


class NamespaceOptions(TypedDict):
    """`kiam:namespace`: where the kiam objects live."""

    name: NotRequired[str]
    """Namespace of every kiam object. Default `"kiam"`."""
    create: NotRequired[bool]
    """Create the namespace (labelled privileged for Pod Security: the agent needs host networking and NET_ADMIN). Set false to use an existing one, e.g. kube-system (which, like default, kube-public and kube-node-lease, always exists). Default `true`."""


class MonitoringOptions(TypedDict):
    """`kiam:monitoring`: scrape kiam's metrics and alert on them (off by default)."""

    enabled: NotRequired[bool]
    """Have Prometheus scrape kiam's metrics (servers and agents export them on `metricsPort` either way). Default `false`."""
    prometheus_operator: NotRequired[bool]
    """The cluster runs the Prometheus Operator: a ServiceMonitor for the servers, one for the agents (with a headless Service for the host-networked agents' metrics port) and, with `alerts`, a PrometheusRule. False: the conventional `prometheus.io/scrape`, `port` and `path` pod annotations instead. Default `true`."""
    labels: NotRequired[dict[str, str]]
    """Extra labels on the ServiceMonitors and the PrometheusRule: those the Prometheus' `serviceMonitorSelector` and `ruleSelector` select by (kube-prometheus-stack: `release: <its release name>`). Not `app.kubernetes.io/` ones, which the program sets."""
    scrape_interval: NotRequired[str]
    """How often Prometheus scrapes each server and agent: from 10s (Prometheus' default scrape timeout may not exceed it) to 75s (the alerts' 5m rate windows need four scrapes each). Default `"30s"`."""
    alerts: NotRequired[bool]
    """A PrometheusRule with the alerts of docs/alerts.md (needs `prometheusOperator`; without the operator, load the rules that `python -m tools.alert_rules --stack <stack>` prints into Prometheus' `rule_files`). Default `true`."""
    runbook_url: NotRequired[str]
    """Where the runbook lives; each alert's `runbook_url` annotation is this and `#<alert name in lower case>` (point it at your copy of docs/alerts.md). Default `"docs/alerts.md"`."""


class AdoptionOptions(TypedDict):
    """`kiam:adoption`: the running install to move onto this program, and how far the move is. Phases (docs/migration.md): `servers` adds the dedicated nodes and server Deployment next to the old servers, reachable through the old Service and trusted by the old agents; `takeover` adopts the old Service and agent DaemonSet in place; `complete` keeps the adopted names."""

    phase: str
    """How far the move is: servers, takeover or complete. One of `"servers"`, `"takeover"`, `"complete"`."""
    agent_daemon_set_name: NotRequired[str]
    """Name of the running agent DaemonSet; taken over in place, rolling as `rollout` says. Default `"kiam-agent"`."""
    agent_pod_labels: dict[str, str]
    """The running agent DaemonSet's `spec.selector.matchLabels` (immutable, so kept)."""
    server_pod_labels: dict[str, str]
    """The labels the running Service selects; the new server pods carry them too."""
    ca_certificate: str
    """The running install's CA certificate (PEM; set with --secret), so old agents trust the new servers and the new servers trust old agents."""
    ca_private_key: str
    """The running install's CA private key (PEM; set with --secret)."""


class ApplicationOptions(TypedDict):
    """One application role, served to one namespace: a role the stack creates (`roleName`) or one that exists already (`roleArn`)."""

    namespace: str
    """Namespace whose pods may assume the role."""
    role_name: NotRequired[str]
    """IAM role name of a role the stack creates; must start with `kiam:iam.applicationRoleNamePrefix`. Pods annotate `iam.amazonaws.com/role` with the role's path below `kiam:iam.applicationRolePath` and this name (`<roleName>`, or `team-a/<roleName>` for path `/kiam-apps/team-a/`): the stack output `applications` gives it. Give this or `roleArn`."""
    role_arn: NotRequired[str]
    """An existing role, by its ARN (path and all), in the cluster's account or another account of its partition, instead of `roleName`: the stack creates no role and attaches no policy, and serves this role in its state (`servedBy`): kiam's server may assume exactly this ARN, the namespace admits it, and Pod Identity or IRSA serve it. A role in another account is served by Pod Identity through a role the stack creates in the cluster's account for EKS to chain through (the association's `targetRoleArn`). The trust policy stays its owner's: the stack output `applications` gives, per state, the statements it must hold (`trust`), and `python -m tools.kiam_usage` checks them."""
    path: NotRequired[str]
    """IAM path of the role; defaults to `kiam:iam.applicationRolePath` and must lie under it. The server may assume roles under each such path (with the name prefix)."""
    managed_policy_arns: NotRequired[list[str]]
    """Managed policies to attach: AWS managed ones or the cluster account's, in the cluster's partition, each policy name once, at most `kiam:iam.managedPoliciesPerRole`."""
    inline_policies: NotRequired[dict[str, dict[str, Any]]]
    """Inline policy documents by name, in IAM's grammar (Version "2012-10-17", Effect, Action or NotAction, Resource or NotResource; no Principal); 10240 characters at most together, white space not counted."""
    served_by: NotRequired[str]
    """Where its pods get credentials: `kiam`; `kiam+podIdentity` or `kiam+irsa` while the application moves (both work; recreate its pods, then check with `python -m tools.kiam_usage`); `podIdentity` or `irsa` once it has moved. One step at a time, forward or back (docs/leaving-kiam.md). One of `"kiam"`, `"kiam+podIdentity"`, `"podIdentity"`, `"kiam+irsa"`, `"irsa"`. Default `"kiam"`."""
    service_account: NotRequired[str]
    """The service account, in the application's namespace, that Pod Identity or IRSA serves the role to; required unless `servedBy` is `kiam`. With `roleArn` it may be given while kiam serves the role, so that the stack output gives the statements the next state needs before the move."""


class PodIdentityAgentOptions(TypedDict):
    """Only read while an application is served by Pod Identity (`servedBy` kiam+podIdentity or podIdentity): the `eks-pod-identity-agent` add-on must then run on the nodes its pods use."""

    manage_addon: NotRequired[bool]
    """Install and own the `eks-pod-identity-agent` add-on (kept on the nodes if the stack later drops it: removing it never takes the agent from running pods). Until the stack has installed it, the program checks at plan time, before changing anything, that EKS lists no such add-on on the cluster (EKS refuses to create a second) and stops with the way out if it does: import it into the stack, or leave this off. Off: the program only checks, the same way, that EKS lists the add-on on the cluster, and stops with a message if not. Default `false`."""
    addon_version: NotRequired[str]
    """The add-on version to install; only with `manageAddon: true` (refused otherwise: the program installs nothing to give it to). EKS's default for the cluster's Kubernetes version when unset."""


class ServerNodeGroupOptions(TypedDict):
    """The dedicated server node group made elsewhere: the nodes it keeps, and its taint."""

    min_size: NotRequired[int]
    """Minimum number of nodes. Default `3`."""
    taint: NotRequired[TaintOptions]
    """The dedicating taint."""

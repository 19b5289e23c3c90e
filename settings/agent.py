"""The kiam-agent DaemonSet: interception, the server connection, and where it may run."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field, model_validator

from kiam_eks.contracts import go_regexp
from kiam_eks.settings.agent_rollout import AgentRolloutSettings
from kiam_eks.settings.base import (
    Duration,
    ExtraArg,
    Image,
    LabelKey,
    LabelValue,
    LogLevel,
    Model,
    duration_seconds,
    matching,
)
from kiam_eks.settings.server import KIAM_IMAGE
from kiam_eks.settings.workload import PriorityClassName, ResourceSettings, reject_flags

AGENT_MANAGED_FLAGS = frozenset(
    {
        "--json-log", "--level", "--port", "--iptables", "--no-iptables-remove",
        "--iptables-remove", "--host", "--host-interface", "--server-address", "--cert", "--key",
        "--ca", "--allow-route-regexp", "--whitelist-route-regexp", "--prometheus-listen-addr",
        "--gateway-timeout-creation", "--grpc-keepalive-time-duration",
        "--grpc-keepalive-timeout-duration", "--grpc-keepalive-permit-without-stream",
    }
)  # fmt: skip
# Every flag of kiam v4.2's agent (cmd/kiam/agent.go and opts.go at tag v4.2); kingpin exits on
# any other. Boolean ones also take a --no- form.
AGENT_FLAGS = AGENT_MANAGED_FLAGS | {
    "--prometheus-sync-interval", "--pprof-listen-addr", "--server-address-refresh",
    "--allow-ip-query",
}  # fmt: skip
AGENT_BOOLEAN_FLAGS = frozenset(
    {"--json-log", "--grpc-keepalive-permit-without-stream", "--allow-ip-query", "--iptables",
     "--iptables-remove"}
)  # fmt: skip
AGENT_REFUSED_FLAGS = {
    "--allow-ip-query": "lets any pod ask for another pod's credentials with ?ip= (kiam: "
    '"Development use only")',
}

# gRPC clients never ping more often than every 10s: grpc-go raises a lower keepalive time to 10s
# (google.golang.org/grpc/keepalive, ClientParameters.Time).
MIN_KEEPALIVE_TIME_SECONDS = 10
# kiam's agent gives every metadata request 5s (pkg/aws/metadata/handlers.go, handlerMaxDuration).
AGENT_REQUEST_SECONDS = 5
# The agent's readiness probe (`/health?deep=1`, which calls a server) gives up after this; the
# agent component renders it from here, so the failover rule below and the probe cannot drift.
READINESS_PROBE_TIMEOUT_SECONDS = 5
# A call stuck on a silently lost server ends after the keepalive timeout (grpc-go sets it as the
# connection's TCP_USER_TIMEOUT), then kiam's retry lands on another server. Measured with kiam
# v4.2 and a 2s timeout (../shared/reference/kiam.md, "Failover"): requests took at most 3.5s, so
# a failover costs up to the keepalive timeout plus 1.5s. That must end before the request's
# deadline and before the readiness probe's timeout, or every agent flaps NotReady at once.
FAILOVER_OVERHEAD_MILLISECONDS = 1500
FAILOVER_LIMIT_SECONDS = min(AGENT_REQUEST_SECONDS, READINESS_PROBE_TIMEOUT_SECONDS)

# Ports every EKS node already has in use, which the host-networked agent could not bind: the
# kubelet's API and health ports, kube-proxy's metrics and health ports, and the NodePort range
# (Kubernetes docs "Ports and Protocols"; kubelet --healthz-port, kube-proxy --metrics-bind-address).
NODE_PORTS = {
    10248: "the kubelet's health port",
    10249: "kube-proxy's metrics port",
    10250: "the kubelet's API port",
    10256: "kube-proxy's health port",
}
NODE_PORT_RANGE = range(30000, 32768)


def _check_go_regexp(value: str) -> str:
    # kiam's agent compiles it with Go's regexp at start and exits if that fails.
    problem = go_regexp.compile_problem(value)
    if problem is not None:
        raise ValueError(f"{value!r} {problem}")
    return value


class TolerationSettings(Model):
    """A toleration for one of the cluster's other tainted node pools."""

    key: LabelKey | None = Field(default=None, description="Taint key; omitted only with Exists.")
    operator: Literal["Equal", "Exists"] = Field(default="Equal", description="Equal or Exists.")
    value: LabelValue | None = Field(default=None, description="Taint value (with Equal).")
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = Field(
        default=None, description="Taint effect; omitted matches every effect."
    )

    @model_validator(mode="after")
    def _check(self) -> TolerationSettings:
        if self.operator == "Exists" and self.value is not None:
            raise ValueError("a toleration with operator Exists takes no value")
        if self.operator == "Equal" and self.key is None:
            raise ValueError("a toleration with operator Equal needs a key")
        return self

    def tolerates(self, key: str, value: str, effect: str) -> bool:
        """Whether this toleration matches the given taint (Kubernetes' matching rules)."""
        if self.effect is not None and self.effect != effect:
            return False
        if self.key is None:
            return True  # `operator: Exists` with no key tolerates every taint.
        if self.key != key:
            return False
        return self.operator == "Exists" or (self.value or "") == value


class AgentSettings(Model):
    """`kiam:agent`: the kiam-agent DaemonSet on every node except the server nodes."""

    image: Image = Field(default=KIAM_IMAGE, description="kiam image.")
    host_interface: Annotated[
        str,
        matching(r"!?[A-Za-z0-9.+_-]{1,15}", "an interface name or pattern such as eni+ or !eth0"),
    ] = Field(
        default="eni+",
        description="Pod-facing host interfaces to intercept (`eni+` for the EKS VPC CNI, "
        "`cali+` for Calico; `!` inverts, `+` is a wildcard).",
    )
    port: int = Field(
        default=8181,
        ge=1024,
        le=65535,
        description="Agent port on each node (host network): not one the kubelet or kube-proxy "
        "holds (10248-10250, 10256) nor a NodePort (30000-32767).",
    )
    metrics_port: int = Field(
        default=9620,
        ge=1024,
        le=65535,
        description="Agent Prometheus port on each node; the same ports are taken as for `port`.",
    )
    remove_iptables_rule_on_exit: bool = Field(
        default=False,
        description="Remove the metadata DNAT rule when the agent stops. Off by default: while "
        "an agent restarts, pods then fail closed instead of reaching the node's own role.",
    )
    allowed_metadata_routes: Annotated[str, AfterValidator(_check_go_regexp)] = Field(
        default="^$",
        description="Go regexp of extra metadata paths pods may read through the agent "
        "(`--allow-route-regexp`); kiam exits at start on one that does not compile.",
    )
    keepalive_time: Duration = Field(
        default="10s",
        description="gRPC keepalive ping interval: detects dead servers. At least 10s (gRPC's "
        "minimum).",
    )
    keepalive_timeout: Duration = Field(
        default="2s",
        description="gRPC keepalive ping timeout: how long a call stuck on a silently lost server "
        "waits before it moves to another. At most 3s: a failover costs this and 1.5s more "
        "(measured), which must stay below 5s, the agent readiness probe's timeout and the time "
        "kiam gives each credential request.",
    )
    gateway_timeout_creation: Duration = Field(
        default="1s", description="How long the agent waits for a server connection at start-up."
    )
    tolerations: list[TolerationSettings] = Field(
        default=[],
        description="Tolerations for the cluster's other tainted pools, so pods there get "
        "credentials. Must not match the server taint.",
    )
    resources: ResourceSettings = Field(
        default=ResourceSettings(cpu_request="20m", memory_request="48Mi", memory_limit="128Mi"),
        description="Requests and memory limit.",
    )
    rollout: AgentRolloutSettings = Field(
        default=AgentRolloutSettings(),
        description="How many agents restart at once when their template changes, and the "
        "cluster size that sizes the rollout's estimate and `pulumi up`'s wait.",
    )
    log_level: LogLevel = Field(default="info", description="Log level.")
    priority_class_name: PriorityClassName = Field(
        default="system-node-critical",
        description="Pod priority class; of the `system-` names only the two built-in ones exist.",
    )
    extra_args: list[ExtraArg] = Field(
        default=[],
        description="Extra agent flags: only flags kiam v4.2's agent has, none the program "
        "sets, and not --allow-ip-query.",
    )

    @model_validator(mode="after")
    def _check(self) -> AgentSettings:
        if self.port == self.metrics_port:
            raise ValueError(f"port and metricsPort are both {self.port}")
        for key, port in (("port", self.port), ("metricsPort", self.metrics_port)):
            taken = NODE_PORTS.get(port) or ("a NodePort" if port in NODE_PORT_RANGE else None)
            if taken:
                raise ValueError(
                    f"{key} {port} is {taken} on every node: the host-networked agent could not "
                    "listen on it"
                )
        if duration_seconds(self.keepalive_time) < MIN_KEEPALIVE_TIME_SECONDS:
            raise ValueError(
                f"keepaliveTime {self.keepalive_time} is below 10s: gRPC raises it to 10s, so it "
                "would not take effect"
            )
        failover_ms = (
            duration_seconds(self.keepalive_timeout) * 1000 + FAILOVER_OVERHEAD_MILLISECONDS
        )
        if failover_ms >= FAILOVER_LIMIT_SECONDS * 1000:
            longest = (FAILOVER_LIMIT_SECONDS * 1000 - FAILOVER_OVERHEAD_MILLISECONDS - 1) // 1000
            raise ValueError(
                f"keepaliveTimeout {self.keepalive_timeout} lets a failover from a silently lost "
                f"server take up to {failover_ms / 1000:g}s (the timeout and 1.5s measured), not "
                f"below {FAILOVER_LIMIT_SECONDS}s, the agent readiness probe's timeout and the time "
                f"kiam gives each credential request: use at most {longest}s"
            )
        reject_flags(
            self.extra_args,
            command="agent",
            known=AGENT_FLAGS,
            boolean=AGENT_BOOLEAN_FLAGS,
            managed=AGENT_MANAGED_FLAGS,
            refused=AGENT_REFUSED_FLAGS,
        )
        return self

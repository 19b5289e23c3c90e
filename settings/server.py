"""The kiam-server Deployment: replicas, sessions, gRPC connection lifetimes, placement."""

from __future__ import annotations

from pydantic import Field, model_validator

from kiam_eks.settings.base import (
    Dns1035Label,
    Duration,
    ExtraArg,
    Image,
    LogLevel,
    Model,
    duration_seconds,
)
from kiam_eks.settings.workload import PriorityClassName, ResourceSettings, reject_flags

KIAM_IMAGE = "quay.io/uswitch/kiam:v4.2"

# Flags the server component always renders from settings; extraArgs may not repeat them.
SERVER_MANAGED_FLAGS = frozenset(
    {
        "--json-log", "--level", "--bind", "--cert", "--key", "--ca", "--role-base-arn",
        "--role-base-arn-autodetect", "--assume-role-arn", "--session-duration",
        "--session-refresh", "--sync", "--prometheus-listen-addr", "--prometheus-sync-interval",
        "--region", "--grpc-max-connection-age-duration", "--grpc-max-connection-idle-duration",
        "--grpc-max-connection-age-grace-duration",
    }
)  # fmt: skip
# Every flag of kiam v4.2's server (cmd/kiam/server.go and opts.go at tag v4.2); kingpin exits on
# any other. Boolean ones also take a --no- form.
SERVER_FLAGS = SERVER_MANAGED_FLAGS | {
    "--fetchers", "--prefetch-buffer-size", "--kubeconfig", "--session", "--pprof-listen-addr",
    "--grpc-keepalive-time-duration", "--grpc-keepalive-timeout-duration",
    "--disable-strict-namespace-regexp",
}  # fmt: skip
SERVER_BOOLEAN_FLAGS = frozenset(
    {"--json-log", "--role-base-arn-autodetect", "--disable-strict-namespace-regexp"}
)
SERVER_REFUSED_FLAGS = {
    "--disable-strict-namespace-regexp": "stops kiam anchoring each namespace's "
    "iam.amazonaws.com/permitted regexp (^...$), so a partial one admits roles meant for others",
}

# Role chaining (node role -> kiam-server role -> application role) caps sessions at one hour,
# and kiam refuses anything shorter than 15 minutes.
MIN_SESSION_SECONDS = 15 * 60
MAX_SESSION_SECONDS = 60 * 60


class ServerSettings(Model):
    """`kiam:server`: the kiam-server Deployment."""

    image: Image = Field(
        default=KIAM_IMAGE,
        description="kiam image (v4.2+: older clients fail on EKS 1.21+ tokens).",
    )
    replicas: int = Field(
        default=3, ge=2, le=20, description="Server pods, one per node (hard anti-affinity)."
    )
    service_name: Dns1035Label = Field(
        default="kiam-server",
        description="Name of the headless Service the agents dial; it is in the server "
        "certificate. A Service name starts with a letter (DNS-1035).",
    )
    grpc_port: int = Field(
        default=9610,
        ge=1,
        le=65535,
        description="Port the server listens on and agents dial (when adopting an install, the "
        "port its agents dial, often 443). The server runs as non-root with no capabilities "
        "either way: a port below 1024 is opened to it with the pod sysctl "
        "`net.ipv4.ip_unprivileged_port_start`.",
    )
    metrics_port: int = Field(
        default=9620, ge=1024, le=65535, description="Prometheus metrics port."
    )
    resources: ResourceSettings = Field(
        default=ResourceSettings(cpu_request="50m", memory_request="128Mi", memory_limit="256Mi"),
        description="Requests and memory limit.",
    )
    session_duration: Duration = Field(
        default="60m",
        description="STS session length: above 15m (15m makes SDKs refresh constantly) and at "
        "most 60m (role chaining limit).",
    )
    session_refresh: Duration = Field(
        default="20m",
        description="How long before expiry kiam fetches new credentials; below sessionDuration. "
        "Above 15m, SDKs never see credentials inside their own refresh window.",
    )
    sync_interval: Duration = Field(default="1m", description="Pod informer resync (`--sync`).")
    max_connection_age: Duration = Field(
        default="15m",
        description="The server ends each agent connection after this (GOAWAY), so agents "
        "re-resolve the Service and find new servers.",
    )
    max_connection_idle: Duration = Field(default="15m", description="Idle connection lifetime.")
    max_connection_age_grace: Duration = Field(
        default="15s", description="Grace for in-flight calls after GOAWAY."
    )
    log_level: LogLevel = Field(default="info", description="Log level.")
    priority_class_name: PriorityClassName = Field(
        default="system-cluster-critical",
        description="Pod priority class; of the `system-` names only the two built-in ones exist.",
    )
    unhealthy_node_toleration_seconds: int = Field(
        default=30,
        ge=0,
        le=300,
        description="How long a server stays on a not-ready or unreachable node before it is "
        "moved (Kubernetes' default is 300).",
    )
    rollout_timeout_minutes: int = Field(
        default=20,
        ge=10,
        le=60,
        description="How long `pulumi up` waits for the Deployment to become Ready; covers new "
        "nodes booting during a node group replacement.",
    )
    extra_args: list[ExtraArg] = Field(
        default=[],
        description="Extra server flags: only flags kiam v4.2's server has, none the program "
        "sets, and not --disable-strict-namespace-regexp.",
    )

    @model_validator(mode="after")
    def _check(self) -> ServerSettings:
        duration = duration_seconds(self.session_duration)
        if not MIN_SESSION_SECONDS < duration <= MAX_SESSION_SECONDS:
            raise ValueError(
                f"sessionDuration {self.session_duration} must be above 15m and at most 60m "
                "(kiam's minimum; the role-chaining maximum)"
            )
        if duration_seconds(self.session_refresh) >= duration:
            raise ValueError(
                f"sessionRefresh {self.session_refresh} must be below sessionDuration "
                f"{self.session_duration}"
            )
        if self.grpc_port == self.metrics_port:
            raise ValueError(f"grpcPort and metricsPort are both {self.grpc_port}")
        reject_flags(
            self.extra_args,
            command="server",
            known=SERVER_FLAGS,
            boolean=SERVER_BOOLEAN_FLAGS,
            managed=SERVER_MANAGED_FLAGS,
            refused=SERVER_REFUSED_FLAGS,
        )
        return self

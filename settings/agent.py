"""The kiam-agent DaemonSet: interception, the server connection, and where it may run."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from settings.base import (
    DnsSubdomain,
    Duration,
    ExtraArg,
    Image,
    LabelKey,
    LabelValue,
    LogLevel,
    Model,
    matching,
)
from settings.server import KIAM_IMAGE
from settings.workload import ResourceSettings, reject_managed_flags

AGENT_MANAGED_FLAGS = frozenset(
    {
        "--json-log", "--level", "--port", "--iptables", "--no-iptables-remove",
        "--iptables-remove", "--host", "--host-interface", "--server-address", "--cert", "--key",
        "--ca", "--allow-route-regexp", "--whitelist-route-regexp", "--prometheus-listen-addr",
        "--gateway-timeout-creation", "--grpc-keepalive-time-duration",
        "--grpc-keepalive-timeout-duration", "--grpc-keepalive-permit-without-stream",
    }
)  # fmt: skip


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
    port: int = Field(default=8181, ge=1024, le=65535, description="Agent port on each node.")
    metrics_port: int = Field(
        default=9620, ge=1024, le=65535, description="Agent Prometheus port on each node."
    )
    remove_iptables_rule_on_exit: bool = Field(
        default=False,
        description="Remove the metadata DNAT rule when the agent stops. Off by default: while "
        "an agent restarts, pods then fail closed instead of reaching the node's own role.",
    )
    allowed_metadata_routes: str = Field(
        default="^$",
        description="Regexp of extra metadata paths pods may read through the agent (`--allow-route-regexp`).",
    )
    keepalive_time: Duration = Field(
        default="10s", description="gRPC keepalive ping interval: detects dead servers."
    )
    keepalive_timeout: Duration = Field(default="2s", description="gRPC keepalive ping timeout.")
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
    log_level: LogLevel = Field(default="info", description="Log level.")
    priority_class_name: DnsSubdomain = Field(
        default="system-node-critical", description="Pod priority class."
    )
    extra_args: list[ExtraArg] = Field(default=[], description="Extra agent flags.")

    @model_validator(mode="after")
    def _check(self) -> AgentSettings:
        if self.port == self.metrics_port:
            raise ValueError(f"port and metricsPort are both {self.port}")
        reject_managed_flags(self.extra_args, AGENT_MANAGED_FLAGS)
        return self

"""kiam's command lines, as pure functions of settings: what each flag is set to and why."""

from __future__ import annotations

from kiam_eks.contracts import names
from kiam_eks.settings.agent import AgentSettings
from kiam_eks.settings.server import ServerSettings


def server_flags(
    s: ServerSettings, *, region: str, role_base_arn: str, assume_role_arn: str
) -> list[str]:
    """The kiam-server command line (after `/kiam`)."""
    return [
        "server",
        "--json-log",
        f"--level={s.log_level}",
        f"--bind=0.0.0.0:{s.grpc_port}",
        *names.TLS_FLAGS,
        # Explicit: autodetection needs the metadata API from inside the pod.
        f"--role-base-arn={role_base_arn}",
        # kiam v4.1+ refuses to start without it (kiam #491).
        f"--assume-role-arn={assume_role_arn}",
        f"--session-duration={s.session_duration}",
        f"--session-refresh={s.session_refresh}",
        f"--sync={s.sync_interval}",
        f"--region={region}",
        # Metrics are off unless an address is given.
        f"--prometheus-listen-addr=0.0.0.0:{s.metrics_port}",
        # GOAWAY after this age makes agents re-resolve the headless Service (kiam #425).
        f"--grpc-max-connection-age-duration={s.max_connection_age}",
        f"--grpc-max-connection-idle-duration={s.max_connection_idle}",
        f"--grpc-max-connection-age-grace-duration={s.max_connection_age_grace}",
        *s.extra_args,
    ]


def health_command(s: ServerSettings) -> list[str]:
    """The exec probe: a gRPC health call to this server over loopback, with its own certificate."""
    return [
        "/kiam",
        "health",
        *names.TLS_FLAGS,
        f"--server-address=127.0.0.1:{s.grpc_port}",
        "--gateway-timeout-creation=1s",
        "--timeout=5s",
    ]


def agent_flags(s: AgentSettings, *, server_address: str) -> list[str]:
    """The kiam-agent command line (after `/kiam`)."""
    return [
        "agent",
        "--json-log",
        f"--level={s.log_level}",
        "--iptables",
        # Keeping the rule means pods fail closed while an agent restarts (kiam #253).
        *([] if s.remove_iptables_rule_on_exit else ["--no-iptables-remove"]),
        f"--host-interface={s.host_interface}",
        "--host=$(HOST_IP)",
        f"--port={s.port}",
        f"--server-address={server_address}",
        *names.TLS_FLAGS,
        f"--allow-route-regexp={s.allowed_metadata_routes}",
        f"--prometheus-listen-addr=0.0.0.0:{s.metrics_port}",
        f"--gateway-timeout-creation={s.gateway_timeout_creation}",
        # Keepalive detects a hard-killed server's dead connection (kiam #217, #337).
        f"--grpc-keepalive-time-duration={s.keepalive_time}",
        f"--grpc-keepalive-timeout-duration={s.keepalive_timeout}",
        *s.extra_args,
    ]

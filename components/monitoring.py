"""Prometheus Operator objects for kiam: ServiceMonitors for servers and agents, the Service the
host-networked agents' metrics need, and the PrometheusRule of docs/alerts.md.

Without the operator the program instead annotates the pods (`scrape_annotations`), which the
server and agent components render.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from kiam_eks.components import kubernetes_objects as kube
from kiam_eks.contracts import labels, names, tokens
from kiam_eks.contracts.labels import Role
from kiam_eks.settings.monitoring import MonitoringSettings
from kiam_eks.specs import alert_rules

MONITORING_API = "monitoring.coreos.com/v1"
METRICS_PATH = "/metrics"  # kiam serves its registry here (pkg/prometheus/http.go)
METRICS_PORT_NAME = "metrics"  # the container and Service port name of both components
# Pod labels copied onto every scraped series, sanitised by Prometheus to app_kubernetes_io_name
# and app_kubernetes_io_component: what the alert rules select kiam's own series by.
TARGET_POD_LABELS = ["app.kubernetes.io/name", "app.kubernetes.io/component"]
OBJECT_NAMES: dict[Role, str] = {"server": names.SERVER_NAME, "agent": names.AGENT_NAME}


def scrape_annotations(settings: MonitoringSettings, port: int) -> dict[str, str] | None:
    """The conventional annotations a Prometheus without the operator discovers pods by."""
    if not settings.pod_annotations:
        return None
    return {
        "prometheus.io/scrape": "true",
        "prometheus.io/port": str(port),
        "prometheus.io/path": METRICS_PATH,
    }


def service_monitor_spec(role: Role, settings: MonitoringSettings) -> dict[str, Any]:
    """Scrape the `metrics` port of every pod behind the Services labelled for `role`."""
    return {
        "selector": {"matchLabels": labels.selector_labels(role)},
        "podTargetLabels": TARGET_POD_LABELS,
        "endpoints": [
            {
                "port": METRICS_PORT_NAME,
                "path": METRICS_PATH,
                "interval": f"{settings.scrape_interval_seconds}s",
                # The node a series comes from, for alerts and runbooks: an agent is per node.
                "relabelings": [
                    {
                        "action": "replace",
                        "sourceLabels": ["__meta_kubernetes_pod_node_name"],
                        "targetLabel": "node",
                    }
                ],
            }
        ],
    }


def agent_metrics_service_spec(port: int) -> dict[str, Any]:
    """A Service for the agents' metrics port: a ServiceMonitor finds pods only through one."""
    return {
        # Headless: Prometheus scrapes every agent, there is nothing to balance.
        "clusterIP": "None",
        "selector": labels.selector_labels("agent"),
        "ports": [
            {
                "name": METRICS_PORT_NAME,
                "port": port,
                "targetPort": METRICS_PORT_NAME,
                "protocol": "TCP",
            }
        ],
    }


@dataclass(frozen=True, kw_only=True)
class MonitoringArgs:
    """Inputs of `Monitoring`."""

    settings: MonitoringSettings
    """Monitoring settings (`service_monitors` is true)."""
    namespace: pulumi.Input[str]
    """kiam's namespace: the objects live beside what they watch."""
    agent_metrics_port: int
    """The agents' metrics port on each node."""
    alerts: alert_rules.AlertContext
    """What the alert rules need to know of the stack."""


class Monitoring(pulumi.ComponentResource):
    """ServiceMonitors for servers and agents, the agents' metrics Service, the alert rules."""

    service_monitors: dict[Role, k8s.apiextensions.CustomResource]
    """The ServiceMonitor of each component."""
    agent_metrics_service: kube.Service
    """The headless Service in front of the agents' metrics port."""
    prometheus_rule: k8s.apiextensions.CustomResource | None
    """The alert rules (None with `alerts: false`)."""

    def __init__(
        self, name: str, args: MonitoringArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(tokens.MONITORING, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        s = args.settings

        def metadata(object_name: str, object_labels: dict[str, str]) -> dict[str, Any]:
            # The settings refuse app.kubernetes.io/ keys: extra labels never replace the program's.
            return {
                "name": object_name,
                "namespace": args.namespace,
                "labels": {**object_labels, **s.labels},
            }

        self.agent_metrics_service = kube.Service(
            f"{name}-agent-metrics",
            metadata={
                "name": names.AGENT_METRICS_SERVICE,
                "namespace": args.namespace,
                "labels": labels.object_labels("agent"),
            },
            spec=agent_metrics_service_spec(args.agent_metrics_port),
            opts=child,
        )
        # The servers are scraped through the headless Service the agents dial (it carries the
        # metrics port), the agents through the Service above.
        self.service_monitors = {
            role: k8s.apiextensions.CustomResource(
                f"{name}-{role}",
                api_version=MONITORING_API,
                kind="ServiceMonitor",
                metadata=metadata(OBJECT_NAMES[role], labels.object_labels(role)),
                spec=service_monitor_spec(role, s),
                opts=child,
            )
            for role in ("server", "agent")
        }
        self.prometheus_rule = None
        if s.prometheus_rule:
            self.prometheus_rule = k8s.apiextensions.CustomResource(
                f"{name}-alerts",
                api_version=MONITORING_API,
                kind="PrometheusRule",
                metadata=metadata(names.ALERTS_NAME, labels.install_labels()),
                spec={"groups": alert_rules.alert_groups(args.alerts)},
                opts=child,
            )
        self.register_outputs(
            {
                "service_monitors": self.service_monitors,
                "agent_metrics_service": self.agent_metrics_service,
                "prometheus_rule": self.prometheus_rule,
            }
        )

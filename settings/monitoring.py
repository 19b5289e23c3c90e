"""`kiam:monitoring`: Prometheus scraping of kiam's metrics, and alerts on what stops credentials."""

from __future__ import annotations

from pydantic import Field, model_validator

from kiam_eks.settings.base import Duration, LabelKey, LabelValue, Model, duration_seconds

# Every alert rule that rates a counter looks back this far (specs/alert_rules.py renders it).
RATE_WINDOW_SECONDS = 5 * 60
# Prometheus' own advice: a rate() window should span at least four scrapes, so one missed
# scrape never leaves it with fewer than the two samples rate() needs.
SCRAPES_PER_RATE_WINDOW = 4
# Prometheus' default scrape timeout. Prometheus refuses a configuration whose scrape timeout
# exceeds its scrape interval ("scrape timeout greater than scrape interval").
SCRAPE_TIMEOUT_SECONDS = 10
LONGEST_SCRAPE_INTERVAL_SECONDS = RATE_WINDOW_SECONDS // SCRAPES_PER_RATE_WINDOW
# The label prefix of the labels the program puts on every object (contracts/labels.py).
PROGRAM_LABEL_PREFIX = "app.kubernetes.io/"


class MonitoringSettings(Model):
    """`kiam:monitoring`: scrape kiam's metrics and alert on them (off by default)."""

    enabled: bool = Field(
        default=False,
        description="Have Prometheus scrape kiam's metrics (servers and agents export them on "
        "`metricsPort` either way).",
    )
    prometheus_operator: bool = Field(
        default=True,
        description="The cluster runs the Prometheus Operator: a ServiceMonitor for the servers, "
        "one for the agents (with a headless Service for the host-networked agents' metrics "
        "port) and, with `alerts`, a PrometheusRule. False: the conventional "
        "`prometheus.io/scrape`, `port` and `path` pod annotations instead.",
    )
    labels: dict[LabelKey, LabelValue] = Field(
        default={},
        description="Extra labels on the ServiceMonitors and the PrometheusRule: those the "
        "Prometheus' `serviceMonitorSelector` and `ruleSelector` select by (kube-prometheus-stack: "
        "`release: <its release name>`). Not `app.kubernetes.io/` ones, which the program sets.",
    )
    scrape_interval: Duration = Field(
        default="30s",
        description="How often Prometheus scrapes each server and agent: from 10s (Prometheus' "
        "default scrape timeout may not exceed it) to 75s (the alerts' 5m rate windows need four "
        "scrapes each).",
    )
    alerts: bool = Field(
        default=True,
        description="A PrometheusRule with the alerts of docs/alerts.md (needs "
        "`prometheusOperator`; without the operator, load the rules that "
        "`python -m tools.alert_rules --stack <stack>` prints into Prometheus' `rule_files`).",
    )
    runbook_url: str = Field(
        default="docs/alerts.md",
        min_length=1,
        description="Where the runbook lives; each alert's `runbook_url` annotation is this and "
        "`#<alert name in lower case>` (point it at your copy of docs/alerts.md).",
    )

    @model_validator(mode="after")
    def _check(self) -> MonitoringSettings:
        interval = duration_seconds(self.scrape_interval)
        if interval < SCRAPE_TIMEOUT_SECONDS:
            raise ValueError(
                f"scrapeInterval {self.scrape_interval} is below {SCRAPE_TIMEOUT_SECONDS}s, "
                "Prometheus' default scrape timeout, which Prometheus refuses to let exceed the "
                f"interval: use {SCRAPE_TIMEOUT_SECONDS}s to {LONGEST_SCRAPE_INTERVAL_SECONDS}s"
            )
        if interval > LONGEST_SCRAPE_INTERVAL_SECONDS:
            raise ValueError(
                f"scrapeInterval {self.scrape_interval} is above "
                f"{LONGEST_SCRAPE_INTERVAL_SECONDS}s: the alerts rate counters over "
                f"{RATE_WINDOW_SECONDS // 60}m, a window that must span at least "
                f"{SCRAPES_PER_RATE_WINDOW} scrapes: use {SCRAPE_TIMEOUT_SECONDS}s to "
                f"{LONGEST_SCRAPE_INTERVAL_SECONDS}s"
            )
        if not self.prometheus_operator:
            if self.alerts:
                raise ValueError(
                    "alerts are a PrometheusRule, which needs prometheusOperator: true; without "
                    "the operator set alerts: false and load the rules `python -m "
                    "tools.alert_rules --stack <stack>` prints into Prometheus' rule_files"
                )
            if self.labels:
                raise ValueError(
                    f"labels {', '.join(sorted(self.labels))} are for the Prometheus Operator's "
                    "ServiceMonitors and PrometheusRule, and prometheusOperator is false: "
                    "remove them"
                )
        for key in sorted(self.labels):
            if key.startswith(PROGRAM_LABEL_PREFIX):
                raise ValueError(
                    f"labels {key}: the program sets the {PROGRAM_LABEL_PREFIX} labels of its "
                    "objects itself; select by another label"
                )
        return self

    @property
    def scrape_interval_seconds(self) -> int:
        """The interval in whole seconds, as Prometheus' duration syntax writes it (`30s`)."""
        return duration_seconds(self.scrape_interval)

    @property
    def service_monitors(self) -> bool:
        """Whether the program creates ServiceMonitors (and the agents' metrics Service)."""
        return self.enabled and self.prometheus_operator

    @property
    def pod_annotations(self) -> bool:
        """Whether kiam's pods carry the `prometheus.io/*` scrape annotations."""
        return self.enabled and not self.prometheus_operator

    @property
    def prometheus_rule(self) -> bool:
        """Whether the program creates the PrometheusRule."""
        return self.enabled and self.prometheus_operator and self.alerts

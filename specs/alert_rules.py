"""The alert rules on kiam, as Prometheus rule groups: a pure function of the stack's settings.

The PrometheusRule renders them (components/monitoring.py); `python -m tools.alert_rules` prints
them as a rules file for a Prometheus without the operator; `tests/monitoring/` holds the file for
the default settings, which `promtool test rules` runs against input series. docs/alerts.md is the
runbook: what each alert means, how to confirm it with kubectl, what to do, and why its threshold
and `for:` duration are what they are.

Which series the rules read:

- kiam's own (kiam_*, grpc_*_tls_*, `up`), selected by `namespace` and `app_kubernetes_io_name`
  (and `app_kubernetes_io_component`): the ServiceMonitors copy the pods' labels onto every
  target (`podTargetLabels`) and add `node` (docs/alerts.md says what a hand-written scrape
  configuration must add).
- kube-state-metrics' (kube_deployment_*, kube_node_*, kube_pod_*), with their default labels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from kiam_eks.contracts import names
from kiam_eks.settings.monitoring import RATE_WINDOW_SECONDS
from kiam_eks.settings.stack import StackSettings

# EKS marks Fargate "nodes" with this taint: DaemonSets never run there, and Fargate pods have no
# instance metadata endpoint to intercept.
FARGATE_TAINT = ("eks.amazonaws.com/compute-type", "fargate")


@dataclass(frozen=True, kw_only=True)
class AlertContext:
    """What the rules need to know about one stack."""

    namespace: str
    """kiam's namespace."""
    server_deployment: str
    """Name of the server Deployment (kube-state-metrics' `deployment` label)."""
    agent_daemon_set: str
    """Name of the agent DaemonSet (kube-state-metrics' `created_by_name` of agent pods)."""
    server_taint: tuple[str, str]
    """Key and value of the server nodes' taint: nodes that must have no agent."""
    certificate_warning_hours: int
    """Warn when a certificate expires within this many hours."""
    runbook_url: str
    """Where docs/alerts.md is published."""


def context_of(settings: StackSettings) -> AlertContext:
    """The alert context of a stack."""
    return AlertContext(
        namespace=settings.namespace.name,
        server_deployment=names.SERVER_NAME,
        agent_daemon_set=settings.adoption_state.agent_daemon_set_name,
        server_taint=(settings.node_group.taint.key, settings.node_group.taint.value),
        # A `pulumi up` within earlyRenewalHours of expiry re-issues the leaf certificates; half
        # that window gone without one means nobody ran it, with time left to do so.
        certificate_warning_hours=settings.tls.early_renewal_hours // 2,
        runbook_url=settings.monitoring.runbook_url,
    )


def _alert(
    ctx: AlertContext,
    name: str,
    expr: str,
    *,
    severity: str,
    summary: str,
    description: str,
    for_: str | None,
) -> dict[str, Any]:
    rule: dict[str, Any] = {"alert": name, "expr": expr}
    if for_:
        rule["for"] = for_
    rule["labels"] = {"severity": severity}
    rule["annotations"] = {
        "summary": summary,
        "description": description,
        "runbook_url": f"{ctx.runbook_url}#{name.lower()}",
    }
    return rule


def alert_groups(ctx: AlertContext) -> list[dict[str, Any]]:
    """Every rule group, in the order docs/alerts.md describes them."""
    ns = ctx.namespace
    kiam = f'namespace="{ns}", app_kubernetes_io_name="kiam"'
    window = f"{RATE_WINDOW_SECONDS // 60}m"
    deployment = f'namespace="{ns}", deployment="{ctx.server_deployment}"'
    taint_key, taint_value = ctx.server_taint
    fargate_key, fargate_value = FARGATE_TAINT
    tls = "grpc_(server|client)_tls_certificate"

    servers = [
        _alert(
            ctx,
            "KiamServersDown",
            f"kube_deployment_status_replicas_ready{{{deployment}}} == 0",
            for_="2m",
            severity="critical",
            summary="No kiam server is Ready: no pod can get new credentials.",
            description=f"Deployment {ns}/{ctx.server_deployment} has no Ready pod.",
        ),
        _alert(
            ctx,
            "KiamServersNotAllReady",
            f"kube_deployment_status_replicas_ready{{{deployment}}}\n"
            f"  < kube_deployment_spec_replicas{{{deployment}}}",
            for_="15m",
            severity="warning",
            summary="Fewer kiam servers are Ready than the Deployment asks for.",
            description=f"Deployment {ns}/{ctx.server_deployment} has {{{{ $value }}}} Ready "
            "pods, fewer than its replicas.",
        ),
        _alert(
            ctx,
            "KiamStsIssuingErrors",
            f"sum by (namespace) (rate(kiam_sts_issuing_errors_total{{{kiam}}}[{window}])) > 0",
            for_="10m",
            severity="warning",
            summary="kiam servers fail to get credentials from STS.",
            description=f"kiam servers in namespace {ns} have had STS AssumeRole errors for 10 minutes.",
        ),
        _alert(
            ctx,
            "KiamSlowAssumeRole",
            "histogram_quantile(0.9,\n"
            f"  sum by (namespace, le) (rate(kiam_sts_assumerole_timing_seconds_bucket{{{kiam}}}[{window}]))\n"
            ") > 1",
            for_="15m",
            severity="warning",
            summary="STS AssumeRole calls by kiam servers are slow.",
            description=f"The slowest tenth of AssumeRole calls by kiam servers in namespace {ns} took "
            "more than 1s for 15 minutes.",
        ),
        _alert(
            ctx,
            "KiamServerDroppedPods",
            f"sum by (namespace, pod) (increase(kiam_k8s_dropped_pods_total{{{kiam}}}[10m])) > 0",
            for_=None,
            severity="warning",
            summary="A kiam server dropped pod announcements: its prefetch buffer was full.",
            description="kiam server {{ $labels.pod }} dropped pods from its prefetch buffer in "
            "the last 10 minutes; their credentials were not fetched ahead of their requests.",
        ),
    ]
    agents = [
        _alert(
            ctx,
            "KiamAgentMissingOnNode",
            # Ready nodes, less kiam's own server nodes and Fargate, less those running a Ready
            # agent pod: what is left is a node whose pods get no credentials, or the node's own.
            f'max by (node) (kube_node_status_condition{{condition="Ready", status="true"}} == 1)\n'
            f'unless on (node) max by (node) (kube_node_spec_taint{{key="{taint_key}", value="{taint_value}"}})\n'
            f'unless on (node) max by (node) (kube_node_spec_taint{{key="{fargate_key}", value="{fargate_value}"}})\n'
            "unless on (node) max by (node) (\n"
            f'  kube_pod_info{{namespace="{ns}", created_by_kind="DaemonSet", created_by_name="{ctx.agent_daemon_set}"}}\n'
            f'  and on (namespace, pod) (kube_pod_status_ready{{namespace="{ns}", condition="true"}} == 1)\n'
            ")",
            for_="10m",
            severity="critical",
            summary="A workload node has no Ready kiam agent.",
            description="Node {{ $labels.node }} has had no Ready kiam agent for 10 minutes: "
            "its pods get no role credentials, or the node's own.",
        ),
        _alert(
            ctx,
            "KiamCredentialFetchErrors",
            f"sum by (namespace) (rate(kiam_metadata_credential_fetch_errors_total{{{kiam}}}[{window}])) > 0",
            for_="15m",
            severity="warning",
            summary="kiam agents fail to hand out credentials.",
            description=f"kiam agents in namespace {ns} have answered credential requests with errors "
            "for 15 minutes.",
        ),
        _alert(
            ctx,
            "KiamRoleLookupErrors",
            f"sum by (namespace) (rate(kiam_metadata_find_role_errors_total{{{kiam}}}[{window}])) > 0",
            for_="15m",
            severity="warning",
            summary="kiam agents fail to find pods' roles.",
            description=f"kiam agents in namespace {ns} have failed to ask a server for pods' roles for "
            "15 minutes.",
        ),
    ]
    certificates = [
        _alert(
            ctx,
            "KiamCertificateExpiresSoon",
            f'(min by (namespace, pod) ({{__name__=~"{tls}_expiry_seconds", {kiam}}}) - time()) / 3600\n'
            f"  < {ctx.certificate_warning_hours}",
            for_="1h",
            severity="warning",
            summary="A certificate kiam uses expires soon.",
            description="A certificate kiam pod {{ $labels.pod }} uses (its own or the CA) "
            f"expires within {ctx.certificate_warning_hours} hours.",
        ),
        _alert(
            ctx,
            "KiamCertificateNotReloaded",
            f'max by (namespace, pod) ({{__name__=~"{tls}_(update|verify)_error", {kiam}}}) == 1',
            for_="5m",
            severity="warning",
            summary="A kiam pod could not use its renewed certificate.",
            description="kiam pod {{ $labels.pod }} read a certificate it could not load or "
            "verify, and still uses the previous one.",
        ),
    ]
    scraping = [
        _alert(
            ctx,
            "KiamMetricsMissing",
            # absent() of a comparison carries no labels: label_replace names the side missing.
            "label_replace(\n"
            f'  absent(up{{{kiam}, app_kubernetes_io_component="server"}} == 1),\n'
            '  "app_kubernetes_io_component", "server", "", ""\n'
            ")\nor label_replace(\n"
            f'  absent(up{{{kiam}, app_kubernetes_io_component="agent"}} == 1),\n'
            '  "app_kubernetes_io_component", "agent", "", ""\n'
            ")",
            for_="15m",
            severity="warning",
            summary="Prometheus scrapes no kiam pod of one kind: kiam's alerts cannot fire.",
            description=f"No kiam {{{{ $labels.app_kubernetes_io_component }}}} in namespace {ns} has been "
            "scraped for 15 minutes.",
        ),
    ]
    return [
        {"name": "kiam-servers", "rules": servers},
        {"name": "kiam-agents", "rules": agents},
        {"name": "kiam-certificates", "rules": certificates},
        {"name": "kiam-scraping", "rules": scraping},
    ]


def alert_names(ctx: AlertContext) -> list[str]:
    """Every alert, in order."""
    return [rule["alert"] for group in alert_groups(ctx) for rule in group["rules"]]


class _LiteralBlocks(yaml.SafeDumper):
    """Multi-line expressions as `|` blocks, as people write rules files."""


def _string(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_LiteralBlocks.add_representer(str, _string)


def rules_file(ctx: AlertContext) -> str:
    """The rules as a Prometheus rules file (what `rule_files` and promtool load)."""
    header = (
        "# Generated by `python -m tools.alert_rules` from specs/alert_rules.py: do not edit.\n"
    )
    body = yaml.dump(
        {"groups": alert_groups(ctx)}, Dumper=_LiteralBlocks, sort_keys=False, width=4096
    )
    return header + body

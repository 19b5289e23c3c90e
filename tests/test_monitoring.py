"""`kiam:monitoring`: what each mode renders, the objects against the Prometheus Operator's CRD
schemas, and the alert rules against the file the promtool tests load and the runbook."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from kiam_eks.contracts import labels, tokens
from kiam_eks.settings.agent import READINESS_PROBE_TIMEOUT_SECONDS
from kiam_eks.settings.loader import settings_from_values
from kiam_eks.specs.alert_rules import alert_groups, alert_names, context_of, rules_file
from tests.conftest import base_config, pod_spec, run_program, types_and_names
from tools import alert_rules
from tools.mock_engine import PROJECT_DIR, Recording
from tools.render import render
from tools.validate import Finding, custom_resource_findings, kubernetes_findings

SERVICE_MONITOR = "kubernetes:monitoring.coreos.com/v1:ServiceMonitor"
PROMETHEUS_RULE = "kubernetes:monitoring.coreos.com/v1:PrometheusRule"
SERVICE = "kubernetes:core/v1:Service"
MONITORING = tokens.MONITORING
RUNBOOK = PROJECT_DIR / "docs" / "alerts.md"
PROMTOOL_TESTS = PROJECT_DIR / "tests" / "monitoring" / "kiam.rules.test.yaml"
OPERATOR = {"enabled": True, "labels": {"release": "prometheus"}}


@pytest.fixture(scope="module")
def operator_run() -> Recording:
    return run_program(base_config(monitoring=OPERATOR))


def spec_of(recording: Recording, type_: str, name: str) -> Any:
    return recording.one(type_, name).inputs["spec"]


def test_monitoring_is_off_by_default(base_run: Recording) -> None:
    assert not [r for r in base_run.registrations if "monitoring" in r.type.lower()]
    assert types_and_names(base_run.by_type(SERVICE)) == {(SERVICE, "kiam-server")}
    for workload in ("kubernetes:apps/v1:Deployment", "kubernetes:apps/v1:DaemonSet"):
        template = base_run.by_type(workload)[0].inputs["spec"]["template"]
        assert "annotations" not in template["metadata"]


def test_with_the_operator_exactly_these_objects_are_added(
    base_run: Recording, operator_run: Recording
) -> None:
    added = types_and_names(operator_run.registrations) - types_and_names(base_run.registrations)
    assert added == {
        (MONITORING, "kiam-monitoring"),
        (SERVICE, "kiam-monitoring-agent-metrics"),
        (SERVICE_MONITOR, "kiam-monitoring-server"),
        (SERVICE_MONITOR, "kiam-monitoring-agent"),
        (PROMETHEUS_RULE, "kiam-monitoring-alerts"),
    }
    component = operator_run.one(MONITORING)
    assert {r.name for r in operator_run.children_of(component.urn)} == {
        "kiam-monitoring-agent-metrics",
        "kiam-monitoring-server",
        "kiam-monitoring-agent",
        "kiam-monitoring-alerts",
    }
    assert operator_run.by_urn(component.parent).type == tokens.KIAM


@pytest.mark.parametrize("role", ["server", "agent"])
def test_each_service_monitor_scrapes_its_components_metrics_port(
    operator_run: Recording, role: str
) -> None:
    monitor = operator_run.one(SERVICE_MONITOR, f"kiam-monitoring-{role}")
    assert monitor.inputs["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor.inputs["metadata"] == {
        "name": f"kiam-{role}",
        "namespace": "kiam",
        "labels": {**labels.object_labels(role), "release": "prometheus"},
    }
    assert monitor.inputs["spec"] == {
        "selector": {"matchLabels": labels.selector_labels(role)},
        "podTargetLabels": ["app.kubernetes.io/name", "app.kubernetes.io/component"],
        "endpoints": [
            {
                "port": "metrics",
                "path": "/metrics",
                "interval": "30s",
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


@pytest.mark.parametrize(
    ("role", "workload"),
    [("server", "kubernetes:apps/v1:Deployment"), ("agent", "kubernetes:apps/v1:DaemonSet")],
)
def test_each_service_monitor_selects_one_service_whose_pods_have_the_metrics_port(
    operator_run: Recording, role: str, workload: str
) -> None:
    selector = spec_of(operator_run, SERVICE_MONITOR, f"kiam-monitoring-{role}")["selector"]
    chosen = [
        s
        for s in operator_run.by_type(SERVICE)
        if all(
            s.inputs["metadata"]["labels"].get(k) == v for k, v in selector["matchLabels"].items()
        )
    ]
    assert len(chosen) == 1
    service = chosen[0].inputs
    pods = operator_run.by_type(workload)[0]
    pod_labels = pods.inputs["spec"]["template"]["metadata"]["labels"]
    assert all(pod_labels.get(k) == v for k, v in service["spec"]["selector"].items())
    metrics = [p for p in service["spec"]["ports"] if p["name"] == "metrics"]
    container_ports = pod_spec(pods)["containers"][0]["ports"]
    assert metrics == [
        {
            "name": "metrics",
            "port": next(p["containerPort"] for p in container_ports if p["name"] == "metrics"),
            "targetPort": "metrics",
            "protocol": "TCP",
        }
    ]


def test_the_agents_metrics_service_is_headless(operator_run: Recording) -> None:
    service = operator_run.one(SERVICE, "kiam-monitoring-agent-metrics").inputs
    assert service["metadata"] == {
        "name": "kiam-agent-metrics",
        "namespace": "kiam",
        "labels": labels.object_labels("agent"),
    }
    assert service["spec"]["clusterIP"] == "None"


def test_the_prometheus_rule_holds_the_rules_of_the_stack(operator_run: Recording) -> None:
    rule = operator_run.one(PROMETHEUS_RULE).inputs
    settings = settings_from_values(
        {k.removeprefix("kiam:"): v for k, v in base_config(monitoring=OPERATOR).items()}, "t"
    )
    assert rule["metadata"] == {
        "name": "kiam",
        "namespace": "kiam",
        "labels": {**labels.install_labels(), "release": "prometheus"},
    }
    assert rule["spec"] == {"groups": alert_groups(context_of(settings))}


def test_alerts_false_leaves_the_scraping(operator_run: Recording) -> None:
    recording = run_program(base_config(monitoring={**OPERATOR, "alerts": False}))
    assert recording.by_type(PROMETHEUS_RULE) == []
    assert len(recording.by_type(SERVICE_MONITOR)) == 2


def test_without_the_operator_the_pods_carry_the_scrape_annotations() -> None:
    recording = run_program(
        base_config(
            monitoring={"enabled": True, "prometheusOperator": False, "alerts": False},
            agent={"metricsPort": 9721},
        )
    )
    assert recording.by_type(SERVICE_MONITOR) == recording.by_type(PROMETHEUS_RULE) == []
    for workload, port in (
        ("kubernetes:apps/v1:Deployment", "9620"),
        ("kubernetes:apps/v1:DaemonSet", "9721"),
    ):
        template = recording.by_type(workload)[0].inputs["spec"]["template"]
        assert template["metadata"]["annotations"] == {
            "prometheus.io/scrape": "true",
            "prometheus.io/port": port,
            "prometheus.io/path": "/metrics",
        }


def test_the_scrape_interval_is_rendered_in_seconds() -> None:
    recording = run_program(base_config(monitoring={**OPERATOR, "scrapeInterval": "1m15s"}))
    endpoints = spec_of(recording, SERVICE_MONITOR, "kiam-monitoring-agent")["endpoints"]
    assert endpoints[0]["interval"] == "75s"


def test_every_rendered_object_is_valid_against_the_operators_crd_schemas(
    operator_run: Recording,
) -> None:
    manifests = render(operator_run).manifests
    custom = {n: m for n, m in manifests.items() if m["apiVersion"].startswith("monitoring.")}
    assert sorted(custom) == [
        "prometheusrule-kiam-kiam.yaml",
        "servicemonitor-kiam-kiam-agent.yaml",
        "servicemonitor-kiam-kiam-server.yaml",
    ]
    assert kubernetes_findings(manifests, "1.33") == []


def test_the_crd_validator_refuses_a_field_the_api_server_would_prune(
    operator_run: Recording,
) -> None:
    monitor = render(operator_run).manifests["servicemonitor-kiam-kiam-agent.yaml"]
    monitor["spec"]["endpoints"][0]["intervall"] = "30s"
    monitor["spec"]["podTargetLabels"] = "app"
    assert custom_resource_findings("m.yaml", monitor) == [
        Finding(
            "m.yaml",
            "CRD schema monitoring.coreos.com_servicemonitors.yaml strict",
            "spec.endpoints.0: Additional properties are not allowed ('intervall' was unexpected)",
        ),
        Finding(
            "m.yaml",
            "CRD schema monitoring.coreos.com_servicemonitors.yaml strict",
            "spec.podTargetLabels: 'app' is not of type 'array'",
        ),
    ]


def test_the_vendored_crds_are_the_operators_v0_95_2() -> None:
    crds = sorted((PROJECT_DIR / "tools" / "crds").glob("*.yaml"))
    assert [p.name for p in crds] == [
        "monitoring.coreos.com_prometheusrules.yaml",
        "monitoring.coreos.com_servicemonitors.yaml",
    ]
    for path in crds:
        crd = yaml.safe_load(path.read_text())
        assert crd["kind"] == "CustomResourceDefinition"
        assert [v["name"] for v in crd["spec"]["versions"]] == ["v1"]
    assert "pkg/apis/monitoring` **v0.95.2**" in (PROJECT_DIR / "tools/crds/README.md").read_text()


def test_the_rules_file_promtool_tests_is_what_the_program_renders() -> None:
    """One source: tests/monitoring/kiam.rules.yaml is the dev stack's rendering."""
    settings = settings_from_values(
        {
            k.removeprefix("kiam:"): v
            for k, v in yaml.safe_load(
                (PROJECT_DIR / "stacks" / f"Pulumi.{alert_rules.TESTED_STACK}.yaml").read_text()
            )["config"].items()
        },
        "dev",
    )
    assert alert_rules.TESTED_RULES.read_text() == rules_file(context_of(settings))
    assert yaml.safe_load(alert_rules.TESTED_RULES.read_text()) == {
        "groups": alert_groups(context_of(settings))
    }


def test_the_alert_rules_command_prints_and_writes_the_rules(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert alert_rules.main(["--stack", "dev"]) == 0
    printed = capsys.readouterr().out
    assert printed == alert_rules.TESTED_RULES.read_text()
    assert alert_rules.main(["--stack", "dev", "--out", str(tmp_path / "r.yaml")]) == 0
    assert (tmp_path / "r.yaml").read_text() == printed
    assert alert_rules.main(["--config-file", str(tmp_path / "missing.yaml")]) == 2


def _runbook_sections() -> dict[str, str]:
    text = RUNBOOK.read_text()
    parts = re.split(r"^### ", text, flags=re.M)[1:]
    return {p.split("\n", 1)[0].strip(): p for p in parts}


def test_every_alert_has_a_runbook_entry_saying_what_it_means_how_to_confirm_and_what_to_do() -> (
    None
):
    settings = settings_from_values(
        {k.removeprefix("kiam:"): v for k, v in base_config().items()}, "t"
    )
    names = alert_names(context_of(settings))
    sections = _runbook_sections()
    assert sorted(sections) == sorted(names)
    for name in names:
        assert all(f"**{part}**" in sections[name] for part in ("Means", "Confirm", "Do")), name
        assert f"| [{name}](#{name.lower()}) |" in RUNBOOK.read_text()


def test_every_alert_has_promtool_cases_that_fire_and_cases_that_do_not() -> None:
    cases = yaml.safe_load(PROMTOOL_TESTS.read_text())["tests"]
    checks = [c for case in cases for c in case["alert_rule_test"]]
    settings = settings_from_values(
        {k.removeprefix("kiam:"): v for k, v in base_config().items()}, "t"
    )
    for name in alert_names(context_of(settings)):
        mine = [c for c in checks if c["alertname"] == name]
        assert any(c["exp_alerts"] for c in mine), f"{name} never fires in a promtool test"
        assert any(not c["exp_alerts"] for c in mine), f"{name} has no case that must not fire"
    assert yaml.safe_load(PROMTOOL_TESTS.read_text())["rule_files"] == ["kiam.rules.yaml"]


def test_every_runbook_url_points_at_the_configured_runbook() -> None:
    settings = settings_from_values(
        {
            k.removeprefix("kiam:"): v
            for k, v in base_config(
                monitoring={"runbookUrl": "https://git.example.com/platform/kiam/docs/alerts.md"}
            ).items()
        },
        "t",
    )
    urls = [
        rule["annotations"]["runbook_url"]
        for group in alert_groups(context_of(settings))
        for rule in group["rules"]
    ]
    assert urls[0] == "https://git.example.com/platform/kiam/docs/alerts.md#kiamserversdown"
    assert all(u.startswith("https://git.example.com/platform/kiam/docs/alerts.md#") for u in urls)


def test_the_rules_follow_the_stacks_namespace_taint_and_renewal_window() -> None:
    settings = settings_from_values(
        {
            k.removeprefix("kiam:"): v
            for k, v in base_config(
                namespace={"name": "iam"},
                node_group={"taint": {"key": "role", "value": "kiam", "effect": "NO_EXECUTE"}},
                tls={"earlyRenewalHours": 100},
            ).items()
        },
        "t",
    )
    text = rules_file(context_of(settings))
    assert 'namespace="kiam"' not in text
    assert 'kube_node_spec_taint{key="role", value="kiam"}' in text
    assert "  < 50\n" in text


def test_the_agent_readiness_probe_timeout_is_the_one_the_failover_rule_protects(
    base_run: Recording,
) -> None:
    agent = pod_spec(base_run.by_type("kubernetes:apps/v1:DaemonSet")[0])["containers"][0]
    assert agent["readinessProbe"]["timeoutSeconds"] == READINESS_PROBE_TIMEOUT_SECONDS == 5

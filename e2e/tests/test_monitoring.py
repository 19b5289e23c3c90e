"""Monitoring on the real engine: the Prometheus Operator's CRDs (vendored in tools/crds) installed
in the control plane and the dev stack with `kiam:monitoring` on. The ServiceMonitors, the agents'
metrics Service and the PrometheusRule exist exactly as rendered (the API server pruned nothing
and applied every schema rule), a second `up` changes nothing, and the rules the cluster holds are
the file that promtool checks and unit-tests (tests/monitoring/)."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from e2e.harness.environment import Environment
from e2e.harness.pulumi import PulumiStack
from e2e.harness.toolchain import REPO
from e2e.tests.conftest import deploy, example_config, with_changes
from kiam_eks.components.monitoring import agent_metrics_service_spec, service_monitor_spec
from kiam_eks.contracts import labels, names
from kiam_eks.contracts.labels import Role
from kiam_eks.settings.loader import settings_from_values
from kiam_eks.settings.stack import StackSettings
from kiam_eks.specs.alert_rules import alert_groups, context_of
from tools.alert_rules import TESTED_RULES

CRD_DIR = REPO / "tools" / "crds"
PROMTOOL_TESTS = REPO / "tests" / "monitoring" / "kiam.rules.test.yaml"
STACK = "monitored"
EXTRA_LABELS = {"release": "prometheus"}
MONITORING_API = "/apis/monitoring.coreos.com/v1/namespaces"


def settings_of(config: dict[str, Any]) -> StackSettings:
    return settings_from_values({k.removeprefix("kiam:"): v for k, v in config.items()}, STACK)


@pytest.fixture(scope="module")
def monitored(env: Environment) -> Iterator[tuple[PulumiStack, StackSettings]]:
    crds = [yaml.safe_load(p.read_text()) for p in sorted(CRD_DIR.glob("*.yaml"))]
    env.kube.apply(crds)
    for crd in crds:
        env.kube.kubectl(
            "wait", "--for=condition=Established", "--timeout=60s", f"crd/{crd['metadata']['name']}"
        )
    config = with_changes(
        example_config("dev"), monitoring={"enabled": True, "labels": EXTRA_LABELS}
    )
    stack, _ = deploy(env, STACK, config)
    stack.up()
    yield stack, settings_of(config)
    stack.destroy()
    stack.remove()


def stored(env: Environment, path: str) -> dict[str, Any]:
    obj: dict[str, Any] = env.kube.get(path)
    return obj


@pytest.mark.parametrize("role", ["server", "agent"])
def test_each_service_monitor_is_stored_as_rendered(
    env: Environment, monitored: tuple[PulumiStack, StackSettings], role: Role
) -> None:
    _, settings = monitored
    ns = settings.namespace.name
    name = {"server": names.SERVER_NAME, "agent": names.AGENT_NAME}[role]
    monitor = stored(env, f"{MONITORING_API}/{ns}/servicemonitors/{name}")
    assert monitor["spec"] == service_monitor_spec(role, settings.monitoring)
    assert monitor["metadata"]["labels"] == {**labels.object_labels(role), **EXTRA_LABELS}


def test_the_agents_metrics_service_selects_every_agent(
    env: Environment, monitored: tuple[PulumiStack, StackSettings]
) -> None:
    _, settings = monitored
    ns = settings.namespace.name
    service = stored(env, f"/api/v1/namespaces/{ns}/services/{names.AGENT_METRICS_SERVICE}")
    expected = agent_metrics_service_spec(settings.agent.metrics_port)
    assert {k: service["spec"][k] for k in expected} == expected

    # The endpoints Prometheus would scrape: one per agent pod, on its node's address. The
    # EndpointSlice controller follows the pods asynchronously, so wait (generously) for it to
    # catch up, then compare.
    def targets_and_agents() -> tuple[list[str], list[str]]:
        slices = env.kube.items(
            f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices"
            f"?labelSelector=kubernetes.io/service-name={names.AGENT_METRICS_SERVICE}"
        )
        targets = sorted(
            e["targetRef"]["name"]
            for s in slices
            for e in s.get("endpoints") or []
            if e.get("targetRef")
        )
        return targets, sorted(p["metadata"]["name"] for p in env.pods(ns, "agent"))

    deadline = time.monotonic() + 120
    targets, agents = targets_and_agents()
    while targets != agents and time.monotonic() < deadline:
        time.sleep(0.5)
        targets, agents = targets_and_agents()
    assert targets == agents
    assert len(targets) > 0


def test_the_prometheus_rule_holds_the_rules_promtool_tests(
    env: Environment, monitored: tuple[PulumiStack, StackSettings], tmp_path: Path, bin_dir: Path
) -> None:
    _, settings = monitored
    rule = stored(env, f"{MONITORING_API}/{settings.namespace.name}/prometheusrules/kiam")
    assert rule["spec"] == {"groups": alert_groups(context_of(settings))}
    assert rule["spec"] == yaml.safe_load(TESTED_RULES.read_text())
    # What the cluster holds, checked by Prometheus' own rule parser.
    from_cluster = tmp_path / "from-cluster.rules.yaml"
    from_cluster.write_text(yaml.safe_dump(rule["spec"], sort_keys=False))
    checked = promtool(bin_dir, "check", "rules", str(from_cluster))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 11 rules found" in checked.stdout


def test_a_second_up_changes_nothing(monitored: tuple[PulumiStack, StackSettings]) -> None:
    stack, _ = monitored
    result = stack.up("--expect-no-changes")
    assert "unchanged" in result.output


def promtool(bin_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(bin_dir / "promtool"), *args], capture_output=True, text=True, timeout=120
    )


def test_promtool_check_and_unit_tests_pass(bin_dir: Path) -> None:
    checked = promtool(bin_dir, "check", "rules", str(TESTED_RULES))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = promtool(bin_dir, "test", "rules", str(PROMTOOL_TESTS))
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "SUCCESS" in tested.stdout


def test_the_promtool_tests_fail_when_a_rule_changes(bin_dir: Path, tmp_path: Path) -> None:
    """The unit tests bite: the same tests against a rule with a shorter `for:` fail."""
    shutil.copy(PROMTOOL_TESTS, tmp_path / PROMTOOL_TESTS.name)
    rules = TESTED_RULES.read_text()
    # The first 15-minute `for:` is KiamServersNotAllReady's (the servers group comes first).
    changed = rules.replace("for: 15m\n", "for: 5m\n", 1)
    assert changed != rules
    (tmp_path / TESTED_RULES.name).write_text(changed)
    tested = promtool(bin_dir, "test", "rules", str(tmp_path / PROMTOOL_TESTS.name))
    assert tested.returncode == 1
    assert "alertname: KiamServersNotAllReady" in tested.stdout + tested.stderr

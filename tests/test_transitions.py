"""Changes, not only stacks: every setting changed from each example stack and migration phase is
classified as the transitions table says, refused changes register nothing, sequenced ones take
their steps in order, and random pairs of valid stacks are either refused or keep guarantee 16."""

from __future__ import annotations

import asyncio
import copy
import gc
import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kiam_eks.contracts import names, tokens
from kiam_eks.contracts.labels import PATCH_FORCE_ANNOTATION, PREVIOUS_NAMES_ANNOTATION
from kiam_eks.invariants import check_all
from kiam_eks.invariants.expected import Expected
from kiam_eks.invariants.model import Violation
from kiam_eks.invariants.recorded import resources_from_recording
from kiam_eks.settings.applications import ServedBy
from kiam_eks.settings.loader import read_stack_file, settings_from_values
from kiam_eks.settings.stack import StackSettings
from kiam_eks.transitions.installed import Installed, LastUpdate, installed_by, read_installed
from kiam_eks.transitions.judge import judge
from kiam_eks.transitions.judges import KEEP_RULE, served_by_steps
from kiam_eks.transitions.table import TABLE, row_of
from kiam_eks.transitions.verdicts import Kind, RefusedChangeError, Verdict
from tests.conftest import example_config, pod_spec
from tests.test_properties import valid_configs
from tools.config_reference import setting_keys
from tools.mock_engine import PROJECT_DIR, Recording, run_main
from tools.transition_reference import REFERENCE, anchor, render

MIGRATION = PROJECT_DIR / "docs" / "migration"
SOURCE = "stacks/Pulumi.test.yaml"


def migration_config(phase: str) -> dict[str, Any]:
    [path] = MIGRATION.glob(f"Pulumi.migrate-*-{phase}.yaml")
    return read_stack_file(path)


BASES: dict[str, Callable[[], dict[str, Any]]] = {
    "dev": lambda: example_config("dev"),
    "production": lambda: example_config("production"),
    "servers": lambda: migration_config("servers"),
    "takeover": lambda: migration_config("takeover"),
    "complete": lambda: migration_config("complete"),
}
MIGRATION_PHASES = ("servers", "takeover", "complete")


def settings_of(config: dict[str, Any]) -> StackSettings:
    values = {k.removeprefix("kiam:"): v for k, v in config.items() if k.startswith("kiam:")}
    return settings_from_values(values, SOURCE)


def section(config: dict[str, Any], key: str) -> dict[str, Any]:
    value: dict[str, Any] = config.setdefault(f"kiam:{key}", {})
    return value


# --- one change of every setting -----------------------------------------------------------------

Change = Callable[[dict[str, Any], str], bool]
"""Change one setting of a config taken from base `name`; False where it does not apply there."""


def setting(section_key: str, key: str, value: Any) -> Change:
    def change(config: dict[str, Any], base: str) -> bool:
        section(config, section_key)[key] = value(config) if callable(value) else value
        return True

    return change


def node_group(key: str, value: Callable[[dict[str, Any]], Any]) -> Change:
    return setting("nodeGroup", key, value)


def _resources(config: dict[str, Any]) -> dict[str, str]:
    return {"cpuRequest": "30m", "memoryRequest": "64Mi", "memoryLimit": "256Mi"}


def _arm(config: dict[str, Any]) -> bool:
    return "ARM" in str(config.get("kiam:nodeGroup", {}).get("amiType", ""))


def _subnet_ids(config: dict[str, Any]) -> list[dict[str, str]]:
    subnets = copy.deepcopy(config["kiam:nodeGroup"]["subnets"])
    subnets[0]["id"] = "subnet-0ffffffffffff0009"
    return list(subnets)


def _zones(config: dict[str, Any]) -> list[dict[str, str]]:
    subnets = copy.deepcopy(config["kiam:nodeGroup"]["subnets"])
    region = config["kiam:cluster"]["region"]
    taken = {s.get("zone") for s in subnets}
    subnets[-1]["zone"] = next(f"{region}{z}" for z in "abcdef" if f"{region}{z}" not in taken)
    return list(subnets)


def _move_region(config: dict[str, Any]) -> bool:
    old = config["kiam:cluster"]["region"]
    config["kiam:cluster"]["region"] = "eu-central-1"
    for subnet in config["kiam:nodeGroup"]["subnets"]:
        subnet["zone"] = subnet["zone"].replace(old, "eu-central-1")
    return True


def adopted(change: Change) -> Change:
    """A change of `kiam:adoption`, which only a migration phase has."""

    def only_adopted(config: dict[str, Any], base: str) -> bool:
        return base in MIGRATION_PHASES and change(config, base)

    return only_adopted


def phase(to: str) -> Change:
    def change(config: dict[str, Any], base: str) -> bool:
        if base not in MIGRATION_PHASES or base == to:
            return False
        section(config, "adoption")["phase"] = to
        return True

    return change


def first_application(change: Callable[[dict[str, Any], dict[str, Any]], None]) -> Change:
    """A change of an application the base already has, or of one added to it first (then the
    previous stack has it too: see `previous_config`)."""

    def apply(config: dict[str, Any], base: str) -> bool:
        apps = config["kiam:applications"]
        change(apps[sorted(apps)[0]], config)
        return True

    return apply


def _to_existing_role(app: dict[str, Any], config: dict[str, Any]) -> None:
    path = app.pop("path", None) or section(config, "iam").get("applicationRolePath", "/kiam-apps/")
    for owned in ("managedPolicyArns", "inlinePolicies"):
        app.pop(owned, None)
    account = config["kiam:cluster"]["accountId"]
    app["roleArn"] = f"arn:aws:iam::{account}:role{path}{app.pop('roleName')}"


def _tolerations_fewer(config: dict[str, Any], base: str) -> bool:
    agent = section(config, "agent")
    if not agent.get("tolerations"):
        return False
    agent["tolerations"] = []
    return True


def _existing_permitted(config: dict[str, Any], base: str) -> bool:
    config["kiam:existingPermitted"] = {"legacy-ns": "^arn:aws:iam::.*:role/legacy-.*$"}
    return True


def _applications_file(config: dict[str, Any], base: str) -> bool:
    # Where applications are listed; the loader joins the file's to kiam:applications first
    # (tests/test_applications_file.py), so the judge sees the same applications either way.
    config["kiam:applicationsFile"] = "applications/more.yaml"
    return True


def _kubeconfig(config: dict[str, Any], base: str) -> bool:
    config["kiam:kubeconfig"] = "apiVersion: v1\nkind: Config\n"
    return True


# Every key path of the configuration reference, one change each, and what it is on each base
# (a Kind for every base, or a dict by base; a base a change does not apply to is skipped).
CHANGES: dict[str, tuple[Change, Kind | dict[str, Kind]]] = {
    "kiam:cluster.name": (setting("cluster", "name", "another"), Kind.REFUSED),
    "kiam:cluster.accountId": (setting("cluster", "accountId", "999988887777"), Kind.REFUSED),
    "kiam:cluster.region": (lambda c, b: _move_region(c), Kind.REFUSED),
    "kiam:cluster.kubernetesVersion": (setting("cluster", "kubernetesVersion", "1.34"), Kind.SAFE),
    "kiam:cluster.clusterDomain": (
        setting("cluster", "clusterDomain", "example.internal"),
        Kind.SEQUENCED,
    ),
    "kiam:cluster.kubernetesAuth": (setting("cluster", "kubernetesAuth", "token"), Kind.SAFE),
    "kiam:nodeGroup.subnets": (node_group("subnets", _subnet_ids), Kind.SAFE),
    "kiam:nodeGroup.subnets[].id": (node_group("subnets", _subnet_ids), Kind.SAFE),
    "kiam:nodeGroup.subnets[].zone": (node_group("subnets", _zones), Kind.SAFE),
    "kiam:nodeGroup.instanceTypes": (
        node_group("instanceTypes", lambda c: ["c7g.large"] if _arm(c) else ["m6i.large"]),
        Kind.SAFE,
    ),
    "kiam:nodeGroup.capacityType": (node_group("capacityType", "SPOT"), Kind.SAFE),
    "kiam:nodeGroup.amiType": (
        node_group(
            "amiType", lambda c: "BOTTLEROCKET_ARM_64" if _arm(c) else "BOTTLEROCKET_x86_64"
        ),
        Kind.SAFE,
    ),
    "kiam:nodeGroup.minSize": (
        lambda c, b: section(c, "nodeGroup").update(minSize=4, desiredSize=4, maxSize=6) is None,
        Kind.SAFE,
    ),
    "kiam:nodeGroup.desiredSize": (
        lambda c, b: section(c, "nodeGroup").update(desiredSize=4, maxSize=6) is None,
        Kind.SAFE,
    ),
    "kiam:nodeGroup.maxSize": (node_group("maxSize", 9), Kind.SAFE),
    "kiam:nodeGroup.diskSizeGiB": (node_group("diskSizeGiB", 64), Kind.SAFE),
    "kiam:nodeGroup.labels": (node_group("labels", {"owner": "platform"}), Kind.SAFE),
    "kiam:nodeGroup.taint.key": (node_group("taint", {"key": "kiam-only"}), Kind.SAFE),
    "kiam:nodeGroup.taint.value": (node_group("taint", {"value": "servers"}), Kind.SAFE),
    "kiam:nodeGroup.taint.effect": (node_group("taint", {"effect": "NO_EXECUTE"}), Kind.SAFE),
    "kiam:nodeGroup.maxUnavailable": (node_group("maxUnavailable", 2), Kind.SAFE),
    "kiam:server.image": (setting("server", "image", "quay.io/uswitch/kiam:v4.2.1"), Kind.SAFE),
    "kiam:server.replicas": (
        lambda c, b: section(c, "server").update(replicas=2) is None,
        Kind.SAFE,
    ),
    "kiam:server.serviceName": (setting("server", "serviceName", "kiam-grpc"), Kind.SEQUENCED),
    "kiam:server.grpcPort": (setting("server", "grpcPort", 9443), Kind.REFUSED),
    "kiam:server.metricsPort": (setting("server", "metricsPort", 9720), Kind.SAFE),
    "kiam:server.resources.cpuRequest": (setting("server", "resources", _resources), Kind.SAFE),
    "kiam:server.resources.memoryRequest": (setting("server", "resources", _resources), Kind.SAFE),
    "kiam:server.resources.memoryLimit": (setting("server", "resources", _resources), Kind.SAFE),
    "kiam:server.sessionDuration": (
        lambda c, b: (
            section(c, "server").update(sessionDuration="45m", sessionRefresh="10m") is None
        ),
        Kind.SAFE,
    ),
    "kiam:server.sessionRefresh": (setting("server", "sessionRefresh", "10m"), Kind.SAFE),
    "kiam:server.syncInterval": (setting("server", "syncInterval", "2m"), Kind.SAFE),
    "kiam:server.maxConnectionAge": (setting("server", "maxConnectionAge", "10m"), Kind.SAFE),
    "kiam:server.maxConnectionIdle": (setting("server", "maxConnectionIdle", "10m"), Kind.SAFE),
    "kiam:server.maxConnectionAgeGrace": (
        setting("server", "maxConnectionAgeGrace", "20s"),
        Kind.SAFE,
    ),
    "kiam:server.logLevel": (setting("server", "logLevel", "warn"), Kind.SAFE),
    "kiam:server.priorityClassName": (setting("server", "priorityClassName", "kiam"), Kind.SAFE),
    "kiam:server.unhealthyNodeTolerationSeconds": (
        setting("server", "unhealthyNodeTolerationSeconds", 60),
        Kind.SAFE,
    ),
    "kiam:server.rolloutTimeoutMinutes": (
        setting("server", "rolloutTimeoutMinutes", 30),
        Kind.SAFE,
    ),
    "kiam:server.extraArgs": (setting("server", "extraArgs", ["--fetchers=16"]), Kind.SAFE),
    "kiam:agent.image": (setting("agent", "image", "quay.io/uswitch/kiam:v4.2.1"), Kind.SAFE),
    "kiam:agent.rollout.maxUnavailable": (
        setting("agent", "rollout", {"maxUnavailable": 3}),
        Kind.SAFE,
    ),
    "kiam:agent.rollout.nodes": (setting("agent", "rollout", {"nodes": 400}), Kind.SAFE),
    "kiam:agent.rollout.restartSeconds": (
        setting("agent", "rollout", {"restartSeconds": 20}),
        Kind.SAFE,
    ),
    "kiam:agent.hostInterface": (
        setting("agent", "hostInterface", "!eth0"),
        {
            "dev": Kind.REFUSED,
            "production": Kind.REFUSED,
            "takeover": Kind.REFUSED,
            "complete": Kind.REFUSED,
            "servers": Kind.SAFE,
        },
    ),
    "kiam:agent.port": (
        setting("agent", "port", 8282),
        {
            "dev": Kind.REFUSED,
            "production": Kind.REFUSED,
            "takeover": Kind.REFUSED,
            "complete": Kind.REFUSED,
            "servers": Kind.SAFE,
        },
    ),
    "kiam:agent.metricsPort": (setting("agent", "metricsPort", 9721), Kind.SAFE),
    "kiam:agent.removeIptablesRuleOnExit": (
        setting("agent", "removeIptablesRuleOnExit", True),
        Kind.SAFE,
    ),
    "kiam:agent.allowedMetadataRoutes": (
        setting("agent", "allowedMetadataRoutes", "^/latest/meta-data/placement/.*$"),
        Kind.SAFE,
    ),
    "kiam:agent.keepaliveTime": (setting("agent", "keepaliveTime", "20s"), Kind.SAFE),
    "kiam:agent.keepaliveTimeout": (setting("agent", "keepaliveTimeout", "3s"), Kind.SAFE),
    "kiam:agent.gatewayTimeoutCreation": (
        setting("agent", "gatewayTimeoutCreation", "2s"),
        Kind.SAFE,
    ),
    "kiam:agent.tolerations": (_tolerations_fewer, Kind.REFUSED),
    "kiam:agent.tolerations[].key": (
        setting("agent", "tolerations", [{"key": "batch", "operator": "Exists"}]),
        {
            "dev": Kind.SAFE,
            "production": Kind.REFUSED,
            "servers": Kind.SAFE,
            "takeover": Kind.SAFE,
            "complete": Kind.SAFE,
        },
    ),
    "kiam:agent.tolerations[].operator": (
        setting("agent", "tolerations", [{"key": "nvidia.com/gpu", "operator": "Exists"}]),
        Kind.SAFE,
    ),
    "kiam:agent.tolerations[].value": (
        setting("agent", "tolerations", [{"key": "nvidia.com/gpu", "value": "a100"}]),
        {
            "dev": Kind.SAFE,
            "production": Kind.REFUSED,
            "servers": Kind.SAFE,
            "takeover": Kind.SAFE,
            "complete": Kind.SAFE,
        },
    ),
    "kiam:agent.tolerations[].effect": (
        setting("agent", "tolerations", [{"key": "nvidia.com/gpu", "operator": "Exists"}]),
        Kind.SAFE,
    ),
    "kiam:agent.resources.cpuRequest": (setting("agent", "resources", _resources), Kind.SAFE),
    "kiam:agent.resources.memoryRequest": (setting("agent", "resources", _resources), Kind.SAFE),
    "kiam:agent.resources.memoryLimit": (setting("agent", "resources", _resources), Kind.SAFE),
    "kiam:agent.logLevel": (setting("agent", "logLevel", "debug"), Kind.SAFE),
    "kiam:agent.priorityClassName": (setting("agent", "priorityClassName", "kiam"), Kind.SAFE),
    "kiam:agent.extraArgs": (
        setting("agent", "extraArgs", ["--prometheus-sync-interval=10s"]),
        Kind.SAFE,
    ),
    "kiam:iam.applicationRolePath": (
        lambda c, b: (
            section(c, "iam").update(applicationRolePath="/other-apps/") is None
            and not c.get("kiam:applications")
        ),
        Kind.REFUSED,
    ),
    "kiam:iam.applicationRoleNamePrefix": (
        lambda c, b: (
            section(c, "iam").update(applicationRoleNamePrefix="") is None
            and not section(c, "iam").get("applicationRoleNamePrefix")
        ),
        Kind.SAFE,
    ),
    "kiam:iam.allowAnyRole": (setting("iam", "allowAnyRole", True), Kind.SAFE),
    "kiam:iam.kiamRolePath": (setting("iam", "kiamRolePath", "/kiam/v2/"), Kind.REFUSED),
    "kiam:iam.managedPoliciesPerRole": (setting("iam", "managedPoliciesPerRole", 20), Kind.SAFE),
    "kiam:tls.caValidityHours": (setting("tls", "caValidityHours", 96000), Kind.SAFE),
    "kiam:tls.certValidityHours": (setting("tls", "certValidityHours", 2000), Kind.SAFE),
    "kiam:tls.earlyRenewalHours": (setting("tls", "earlyRenewalHours", 100), Kind.SAFE),
    "kiam:namespace.name": (
        lambda c, b: section(c, "namespace").update(name="kiam-system") is None,
        Kind.REFUSED,
    ),
    # Adopting, the namespace is the running install's (create: true is invalid there).
    "kiam:namespace.create": (
        lambda c, b: (
            b not in MIGRATION_PHASES and section(c, "namespace").update(create=False) is None
        ),
        {"dev": Kind.SEQUENCED, "production": Kind.SEQUENCED},
    ),
    # In phase servers monitoring must wait (invalid settings there).
    "kiam:monitoring.enabled": (
        lambda c, b: b != "servers" and section(c, "monitoring").update(enabled=True) is None,
        Kind.SAFE,
    ),
    "kiam:monitoring.prometheusOperator": (
        lambda c, b: (
            section(c, "monitoring").update(prometheusOperator=False, alerts=False) is None
        ),
        Kind.SAFE,
    ),
    "kiam:monitoring.labels": (setting("monitoring", "labels", {"release": "prom"}), Kind.SAFE),
    "kiam:monitoring.scrapeInterval": (setting("monitoring", "scrapeInterval", "60s"), Kind.SAFE),
    "kiam:monitoring.alerts": (setting("monitoring", "alerts", False), Kind.SAFE),
    "kiam:monitoring.runbookUrl": (
        setting("monitoring", "runbookUrl", "https://runbooks.example.com/kiam"),
        Kind.SAFE,
    ),
    "kiam:adoption.phase": (
        phase("complete"),
        {"servers": Kind.REFUSED, "takeover": Kind.SAFE},
    ),
    "kiam:adoption.agentDaemonSetName": (
        adopted(setting("adoption", "agentDaemonSetName", "kiam-agents")),
        Kind.REFUSED,
    ),
    "kiam:adoption.agentPodLabels": (
        adopted(setting("adoption", "agentPodLabels", {"app": "kiam-agent"})),
        Kind.REFUSED,
    ),
    "kiam:adoption.serverPodLabels": (
        adopted(setting("adoption", "serverPodLabels", {"app": "kiam-server"})),
        {"servers": Kind.REFUSED, "takeover": Kind.SAFE, "complete": Kind.SAFE},
    ),
    "kiam:adoption.caCertificate": (
        adopted(setting("adoption", "caCertificate", "-----BEGIN CERTIFICATE-----\nother\n")),
        Kind.REFUSED,
    ),
    "kiam:adoption.caPrivateKey": (
        adopted(setting("adoption", "caPrivateKey", "-----BEGIN PRIVATE KEY-----\nother\n")),
        Kind.REFUSED,
    ),
    "kiam:applications.<name>.namespace": (
        first_application(lambda a, c: a.update(namespace="moved")),
        Kind.REFUSED,
    ),
    "kiam:applications.<name>.roleName": (
        first_application(lambda a, c: a.update(roleName=a["roleName"] + "-v2")),
        Kind.REFUSED,
    ),
    # The stack's own role named by roleArn instead: handing it over is refused (the stack would
    # delete it), as another role by ARN would be.
    "kiam:applications.<name>.roleArn": (
        first_application(_to_existing_role),
        Kind.REFUSED,
    ),
    "kiam:applications.<name>.path": (
        first_application(
            lambda a, c: a.update(
                path=(a.get("path") or section(c, "iam").get("applicationRolePath", "/kiam-apps/"))
                + "team-z/"
            )
        ),
        Kind.REFUSED,
    ),
    "kiam:applications.<name>.managedPolicyArns": (
        first_application(
            lambda a, c: a.update(managedPolicyArns=["arn:aws:iam::aws:policy/ReadOnlyAccess"])
        ),
        Kind.SAFE,
    ),
    "kiam:applications.<name>.inlinePolicies": (
        first_application(lambda a, c: a.update(inlinePolicies={})),
        Kind.SAFE,
    ),
    "kiam:applications.<name>.servedBy": (
        first_application(lambda a, c: a.update(servedBy="podIdentity", serviceAccount="api")),
        Kind.REFUSED,
    ),
    "kiam:applications.<name>.serviceAccount": (
        first_application(lambda a, c: a.update(servedBy="kiam+irsa", serviceAccount="other")),
        Kind.REFUSED,
    ),
    "kiam:existingPermitted": (_existing_permitted, Kind.SAFE),
    "kiam:applicationsFile": (_applications_file, Kind.SAFE),
    "kiam:podIdentityAgent.manageAddon": (
        setting("podIdentityAgent", "manageAddon", True),
        Kind.SAFE,
    ),
    "kiam:podIdentityAgent.addonVersion": (
        lambda c, b: (
            section(c, "podIdentityAgent").update(
                manageAddon=True, addonVersion="v1.3.5-eksbuild.2"
            )
            is None
        ),
        Kind.SAFE,
    ),
    "kiam:retire": (
        lambda c, b: b in ("dev", "complete") and c.update({"kiam:retire": True}) is None,
        Kind.SEQUENCED,
    ),
    "kiam:kubeconfig": (_kubeconfig, Kind.SAFE),
}

# What the base must have for an application change to mean something: an application in the
# previous stack (served as the change needs it).
APPLICATION = {
    "namespace": "billing",
    "roleName": "billing-api",
    "servedBy": "kiam+irsa",
    "serviceAccount": "api",
}


def previous_config(base: str, key: str) -> dict[str, Any]:
    config = BASES[base]()
    if key.startswith("kiam:applications") and not config.get("kiam:applications"):
        config["kiam:applications"] = {"billing": copy.deepcopy(APPLICATION)}
        if base in MIGRATION_PHASES:
            config["kiam:applications"]["billing"]["path"] = section(config, "iam").get(
                "applicationRolePath", "/kiam-apps/"
            )
    if key == "kiam:applications.<name>.servedBy":
        for app in config["kiam:applications"].values():
            app.update(servedBy="kiam")
            app.pop("serviceAccount", None)
    return config


def cases() -> list[tuple[str, str]]:
    return [(key, base) for key in CHANGES for base in BASES]


def test_every_setting_has_a_change_and_a_row() -> None:
    assert sorted(CHANGES) == sorted(setting_keys())
    # The most specific row of each key is one the table holds, and every row covers a key.
    covered = {row_of(key).setting for key in setting_keys()}
    assert covered == {row.setting for row in TABLE}


def judged(key: str, base: str) -> tuple[Kind, list[Verdict]] | None:
    change, _ = CHANGES[key]
    before = previous_config(base, key)
    after = copy.deepcopy(before)
    if not change(after, base):
        return None
    previous = installed_by(settings_of(before), None)
    try:
        verdicts = list(judge(settings_of(after), previous, {}, SOURCE).verdicts)
    except RefusedChangeError as refusal:
        return Kind.REFUSED, [Verdict("", Kind.REFUSED, p) for p in refusal.problems]
    kinds = {v.kind for v in verdicts}
    return (Kind.SEQUENCED if Kind.SEQUENCED in kinds else Kind.SAFE), verdicts


@pytest.mark.parametrize(("key", "base"), cases())
def test_each_change_from_each_base_is_what_the_table_says(key: str, base: str) -> None:
    result = judged(key, base)
    _, expected = CHANGES[key]
    want = expected.get(base) if isinstance(expected, dict) else expected
    if result is None:
        assert want is None or not isinstance(expected, dict), f"{key} must apply to {base}"
        return
    assert want is not None, f"{key} on {base}: no expectation"
    kind, verdicts = result
    assert kind is want, verdicts
    assert kind in row_of(key).kinds
    if kind is Kind.REFUSED:
        # A refusal names the setting changed, as a key path of the same row.
        named = [
            re.sub(r"applications\.[^.]+\.", "applications.<name>.", p.message.split(": ", 1)[0])
            for p in verdicts
        ]
        assert row_of(key) in [row_of(n) for n in named], named


def test_each_change_applies_to_some_base() -> None:
    applied = {key for key, base in cases() if judged(key, base) is not None}
    assert applied == set(CHANGES)


def test_the_refusals_name_setting_running_value_and_the_way_there() -> None:
    base = example_config("dev")
    after = copy.deepcopy(base)
    section(after, "agent")["port"] = 9000
    section(after, "server")["grpcPort"] = 443
    with pytest.raises(RefusedChangeError) as refusal:
        judge(settings_of(after), installed_by(settings_of(base), None), {}, SOURCE)
    assert str(refusal.value) == (
        "stacks/Pulumi.test.yaml: refused: this change from what the stack's last update "
        "installed would take credentials away (2 problems):\n"
        "  - kiam:server.grpcPort: every running agent dials port 9610 "
        "(kiam-server.kiam.svc.cluster.local:9610), and a server listens on one port only "
        "(`--bind`): the servers would roll to 443 before the agents, and once the last old "
        "server stopped no agent could reach a server until it rolled too. Keep 9610\n"
        "  - kiam:agent.port: every node's iptables rule sends pods' metadata requests to port "
        "8181, where the running agents listen, and they do not remove it when they stop "
        "(--no-iptables-remove); an agent on another port appends its own rule after it "
        "(kiam's AppendUnique), and the first rule wins, so every pod would get \"connection "
        'refused" from the metadata address. Keep 8181, or: set '
        "kiam:agent.removeIptablesRuleOnExit: true and `pulumi up` first (the agents roll one "
        "node at a time, each keeping the rule while it restarts), then make this change (each "
        "agent that stops takes its rule with it: pods there reach the node's own metadata "
        "service, as without kiam, until an agent serves them again), then set it back to false"
    )


def retiring_with(**agent: Any) -> dict[str, Any]:
    config = {**example_config("dev"), "kiam:retire": True}
    section(config, "agent").update(agent)
    return config


def refusal_of(config: dict[str, Any], previous: dict[str, Any]) -> list[str]:
    with pytest.raises(RefusedChangeError) as refusal:
        judge(settings_of(config), installed_by(settings_of(previous), None), {}, SOURCE)
    return refusal.value.problems


def test_a_retirement_rolls_the_running_agents_rule_away_on_its_own_port_and_interface() -> None:
    """The roll to --iptables-remove takes each node's rule only if it names the same port and
    interface: an agent removes exactly the rule it added (contracts/agent_rule.py)."""
    dev = example_config("dev")
    assert refusal_of(retiring_with(port=9000, hostInterface="!eth0"), dev) == [
        "kiam:agent.port: the retirement rolls the running agents, whose rule on every node names "
        "port 8181, to remove that rule as they stop; on port 9000 each would remove only a rule "
        "of its own, and leave theirs sending pods to an agent that is gone. Keep 8181 while "
        "retiring",
        "kiam:agent.hostInterface: the retirement rolls the running agents, whose rule on every "
        "node names interface eni+, to remove that rule as they stop; on interface !eth0 each "
        "would remove only a rule of its own, and leave theirs sending pods to an agent that is "
        "gone. Keep eni+ while retiring",
    ]
    # Agents that already remove their rule on exit take it with them whatever they roll onto.
    removing = copy.deepcopy(dev)
    section(removing, "agent")["removeIptablesRuleOnExit"] = True
    after = retiring_with(port=9000, hostInterface="!eth0", removeIptablesRuleOnExit=True)
    verdicts = judge(settings_of(after), installed_by(settings_of(removing), None), {}, SOURCE)
    assert [v.setting for v in verdicts.verdicts] == ["kiam:retire"]


def test_a_retirement_stays_in_the_namespace_kiam_runs_in() -> None:
    config = {**example_config("dev"), "kiam:retire": True}
    section(config, "namespace")["name"] = "kiam-system"
    assert refusal_of(config, example_config("dev")) == [
        "kiam:namespace.name: kiam runs in namespace kiam (the stack's last update); the "
        "retirement rolls the agents there to remove their iptables rule before it deletes them, "
        "and in kiam-system there are none to roll. Keep kiam"
    ]


@pytest.mark.parametrize(
    ("old", "new", "steps"),
    [
        ("kiam", "kiam+podIdentity", ["kiam", "kiam+podIdentity"]),
        ("kiam", "podIdentity", ["kiam", "kiam+podIdentity", "podIdentity"]),
        ("podIdentity", "kiam", ["podIdentity", "kiam+podIdentity", "kiam"]),
        ("kiam+irsa", "kiam+podIdentity", ["kiam+irsa", "kiam", "kiam+podIdentity"]),
        ("irsa", "podIdentity", ["irsa", "kiam+irsa", "kiam", "kiam+podIdentity", "podIdentity"]),
        ("irsa", "irsa", ["irsa"]),
    ],
)
def test_served_by_moves_one_step_at_a_time_through_kiam(
    old: str, new: str, steps: list[str]
) -> None:
    assert [s.value for s in served_by_steps(ServedBy(old), ServedBy(new))] == steps


def test_a_skipped_served_by_step_is_refused_with_the_steps() -> None:
    base = {
        **example_config("dev"),
        "kiam:applications": {"billing": {**APPLICATION, "servedBy": "irsa"}},
    }
    after = copy.deepcopy(base)
    after["kiam:applications"]["billing"]["servedBy"] = "podIdentity"
    with pytest.raises(RefusedChangeError) as refusal:
        judge(settings_of(after), installed_by(settings_of(base), None), {}, SOURCE)
    assert refusal.value.problems == [
        "kiam:applications.billing.servedBy: irsa to podIdentity skips steps: pods created in one "
        "state keep what it wired into them, and lose their credentials when the next state "
        "drops it. One step at a time, each a `pulumi up` (recreate the pods after each): irsa "
        "-> kiam+irsa -> kiam -> kiam+podIdentity -> podIdentity (docs/leaving-kiam.md)"
    ]


# --- through the mock engine: what the program registers for a change ---------------------------


@pytest.fixture(scope="module")
def dev_install() -> Recording:
    return run_main(example_config("dev"), stack="test")


def test_the_exported_facts_are_what_the_judge_reads(dev_install: Recording) -> None:
    for base, config in BASES.items():
        run = dev_install if base == "dev" else run_main(config(), stack="test")
        exported = read_installed(run.stack_outputs)
        assert exported == installed_by(settings_of(config()), None), base


def test_a_refused_change_registers_nothing(
    dev_install: Recording, registered_types: list[str]
) -> None:
    after = example_config("dev")
    section(after, "agent")["port"] = 9000
    registered_types.clear()
    with pytest.raises(Exception, match=re.escape("kiam:agent.port: every node's iptables rule")):
        run_main(after, stack="test", last_run=dev_install)
    assert registered_types == [tokens.STACK]  # the root stack, registered before the program


def test_the_program_reads_the_components_record_first(dev_install: Recording) -> None:
    """The record the judge reads is `Kiam`'s own output, as in any program; the stack output
    is a copy, read only where the component holds none (an update by a version before it)."""
    urn = dev_install.one(tokens.KIAM).urn
    assert dev_install.component_outputs[urn]["installed"] == dev_install.stack_outputs["installed"]
    after = example_config("dev")
    section(after, "agent")["port"] = 9000
    without_copy = replace(
        dev_install,
        stack_outputs={k: v for k, v in dev_install.stack_outputs.items() if k != "installed"},
    )
    with pytest.raises(Exception, match=re.escape("kiam:agent.port: every node's iptables rule")):
        run_main(after, stack="test", last_run=without_copy)
    # An update by a version before the component's record: the stack output is read.
    without_record = replace(dev_install, component_outputs={})
    with pytest.raises(Exception, match=re.escape("kiam:agent.port: every node's iptables rule")):
        run_main(after, stack="test", last_run=without_record)


def test_a_service_name_change_keeps_the_old_names_until_every_agent_moved(
    dev_install: Recording,
) -> None:
    after = example_config("dev")
    section(after, "server")["serviceName"] = "kiam-grpc"
    moving = run_main(after, stack="test", last_run=dev_install)
    request = moving.one(tokens.CERT_REQUEST, "kiam-tls-server")
    old = "kiam-server.kiam.svc.cluster.local"
    assert request.inputs["dnsNames"] == [
        "kiam-grpc", "kiam-grpc.kiam", "kiam-grpc.kiam.svc", "kiam-grpc.kiam.svc.cluster.local",
        "localhost", "kiam-server", "kiam-server.kiam", "kiam-server.kiam.svc", old,
    ]  # fmt: skip
    deployment = moving.one(tokens.DEPLOYMENT)
    annotations = deployment.inputs["spec"]["template"]["metadata"]["annotations"]
    assert annotations == {
        PREVIOUS_NAMES_ANNOTATION: f"kiam-server,kiam-server.kiam,kiam-server.kiam.svc,{old}"
    }
    # The order: certificate Secret, then the servers (restarting onto it), then the agents.
    secret = moving.one(tokens.SECRET, "kiam-tls-server")
    daemon_set = moving.one(tokens.DAEMON_SET)
    assert secret.urn in deployment.dependencies
    assert deployment.urn in daemon_set.dependencies
    args = pod_spec(daemon_set)["containers"][0]["args"]
    assert "--server-address=kiam-grpc.kiam.svc.cluster.local:9610" in args
    # The next update: every agent dials the new name; the old names go, the servers restart.
    settled = run_main(after, stack="test", last_run=moving)
    assert settled.one(tokens.CERT_REQUEST, "kiam-tls-server").inputs["dnsNames"][-1] == "localhost"
    assert (
        "annotations" not in settled.one(tokens.DEPLOYMENT).inputs["spec"]["template"]["metadata"]
    )


def test_namespace_create_switched_off_releases_the_namespace_over_two_updates(
    dev_install: Recording,
) -> None:
    after = example_config("dev")
    section(after, "namespace")["create"] = False
    releasing = run_main(after, stack="test", last_run=dev_install)
    [namespace] = releasing.by_type(tokens.NAMESPACE)
    assert (namespace.name, namespace.retain_on_delete) == ("kiam-namespace", True)
    assert releasing.stack_outputs["installed"]["namespace"] == {
        "name": "kiam",
        "owner": "released",
    }
    forgetting = run_main(after, stack="test", last_run=releasing)
    assert forgetting.by_type(tokens.NAMESPACE) == []
    assert forgetting.stack_outputs["installed"]["namespace"] == {
        "name": "kiam",
        "owner": "existing",
    }
    # Without the release, the namespace would simply not be registered: deleted, and with it
    # every server and agent. Guarantee 16 says so for exactly that rendering.
    violations = _change_violations(forgetting, after, read_installed(dev_install.stack_outputs))
    assert [v.reason for v in violations] == [
        "no longer has namespace kiam, which it created: it would be deleted with everything in it"
    ]


def test_a_retirement_that_stopped_half_way_is_rolled_back_by_force(
    dev_install: Recording,
) -> None:
    retiring = {**example_config("dev"), "kiam:retire": True}
    failed = run_main(retiring, stack="test", last_run=dev_install)
    assert failed.by_type(tokens.DAEMON_SET_PATCH)
    # The roll failed: the outputs are still the install's, but the state holds the patch.
    half_way = Recording(
        registrations=[*dev_install.registrations, *failed.by_type(tokens.DAEMON_SET_PATCH)],
        stack_outputs=dev_install.stack_outputs,
    )
    back = run_main(example_config("dev"), stack="test", last_run=half_way)
    daemon_set = back.one(tokens.DAEMON_SET)
    assert daemon_set.inputs["metadata"]["annotations"] == {PATCH_FORCE_ANNOTATION: "true"}
    assert "--no-iptables-remove" in pod_spec(daemon_set)["containers"][0]["args"]
    assert back.by_type(tokens.DAEMON_SET_PATCH) == []  # forgotten, kept on delete
    # Once restored, the DaemonSet is applied as always.
    again = run_main(example_config("dev"), stack="test", last_run=back)
    assert "annotations" not in again.one(tokens.DAEMON_SET).inputs["metadata"]


def test_a_failed_roll_fails_the_update_and_the_next_up_rolls_again(
    dev_install: Recording, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The retirement's roll fails (the patch's await): the program fails with it, so the engine
    records no new outputs and deletes nothing (pulumi/pulumi pkg/resource/deploy/
    deployment_executor.go: deletes run only once every step succeeded); the next `pulumi up`
    reads the install's outputs again and rolls again instead of deleting agents that keep
    their rule."""
    from tools import mock_engine

    answer = mock_engine.KiamMocks.new_resource

    def failing(self: Any, args: Any) -> Any:
        if args.typ == tokens.DAEMON_SET_PATCH:
            raise RuntimeError("the agents' roll timed out")
        return answer(self, args)

    retiring = {**example_config("dev"), "kiam:retire": True}
    with monkeypatch.context() as patched:
        patched.setattr(mock_engine.KiamMocks, "new_resource", failing)
        with pytest.raises(RuntimeError, match="the agents' roll timed out"):
            run_main(retiring, stack="test", last_run=dev_install)
    # The failed run leaves rejected futures of what waited for the roll, which asyncio reports
    # when they are collected: the loop is told that this one failure is expected.
    loop = asyncio.get_event_loop()

    def handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if "the agents' roll timed out" not in str(context.get("exception")):
            loop.default_exception_handler(context)

    loop.set_exception_handler(handler)
    gc.collect()
    # The outputs are still the install's: the next up rolls again.
    retry = run_main(retiring, stack="test", last_run=dev_install)
    [patch] = retry.by_type(tokens.DAEMON_SET_PATCH)
    assert patch.name == names.RETIREMENT_PATCH
    args = pod_spec(patch)["containers"][0]["args"]
    assert "--iptables-remove" in args and "--no-iptables-remove" not in args
    assert retry.stack_outputs["installed"]["retired"] is True


def _change_violations(
    run: Recording, config: dict[str, Any], previous: Installed | None
) -> list[Violation]:
    expected = Expected.of(settings_of(config), previous)
    return [v for v in check_all(resources_from_recording(run), expected) if v.id == "change"]


# --- random pairs of valid stacks -----------------------------------------------------------------

SECTIONS = [
    "kiam:server",
    "kiam:agent",
    "kiam:iam",
    "kiam:tls",
    "kiam:applications",
    "kiam:nodeGroup",
]


@st.composite
def pairs(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    """A stack, and the same cluster with some of its sections taken from another valid stack."""
    before = draw(valid_configs())
    other = draw(valid_configs())
    after = copy.deepcopy(before)
    for key in draw(st.lists(st.sampled_from(SECTIONS), unique=True, min_size=1)):
        if key in other:
            after[key] = copy.deepcopy(other[key])
        else:
            after.pop(key, None)
    return before, after


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pairs())
def test_every_pair_of_valid_stacks_is_refused_or_keeps_guarantee_16(
    pair: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    before, after = pair
    try:
        next_settings = settings_of(after)
    except Exception:
        return  # the two sections do not fit together: invalid settings, refused by the loader
    previous = installed_by(settings_of(before), None)
    try:
        judge(next_settings, previous, {}, SOURCE)
    except RefusedChangeError as refusal:
        assert refusal.problems
        return
    first = run_main(before, stack="test")
    run = run_main(after, stack="test", last_run=first)
    expected = Expected.of(next_settings, read_installed(first.stack_outputs))
    assert check_all(resources_from_recording(run), expected) == []


def test_the_transitions_reference_is_generated_from_the_table() -> None:
    assert REFERENCE.read_text() == render()
    configuration = (PROJECT_DIR / "docs" / "configuration.md").read_text()
    headings = set(re.findall(r"^## `(.+)`$", render(), flags=re.MULTILINE))
    anchors = {anchor(h) for h in headings}
    linked = re.findall(r"\]\(transitions\.md#([^)]+)\)", configuration)
    assert set(linked) == anchors
    for key in setting_keys():
        line = next(
            (line for line in configuration.splitlines() if line.startswith(f"| `{key}` |")),
            None,
        ) or next(
            line
            for line in configuration.splitlines()
            if line.startswith("Type:") and f"#{anchor(row_of(key).setting)})" in line
        )
        assert f"transitions.md#{anchor(row_of(key).setting)})" in line, key


def test_a_stack_last_updated_by_an_older_version_is_judged_on_its_outputs() -> None:
    legacy = LastUpdate(
        outputs={
            "serverAddress": "kiam-server.kiam.svc.cluster.local:9610",
            "namespace": "kiam",
            "roleBaseArn": "arn:aws:iam::111122223333:role/kiam-apps/",
            "applications": {},
        },
        resources={
            "urn:pulumi:test::kiam::kiam:index:Kiam$kubernetes:core/v1:Namespace::kiam-namespace": tokens.NAMESPACE
        },
    )
    facts = legacy.installed()
    assert facts is not None and facts.legacy and facts.kiam_installed
    assert facts.namespace is not None and facts.namespace.owner == "stack"
    after = example_config("dev")
    section(after, "server")["grpcPort"] = 443
    with pytest.raises(RefusedChangeError, match=re.escape("kiam:server.grpcPort")):
        judge(settings_of(after), facts, legacy.resources, SOURCE)
    # What those outputs do not say is not judged: the agents' port.
    section(after, "server")["grpcPort"] = 9610
    section(after, "agent")["port"] = 9000
    assert judge(settings_of(after), facts, legacy.resources, SOURCE).verdicts == ()


# --- the Pod Identity chain roles another account trusts ---------------------------------------

CHAINED = "arn:aws:iam::444455556666:role/teams/billing"


def retired_with_pod_identity(*, other_account: bool) -> dict[str, Any]:
    """The dev stack retired, its two applications served by Pod Identity: one role of another
    account (reached through a chain role the stack creates), or both of the cluster's."""
    config = {**example_config("dev"), "kiam:retire": True}
    config["kiam:podIdentityAgent"] = {"manageAddon": True}
    config["kiam:applications"] = {
        "billing": {
            "namespace": "billing",
            "roleArn": CHAINED if other_account else "arn:aws:iam::111122223333:role/teams/billing",
            "servedBy": "podIdentity",
            "serviceAccount": "billing",
        },
        "search": {
            "namespace": "search",
            "roleArn": "arn:aws:iam::111122223333:role/teams/search",
            "servedBy": "podIdentity",
            "serviceAccount": "search",
        },
    }
    return config


def with_kiam_role_path(config: dict[str, Any], path: str) -> dict[str, Any]:
    moved = copy.deepcopy(config)
    section(moved, "iam")["kiamRolePath"] = path
    return moved


def test_the_chain_role_another_account_trusts_keeps_its_path_once_retired() -> None:
    """Retired, kiam's roles are gone but the chain role stays under kiamRolePath, and the
    target's owner trusts exactly its ARN: another path is a role no owner trusts."""
    retired = retired_with_pod_identity(other_account=True)
    assert refusal_of(with_kiam_role_path(retired, "/platform/kiam/"), retired) == [
        "kiam:iam.kiamRolePath: the Pod Identity chain roles of billing live under /kiam/, and "
        "each role's owner in another account trusts exactly its chain role's ARN (the `trust` "
        "of the stack output `applications`); another path replaces them with roles of other "
        "ARNs, which no owner trusts, and Pod Identity stops serving those applications. Keep "
        "/kiam/"
    ]

    # What the refusal prevents, as the program renders it: the chain role under the new path.
    def chain_path(config: dict[str, Any]) -> Any:
        [chain] = [
            r
            for r in run_main(config, stack="test").by_type(tokens.ROLE)
            if r.name.endswith("-chain")
        ]
        return chain.inputs["path"]

    assert chain_path(retired) == "/kiam/"
    assert chain_path(with_kiam_role_path(retired, "/platform/kiam/")) == "/platform/kiam/"


def test_without_a_chain_role_a_retired_stack_moves_kiam_role_path_freely() -> None:
    retired = retired_with_pod_identity(other_account=False)
    previous = installed_by(settings_of(retired), None)
    assert previous.chain_roles() == []
    moved = judge(settings_of(with_kiam_role_path(retired, "/platform/")), previous, {}, SOURCE)
    assert [v.setting for v in moved.verdicts] == []


def test_retiring_and_moving_kiam_role_path_in_one_update_is_refused_for_the_chain_role() -> None:
    """The retirement skipped kiamRolePath's judgement; in the same update as another path, the
    chain role would be replaced."""
    retired = retired_with_pod_identity(other_account=True)
    running = {k: v for k, v in retired.items() if k != "kiam:retire"}
    problems = refusal_of(with_kiam_role_path(retired, "/platform/kiam/"), running)
    assert [p.split(":", 2)[1] for p in problems if "chain roles" in p] == ["iam.kiamRolePath"]


def test_a_retired_record_keeps_kiam_role_path_and_one_without_it_reads_as_unknown() -> None:
    retired = installed_by(settings_of(retired_with_pod_identity(other_account=True)), None)
    assert retired.to_output()["kiamRolePath"] == "/kiam/"
    older = read_installed({"installed": {**retired.to_output(), "kiamRolePath": None}})
    assert older is not None and older.kiam_role_path is None
    moved = with_kiam_role_path(retired_with_pod_identity(other_account=True), "/platform/")
    assert [v.setting for v in judge(settings_of(moved), older, {}, SOURCE).verdicts] == []


def test_another_host_interface_waits_for_agents_that_remove_their_rule() -> None:
    """The interface is part of the agents' rule, as the port is: agents that keep their rule
    on exit would leave the old interface's rule on every node, with no agent to remove it."""
    dev = example_config("dev")
    moved = copy.deepcopy(dev)
    section(moved, "agent")["hostInterface"] = "!eth0"
    [problem] = refusal_of(moved, dev)
    assert problem.startswith(
        "kiam:agent.hostInterface: every node's iptables rule names interface eni+ (`-i`), and "
        "the running agents do not remove it when they stop (--no-iptables-remove); an agent on "
        "!eth0 adds a rule of its own beside it"
    )
    assert problem.endswith("Keep eni+, or: " + KEEP_RULE)
    # The way out: agents that remove their rule as they stop take the old interface's with them.
    removing = copy.deepcopy(dev)
    section(removing, "agent")["removeIptablesRuleOnExit"] = True
    both = copy.deepcopy(moved)
    section(both, "agent")["removeIptablesRuleOnExit"] = True
    previous = installed_by(settings_of(removing), None)
    assert [v.kind for v in judge(settings_of(both), previous, {}, SOURCE).verdicts] == []


def test_a_retired_stack_of_the_previous_version_upgrades_with_no_resource_change() -> None:
    """The previous version's retired record has no kiamRolePath. Upgraded, the same settings
    register every resource exactly as before, and the record gains the path; from then on the
    chain role's path is judged."""
    retired = retired_with_pod_identity(other_account=True)
    current = run_main(retired, stack="test")
    previous_outputs = {**current.stack_outputs}
    previous_outputs["installed"] = {
        k: v for k, v in current.stack_outputs["installed"].items() if k != "kiamRolePath"
    }
    resources = {r.urn: r.type for r in current.registrations}
    upgraded = run_main(
        retired, stack="test", last_outputs=previous_outputs, last_resources=resources
    )

    def registered(run: Recording) -> dict[str, Any]:
        return {r.urn: (r.inputs, r.custom_timeouts, r.ignore_changes) for r in run.registrations}

    assert registered(upgraded) == registered(current)
    assert upgraded.stack_outputs["installed"]["kiamRolePath"] == "/kiam/"
    assert "kiamRolePath" not in previous_outputs["installed"]
    moved = with_kiam_role_path(retired, "/platform/kiam/")
    with pytest.raises(RefusedChangeError, match="chain roles of billing"):
        judge(settings_of(moved), read_installed(upgraded.stack_outputs), {}, SOURCE)


@pytest.mark.parametrize("first", [True, False], ids=["first update", "later update"])
def test_the_judge_reads_from_the_state_whether_the_stack_holds_the_agent_addon(
    first: bool,
) -> None:
    """By the add-on's name in the state, not the recorded facts: a first update that stopped
    half way left the add-on without recording `installed` (program/providers.py reads it)."""
    settings = settings_of(example_config("dev"))
    previous = None if first else installed_by(settings, None)
    addon = f"urn:pulumi:test::kiam-eks::kiam:index:Kiam$aws:eks/addon:Addon::{names.POD_IDENTITY_AGENT}"
    other = "urn:pulumi:test::kiam-eks::kiam:index:Kiam$aws:eks/addon:Addon::kiam-other-addon"
    holds = judge(settings, previous, {addon: "aws:eks/addon:Addon"}, SOURCE)
    lacks = judge(settings, previous, {other: "aws:eks/addon:Addon"}, SOURCE)
    assert (holds.agent_addon_registered, lacks.agent_addon_registered) == (True, False)


def with_billing(state: str, *, retire: bool = False) -> dict[str, Any]:
    """The dev stack with one application, `billing`, in `state`."""
    config = {
        **example_config("dev"),
        "kiam:applications": {
            "billing": {
                "namespace": "billing",
                "roleName": "billing-api",
                "servedBy": state,
                **({"serviceAccount": "api"} if state != "kiam" else {}),
            }
        },
    }
    return {**config, "kiam:retire": True} if retire else config


@pytest.mark.parametrize(
    ("before", "after"), [("kiam+podIdentity", "podIdentity"), ("kiam+irsa", "irsa")]
)
def test_the_last_step_off_kiam_and_the_retirement_are_refused_in_one_update(
    before: str, after: str
) -> None:
    """Each alone is allowed; together a pod the step leaves without credentials has no kiam to
    move back to (issue 36, bundles)."""
    assert refusal_of(with_billing(after, retire=True), with_billing(before)) == [
        f"kiam:retire: in the same update as kiam:applications.billing.servedBy ({before} to "
        f"{after}): a pod still getting that role from kiam would lose it with kiam gone, and "
        "moving back would need kiam installed again. Leave kiam first, in an update of its own; "
        "check that no pod still uses it (python -m tools.kiam_usage); then retire"
    ]
    step = judge(
        settings_of(with_billing(after)),
        installed_by(settings_of(with_billing(before)), None),
        {},
        SOURCE,
    )
    assert [v.setting for v in step.verdicts if v.kind is Kind.REFUSED] == []
    moved = installed_by(settings_of(with_billing(after)), None)
    retirement = judge(settings_of(with_billing(after, retire=True)), moved, {}, SOURCE)
    assert [(v.setting, v.kind) for v in retirement.verdicts] == [("kiam:retire", Kind.SEQUENCED)]

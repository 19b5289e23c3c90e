"""Taking over a running kiam: in every phase the conditions that keep credentials flowing hold."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from kiam_eks.invariants import check_all
from kiam_eks.invariants.recorded import resources_from_recording
from kiam_eks.settings import SettingsError, settings_from_stack_file
from kiam_eks.settings.adoption import Adoption, ObjectTakeover, Phase
from kiam_eks.settings.base import UNDECRYPTED_SECRET
from kiam_eks.settings.loader import read_stack_file, settings_from_values
from kiam_eks.settings.stack import StackSettings
from tests.conftest import base_config, expected_of, pod_spec, run_program
from tools.mock_engine import PROJECT_DIR, Recording

PHASES = ["servers", "takeover", "complete"]
CA_CERT = "-----BEGIN CERTIFICATE-----\nexisting install CA\n-----END CERTIFICATE-----\n"
CA_KEY = "-----BEGIN EC PRIVATE KEY-----\nexisting install CA key\n-----END EC PRIVATE KEY-----\n"
OLD_SERVER_LABELS = {"app": "kiam", "role": "server"}
OLD_AGENT_LABELS = {"app": "kiam", "role": "agent"}
PHASE_FILES = sorted((PROJECT_DIR / "docs" / "migration").glob("Pulumi.*.yaml"))


def adoption_config(phase: str) -> dict[str, Any]:
    return base_config(
        namespace={"name": "kube-system", "create": False},
        server={"serviceName": "kiam-server", "grpcPort": 443},
        adoption={
            "phase": phase,
            "agentDaemonSetName": "kiam-agent",
            "agentPodLabels": OLD_AGENT_LABELS,
            "serverPodLabels": OLD_SERVER_LABELS,
            "caCertificate": CA_CERT,
            "caPrivateKey": CA_KEY,
        },
    )


@pytest.fixture(scope="module", params=PHASES)
def phase_run(request: pytest.FixtureRequest) -> tuple[str, Recording]:
    return request.param, run_program(adoption_config(request.param))


def test_every_phase_keeps_every_guarantee(phase_run: tuple[str, Recording]) -> None:
    phase, run = phase_run
    assert check_all(resources_from_recording(run), expected_of(adoption_config(phase))) == []


def test_same_ca_in_every_phase(phase_run: tuple[str, Recording]) -> None:
    """Old agents trust the new servers and the new servers trust old agents."""
    rec = phase_run[1]
    assert rec.by_type("tls:index/selfSignedCert:SelfSignedCert") == []
    assert {k.name for k in rec.by_type("tls:index/privateKey:PrivateKey")} == {
        "kiam-tls-server",
        "kiam-tls-agent",
    }
    leaves = rec.by_type("tls:index/locallySignedCert:LocallySignedCert")
    assert sorted(leaf.name for leaf in leaves) == ["kiam-tls-agent", "kiam-tls-server"]
    for leaf in leaves:
        assert leaf.inputs["caCertPem"] == CA_CERT
        assert leaf.inputs["caPrivateKeyPem"] == CA_KEY
        assert "caPrivateKeyPem" in leaf.secret_paths
    # Both Secrets in every phase, phase servers too.
    secrets = rec.by_type("kubernetes:core/v1:Secret")
    assert sorted(secret.name for secret in secrets) == ["kiam-tls-agent", "kiam-tls-server"]
    for secret in secrets:
        assert secret.inputs["stringData"]["ca.crt"] == CA_CERT


def test_new_servers_answer_on_the_old_service_name_and_port(
    phase_run: tuple[str, Recording],
) -> None:
    rec = phase_run[1]
    deployment = rec.one("kubernetes:apps/v1:Deployment")
    container = pod_spec(deployment)["containers"][0]
    assert "--bind=0.0.0.0:443" in container["args"]
    assert container["ports"][0] == {"name": "grpc", "containerPort": 443, "protocol": "TCP"}
    # Non-root and without capabilities even on 443: the namespaced sysctl opens the port.
    assert pod_spec(deployment)["securityContext"]["sysctls"] == [
        {"name": "net.ipv4.ip_unprivileged_port_start", "value": "443"}
    ]
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    sans = rec.one("tls:index/certRequest:CertRequest", "kiam-tls-server").inputs["dnsNames"]
    assert {
        "kiam-server",
        "kiam-server.kube-system",
        "kiam-server.kube-system.svc.cluster.local",
    } <= set(sans)


def test_new_server_pods_carry_the_labels_the_old_service_selects(
    phase_run: tuple[str, Recording],
) -> None:
    """So the Service the agents dial is never empty: it selects old and new servers alike."""
    labels = pod_spec_labels(phase_run[1].one("kubernetes:apps/v1:Deployment"))
    assert labels.items() >= OLD_SERVER_LABELS.items()


def pod_spec_labels(reg: Any) -> dict[str, str]:
    labels: dict[str, str] = reg.inputs["spec"]["template"]["metadata"]["labels"]
    return labels


def test_phase_servers_leaves_the_old_service_and_agents_in_charge() -> None:
    rec = run_program(adoption_config("servers"))
    assert rec.by_type("kubernetes:core/v1:Service") == []
    assert rec.by_type("kubernetes:apps/v1:DaemonSet") == []
    assert [r.name for r in rec.by_type("kubernetes:core/v1:ServiceAccount")] == ["kiam-server"]
    deployment = rec.one("kubernetes:apps/v1:Deployment")
    # Nothing written for the checker: the guarantees know the agents are external from the
    # settings (the phase), so the Deployment's metadata is that of every phase.
    complete = run_program(adoption_config("complete")).one("kubernetes:apps/v1:Deployment")
    assert deployment.inputs["metadata"] == complete.inputs["metadata"]
    assert set(deployment.inputs["metadata"]["annotations"]) == {"pulumi.com/waitFor"}
    assert rec.by_type("kubernetes:core/v1:Namespace") == []


@pytest.mark.parametrize("phase", ["takeover", "complete"])
def test_takeover_adopts_the_agent_daemon_set_in_place(phase: str) -> None:
    """Same name, namespace and (immutable) selector: one DaemonSet, rolled in place, so two
    agents never hold the metadata iptables rule on one node."""
    rec = run_program(adoption_config(phase))
    (ds,) = rec.by_type("kubernetes:apps/v1:DaemonSet")
    assert (ds.inputs["metadata"]["name"], ds.inputs["metadata"]["namespace"]) == (
        "kiam-agent",
        "kube-system",
    )
    assert ds.inputs["spec"]["selector"] == {"matchLabels": OLD_AGENT_LABELS}
    assert pod_spec_labels(ds).items() >= OLD_AGENT_LABELS.items()
    assert ds.inputs["spec"]["updateStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": "10%"},
    }
    args = pod_spec(ds)["containers"][0]["args"]
    assert "--server-address=kiam-server.kube-system.svc.cluster.local:443" in args
    service = rec.one("kubernetes:core/v1:Service")
    assert service.inputs["metadata"]["name"] == "kiam-server"
    assert service.inputs["spec"]["ports"][0]["port"] == 443
    # The adopted Service selects the new servers, which are Ready before it changes.
    assert (
        service.inputs["spec"]["selector"].items()
        <= pod_spec_labels(rec.one("kubernetes:apps/v1:Deployment")).items()
    )


@pytest.mark.parametrize(
    ("phase", "upsert"), [("servers", True), ("takeover", True), ("complete", False)]
)
def test_existing_objects_are_adopted_only_while_taking_over(phase: str, upsert: bool) -> None:
    provider = run_program(adoption_config(phase)).one("pulumi:providers:kubernetes")
    assert provider.inputs["upsertExistingObjects"] == ("true" if upsert else "false")


def test_no_adoption_no_upsert(base_run: Recording) -> None:
    assert base_run.one("pulumi:providers:kubernetes").inputs["upsertExistingObjects"] == "false"


def test_a_provider_sdk_without_the_upsert_switch_is_given_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """pulumi-kubernetes before 4.29 (the real-engine suite's 4.25) has no switch: every create
    upserts there. Passing it anyway failed the e2e program with a TypeError."""
    import kiam_eks.program.kubernetes as kubernetes

    values = {k.removeprefix("kiam:"): v for k, v in adoption_config("takeover").items()}
    settings = settings_from_values(values, "test")
    assert kubernetes.upsert_option(settings) == {"upsert_existing_objects": True}
    monkeypatch.setattr(kubernetes, "SDK_HAS_UPSERT_SWITCH", False)
    assert kubernetes.upsert_option(settings) == {}


def test_the_required_sdk_has_the_upsert_switch() -> None:
    """The package's dependencies must not admit an SDK that silently upserts every create."""
    import re

    requirements = (PROJECT_DIR / "pyproject.toml").read_text()
    bound = re.search(r'^    "pulumi-kubernetes>=(\d+)\.(\d+)', requirements, re.MULTILINE)
    assert bound is not None and (int(bound[1]), int(bound[2])) >= (4, 29)
    import kiam_eks.program.kubernetes as kubernetes

    assert kubernetes.SDK_HAS_UPSERT_SWITCH


def test_adoption_needs_the_existing_namespace() -> None:
    config = adoption_config("servers")
    config["kiam:namespace"] = {"name": "kube-system"}
    values = {k.removeprefix("kiam:"): v for k, v in config.items()}
    with pytest.raises(SettingsError) as caught:
        settings_from_values(values, "stacks/Pulumi.x.yaml")
    assert caught.value.problems == [
        "kiam:namespace.create must be false with kiam:adoption: the running install's namespace "
        "exists already (set kiam:namespace.name to it)"
    ]


def test_adoption_needs_pem_material() -> None:
    config = adoption_config("servers")
    config["kiam:adoption"]["caCertificate"] = "not a certificate"
    values = {k.removeprefix("kiam:"): v for k, v in config.items()}
    with pytest.raises(SettingsError) as caught:
        settings_from_values(values, "stacks/Pulumi.x.yaml")
    assert caught.value.problems == [
        "kiam:adoption: caCertificate is not a PEM certificate (-----BEGIN CERTIFICATE-----)"
    ]


@pytest.mark.parametrize("path", PHASE_FILES, ids=[p.stem for p in PHASE_FILES])
def test_each_documented_phase_plans_cleanly(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tools.plan import main

    assert main(["--config-file", str(path), "--no-validate"]) == 0
    assert "✓ all invariants hold" in capsys.readouterr().out
    assert read_stack_file(path)["kiam:adoption"]["phase"] in PHASES


def test_the_documented_phases_are_the_three_phases_in_order() -> None:
    phases = [read_stack_file(p)["kiam:adoption"]["phase"] for p in PHASE_FILES]
    assert phases == PHASES
    # Apart from the phase, the files agree: the move changes one setting at a time.
    others = [
        {k: v for k, v in read_stack_file(p).items() if k != "kiam:adoption"} for p in PHASE_FILES
    ]
    assert others[0] == others[1] == others[2]


# What a running install has under this program's names (upstream and Helm: the ServiceAccounts,
# the Service its agents dial, the agent DaemonSet); everything else the stack makes is new.
TAKEN_OVER = {
    ("kubernetes:core/v1:ServiceAccount", "kiam-server"),
    ("kubernetes:core/v1:ServiceAccount", "kiam-agent"),
    ("kubernetes:core/v1:Service", "kiam-server"),
    ("kubernetes:apps/v1:DaemonSet", "kiam-agent"),
}
# Every Kubernetes object an adopting stack makes (the namespace is the running install's).
ADOPTING_OBJECTS = TAKEN_OVER | {
    ("kubernetes:apps/v1:Deployment", "kiam-server"),
    ("kubernetes:core/v1:Secret", "kiam-tls-agent"),
    ("kubernetes:core/v1:Secret", "kiam-tls-server"),
    ("kubernetes:policy/v1:PodDisruptionBudget", "kiam-server"),
    ("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole", "kiam-server"),
    ("kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding", "kiam-server"),
}
# In phase servers the running install keeps its agents, their account and the Service.
LEFT_TO_THE_RUNNING_INSTALL = {
    ("kubernetes:core/v1:ServiceAccount", "kiam-agent"),
    ("kubernetes:core/v1:Service", "kiam-server"),
    ("kubernetes:apps/v1:DaemonSet", "kiam-agent"),
}


@pytest.mark.parametrize(
    ("phase", "taking_over"), [("servers", True), ("takeover", True), ("complete", False)]
)
def test_what_the_running_install_has_is_taken_over_by_force_and_kept_until_complete(
    phase: str, taking_over: bool
) -> None:
    """Forced, because its installer's field manager owns those fields (the API server refuses
    a changed selector or label otherwise); kept on delete, so a rollback leaves the running
    install its objects. The DaemonSet is kept but never forced: a forced apply would merge the
    old template into the new one (its container `kiam` would run beside `kiam-agent`), so the
    runbook replaces it (`--cascade=orphan`) and a skipped step fails on a conflict."""
    rec = run_program(adoption_config(phase))
    kubernetes = [r for r in rec.registrations if r.type.startswith("kubernetes:")]
    made = ADOPTING_OBJECTS - (LEFT_TO_THE_RUNNING_INSTALL if phase == "servers" else set())
    assert len(kubernetes) == len(made)
    assert {(r.type, r.name) for r in kubernetes} == made
    for r in kubernetes:
        annotations = (r.inputs.get("metadata") or {}).get("annotations") or {}
        forced = annotations.get("pulumi.com/patchForce") == "true"
        key = (r.type, r.name)
        if key in TAKEN_OVER:
            assert r.retain_on_delete == taking_over, key
            assert forced == (taking_over and r.type != "kubernetes:apps/v1:DaemonSet"), key
        else:
            assert not r.retain_on_delete, key
            assert not forced, key
    present = {(r.type, r.name) for r in kubernetes} & TAKEN_OVER
    expected = (
        TAKEN_OVER if phase != "servers" else {("kubernetes:core/v1:ServiceAccount", "kiam-server")}
    )
    assert present == expected


def test_without_adoption_nothing_is_forced_or_kept(base_run: Recording) -> None:
    # Every resource of the base stack (tests/test_plan.py counts the same 36 in the dev plan).
    assert len(base_run.registrations) == 36
    for r in base_run.registrations:
        annotations = (r.inputs.get("metadata") or {}).get("annotations") or {}
        assert "pulumi.com/patchForce" not in annotations
        assert not r.retain_on_delete


# The adoption state each kind of stack gets, field by field (`StackSettings.adoption_state`).
# Written out by hand, from docs/migration.md, so a change of any answer fails here.
HELM_SERVER_LABELS = {"app": "kiam", "component": "server", "release": "kiam"}
HELM_AGENT_LABELS = {"app": "kiam", "component": "agent", "release": "kiam"}
OUR_AGENT_SELECTOR = {"app.kubernetes.io/name": "kiam", "app.kubernetes.io/component": "agent"}
NEITHER = ObjectTakeover(forced=False, kept_on_delete=False)
FORCED_AND_KEPT = ObjectTakeover(forced=True, kept_on_delete=True)
KEPT_ONLY = ObjectTakeover(forced=False, kept_on_delete=True)
RUNNING_CA = (SecretStr(CA_CERT), SecretStr(CA_KEY))


def helm_adoption_config(phase: str) -> dict[str, Any]:
    """The Helm chart's release `kiam` (docs/migration.md's table): other labels, same names; the
    DaemonSet name left to its default, the upstream one the chart uses too."""
    config = adoption_config(phase)
    adoption = config["kiam:adoption"]
    del adoption["agentDaemonSetName"]
    adoption["agentPodLabels"] = HELM_AGENT_LABELS
    adoption["serverPodLabels"] = HELM_SERVER_LABELS
    return config


def _upstream(phase: Phase, **answers: Any) -> Adoption:
    return Adoption(
        phase=phase,
        agent_daemon_set_name="kiam-agent",
        agent_selector=OLD_AGENT_LABELS,
        agent_extra_labels=OLD_AGENT_LABELS,
        server_pod_extra_labels=OLD_SERVER_LABELS,
        running_install_ca=RUNNING_CA,
        **answers,
    )


TAKING_OVER = {
    "adopts_existing_objects": True,
    "server_account": FORCED_AND_KEPT,
    "service": FORCED_AND_KEPT,
    "agent_account": FORCED_AND_KEPT,
    "agent_daemon_set": KEPT_ONLY,
}
ADOPTION_STATES: dict[str, tuple[dict[str, Any], Adoption]] = {
    "no adoption": (
        base_config(),
        Adoption(
            phase=None,
            stack_owns_agents=True,
            stack_owns_service=True,
            adopts_existing_objects=False,
            server_account=NEITHER,
            service=NEITHER,
            agent_account=NEITHER,
            agent_daemon_set=NEITHER,
            agent_daemon_set_name="kiam-agent",
            agent_selector=OUR_AGENT_SELECTOR,
            agent_extra_labels={},
            server_pod_extra_labels={},
            running_install_ca=None,
        ),
    ),
    "upstream servers": (
        adoption_config("servers"),
        _upstream("servers", stack_owns_agents=False, stack_owns_service=False, **TAKING_OVER),
    ),
    "upstream takeover": (
        adoption_config("takeover"),
        _upstream("takeover", stack_owns_agents=True, stack_owns_service=True, **TAKING_OVER),
    ),
    "upstream complete": (
        adoption_config("complete"),
        _upstream(
            "complete",
            stack_owns_agents=True,
            stack_owns_service=True,
            adopts_existing_objects=False,
            server_account=NEITHER,
            service=NEITHER,
            agent_account=NEITHER,
            agent_daemon_set=NEITHER,
        ),
    ),
    "helm takeover": (
        helm_adoption_config("takeover"),
        Adoption(
            phase="takeover",
            stack_owns_agents=True,
            stack_owns_service=True,
            agent_daemon_set_name="kiam-agent",
            agent_selector=HELM_AGENT_LABELS,
            agent_extra_labels=HELM_AGENT_LABELS,
            server_pod_extra_labels=HELM_SERVER_LABELS,
            running_install_ca=RUNNING_CA,
            **TAKING_OVER,
        ),
    ),
    "renamed agent daemon set": (
        base_config(
            namespace={"name": "kube-system", "create": False},
            adoption={
                **adoption_config("complete")["kiam:adoption"],
                "agentDaemonSetName": "legacy-agents",
            },
        ),
        Adoption(
            phase="complete",
            stack_owns_agents=True,
            stack_owns_service=True,
            adopts_existing_objects=False,
            server_account=NEITHER,
            service=NEITHER,
            agent_account=NEITHER,
            agent_daemon_set=NEITHER,
            agent_daemon_set_name="legacy-agents",
            agent_selector=OLD_AGENT_LABELS,
            agent_extra_labels=OLD_AGENT_LABELS,
            server_pod_extra_labels=OLD_SERVER_LABELS,
            running_install_ca=RUNNING_CA,
        ),
    ),
}


def settings_of_config(config: dict[str, Any]) -> StackSettings:
    values = {k.removeprefix("kiam:"): v for k, v in config.items()}
    return settings_from_values(values, "test")


@pytest.mark.parametrize(("config", "expected"), ADOPTION_STATES.values(), ids=ADOPTION_STATES)
def test_the_adoption_state_of_each_kind_of_stack(
    config: dict[str, Any], expected: Adoption
) -> None:
    state = settings_of_config(config).adoption_state
    # Field by field first, so a failure names the answer that changed.
    for name in Adoption.__dataclass_fields__:
        assert getattr(state, name) == getattr(expected, name), name
    assert state == expected


def test_the_adoption_state_is_computed_once() -> None:
    """Every reader gets the same object, made when the settings were validated."""
    settings = settings_of_config(adoption_config("takeover"))
    assert settings.adoption_state is settings.adoption_state


def test_the_phase_files_have_the_upstream_states() -> None:
    """The runbook's own stack files describe the upstream install the table above does; their CA
    is `secure:`, which only the Pulumi CLI decrypts."""
    undecrypted = (SecretStr(UNDECRYPTED_SECRET), SecretStr(UNDECRYPTED_SECRET))
    for path, phase in zip(PHASE_FILES, PHASES, strict=True):
        settings, _ = settings_from_stack_file(path)
        expected = ADOPTION_STATES[f"upstream {phase}"][1]
        assert settings.adoption_state == replace(expected, running_install_ca=undecrypted), path

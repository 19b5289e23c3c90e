"""Scenario 1, install: every example stack through the real CLI; the real scheduler places one
server per dedicated node and one agent on every other node the agents tolerate; agents are
created only once the servers are Ready; a second `up` changes nothing."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from e2e.harness.environment import Environment
from e2e.harness.kube import is_ready
from e2e.harness.pulumi import PulumiStack, Result, read_event_log
from e2e.harness.shape import ClusterShape
from e2e.tests.conftest import EXAMPLE_STACKS, deploy, example_config, fresh_environment


@dataclass
class Installed:
    env: Environment
    stack: PulumiStack
    config: dict[str, Any]
    shape: ClusterShape
    preview: Result
    up: Result
    events: list[dict[str, Any]]
    namespace: str


@pytest.fixture(scope="module", params=EXAMPLE_STACKS)
def installed(
    bin_dir: Path, session_root: Path, request: pytest.FixtureRequest
) -> Iterator[Installed]:
    name = request.param
    with fresh_environment(session_root, bin_dir, f"install-{name}") as env:
        config = example_config(name)
        stack, shape = deploy(env, name, config)
        preview = stack.preview("--diff")
        log = env.root / f"{name}-up.events.jsonl"
        up = stack.up(event_log=log)
        namespace = config.get("kiam:namespace", {}).get("name", "kiam")
        yield Installed(env, stack, config, shape, preview, up, read_event_log(log), namespace)
        stack.destroy()


def test_one_server_on_each_dedicated_node(installed: Installed) -> None:
    env = installed.env
    group = installed.stack.outputs()["nodeGroupName"]
    dedicated = env.dedicated_nodes(group)
    node_group = installed.config["kiam:nodeGroup"]
    assert len(dedicated) == node_group["desiredSize"]
    servers = env.pods(installed.namespace, "server")
    assert all(is_ready(p) for p in servers)
    assert sorted(p["spec"]["nodeName"] for p in servers) == dedicated  # one each, on those nodes


def test_one_agent_on_every_node_the_agents_tolerate_and_none_elsewhere(
    installed: Installed,
) -> None:
    env = installed.env
    agents = env.pods(installed.namespace, "agent")
    assert all(is_ready(p) for p in agents)
    on = sorted(p["spec"]["nodeName"] for p in agents)
    tolerated = sorted(
        n["metadata"]["name"]
        for n in installed.shape.nodes
        if not n["metadata"]["name"].startswith("untolerated-")
    )
    assert on == tolerated  # exactly one each: workers and the pools the agents tolerate
    assert not set(on) & set(env.dedicated_nodes())


def test_agents_are_created_only_after_the_servers_are_ready(installed: Installed) -> None:
    events = installed.events

    def sequence(kind: str, type_: str, name: str) -> int:
        # By name: a stack that manages the Pod Identity agent add-on has another DaemonSet
        # (its stand-in), which does not wait for the servers.
        return next(
            int(e["sequence"])
            for e in events
            if kind in e
            and e[kind]["metadata"]["type"] == type_
            and e[kind]["metadata"]["urn"].endswith(f"::{name}")
            and e[kind]["metadata"]["op"] == "create"
        )

    # The engine finished the Deployment (its await: every server Ready) before it began the DaemonSet.
    deployment_done = sequence("resOutputsEvent", "kubernetes:apps/v1:Deployment", "kiam-server")
    daemon_set_begun = sequence("resourcePreEvent", "kubernetes:apps/v1:DaemonSet", "kiam-agent")
    assert deployment_done < daemon_set_begun
    # And the objects agree: the DaemonSet is no older than the Deployment's availability.
    kube, ns = installed.env.kube, installed.namespace
    deployment = kube.get(f"/apis/apps/v1/namespaces/{ns}/deployments/kiam-server")
    available = next(c for c in deployment["status"]["conditions"] if c["type"] == "Available")
    daemon_set = kube.get(f"/apis/apps/v1/namespaces/{ns}/daemonsets/kiam-agent")
    assert daemon_set["metadata"]["creationTimestamp"] >= available["lastTransitionTime"]


def test_a_run_leaves_no_file_of_its_own_behind(installed: Installed) -> None:
    """After a preview and an `up`, the stack's temporary directory holds only the Kubernetes
    provider's copies of the kubeconfig it was configured with: pulumi-kubernetes writes one for
    Helm on each configuration with a `kubeconfig` and never removes it (provider/pkg/provider
    util.go `writeKubeconfigToFile`, `os.CreateTemp("", "kubeconfig")`; provider.go `Configure`).
    Nothing of the program's: no kubeconfig, client key or certificate (program/kube_api.py)."""
    left = sorted(p.name for p in installed.stack.temp_dir.iterdir())
    assert left, "the provider wrote its kubeconfig copies elsewhere: TMPDIR is not honoured"
    assert [name for name in left if not re.fullmatch(r"kubeconfig\d+", name)] == []


def test_a_second_up_changes_nothing(installed: Installed) -> None:
    # --expect-no-changes fails the command on any step that is not `same`: no perpetual diff.
    result = installed.stack.up("--expect-no-changes")
    assert "Resources:" in result.output and "unchanged" in result.output


def test_the_tls_secrets_hold_certificates_with_exactly_the_requested_names(
    installed: Installed,
) -> None:
    import base64

    from cryptography import x509

    from kiam_eks.contracts import names

    kube, ns = installed.env.kube, installed.namespace
    server_config = installed.config.get("kiam:server", {})
    service = server_config.get("serviceName", "kiam-server")
    certs = {}
    for role in ("server", "agent"):
        secret = kube.get(f"/api/v1/namespaces/{ns}/secrets/kiam-{role}-certificate")
        assert secret["type"] == "kubernetes.io/tls"
        assert sorted(secret["data"]) == ["ca.crt", "tls.crt", "tls.key"]
        certs[role] = {k: base64.b64decode(v) for k, v in secret["data"].items()}
    server = x509.load_pem_x509_certificate(certs["server"]["tls.crt"])
    sans = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == names.service_dns_names(
        service, ns, "cluster.local"
    )
    assert [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    # Both sides trust the same CA, which signed both.
    assert certs["server"]["ca.crt"] == certs["agent"]["ca.crt"]
    ca = x509.load_pem_x509_certificate(certs["server"]["ca.crt"])
    server.verify_directly_issued_by(ca)
    x509.load_pem_x509_certificate(certs["agent"]["tls.crt"]).verify_directly_issued_by(ca)

"""The offline plan command: what it prints, what it writes, and how it fails."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import base_config
from tools import config_reference
from tools.mock_engine import PROJECT_DIR
from tools.plan import main


def test_plans_the_dev_stack_and_writes_the_rendered_plan(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--stack", "dev", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "Offline plan of stack dev (stacks/Pulumi.dev.yaml)" in out
    assert "servers       2 x quay.io/uswitch/kiam:v4.2, sessions 60m (refresh 20m)" in out
    assert (
        "✓ Deployment kiam-server follows NodeGroup kiam-server-nodes's name (nodeSelector)" in out
    )
    assert "✓ DaemonSet kiam-agent waits for Deployment kiam-server (Ready), Secret" in out
    assert "✓ all invariants hold" in out
    assert "✓ 11 manifests valid (Kubernetes 1.33, strict)" in out
    assert sorted(p.name for p in (tmp_path / "manifests").iterdir()) == [
        "clusterrole-kiam-server.yaml",
        "clusterrolebinding-kiam-server.yaml",
        "daemonset-kiam-kiam-agent.yaml",
        "deployment-kiam-kiam-server.yaml",
        "namespace-kiam.yaml",
        "poddisruptionbudget-kiam-kiam-server.yaml",
        "secret-kiam-kiam-agent-certificate.yaml",
        "secret-kiam-kiam-server-certificate.yaml",
        "service-kiam-kiam-server.yaml",
        "serviceaccount-kiam-kiam-agent.yaml",
        "serviceaccount-kiam-kiam-server.yaml",
    ]
    assert sorted(p.name for p in (tmp_path / "iam").iterdir()) == [
        "kiam-iam-server-node.json",
        "kiam-iam-server.json",
    ]
    resources = json.loads((tmp_path / "resources.json").read_text())
    assert len(resources) == 36
    assert set(resources[0]) == {"urn", "type", "name", "parent", "dependencies", "inputs"}


def test_written_plan_contains_no_secret(tmp_path: Path) -> None:
    assert main(["--stack", "dev", "--out", str(tmp_path), "--no-validate"]) == 0
    secret = yaml.safe_load(
        (tmp_path / "manifests" / "secret-kiam-kiam-server-certificate.yaml").read_text()
    )
    assert secret["stringData"] == {
        "tls.crt": "[redacted]",
        "tls.key": "[redacted]",
        "ca.crt": "[redacted]",
    }
    everything = "".join(p.read_text() for p in tmp_path.rglob("*") if p.is_file())
    assert "PRIVATE KEY" not in everything
    assert "k8s-aws-v1" not in everything
    provider = next(
        r
        for r in json.loads((tmp_path / "resources.json").read_text())
        if r["type"] == "pulumi:providers:kubernetes"
    )
    assert provider["inputs"]["kubeconfig"] == "[redacted]"


def test_plans_an_arbitrary_stack_file(
    tmp_stack: Callable[[Any], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_stack(base_config(server={"replicas": 2}), name="Pulumi.branch.yaml")
    assert main(["--config-file", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"Offline plan of stack branch ({path})" in out
    assert "servers       2 x" in out


def test_plans_a_kubernetes_version_newer_than_the_validators_schemas_and_says_so(
    tmp_stack: Callable[[Any], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    from kubernetes_validate.utils import latest_version

    newest = latest_version().removesuffix(".0")
    path = tmp_stack(base_config(cluster={"kubernetesVersion": "1.99"}))
    assert main(["--config-file", str(path)]) == 0
    out = capsys.readouterr().out
    assert (
        f"✓ 11 manifests valid (Kubernetes 1.99 with the {newest} schemas, the nearest "
        "kubernetes-validate ships, strict)"
    ) in out


def plan_command_line(*args: str) -> subprocess.CompletedProcess[str]:
    """`python -m tools.plan ARGS` as users run it: a fresh process."""
    return subprocess.run(
        [sys.executable, "-m", "tools.plan", *args],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        check=False,
    )


def files_under(folder: Path) -> dict[Path, str]:
    return {
        path.relative_to(folder): path.read_text()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def test_invalid_settings_exit_2_with_the_message_and_no_traceback(
    tmp_stack: Callable[[Any], Path],
) -> None:
    path = tmp_stack(base_config(server={"replicas": 1}))
    result = plan_command_line("--config-file", str(path))
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == (
        f"{path}: invalid kiam settings (1 problem):\n"
        "  - kiam:server.replicas: Input should be greater than or equal to 2 (got 1)\n"
    )


def test_a_missing_stack_file_is_a_settings_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--stack", "nosuch"]) == 2
    assert capsys.readouterr().err == (
        "stacks/Pulumi.nosuch.yaml: invalid kiam settings (1 problem):\n  - the stack file does not exist\n"
    )


def test_configuration_reference_matches_the_models() -> None:
    assert config_reference.REFERENCE.read_text() == config_reference.render(), (
        "docs/configuration.md is stale: run python -m tools.config_reference --write"
    )


def test_the_command_line_plan_validates_in_a_second_process() -> None:
    """As users run it: a fresh single-threaded process, so the validators load in a forked one."""
    result = plan_command_line("--stack", "production")
    assert result.returncode == 0, result.stderr
    assert (
        "✓ 13 manifests valid (Kubernetes 1.33, strict; 2 patches without required fields, which "
        "the patched object holds)\n  ✓ 4 IAM roles lint clean (parliament)" in result.stdout
    )


def test_the_command_line_plan_ends_with_its_files_written_and_its_output_flushed(
    tmp_path: Path,
) -> None:
    """The command line skips the interpreter's teardown (`exit_now`): what it printed and wrote
    is all there, the same as the plan run in this process writes."""
    result = plan_command_line("--stack", "dev", "--out", str(tmp_path / "cli"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.endswith("manifests and 2 IAM roles.\n")
    assert main(["--stack", "dev", "--out", str(tmp_path / "here"), "--no-validate"]) == 0
    written = files_under(tmp_path / "here")
    assert written
    assert files_under(tmp_path / "cli") == written


def test_the_command_line_plan_counts_the_objects_validated_against_the_crds(
    tmp_stack: Callable[[Any], Path],
) -> None:
    """The forked validators' process says which manifests its CRD schemas validated: the two
    ServiceMonitors and the PrometheusRule (tests/test_monitoring.py)."""
    path = tmp_stack(base_config(monitoring={"enabled": True, "labels": {"release": "p"}}))
    result = plan_command_line("--config-file", str(path))
    assert result.returncode == 0, result.stderr
    assert (
        "✓ 15 manifests valid (Kubernetes 1.33; 3 against the Prometheus Operator's CRDs, strict)"
        in result.stdout
    )


def retired_dev_stack() -> dict[str, Any]:
    """The dev example on three nodes with one application moved to Pod Identity, retiring kiam."""
    config = yaml.safe_load((PROJECT_DIR / "stacks" / "Pulumi.dev.yaml").read_text())["config"]
    config["kiam:nodeGroup"] = {**config["kiam:nodeGroup"], "minSize": 3, "desiredSize": 3}
    config["kiam:applications"] = {
        "api": {
            "namespace": "shop",
            "roleName": "shop-api",
            "servedBy": "podIdentity",
            "serviceAccount": "api",
        }
    }
    return {**config, "kiam:retire": True}


def test_the_plan_of_a_retired_stack_says_what_retirement_rolls_removes_and_keeps(
    tmp_stack: Callable[[Any], Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_stack(retired_dev_stack(), name="Pulumi.retired.yaml")
    assert main(["--config-file", str(path), "--out", str(tmp_path / "plan")]) == 0
    out = capsys.readouterr().out
    key_settings = out.split("Key settings\n", 1)[1].split("\n\n", 1)[0]
    assert key_settings.splitlines() == [
        "  cluster       dev in account 111122223333, eu-west-1, Kubernetes 1.33",
        "  retired       kiam:retire: the plan of the `pulumi up` that retires kiam (the stack's "
        "last outputs show it installed)",
        "  rolls         the agents of DaemonSet kiam/kiam-agent to --iptables-remove, 10 of 100 "
        "nodes at a time (maxUnavailable 10%): 10 restarts of about 30s, about 5 min; `pulumi up` "
        "waits up to 10 min, before anything goes",
        "  removes       28 resources of the install: Agent kiam-agent (2), Iam kiam-iam (7), "
        "Namespace kiam-namespace (1), Server kiam-server (6), ServerNodeGroup "
        "kiam-server-nodes (2), Tls kiam-tls (10)",
        "  keeps         2 resources of the applications: PodIdentityAssociation "
        "kiam-app-api-pod-identity, Role kiam-app-api",
        "  later ups     read the stack retired: no patch (the first forgets the one kept, "
        "touching nothing)",
        "  applications  api: pods in shop run as service account api (servedBy podIdentity)",
    ]
    assert "dial None" not in out and "server may assume" not in out
    assert "      kubernetes:apps/v1:DaemonSetPatch kiam-agent-retirement\n" in out
    assert (
        "✓ 1 manifests valid (Kubernetes 1.33, strict; 1 patch without required fields, which "
        "the patched object holds)"
    ) in out
    assert sorted(p.name for p in (tmp_path / "plan" / "manifests").iterdir()) == [
        "daemonset-kiam-kiam-agent.yaml"
    ]


def test_a_patch_is_validated_strictly_but_for_required_fields() -> None:
    from tools.validate import kubernetes_findings

    patch = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "kiam-agent", "namespace": "kiam"},
        "spec": {
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}
        },
    }
    file = "daemonset-kiam-kiam-agent.yaml"
    # A whole DaemonSet needs its selector and template; a patch leaves them to the object.
    assert [f.message for f in kubernetes_findings({file: patch}, "1.33")] == [
        "spec: 'selector' is a required property"
    ]
    assert kubernetes_findings({file: patch}, "1.33", patches={file}) == []
    # Everything else still holds: an unknown field, a wrong type.
    wrong = {
        **patch,
        "spec": {
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdat": {}},
            "minReadySeconds": "5",
        },
    }
    assert [str(f) for f in kubernetes_findings({file: wrong}, "1.33", patches={file})] == [
        f"{file}: kubernetes-validate 1.33.0 strict (a patch: required fields not checked): "
        "spec.minReadySeconds: '5' is not of type 'integer', 'null'",
        f"{file}: kubernetes-validate 1.33.0 strict (a patch: required fields not checked): "
        "spec.updateStrategy: Additional properties are not allowed ('rollingUpdat' was unexpected)",
    ]


def test_the_bench_replaces_its_table_and_keeps_the_sections_after_it() -> None:
    from tools.bench import MARKER, with_table

    body = f"# Performance\n\nintro\n\n{MARKER}\nold table\n\n## The real engine\n\nkept\n"
    assert with_table(body, "new table\n") == (
        f"# Performance\n\nintro\n\n{MARKER}\nnew table\n\n## The real engine\n\nkept\n"
    )
    assert with_table(f"intro\n{MARKER}\nold\n", "new") == f"intro\n{MARKER}\nnew\n"


def test_each_kubernetes_schema_is_parsed_once_per_process() -> None:
    """kubernetes-validate parses `_definitions.json` on every `validate`; the plan's validators
    cache it (tools/validate.py `cache_schemas`), and the warm-up parses it before the plan
    arrives, so validating the plan reads no schema the warm-up read already."""
    import kubernetes_validate.utils as utils

    from tools import validate

    validate.preload("1.33")
    cached = utils.schema_contents
    assert hasattr(cached, "cache_info")
    before = cached.cache_info()
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "again"}}
    assert validate.kubernetes_findings({"ns.yaml": namespace}, "1.33") == []
    after = cached.cache_info()
    assert (after.misses, after.hits - before.hits) == (before.misses, 2)
    validate.cache_schemas()  # a second call wraps nothing twice
    assert utils.schema_contents is cached


def test_the_resource_tree_reads_the_same_whatever_order_the_sdk_registered_in() -> None:
    """Children made inside an `apply` register in the order their inputs resolve, which varies
    between runs; the plan lists each component's children by type and name."""
    from tools.mock_engine import Recording, Registration
    from tools.plan import _tree

    stack = "urn:pulumi:s::p::pulumi:pulumi:Stack::p-s"

    def registration(type_: str, name: str, parent: str) -> Registration:
        return Registration(
            urn=f"urn:pulumi:s::p::{type_}::{name}",
            id="",
            type=type_,
            name=name,
            parent=parent,
            custom=False,
            provider="",
            dependencies=(),
            property_dependencies={},
            delete_before_replace=False,
            custom_timeouts={},
            ignore_changes=(),
            replace_on_changes=(),
            inputs={},
            secret_paths=(),
        )

    component = registration("kiam:index:Tls", "kiam-tls", stack)
    children = [
        registration("tls:index/privateKey:PrivateKey", "kiam-tls-server", component.urn),
        registration("tls:index/privateKey:PrivateKey", "kiam-tls-agent", component.urn),
        registration("kubernetes:core/v1:Secret", "kiam-tls-server", component.urn),
    ]
    trees = [
        _tree(Recording(registrations=[component, *ordering], stack_outputs={}))
        for ordering in (children, children[::-1], children[1:] + children[:1])
    ]
    assert trees[0] == [
        "kiam:index:Tls kiam-tls",
        "  kubernetes:core/v1:Secret kiam-tls-server",
        "  tls:index/privateKey:PrivateKey kiam-tls-agent",
        "  tls:index/privateKey:PrivateKey kiam-tls-server",
    ]
    assert trees[1] == trees[0]
    assert trees[2] == trees[0]

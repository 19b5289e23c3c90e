"""Which kubeconfig a health gate reads a cluster with, and an `exec` credential run once."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import yaml

from kiam_eks.settings import settings_from_stack_file
from tests.fleet_fakes import FakeEngine, project
from tests.kubeconfigs import kubeconfig_document
from tools.fleet.fleet_file import load_fleet_file
from tools.fleet.kubeconfig import kubeconfig_for, with_exec_resolved
from tools.mock_engine import PROJECT_DIR

SETTINGS, _ = settings_from_stack_file(PROJECT_DIR / "stacks" / "Pulumi.dev.yaml")


def kubeconfig(user: dict[str, object]) -> str:
    return yaml.safe_dump(kubeconfig_document(user))


def test_the_fleet_files_kubeconfig_comes_first(tmp_path: Path) -> None:
    path = project(
        tmp_path,
        ["dev"],
        {"waves": [{"name": "a", "stacks": ["dev"]}], "stacks": {"dev": {"kubeconfig": "k.yaml"}}},
    )
    engine = FakeEngine(config={("dev", "kiam:kubeconfig"): "unused"})
    fleet = load_fleet_file(path)
    assert (
        kubeconfig_for(fleet, engine, "dev", SETTINGS, tmp_path / ".fleet") == tmp_path / "k.yaml"
    )
    assert not (tmp_path / ".fleet").exists()


def test_the_stacks_own_kubeconfig_is_written_for_the_owner_only(tmp_path: Path) -> None:
    fleet = load_fleet_file(
        project(tmp_path, ["dev"], {"waves": [{"name": "a", "stacks": ["dev"]}]})
    )
    text = kubeconfig({"token": "t"})
    engine = FakeEngine(config={("dev", "kiam:kubeconfig"): text})
    written = kubeconfig_for(fleet, engine, "dev", SETTINGS, tmp_path / ".fleet")
    assert written == tmp_path / ".fleet" / "kubeconfig-dev.yaml"
    assert written.read_text() == text
    assert stat.S_IMODE(written.stat().st_mode) == 0o600


def test_an_exec_credential_is_run_once_and_its_token_kept(tmp_path: Path) -> None:
    plugin = tmp_path / "get-token.py"
    plugin.write_text(
        "import json, os, sys\n"
        "print(json.dumps({'kind': 'ExecCredential', 'status': "
        "{'token': sys.argv[1] + '-' + os.environ['CLUSTER']}}))\n"
    )
    source = tmp_path / "kubeconfig.yaml"
    exec_user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": sys.executable,
            "args": [str(plugin), "k8s-aws-v1"],
            "env": [{"name": "CLUSTER", "value": "dev"}],
        }
    }
    source.write_text(kubeconfig(exec_user))
    resolved = with_exec_resolved(source)
    assert resolved == tmp_path / "kubeconfig-token.yaml"
    assert yaml.safe_load(resolved.read_text())["users"] == [
        {"name": "u", "user": {"token": "k8s-aws-v1-dev"}}
    ]
    assert stat.S_IMODE(resolved.stat().st_mode) == 0o600
    # Without an exec user the file is used as it is.
    plain = tmp_path / "plain.yaml"
    plain.write_text(kubeconfig({"token": "t"}))
    assert with_exec_resolved(plain) == plain
    assert yaml.safe_load(plain.read_text())["users"][0]["user"] == {"token": "t"}

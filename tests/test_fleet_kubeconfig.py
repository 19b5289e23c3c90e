"""Which kubeconfig a health gate reads a cluster with, and an `exec` credential run once."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from kiam_eks.settings import settings_from_stack_file
from tests.fleet_fakes import FakeEngine, project
from tests.kubeconfigs import SERVER, kubeconfig_document
from tools.fleet.engine import stack_work_dir
from tools.fleet.fleet_file import load_fleet_file
from tools.fleet.kubeconfig import kubeconfig_for
from tools.mock_engine import PROJECT_DIR

SETTINGS, _ = settings_from_stack_file(PROJECT_DIR / "stacks" / "Pulumi.dev.yaml")


def kubeconfig(user: dict[str, Any]) -> str:
    return yaml.safe_dump(kubeconfig_document(user))


def test_the_fleet_files_kubeconfig_comes_first(tmp_path: Path) -> None:
    """Its relative files lead from its own folder (program/kube_api.py `anchor`)."""
    path = project(
        tmp_path,
        ["dev"],
        {"waves": [{"name": "a", "stacks": ["dev"]}], "stacks": {"dev": {"kubeconfig": "k.yaml"}}},
    )
    document = kubeconfig_document({"token": "t"}, **{"certificate-authority": "pki/ca.crt"})
    (tmp_path / "k.yaml").write_text(yaml.safe_dump(document))
    engine = FakeEngine(config={("dev", "kiam:kubeconfig"): "unused"})
    fleet = load_fleet_file(path)
    found = kubeconfig_for(fleet, engine, "dev", SETTINGS, tmp_path / ".fleet")
    assert found["clusters"][0]["cluster"]["certificate-authority"] == str(tmp_path / "pki/ca.crt")
    assert found["users"][0]["user"] == {"token": "t"}
    assert not (tmp_path / ".fleet").exists()


def test_the_stacks_own_kubeconfig_is_used_as_it_is_and_written_nowhere(tmp_path: Path) -> None:
    """Its relative files lead from the folder the stack's program runs in, as the program reads
    them."""
    fleet = load_fleet_file(
        project(tmp_path, ["dev"], {"waves": [{"name": "a", "stacks": ["dev"]}]})
    )
    document = kubeconfig_document({"token": "t"}, **{"certificate-authority": "pki/ca.crt"})
    engine = FakeEngine(config={("dev", "kiam:kubeconfig"): yaml.safe_dump(document)})
    before = sorted(tmp_path.rglob("*"))
    found = kubeconfig_for(fleet, engine, "dev", SETTINGS, tmp_path / ".fleet")
    assert found["clusters"][0]["cluster"]["certificate-authority"] == str(
        stack_work_dir(fleet, "dev") / "pki/ca.crt"
    )
    assert found["users"][0]["user"] == {"token": "t"}
    assert sorted(tmp_path.rglob("*")) == before


def test_an_exec_credential_is_run_once_and_its_token_kept_in_memory(tmp_path: Path) -> None:
    plugin = tmp_path / "get-token.py"
    plugin.write_text(
        "import json, os, sys\n"
        "print(json.dumps({'kind': 'ExecCredential', 'status': "
        "{'token': sys.argv[1] + '-' + os.environ['CLUSTER']}}))\n"
    )
    exec_user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": sys.executable,
            "args": [str(plugin), "k8s-aws-v1"],
            "env": [{"name": "CLUSTER", "value": "dev"}],
        }
    }
    (tmp_path / "k.yaml").write_text(kubeconfig(exec_user))
    path = project(
        tmp_path,
        ["dev"],
        {"waves": [{"name": "a", "stacks": ["dev"]}], "stacks": {"dev": {"kubeconfig": "k.yaml"}}},
    )
    before = sorted(tmp_path.rglob("*"))
    found = kubeconfig_for(load_fleet_file(path), FakeEngine(), "dev", SETTINGS, tmp_path / "f")
    assert found["users"] == [{"name": "u", "user": {"token": "k8s-aws-v1-dev"}}]
    assert sorted(tmp_path.rglob("*")) == before


def test_without_either_the_eks_clusters_kubeconfig_is_asked_of_the_aws_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`aws eks update-kubeconfig --name N --region R --kubeconfig F` writes an `exec` user
    running `aws eks get-token` (AWS CLI reference, eks update-kubeconfig); that plugin's token is
    kept, and the file written holds no secret."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    aws = bin_dir / "aws"
    exec_user = {"exec": {"command": str(aws), "args": ["eks", "get-token"]}}
    aws.write_text(
        f"#!{sys.executable}\n"
        "import json, sys\n"
        "args = sys.argv[1:]\n"
        "if args[:2] == ['eks', 'get-token']:\n"
        "    print(json.dumps({'status': {'token': 'k8s-aws-v1.t'}}))\n"
        "else:\n"
        "    assert args[:2] == ['eks', 'update-kubeconfig'], args\n"
        "    given = dict(zip(args[2::2], args[3::2]))\n"
        f"    text = {kubeconfig(exec_user)!r}.replace({SERVER!r}, "
        "'https://' + given['--name'] + '.' + given['--region'])\n"
        "    open(given['--kubeconfig'], 'w').write(text)\n"
    )
    aws.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    fleet = load_fleet_file(
        project(tmp_path, ["dev"], {"waves": [{"name": "a", "stacks": ["dev"]}]})
    )
    found = kubeconfig_for(fleet, FakeEngine(), "dev", SETTINGS, tmp_path / ".fleet")
    assert found["users"][0]["user"] == {"token": "k8s-aws-v1.t"}
    cluster = SETTINGS.cluster
    assert found["clusters"][0]["cluster"]["server"] == f"https://{cluster.name}.{cluster.region}"
    written = yaml.safe_load((tmp_path / ".fleet" / "kubeconfig-dev.yaml").read_text())
    assert written["users"][0]["user"] == exec_user

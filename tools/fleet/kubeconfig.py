"""The kubeconfig a health gate reads a stack's cluster with: the fleet file's, else the stack's
own `kiam:kubeconfig`, else the EKS cluster's, written by `aws eks update-kubeconfig` as
`pulumi up` itself reaches it (program/providers.py). `kiam_eks.program.kube_api.KubeApi` takes certificates
or a token: an `exec` user (EKS's `aws eks get-token`) is run once here and its token kept."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import yaml

from kiam_eks.contracts.kubeconfig import current_context
from kiam_eks.settings.stack import StackSettings
from tools.fleet.engine import Engine
from tools.fleet.fleet_file import FleetFile


def kubeconfig_for(
    fleet: FleetFile, engine: Engine, stack: str, settings: StackSettings, folder: Path
) -> Path:
    target = fleet.stacks.get(stack)
    if target is not None and target.kubeconfig is not None:
        return target.kubeconfig
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"kubeconfig-{stack}.yaml"
    own = engine.config_value(stack, "kiam:kubeconfig")
    if own:
        _write_private(path, own)
    else:
        cluster = settings.cluster
        subprocess.run(
            ["aws", "eks", "update-kubeconfig", "--name", cluster.name,
             "--region", cluster.region, "--kubeconfig", str(path)],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
    return with_exec_resolved(path)


def with_exec_resolved(path: Path) -> Path:
    """The same kubeconfig, its current user's `exec` credential plugin run once and replaced by
    the token it returned (an ExecCredential's `status.token`); unchanged without one."""
    config: dict[str, Any] = yaml.safe_load(path.read_text())
    current = current_context(config)
    plugin = current.user.get("exec")
    if not plugin:
        return path
    env = {**os.environ, **{e["name"]: e["value"] for e in plugin.get("env") or []}}
    done = subprocess.run(
        [plugin["command"], *(plugin.get("args") or [])],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    assert current.user_entry is not None  # `current.user` has it
    current.user_entry["user"] = {"token": json.loads(done.stdout)["status"]["token"]}
    resolved = path.with_name(path.stem + "-token.yaml")
    _write_private(resolved, yaml.safe_dump(config))
    return resolved


def _write_private(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)

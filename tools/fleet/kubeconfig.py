"""The kubeconfig a health gate reads a stack's cluster with: the fleet file's, else the stack's
own `kiam:kubeconfig`, else the EKS cluster's, written by `aws eks update-kubeconfig` as
`pulumi up` itself reaches it (program/providers.py). `kiam_eks.program.kube_api.KubeApi` takes
certificates or a token: an `exec` user (EKS's `aws eks get-token`) is run once here and its
token kept in the parsed document, which is written nowhere (program/kube_api.py
`resolved`)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import yaml

from kiam_eks.program.kube_api import resolved
from kiam_eks.settings.stack import StackSettings
from tools.fleet.engine import Engine, stack_work_dir
from tools.fleet.fleet_file import FleetFile


def kubeconfig_for(
    fleet: FleetFile, engine: Engine, stack: str, settings: StackSettings, folder: Path
) -> dict[str, Any]:
    """The stack's kubeconfig document, its exec plugin run, its relative files made absolute
    from where they lead: a file's folder; for `kiam:kubeconfig`, the folder the stack's program
    runs in, where the program reads them."""
    target = fleet.stacks.get(stack)
    if target is not None and target.kubeconfig is not None:
        return resolved(yaml.safe_load(target.kubeconfig.read_text()), target.kubeconfig.parent)
    own = engine.config_value(stack, "kiam:kubeconfig")
    if own:
        return resolved(yaml.safe_load(own), stack_work_dir(fleet, stack))
    # The kubeconfig EKS writes names the cluster and its `aws eks get-token` plugin: no secret.
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"kubeconfig-{stack}.yaml"
    cluster = settings.cluster
    subprocess.run(
        ["aws", "eks", "update-kubeconfig", "--name", cluster.name,
         "--region", cluster.region, "--kubeconfig", str(path)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return resolved(yaml.safe_load(path.read_text()), folder)

"""Programs of other people that use the package: a clean checkout of this repository, as `git
clone` gives it, the component provider ready for `pulumi package add`, and what such a program
finds in a cluster whose IAM roles, dedicated nodes and certificates were made elsewhere."""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from e2e.harness.toolchain import REPO
from e2e.standins.nodes import CAPACITY, KWOK_ANNOTATION, node_labels, node_zones
from e2e.standins.signing import make_ca, make_leaf
from kiam_eks.components.tls import TlsArgs, certificate_requests
from kiam_eks.contracts import names
from kiam_eks.settings.stack import StackSettings
from tools.working_tree import copy_working_tree


def clean_checkout(destination: Path) -> Path:
    """The repository's files as a clone has them (tools/working_tree.py)."""
    return copy_working_tree(destination, REPO)


def plugin_in_this_environment(checkout: Path) -> Path:
    """The checkout's provider folder, set to run in the suite's own environment.

    The sdk v3.68 Python host runs a plugin with the first `python3` on PATH, the suite's
    (e2e/toolchain/README.md, "The language adapter"), which holds this package and the
    Kubernetes SDK pinned to the provider built here (e2e/requirements.txt): the package's own
    bound (pulumi-kubernetes 4.29 or later) would ask the engine for a provider this machine
    does not have. So the plugin's virtualenv is that environment and nothing is installed into
    it: `PulumiPlugin.yaml` and `__main__.py` are the committed ones, `requirements.txt` (which
    installs the package with its dependencies, as a user's `pulumi package add` does) is left
    out."""
    plugin = checkout / "provider"
    (plugin / "requirements.txt").unlink()
    (plugin / "venv").symlink_to(Path(sys.executable).parent.parent)
    return plugin


def served_checkout(destination: Path) -> Path:
    """A clean checkout for the git server to serve to `pulumi package add <git URL>`
    (e2e/harness/git_server.py), its provider folder set to run in the suite's own environment as
    `plugin_in_this_environment` does, with one difference. The CLI unpacks the clone into its
    plugin cache refusing any symlink that points out of it (sdk/go/common/util/archive/archive.go
    `extractFile`: "symlink provider/venv points outside the extraction directory"), so the
    virtualenv is not a link to the suite's environment but a `venv/bin/python` that runs the
    suite's interpreter. That file is all an existing virtualenv must have (sdk
    python/toolchain/pip.go `IsVirtualEnv`) for the language adapter's `InstallDependencies`
    (e2e/toolchain/language-adapter/main.go) to create nothing, and with no requirements.txt it
    installs nothing: no PyPI. The plugin runs with the first `python3` on PATH, as before."""
    checkout = clean_checkout(destination)
    plugin = checkout / "provider"
    (plugin / "requirements.txt").unlink()
    python = plugin / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n')
    python.chmod(0o755)
    return checkout


@dataclass(frozen=True)
class MadeElsewhere:
    """What a consumer's program is given: the dedicated node group's name, the roles' ARNs,
    the certificates, as the examples (README, docs/package.md) read them from stack config."""

    config: dict[str, str]
    secrets: dict[str, str]


def dedicated_nodes(settings: StackSettings, group: str) -> list[dict[str, Any]]:
    """The Nodes of a managed node group made elsewhere: labelled and tainted as EKS does
    (e2e/standins/nodes.py `node_labels`), Ready by kwok."""
    s, region = settings.node_group, settings.cluster.region
    taint = s.taint
    nodes = []
    for index, zone in enumerate(node_zones(s, region)):
        name = f"{group}-{index}"
        nodes.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "annotations": KWOK_ANNOTATION,
                    "labels": node_labels(s, group, name, zone, region),
                },
                "spec": {
                    "taints": [
                        {"key": taint.key, "value": taint.value, "effect": taint.kubernetes_effect}
                    ]
                },
                "status": {
                    "capacity": CAPACITY,
                    "allocatable": CAPACITY,
                    "addresses": [{"type": "InternalIP", "address": f"10.0.251.{10 + index}"}],
                },
            }
        )
    return nodes


def made_elsewhere(settings: StackSettings, group: str) -> MadeElsewhere:
    """The values for a cluster shaped by `settings`: certificates issued for exactly what the
    TLS component requests (components/tls.py), by a CA made here."""
    ca_cert, ca_key = make_ca("kiam-ca", 24)
    dns = names.service_dns_names("kiam-server", "kiam", settings.cluster.cluster_domain)
    requests = certificate_requests(
        TlsArgs(settings=settings.tls, namespace="kiam", server_dns_names=dns, authority=None)
    )
    server = make_leaf(requests["server"], ca_cert, ca_key)
    agent = make_leaf(requests["agent"], ca_cert, ca_key)
    account, partition = settings.cluster.account_id, settings.cluster.partition
    return MadeElsewhere(
        config={
            "nodeGroupName": group,
            "serverRoleArn": f"arn:{partition}:iam::{account}:role/kiam-server",
            "roleBaseArn": f"arn:{partition}:iam::{account}:role/",
            "region": settings.cluster.region,
            "caCertificate": ca_cert,
            "serverCertificate": server[0],
            "agentCertificate": agent[0],
        },
        secrets={"serverKey": server[1], "agentKey": agent[1]},
    )

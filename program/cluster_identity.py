"""Which cluster a given `kiam:kubeconfig` reaches, checked against the EKS cluster the stack
names (`kiam:cluster.name`) before anything but the providers is registered.

The provider's `clusterIdentifier` (program/kubernetes.py) only keeps a changed kubeconfig from
replacing every Kubernetes object; it does not say which cluster answers. A kubeconfig whose
current context is another cluster would have the update's creates, changes and deletions run
against that cluster's objects of the same names. An EKS cluster's identity is its certificate
authority: `aws eks describe-cluster` returns it as `certificateAuthority.data`, the base64 of
its PEM, which `aws eks update-kubeconfig` writes as the context's `certificate-authority-data`
(the Amazon EKS User Guide, "Connect kubectl to an EKS cluster by creating a kubeconfig file",
create-kubeconfig); the client trusts only servers that CA signed. Where the kubeconfig names no
CA data (a file path, or no verification), the server's address must be the cluster's endpoint.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi
import yaml

from kiam_eks.components.lookups import failure_reason
from kiam_eks.contracts.kubeconfig import KubeconfigError, current_context
from kiam_eks.settings.loader import load_yaml
from kiam_eks.settings.stack import StackSettings

KEY = "kiam:kubeconfig"


@dataclass(frozen=True)
class KubeconfigCluster:
    """The cluster entry a kubeconfig's current context uses."""

    context: str
    server: str
    ca_data: str | None
    """`certificate-authority-data`, as written (base64 of a PEM)."""


def current_cluster(kubeconfig: str) -> KubeconfigCluster:
    """The cluster entry of `kubeconfig`'s current context: `kubeconfig` is the document, or the
    path of a file holding it (the Kubernetes provider takes either)."""
    current = current_context(kubeconfig_document(kubeconfig))
    server = current.cluster.get("server")
    if not isinstance(server, str) or not server:
        raise KubeconfigError(f"its cluster {current.cluster_entry['name']} has no server")
    ca_data = current.cluster.get("certificate-authority-data")
    return KubeconfigCluster(
        context=current.name,
        server=server,
        ca_data=ca_data if isinstance(ca_data, str) else None,
    )


def kubeconfig_document(kubeconfig: str) -> Any:
    """The parsed kubeconfig: `kubeconfig` is the document, or the path of a file holding it."""
    try:
        document = load_yaml(kubeconfig)
    except yaml.YAMLError:
        document = None
    if not isinstance(document, dict):
        path = Path(kubeconfig.strip()).expanduser()
        try:
            document = load_yaml(path.read_text())
        except (OSError, ValueError) as error:
            raise KubeconfigError(
                f"it is neither a kubeconfig nor a readable file ({error})"
            ) from None
        except yaml.YAMLError as error:
            raise KubeconfigError(f"{path} is not valid YAML ({error})") from None
    return document


def same_authority(kubeconfig_data: str, eks_data: str) -> bool:
    """Whether two base64 certificate authorities are the same PEM (line breaks aside)."""
    try:
        ours = base64.b64decode("".join(kubeconfig_data.split()), validate=True)
        theirs = base64.b64decode("".join(eks_data.split()), validate=True)
    except (binascii.Error, ValueError):
        return False
    return ours.strip() == theirs.strip()


def mismatch_problem(settings: StackSettings, found: KubeconfigCluster, eks: Any) -> str | None:
    """Why `found` is not the EKS cluster `eks` (`aws.eks.get_cluster`'s result), or None."""
    name = settings.cluster.name
    endpoint = eks.endpoint
    fix = (
        f"Point its current context at EKS cluster {name} (aws eks update-kubeconfig --name "
        f"{name} --region {settings.cluster.region}), or leave {KEY} unset to have the program "
        f"build it from EKS"
    )
    if found.ca_data is not None:
        authority = eks.certificate_authorities[0].data
        if same_authority(found.ca_data, authority):
            return None
        return (
            f"{KEY}: its current context {found.context} reaches {found.server}, whose "
            f"certificate authority is not EKS cluster {name}'s (at {endpoint}): this update's "
            f"changes and deletions would run against another cluster. {fix}"
        )
    if found.server.rstrip("/") == endpoint.rstrip("/"):
        return None
    return (
        f"{KEY}: its current context {found.context} reaches {found.server} with no "
        f"certificate-authority-data, so which cluster answers cannot be told from EKS cluster "
        f"{name}'s certificate authority, and it is not that cluster's endpoint ({endpoint}). "
        f"{fix}"
    )


def check_cluster_identity(settings: StackSettings, look_up: Callable[[], Any]) -> None:
    """Stop the program unless `kiam:kubeconfig` reaches the EKS cluster the stack names.

    `look_up` describes that cluster as `aws.eks.get_cluster` does (its `endpoint` and
    `certificate_authorities[0].data`): a synchronous look-up, run before any resource but the
    AWS provider is registered; a mismatch ends `pulumi preview` and `pulumi up` with the message
    alone."""
    assert settings.kubeconfig is not None
    name = settings.cluster.name
    try:
        found = current_cluster(settings.kubeconfig.get_secret_value())
    except KubeconfigError as error:
        raise pulumi.RunError(
            f"{KEY}: cannot tell which cluster it reaches: {error}. Give a kubeconfig whose "
            f"current context is EKS cluster {name}, or leave {KEY} unset"
        ) from None
    try:
        eks = look_up()
    except Exception as error:  # the provider's error, whatever EKS answered
        raise pulumi.RunError(
            f"{KEY}: cannot check that it reaches EKS cluster {name}, whose look-up failed: "
            f"{failure_reason(error)}"
        ) from None
    problem = mismatch_problem(settings, found, eks)
    if problem is not None:
        raise pulumi.RunError(problem)

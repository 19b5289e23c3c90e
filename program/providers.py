"""The AWS and Kubernetes providers, created once per stack and handed down to every component."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from kiam_eks.components.lookups import failure_reason
from kiam_eks.components.pod_identity import check_agent_addon_before_registering
from kiam_eks.contracts.kubeconfig import KubeconfigError
from kiam_eks.program.cluster_identity import check_cluster_identity, kubeconfig_document
from kiam_eks.program.kube_api import KubeApi, with_exec_token
from kiam_eks.program.kubernetes import kubernetes_provider
from kiam_eks.program.live_cluster import Connect, judge_live_cluster
from kiam_eks.settings.stack import StackSettings
from kiam_eks.transitions.judge import Transition


@dataclass(frozen=True)
class Providers:
    """The explicit providers of one stack: nothing uses the ambient default providers."""

    aws: aws.Provider
    kubernetes: k8s.Provider
    oidc_issuer: pulumi.Output[str] | None
    """The cluster's OIDC issuer, looked up only when an application is trusted through IRSA."""

    def as_list(self) -> list[pulumi.ProviderResource]:
        """For `ResourceOptions(providers=...)`: children pick theirs by package."""
        return [self.aws, self.kubernetes]


def create_providers(settings: StackSettings, transition: Transition) -> Providers:
    """An AWS provider pinned to the stack's account and region, and a Kubernetes provider for its
    cluster; before the Kubernetes provider, what the change (`transition`, judged) needs checked
    in AWS and in the cluster: the Pod Identity agent add-on, which cluster a given kubeconfig
    reaches, the live pods and nodes (program/live_cluster.py)."""
    cluster = settings.cluster
    aws_provider = aws.Provider(
        "aws",
        region=cluster.region,
        # Credentials for another account make `pulumi up` fail instead of touching that account.
        allowed_account_ids=[cluster.account_id],
        default_tags={"tags": {"kiam:cluster": cluster.name, "kiam:managed-by": "pulumi"}},
    )
    invoke = pulumi.InvokeOutputOptions(provider=aws_provider)
    # Before any resource but the providers is registered (components/pod_identity.py).
    check_agent_addon_before_registering(
        settings, transition, cluster.name, pulumi.InvokeOptions(provider=aws_provider)
    )
    irsa = any(a.reads_oidc_issuer for a in settings.applications.values())
    need_lookup = settings.kubeconfig is None or irsa
    eks = aws.eks.get_cluster_output(name=cluster.name, opts=invoke) if need_lookup else None
    if settings.kubeconfig is not None:
        # Before the Kubernetes provider is registered: a kubeconfig that reaches another
        # cluster stops the plan here (program/cluster_identity.py).
        lookup = pulumi.InvokeOptions(provider=aws_provider)
        check_cluster_identity(
            settings, lambda: aws.eks.get_cluster(name=cluster.name, opts=lookup)
        )
    # Before the Kubernetes provider is registered: a step that stops kiam serving pods still
    # asking it stops the plan here (program/live_cluster.py).
    connect = connect_to_cluster(settings, pulumi.InvokeOptions(provider=aws_provider))
    judge_live_cluster(settings, transition, connect)
    if settings.kubeconfig is not None:
        kubeconfig: pulumi.Input[str] = pulumi.Output.secret(settings.kubeconfig.get_secret_value())
    else:
        assert eks is not None
        kubeconfig = _cluster_kubeconfig(settings, eks, invoke)
    kubernetes = kubernetes_provider(settings, kubeconfig)
    issuer = (
        eks.identities.apply(lambda ids: ids[0].oidcs[0].issuer)
        if eks is not None and irsa
        else None
    )
    return Providers(aws=aws_provider, kubernetes=kubernetes, oidc_issuer=issuer)


def _cluster_kubeconfig(
    settings: StackSettings, eks: pulumi.Output[Any], invoke: pulumi.InvokeOutputOptions
) -> pulumi.Output[str]:
    cluster = settings.cluster
    if cluster.kubernetes_auth == "token":
        token: pulumi.Input[str] = aws.eks.get_cluster_auth_output(
            name=cluster.name, opts=invoke
        ).token
        user: pulumi.Output[dict[str, Any]] = pulumi.Output.from_input(token).apply(
            lambda t: {"token": t}
        )
    else:
        user = pulumi.Output.from_input(exec_user(settings))
    ca_data = eks.certificate_authorities.apply(lambda authorities: authorities[0].data)
    document = pulumi.Output.all(eks.endpoint, ca_data, user).apply(
        lambda parts: json.dumps(eks_kubeconfig(settings, parts[0], parts[1], parts[2]))
    )
    return pulumi.Output.secret(document)


def exec_user(settings: StackSettings) -> dict[str, Any]:
    """A kubeconfig user that runs `aws eks get-token` for the stack's cluster (the Amazon EKS User
    Guide, "Connect kubectl to an EKS cluster by creating a kubeconfig file")."""
    cluster = settings.cluster
    return {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": "aws",
            "args": [
                "eks",
                "get-token",
                "--cluster-name",
                cluster.name,
                "--region",
                cluster.region,
            ],
            "interactiveMode": "Never",
        }
    }


def eks_kubeconfig(
    settings: StackSettings, endpoint: str, ca_data: str, user: dict[str, Any]
) -> dict[str, Any]:
    """The kubeconfig of the stack's EKS cluster: its endpoint, its certificate authority
    (`certificateAuthority.data`), `user` as its one user."""
    name = settings.cluster.name
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": name, "cluster": {"server": endpoint, "certificate-authority-data": ca_data}}
        ],
        "users": [{"name": "pulumi", "user": user}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": "pulumi"}}],
        "current-context": name,
    }


def connect_to_cluster(settings: StackSettings, opts: pulumi.InvokeOptions) -> Connect:
    """Opens the stack's cluster for a read at preview (program/live_cluster.py), as its
    Kubernetes provider reaches it: `kiam:kubeconfig` (checked to be the stack's cluster first),
    else the EKS cluster's endpoint and authority with a token (`kiam:cluster.kubernetesAuth`:
    the provider's token, or `aws eks get-token` run once)."""

    def connect() -> KubeApi:
        if settings.kubeconfig is not None:
            document = kubeconfig_document(settings.kubeconfig.get_secret_value())
        else:
            name = settings.cluster.name
            try:
                eks = aws.eks.get_cluster(name=name, opts=opts)
                if settings.cluster.kubernetes_auth == "token":
                    user = {"token": aws.eks.get_cluster_auth(name=name, opts=opts).token}
                else:
                    user = exec_user(settings)
            except Exception as error:  # the provider's error, whatever EKS answered
                raise KubeconfigError(
                    f"the look-up of EKS cluster {name} failed: {failure_reason(error)}"
                ) from None
            document = eks_kubeconfig(
                settings, eks.endpoint, eks.certificate_authorities[0].data, user
            )
        with_exec_token(document)
        return KubeApi(document)

    return connect

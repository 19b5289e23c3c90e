"""The AWS and Kubernetes providers, created once per stack and handed down to every component."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from kiam_eks.components.pod_identity import check_agent_addon, check_agent_addon_absent
from kiam_eks.program.cluster_identity import check_cluster_identity
from kiam_eks.program.kubernetes import kubernetes_provider
from kiam_eks.settings.stack import StackSettings
from kiam_eks.settings.transitions import Transition


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


def create_providers(settings: StackSettings, transition: Transition | None = None) -> Providers:
    """An AWS provider pinned to the stack's account and region, and a Kubernetes provider for its
    cluster. With the change's `transition`, an add-on the stack would create is first checked to
    be absent from the cluster (without it, as for a first update judged by nobody, it is not)."""
    cluster = settings.cluster
    aws_provider = aws.Provider(
        "aws",
        region=cluster.region,
        # Credentials for another account make `pulumi up` fail instead of touching that account.
        allowed_account_ids=[cluster.account_id],
        default_tags={"tags": {"kiam:cluster": cluster.name, "kiam:managed-by": "pulumi"}},
    )
    invoke = pulumi.InvokeOutputOptions(provider=aws_provider)
    agent_users = {
        app: a.served_by.value
        for app, a in sorted(settings.applications.items())
        if a.served_by.pod_identity
    }
    if agent_users and not settings.pod_identity_agent.manage_addon:
        # Before any resource but the providers is registered: a cluster without the agent stops
        # the plan here, with a message, instead of after the roles changed.
        check_agent_addon(cluster.name, agent_users, pulumi.InvokeOptions(provider=aws_provider))
    elif agent_users and transition is not None and not transition.agent_addon_registered:
        # The stack would create the add-on: EKS refuses a second, so one someone else installed
        # stops the plan here too, instead of failing every `pulumi up` half way.
        check_agent_addon_absent(cluster.name, pulumi.InvokeOptions(provider=aws_provider))
    irsa = any(a.reads_oidc_issuer for a in settings.applications.values())
    need_lookup = settings.kubeconfig is None or irsa
    eks = aws.eks.get_cluster_output(name=cluster.name, opts=invoke) if need_lookup else None
    if settings.kubeconfig is not None:
        # Before the Kubernetes provider is registered: a kubeconfig that reaches another
        # cluster stops the plan here (program/cluster_identity.py).
        check_cluster_identity(settings, pulumi.InvokeOptions(provider=aws_provider))
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
        user = pulumi.Output.from_input(
            {
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
        )
    ca_data = eks.certificate_authorities.apply(lambda authorities: authorities[0].data)
    document = pulumi.Output.all(eks.endpoint, ca_data, user).apply(
        lambda parts: json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": cluster.name,
                        "cluster": {
                            "server": parts[0],
                            "certificate-authority-data": parts[1],
                        },
                    }
                ],
                "users": [{"name": "pulumi", "user": parts[2]}],
                "contexts": [
                    {"name": cluster.name, "context": {"cluster": cluster.name, "user": "pulumi"}}
                ],
                "current-context": cluster.name,
            }
        )
    )
    return pulumi.Output.secret(document)

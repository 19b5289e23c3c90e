"""EKS Pod Identity on AWS: an application's association, the agent add-on, and the plan-time check
that a cluster runs the add-on when the stack does not manage it (contracts/pod_identity.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi
import pulumi_aws as aws

from kiam_eks.components.lookups import failure_reason
from kiam_eks.contracts import names, pod_identity
from kiam_eks.settings.applications import ApplicationSettings
from kiam_eks.settings.pod_identity import PodIdentityAgentSettings
from kiam_eks.settings.stack import StackSettings
from kiam_eks.transitions.judge import Transition


def association(
    name: str,
    *,
    cluster_name: pulumi.Input[str],
    settings: ApplicationSettings,
    role_arn: pulumi.Input[str],
    opts: pulumi.ResourceOptions,
    target_role_arn: str | None = None,
) -> aws.eks.PodIdentityAssociation:
    """The association of the application's namespace and service account to its role, or, for
    a role in another account, to the cluster account's role EKS assumes first and the
    application's role as its `targetRoleArn` (role chaining, contracts/pod_identity.py).

    Its `roleArn` is the role's output, so the engine creates it only once the role exists with
    its Pod Identity trust: EKS injects credentials into pods created after the association
    exists, and the first of them must find a role that trusts `pods.eks.amazonaws.com`.

    Replacement order: create the new association, then delete the old one (the engine's default,
    kept deliberately). Only a new cluster, namespace or service account replaces an association
    (`ASSOCIATION_REPLACE_FIELDS`), so the new one never names the old one's (cluster, namespace,
    service account) and cannot collide with it; the provider does not retry
    `ResourceInUseException` on create and its delete does not wait, which is why deleting first
    would gain nothing and leave the old service account's running pods without an association in
    between.
    """
    if settings.service_account is None:
        raise ValueError(f"servedBy {settings.served_by.value} needs serviceAccount")
    return aws.eks.PodIdentityAssociation(
        name,
        cluster_name=cluster_name,
        namespace=settings.namespace,
        service_account=settings.service_account,
        role_arn=role_arn,
        target_role_arn=target_role_arn,
        opts=pulumi.ResourceOptions.merge(
            opts, pulumi.ResourceOptions(delete_before_replace=False)
        ),
    )


def agent_addon(
    name: str,
    *,
    cluster_name: pulumi.Input[str],
    settings: PodIdentityAgentSettings,
    opts: pulumi.ResourceOptions,
) -> aws.eks.Addon:
    """The `eks-pod-identity-agent` add-on (`kiam:podIdentityAgent.manageAddon`).

    `preserve`: removing the resource (the last application leaves Pod Identity, or `manageAddon`
    turns false) stops EKS managing the add-on but leaves the agent's DaemonSet running, so no pod
    that was given Pod Identity credentials loses the agent that serves them.
    """
    return aws.eks.Addon(
        name,
        addon_name=pod_identity.AGENT_ADDON,
        cluster_name=cluster_name,
        addon_version=settings.addon_version,
        preserve=True,
        opts=opts,
    )


def agent_missing_message(cluster_name: str, users: Mapping[str, str], reason: str) -> str:
    """Why the plan stops when the cluster has no agent add-on and the stack may not install it."""
    served = ", ".join(
        f"kiam:applications.{app} (servedBy {state})" for app, state in users.items()
    )
    return (
        f"kiam:podIdentityAgent.manageAddon is false, so EKS cluster {cluster_name} must already "
        f"run the {pod_identity.AGENT_ADDON} add-on for {served}, and looking it up failed: "
        f"{reason}. Set kiam:podIdentityAgent.manageAddon: true to install it with the stack, or "
        f"install it (aws eks create-addon --cluster-name {cluster_name} --addon-name "
        f"{pod_identity.AGENT_ADDON})"
    )


def _look_up_agent(cluster_name: str, opts: pulumi.InvokeOptions) -> tuple[Any, str | None]:
    """(the add-on, None) where EKS lists it on the cluster; (None, the provider's error) where
    the look-up fails, for whatever reason (`pod_identity.ADDON_NOT_FOUND` says it is absent).

    A synchronous look-up, run before any resource but the providers is registered: a check that
    fails ends `pulumi preview` and `pulumi up` with its message alone, having changed nothing."""
    try:
        found = aws.eks.get_addon(
            addon_name=pod_identity.AGENT_ADDON, cluster_name=cluster_name, opts=opts
        )
    except Exception as error:  # the provider's error, whatever EKS answered
        return None, failure_reason(error)
    return found, None


def check_agent_addon(
    cluster_name: str, users: Mapping[str, str], opts: pulumi.InvokeOptions
) -> None:
    """Stop the program with `agent_missing_message` unless EKS lists the add-on on the cluster."""
    _, reason = _look_up_agent(cluster_name, opts)
    if reason is not None:
        raise pulumi.RunError(agent_missing_message(cluster_name, users, reason))


def agent_installed_elsewhere_message(cluster_name: str, version: str) -> str:
    """Why the plan stops when the stack would create the add-on and the cluster already has it."""
    addon = pod_identity.AGENT_ADDON
    return (
        f"kiam:podIdentityAgent.manageAddon is true and this stack has not installed the {addon} "
        f"add-on, but EKS cluster {cluster_name} already runs it ({version}), installed outside "
        f"this stack: EKS refuses to create it again, so `pulumi up` would fail after changing "
        f"other resources. Set kiam:podIdentityAgent.manageAddon: false (the stack then checks "
        f"that the add-on is there and leaves it to its owner), or bring it into this stack "
        f"before setting it: pulumi import aws:eks/addon:Addon {names.POD_IDENTITY_AGENT} "
        f"{pod_identity.addon_id(cluster_name, addon)} --parent '{names.INSTALL_NAME}=<URN of "
        f"the Kiam component>' --provider 'aws=<URN of the stack's aws provider>' (`pulumi stack "
        f"--show-urns` lists both)"
    )


def agent_unknown_message(cluster_name: str, reason: str) -> str:
    """Why the plan stops when it cannot tell whether the cluster already has the add-on."""
    addon = pod_identity.AGENT_ADDON
    return (
        f"kiam:podIdentityAgent.manageAddon is true and this stack has not installed the {addon} "
        f"add-on, so EKS cluster {cluster_name} must not run one already (EKS refuses to create "
        f"it again), and looking it up failed: {reason}. Allow eks:DescribeAddon on the cluster "
        f"to the credentials `pulumi up` uses, then run it again"
    )


def check_agent_addon_absent(cluster_name: str, opts: pulumi.InvokeOptions) -> None:
    """Stop the program unless EKS answers that the cluster has no add-on for the stack to
    create: `agent_installed_elsewhere_message` when it has one, `agent_unknown_message` when
    the look-up fails for another reason (the provider's texts: contracts/pod_identity.py)."""
    found, reason = _look_up_agent(cluster_name, opts)
    if found is not None:
        raise pulumi.RunError(agent_installed_elsewhere_message(cluster_name, found.addon_version))
    if reason is not None and pod_identity.ADDON_NOT_FOUND not in reason:
        raise pulumi.RunError(agent_unknown_message(cluster_name, reason))


def check_agent_addon_before_registering(
    settings: StackSettings,
    transition: Transition,
    cluster_name: str,
    opts: pulumi.InvokeOptions,
) -> None:
    """Before anything is registered: where Pod Identity serves an application, a cluster
    without the add-on the stack leaves to others (`manageAddon: false`) stops the plan with a
    message instead of failing after the roles changed; and one the stack would create, which
    EKS refuses while the cluster runs one already, stops it too, instead of failing every
    `pulumi up` half way."""
    users = {
        app: a.served_by.value
        for app, a in sorted(settings.applications.items())
        if a.served_by.pod_identity
    }
    if not users:
        return
    if not settings.pod_identity_agent.manage_addon:
        check_agent_addon(cluster_name, users, opts)
    elif not transition.agent_addon_registered:
        check_agent_addon_absent(cluster_name, opts)


def aws_invoke_options(opts: pulumi.ResourceOptions | None) -> pulumi.InvokeOptions:
    """Invoke options with the AWS provider `opts` hands a component's children (its `provider`,
    or its `providers`, a list or a mapping by package); the default AWS provider without one."""
    candidates: list[Any] = []
    if opts is not None:
        if opts.provider is not None:
            candidates.append(opts.provider)
        if isinstance(opts.providers, Mapping):
            candidates += list(opts.providers.values())
        elif opts.providers:
            candidates += list(opts.providers)
    found = next((p for p in candidates if getattr(p, "package", None) == "aws"), None)
    return pulumi.InvokeOptions(provider=found)

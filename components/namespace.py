"""kiam's namespace, when a stack or component creates it."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

# The agent needs host networking and NET_ADMIN: Pod Security must allow it in kiam's namespace.
POD_SECURITY_LABELS = {"pod-security.kubernetes.io/enforce": "privileged"}


def kiam_namespace(
    resource_name: str, name: str, opts: pulumi.ResourceOptions
) -> pulumi.Output[str]:
    """The namespace `name`, labelled for Pod Security; its name once created."""
    namespace: pulumi.Output[str] = k8s.core.v1.Namespace(
        resource_name,
        metadata={"name": name, "labels": POD_SECURITY_LABELS},
        opts=opts,
    ).metadata.name
    return namespace

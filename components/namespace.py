"""kiam's namespace, when a stack or component creates it."""

from __future__ import annotations

import pulumi

from kiam_eks.components import kubernetes_objects as kube
from kiam_eks.transitions.judge import NamespaceMode

# The agent needs host networking and NET_ADMIN: Pod Security must allow it in kiam's namespace.
POD_SECURITY_LABELS = {"pod-security.kubernetes.io/enforce": "privileged"}


def kiam_namespace(
    resource_name: str, name: str, opts: pulumi.ResourceOptions
) -> pulumi.Output[str]:
    """The namespace `name`, labelled for Pod Security; its name once created."""
    namespace: pulumi.Output[str] = kube.Namespace(
        resource_name,
        metadata={"name": name, "labels": POD_SECURITY_LABELS},
        opts=opts,
    ).metadata["name"]
    return namespace


def judged_namespace(
    component: str, name: str, mode: NamespaceMode, child: pulumi.ResourceOptions
) -> pulumi.Input[str]:
    """kiam's namespace as the change judged it (`Transition.namespace`): created (and owned)
    by the stack, released, or used as found.

    Released: `namespace.create` switched off for a namespace the stack created. Not registering
    it would delete it, and everything in it, at the end of the update; it is registered once
    more, kept on delete, so the next update forgets it from the state and the cluster keeps it
    (transitions/)."""
    if mode == "use":
        return name
    return kiam_namespace(
        f"{component}-namespace",
        name,
        pulumi.ResourceOptions.merge(
            child, pulumi.ResourceOptions(retain_on_delete=mode == "release")
        ),
    )

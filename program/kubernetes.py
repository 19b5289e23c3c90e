"""The Kubernetes provider of a stack, the same for a real EKS cluster and the real-engine tests."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from settings.stack import StackSettings


def kubernetes_provider(settings: StackSettings, kubeconfig: pulumi.Input[str]) -> k8s.Provider:
    """A provider bound to this stack's cluster only (`kubeconfig`: its content or a path)."""
    adoption = settings.adoption
    return k8s.Provider(
        "kubernetes",
        kubeconfig=kubeconfig,
        # Never fall back to another cluster's current context.
        cluster_identifier=settings.cluster.name,
        # While taking over a running install, objects it created under the names this program
        # uses (its Service, agent DaemonSet, RBAC) are adopted in place instead of failing with
        # AlreadyExists. Off otherwise, so an accidental name clash is never silently absorbed.
        upsert_existing_objects=adoption is not None and adoption.phase in ("servers", "takeover"),
    )

"""The Kubernetes provider of a stack, the same for a real EKS cluster and the real-engine tests."""

from __future__ import annotations

import inspect
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from kiam_eks.settings.stack import StackSettings

# pulumi-kubernetes 4.29 made creates strict (an existing object fails with AlreadyExists) and
# added `upsert_existing_objects` to opt back in. Before it, every create was an upsert and the
# switch does not exist: that is the real-engine suite's provider, 4.25, the newest release the
# Go module proxy serves. `requirements.txt` requires a release with the switch.
SDK_HAS_UPSERT_SWITCH = "upsert_existing_objects" in inspect.signature(k8s.ProviderArgs).parameters


def kubernetes_provider(settings: StackSettings, kubeconfig: pulumi.Input[str]) -> k8s.Provider:
    """A provider bound to this stack's cluster only (`kubeconfig`: its content or a path)."""
    return k8s.Provider(
        "kubernetes",
        kubeconfig=kubeconfig,
        # Never fall back to another cluster's current context.
        cluster_identifier=settings.cluster.name,
        # A Secret is updated in place, never replaced: a replacement of a named Secret deletes
        # it before creating it again (pulumi-kubernetes provider.go, `forceNewProperties`: any
        # change of a Secret's data or type forces one unless this is set), and an update
        # interrupted in between would leave kiam's certificate Secret missing. With it, a
        # re-issued certificate is one update of the Secret, which kiam reloads.
        enable_secret_mutable=True,
        **upsert_option(settings),
    )


def upsert_option(settings: StackSettings) -> dict[str, Any]:
    """While taking over a running install, objects it created under the names this program uses
    (its ServiceAccounts and Service; its agent DaemonSet is replaced, docs/migration.md) are
    adopted in place instead of failing with AlreadyExists. Off otherwise, so an accidental name
    clash is never silently absorbed. The upsert is a server-side apply, which still refuses
    fields another manager set: the components force what they take over."""
    upsert = settings.adoption_state.adopts_existing_objects
    return {"upsert_existing_objects": upsert} if SDK_HAS_UPSERT_SWITCH else {}

"""What only the running cluster knows, read at preview before anything but the providers is
registered: whether a pod still gets its credentials from kiam where this update stops kiam
serving them.

The judge (settings/transitions.py) sees the settings and what the stack's last update installed.
It lets an application take its last step off kiam (`kiam+podIdentity` to `podIdentity`,
`kiam+irsa` to `irsa`: the namespace stops admitting the role) and lets `kiam:retire` through
(kiam goes). A pod created while only kiam served its application carries the kiam annotation
and no Pod Identity or IRSA wiring, and keeps it until it is recreated: EKS writes that wiring
only into pods created after the association or the service account's annotation exists (the
Amazon EKS User Guide, "Understand how EKS Pod Identity works"; for IRSA the pod identity webhook
mutates pods at admission: docs/leaving-kiam.md). After the update such a pod has no credentials
at all; only the cluster knows whether one still runs.

Read only when the change holds such a step (most updates read nothing): every live pod and
namespace (`GET /api/v1/pods`, `/api/v1/namespaces`, in pages), judged by
program/credential_sources.py, the reading `python -m tools.kiam_usage` prints. A cluster that
cannot be read refuses the step, saying so: a preview that cannot see the pods cannot call it
safe.
"""

from __future__ import annotations

import ssl
import urllib.error
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import yaml

from kiam_eks.contracts.kubeconfig import KubeconfigError
from kiam_eks.program.credential_sources import PodUsage, loses_kiam, usage
from kiam_eks.program.kube_api import ApiError
from kiam_eks.settings.stack import StackSettings
from kiam_eks.settings.transitions import RefusedChangeError, Transition, leaving_kiam


class ClusterReader(Protocol):
    """What the check reads a cluster with: program/kube_api.py's `KubeApi`, or the mock
    engine's cluster (tools/mock_engine.py)."""

    @property
    def server(self) -> str: ...

    def items(self, path: str) -> list[dict[str, Any]]: ...


Connect = Callable[[], ClusterReader]
"""Opens the stack's cluster; called only when the change needs a read."""

# Set by the mock engine while it runs a program (tools/mock_engine.py): offline, the cluster is
# the one it describes. None: the program's own connection.
offline_cluster: ClusterReader | None = None

# What reaching and reading a cluster fails with, each said to the user as it is.
UNREADABLE = (
    ApiError,
    OSError,
    urllib.error.URLError,
    ssl.SSLError,
    KubeconfigError,
    yaml.YAMLError,
    KeyError,
    TypeError,
)


@dataclass(frozen=True)
class Step:
    """One change this update makes that stops kiam serving some pods."""

    setting: str
    what: str
    """What the change is, for the message (`kiam+podIdentity to podIdentity`)."""


def steps_off_kiam(settings: StackSettings, transition: Transition) -> list[Step]:
    """The changes of this update after which kiam serves fewer pods than it did."""
    previous = transition.previous
    if previous is None:
        return []
    steps = [
        Step(f"kiam:applications.{app}.servedBy", f"{old.value} to {new.value}")
        for app, old, new in leaving_kiam(previous, settings)
    ]
    if transition.roll_agents_before_retiring:
        steps.append(Step("kiam:retire", "the retirement"))
    return steps


def check_live_cluster(
    settings: StackSettings, transition: Transition, connect: Connect, source: str
) -> None:
    """Raise `RefusedChangeError` when this update stops kiam serving a pod that gets its
    credentials from kiam alone, or when it would and the cluster cannot be read."""
    steps = steps_off_kiam(settings, transition)
    if not steps:
        return
    reader: ClusterReader | None = None
    try:
        reader = offline_cluster if offline_cluster is not None else connect()
        pods = reader.items("/api/v1/pods")
        namespaces = reader.items("/api/v1/namespaces")
    except UNREADABLE as error:
        where = f"the cluster at {reader.server}" if reader is not None else "the cluster"
        raise RefusedChangeError(
            source,
            [
                f"{step.setting}: {step.what} stops kiam serving pods, and {where} cannot be "
                f"read to check that none still gets its credentials from kiam alone "
                f"({type(error).__name__}: {error}). Preview where the cluster can be read "
                "(its API server reachable, the kubeconfig's credentials valid)"
                for step in steps
            ],
        ) from None
    problems = stranded(settings, steps, pods, namespaces)
    if problems:
        raise RefusedChangeError(source, problems)


def stranded(
    settings: StackSettings,
    steps: list[Step],
    pods: list[dict[str, Any]],
    namespaces: list[dict[str, Any]],
) -> list[str]:
    """One problem per step that would leave running pods without credentials."""
    found = usage(settings, pods, namespaces)
    by_ref = {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p for p in pods}
    applications = {f"kiam:applications.{a.name}.servedBy": a for a in found.applications}
    problems = []
    for step in steps:
        if step.setting in applications:
            app = applications[step.setting]
            left = [p for p in app.pods if loses_kiam(p)]
            what = f"{step.what} stops kiam serving {app.role_arn}"
            wiring = "IRSA" if app.settings.served_by.value.endswith("irsa") else "Pod Identity"
            recreate = f"they take {wiring} when created again"
        else:
            left = [p for a in found.applications for p in a.pods if loses_kiam(p)]
            left += [p for p in found.other_kiam_pods if loses_kiam(p)]
            what = "the retirement removes kiam"
            recreate = "recreate them with Pod Identity or IRSA wiring, or without the annotation"
        if left:
            problems.append(
                f"{step.setting}: {what}, and {_count(left)} created before any other wiring "
                f"still get their credentials from kiam alone: {_named(left, by_ref)}. Recreate "
                f"them first ({recreate}), then `pulumi up` again"
            )
    return problems


def _count(pods: list[PodUsage]) -> str:
    return "1 pod" if len(pods) == 1 else f"{len(pods)} pods"


# Named in full up to this many pods; beyond, the first few and a count.
NAMED_PODS = 10


def _named(pods: list[PodUsage], raw: Mapping[str, dict[str, Any]]) -> str:
    """The pods and what recreates them: their workloads' rollouts, else the pods themselves."""
    rollouts: dict[str, list[str]] = {}
    for pod in pods:
        rollouts.setdefault(restart_command(raw[pod.ref]), []).append(pod.ref)
    parts = []
    for command, refs in sorted(rollouts.items()):
        shown = ", ".join(refs[:NAMED_PODS])
        more = f" and {len(refs) - NAMED_PODS} more" if len(refs) > NAMED_PODS else ""
        parts.append(f"{shown}{more} ({command})")
    return "; ".join(parts)


# Workloads `kubectl rollout restart` recreates the pods of (kubectl reference, "kubectl rollout":
# Deployments, DaemonSets and StatefulSets).
ROLLING_OWNERS = {"DaemonSet": "daemonset", "StatefulSet": "statefulset"}


def restart_command(pod: Mapping[str, Any]) -> str:
    """What recreates the pod from its workload's template.

    A Deployment's pods belong to its ReplicaSet, named after the Deployment and the pod
    template's hash, which the pod carries as its `pod-template-hash` label ("The name of a
    ReplicaSet is always formatted as [DEPLOYMENT-NAME]-[HASH]": Kubernetes documentation,
    Concepts, Deployments)."""
    meta = pod["metadata"]
    namespace = meta["namespace"]
    owner = next(
        (o for o in meta.get("ownerReferences") or [] if o.get("controller")),
        None,
    )
    if owner is not None:
        kind, name = owner.get("kind"), owner.get("name", "")
        suffix = "-" + ((meta.get("labels") or {}).get("pod-template-hash") or "")
        if kind == "ReplicaSet" and suffix != "-" and name.endswith(suffix):
            deployment = name.removesuffix(suffix)
            return f"kubectl rollout restart deployment/{deployment} -n {namespace}"
        if kind in ROLLING_OWNERS:
            return f"kubectl rollout restart {ROLLING_OWNERS[kind]}/{name} -n {namespace}"
        return f"recreate them: their owner is {kind} {name}"
    return "recreate them: no workload owns them"

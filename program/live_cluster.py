"""What only the running cluster knows, read at preview before anything but the providers is
registered: whether a pod still gets its credentials from kiam where this update stops kiam
serving them.

The judge (transitions/) sees the settings and what the stack's last update installed.
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

Widened agent tolerations (`kiam:agent.tolerations`) start agents on nodes that ran without kiam.
There, a pod with no kiam annotation and no Pod Identity or IRSA wiring reached the node's own
instance role through the metadata API; once an agent runs on its node, kiam answers its role
request with 404 (uswitch/kiam v4.2 pkg/aws/metadata/handler_role_name.go, `Handle`: an empty
role is `http.StatusNotFound, EmptyRoleError`). Whether such pods run there only the cluster
knows, and whether they call AWS at all nobody can tell from outside: the preview names the nodes
and the pods in its log (a warning), and applies the change.
"""

from __future__ import annotations

import ssl
import urllib.error
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import pulumi
import yaml

from kiam_eks.contracts.kubeconfig import KubeconfigError
from kiam_eks.program.credential_sources import (
    PodUsage,
    Source,
    is_live,
    loses_kiam,
    source_of,
    usage,
)
from kiam_eks.program.kube_api import ApiError
from kiam_eks.settings.agent import TolerationSettings
from kiam_eks.settings.loader import stack_file_for
from kiam_eks.settings.stack import StackSettings
from kiam_eks.transitions.judge import Transition
from kiam_eks.transitions.judges import covers, leaving_kiam
from kiam_eks.transitions.verdicts import RefusedChangeError


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


def judge_live_cluster(settings: StackSettings, transition: Transition, connect: Connect) -> None:
    """What only the cluster knows, before the Kubernetes provider is registered: a refusal ends
    the program with its message alone (nothing registered yet, nothing changed); what widened
    agents reach is a warning in the preview's log."""
    try:
        check_live_cluster(settings, transition, connect, stack_file_for(pulumi.get_stack()))
    except RefusedChangeError as error:
        raise pulumi.RunError(str(error)) from None
    coverage = coverage_report(settings, transition, connect)
    if coverage is not None:
        pulumi.log.warn(coverage)


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
            wiring = "IRSA" if app.settings.served_by.irsa else "Pod Identity"
            recreate = f"they take {wiring} when created again"
        else:
            left = [p for a in found.applications for p in a.pods if loses_kiam(p)]
            left += [p for p in found.other_kiam_pods if loses_kiam(p)]
            what = "the retirement removes kiam"
            recreate = "recreate them with Pod Identity or IRSA wiring, or without the annotation"
        if left:
            problems.append(
                f"{step.setting}: {what}, and {_some(left, 'pod')} created before any other wiring "
                f"still get their credentials from kiam alone: {_named(left, by_ref)}. Recreate "
                f"them first ({recreate}), then `pulumi up` again"
            )
    return problems


# Named in full up to this many pods; beyond, the first few and a count.
NAMED_PODS = 10


def _named(pods: list[PodUsage], raw: Mapping[str, dict[str, Any]]) -> str:
    """The pods and what recreates them: their workloads' rollouts, else the pods themselves."""
    rollouts: dict[str, list[str]] = {}
    for pod in pods:
        rollouts.setdefault(restart_command(raw[pod.ref]), []).append(pod.ref)
    parts = [f"{_list(refs)} ({command})" for command, refs in sorted(rollouts.items())]
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


# --- agents on nodes that ran without kiam -------------------------------------------------------

# Taints a DaemonSet's pods tolerate without being told: the DaemonSet controller adds
# tolerations for node.kubernetes.io/not-ready, unreachable, disk-pressure, memory-pressure,
# pid-pressure, unschedulable and (host network) network-unavailable (Kubernetes documentation,
# Concepts, DaemonSet, "Taints and tolerations").
AUTOMATIC_TAINTS = "node.kubernetes.io/"
# Only these keep a pod off a node; PreferNoSchedule only steers the scheduler.
HARD_EFFECTS = ("NoSchedule", "NoExecute")


def widens(settings: StackSettings, transition: Transition) -> bool:
    """Whether the agents tolerate a taint the running agents do not."""
    previous = transition.previous
    agents = previous.agents if previous is not None else None
    if agents is None or settings.retire or not settings.adoption_state.stack_owns_agents:
        return False
    return any(
        not any(covers(old, new) for old in agents.tolerations)
        for new in settings.agent.tolerations
    )


def runs_agent(
    node: Mapping[str, Any],
    tolerations: Sequence[TolerationSettings],
    server_taint: tuple[str, str],
) -> bool:
    """Whether the agent DaemonSet places a pod on `node`: it is not a kiam-server node (the
    agents' node affinity, components/agent.py) and every taint that keeps pods off it is
    tolerated."""
    key, value = server_taint
    if (node["metadata"].get("labels") or {}).get(key) == value:
        return False
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("effect") not in HARD_EFFECTS or taint["key"].startswith(AUTOMATIC_TAINTS):
            continue
        if not any(
            t.tolerates(taint["key"], taint.get("value") or "", taint["effect"])
            for t in tolerations
        ):
            return False
    return True


def newly_covered(
    settings: StackSettings,
    old: Sequence[TolerationSettings],
    nodes: list[dict[str, Any]],
) -> list[str]:
    """The nodes the agents will run on that they do not run on now."""
    taint = (settings.node_group.taint.key, settings.node_group.taint.value)
    return sorted(
        n["metadata"]["name"]
        for n in nodes
        if runs_agent(n, settings.agent.tolerations, taint) and not runs_agent(n, old, taint)
    )


def coverage_report(
    settings: StackSettings, transition: Transition, connect: Connect
) -> str | None:
    """What a widening of the agents' tolerations reaches, for the preview's log; None when the
    tolerations do not widen."""
    if not widens(settings, transition):
        return None
    assert transition.previous is not None and transition.previous.agents is not None
    old = transition.previous.agents.tolerations
    reader: ClusterReader | None = None
    try:
        reader = offline_cluster if offline_cluster is not None else connect()
        nodes = reader.items("/api/v1/nodes")
        covered = newly_covered(settings, old, nodes)
        pods = (
            [
                p
                for p in reader.items("/api/v1/pods")
                if (p.get("spec") or {}).get("nodeName") in set(covered)
            ]
            if covered
            else []
        )
    except UNREADABLE as error:
        where = f"the cluster at {reader.server}" if reader is not None else "the cluster"
        return (
            f"kiam:agent.tolerations: the agents will tolerate more taints, and {where} cannot "
            f"be read to say which nodes they start on and what runs there "
            f"({type(error).__name__}: {error})"
        )
    if not covered:
        return (
            "kiam:agent.tolerations: the agents will tolerate more taints; no node of the "
            "cluster carries them today"
        )
    return _coverage(
        covered,
        [p for p in pods if is_live(p)],
    )


def _coverage(nodes: list[str], pods: list[dict[str, Any]]) -> str:
    by_source: dict[Source, list[str]] = {}
    for pod in sorted(pods, key=lambda p: (p["metadata"]["namespace"], p["metadata"]["name"])):
        ref = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
        by_source.setdefault(source_of(pod), []).append(ref)
    bare = by_source.get(Source.NONE, [])
    annotated = by_source.get(Source.KIAM, [])
    wired = len(pods) - len(bare) - len(annotated)
    parts = [
        f"kiam:agent.tolerations: the agents start on {_some(nodes, 'node')} they do not run on "
        f"now: {_list(nodes)}; {_some(pods, 'pod')} run there"
    ]
    if bare:
        parts.append(
            f"{len(bare)} with neither a kiam annotation nor Pod Identity or IRSA wiring reach "
            "the node's own instance role today, and get 404 from kiam's agent for any role "
            f"once it runs there: {_list(bare)} (give each the kiam annotation of a role, or "
            "Pod Identity or IRSA, before this update if it calls AWS)"
        )
    if annotated:
        parts.append(
            f"{len(annotated)} with the kiam annotation, which kiam starts serving: {_list(annotated)}"
        )
    if wired:
        parts.append(f"{wired} wired to Pod Identity or IRSA, which kiam does not change")
    return "; ".join(parts)


def _some(items: Sequence[Any], noun: str) -> str:
    return f"1 {noun}" if len(items) == 1 else f"{len(items)} {noun}s"


def _list(refs: Sequence[str]) -> str:
    shown = ", ".join(refs[:NAMED_PODS])
    return shown + (f" and {len(refs) - NAMED_PODS} more" if len(refs) > NAMED_PODS else "")

"""Where each live pod gets its AWS credentials today, judged against the stack's applications:
the pure part of `python -m tools.kiam_usage` and of the program's read of the running cluster at
preview (program/live_cluster.py); no cluster access here: pods and namespaces are the API
server's JSON objects.

A pod's credential source is what the SDK in it would use: IRSA's web identity or Pod Identity's
container credentials when its containers carry that wiring (the SDKs read both before the
instance metadata API, web identity first: `contracts/credential_env.py`), otherwise kiam when it
carries the `iam.amazonaws.com/role` annotation; `none` when it has neither. A pod with the
annotation and a successor's wiring is `kiam+web-identity` or `kiam+pod-identity`: it never asks
kiam, but its template still names a kiam role.

A pod belongs to an application when its annotation resolves (as kiam v4.2 resolves it, against
the stack's role base ARN) to the application's role, or else when it runs in the application's
namespace under the application's `serviceAccount`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from kiam_eks.contracts import credential_env, kiam
from kiam_eks.contracts.labels import PERMITTED_ANNOTATION, ROLE_ANNOTATION
from kiam_eks.settings.applications import ApplicationSettings, ServedBy
from kiam_eks.settings.stack import StackSettings
from kiam_eks.specs.iam_policies import pod_role_annotation, role_base_arn

# Pods that ended never ask for credentials again.
ENDED_PHASES = ("Succeeded", "Failed")


class Source(StrEnum):
    """Where a pod's credentials come from today."""

    KIAM = "kiam"
    KIAM_WEB_IDENTITY = "kiam+web-identity"
    WEB_IDENTITY = "web-identity"
    KIAM_POD_IDENTITY = "kiam+pod-identity"
    POD_IDENTITY = "pod-identity"
    NONE = "none"


class Needs(StrEnum):
    """What a pod of an application served by Pod Identity or IRSA lacks, and what fixes it."""

    # Right service account, no wiring: created before the association (or the IRSA annotation)
    # existed; EKS wires only pods created afterwards.
    RESTART = "restart"
    # Another service account: recreating it is not enough, its template must name the
    # application's service account.
    SERVICE_ACCOUNT = "serviceAccount"


@dataclass(frozen=True)
class PodUsage:
    namespace: str
    name: str
    service_account: str
    source: Source
    kiam_role: str | None
    """The pod's `iam.amazonaws.com/role` annotation, if any."""
    kiam_role_arn: str | None
    """That annotation resolved as kiam resolves it."""
    admitted: bool | None
    """Whether the namespace's `iam.amazonaws.com/permitted` admits that ARN as kiam matches it;
    None without an annotation, or when the namespace's regexp cannot be read as kiam reads it."""
    needs: Needs | None = None

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"

    def as_json(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "name": self.name,
            "serviceAccount": self.service_account,
            "credentials": self.source.value,
            "kiamRole": self.kiam_role,
            "kiamRoleArn": self.kiam_role_arn,
            "admitted": self.admitted,
            "needs": None if self.needs is None else self.needs.value,
        }


@dataclass(frozen=True)
class ApplicationUsage:
    name: str
    settings: ApplicationSettings
    role_arn: str
    pod_annotation: str
    pods: list[PodUsage]
    next: list[ServedBy]
    ready: bool
    notes: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "namespace": self.settings.namespace,
            "serviceAccount": self.settings.service_account,
            "servedBy": self.settings.served_by.value,
            "roleArn": self.role_arn,
            "podAnnotation": self.pod_annotation,
            "next": [s.value for s in self.next],
            "ready": self.ready,
            "notes": self.notes,
            "pods": [p.as_json() for p in self.pods],
        }


@dataclass(frozen=True)
class Usage:
    applications: list[ApplicationUsage]
    other_kiam_pods: list[PodUsage]
    """Live pods with a kiam annotation that no application of the stack claims."""
    retirement_refusals: list[str]

    @property
    def ready(self) -> bool:
        return all(a.ready for a in self.applications)

    @property
    def retirement_blessed(self) -> bool:
        return not self.retirement_refusals


def is_live(pod: Mapping[str, Any]) -> bool:
    """Scheduled or running: a pod that has not ended (a terminating one still runs)."""
    return (pod.get("status") or {}).get("phase") not in ENDED_PHASES


def wiring(pod: Mapping[str, Any]) -> Source | None:
    """The successor every container of the pod is wired to (web identity first, as the SDKs read
    it), or None when any container lacks it (that container would fall through to kiam)."""
    envs = [
        {e["name"]: e.get("value", "") for e in c.get("env") or [] if "name" in e}
        for c in (pod.get("spec") or {}).get("containers") or []
    ]
    if envs and all(credential_env.has_web_identity(env) for env in envs):
        return Source.WEB_IDENTITY
    if envs and all(credential_env.has_pod_identity(env) for env in envs):
        return Source.POD_IDENTITY
    return None


def source_of(pod: Mapping[str, Any]) -> Source:
    """Where the pod's credentials come from today."""
    annotated = bool(_annotation(pod))
    wired = wiring(pod)
    if wired is Source.WEB_IDENTITY:
        return Source.KIAM_WEB_IDENTITY if annotated else Source.WEB_IDENTITY
    if wired is Source.POD_IDENTITY:
        return Source.KIAM_POD_IDENTITY if annotated else Source.POD_IDENTITY
    return Source.KIAM if annotated else Source.NONE


# The wiring each successor state's pods must carry.
_SUCCESSOR_SOURCE = {
    ServedBy.KIAM_AND_POD_IDENTITY: Source.POD_IDENTITY,
    ServedBy.POD_IDENTITY: Source.POD_IDENTITY,
    ServedBy.KIAM_AND_IRSA: Source.WEB_IDENTITY,
    ServedBy.IRSA: Source.WEB_IDENTITY,
}


def sdk_reminder() -> str:
    """What to check before an application moves from kiam to kiam+podIdentity or kiam+irsa."""
    minimums = ", ".join(f"{sdk} {v}" for sdk, v in credential_env.POD_IDENTITY_MINIMUM_SDKS)
    return (
        "before moving on, check every container's AWS SDK: an SDK older than the Pod Identity "
        f"minimum fails instead of falling back to kiam ({minimums}; "
        f"{credential_env.POD_IDENTITY_MINIMUM_SDK_PAGE}); IRSA minimums: "
        f"{credential_env.IRSA_MINIMUM_SDK_PAGE}"
    )


def usage(
    settings: StackSettings,
    pods: Iterable[Mapping[str, Any]],
    namespaces: Iterable[Mapping[str, Any]],
) -> Usage:
    """Every live pod's credential source, by application, and what each application and the
    retirement of kiam are waiting for."""
    cluster = settings.cluster
    base = role_base_arn(cluster.partition, cluster.account_id, settings.iam)
    arns = {
        name: app.arn(cluster.partition, cluster.account_id, settings.iam)
        for name, app in settings.applications.items()
    }
    # An existing role may be served to several namespaces, one application each: a pod is
    # the application's of its role and namespace, else of the one application naming its role.
    by_arn_and_namespace = {
        (arn, settings.applications[name].namespace): name for name, arn in arns.items()
    }
    named = list(arns.values())
    by_arn = {arn: name for name, arn in arns.items() if named.count(arn) == 1}
    by_account = {
        (app.namespace, app.service_account): name
        for name, app in settings.applications.items()
        if app.service_account is not None and app.served_by.successor
    }
    permitted = {
        n["metadata"]["name"]: ((n["metadata"].get("annotations") or {}).get(PERMITTED_ANNOTATION))
        for n in namespaces
    }

    claimed: dict[str, list[PodUsage]] = {name: [] for name in settings.applications}
    others: list[PodUsage] = []
    live = sorted(
        (p for p in pods if is_live(p)),
        key=lambda p: (p["metadata"]["namespace"], p["metadata"]["name"]),
    )
    for pod in live:
        meta = pod["metadata"]
        namespace = meta["namespace"]
        account = (pod.get("spec") or {}).get("serviceAccountName") or "default"
        annotation = _annotation(pod)
        resolved = kiam.resolve(annotation, base) if annotation else None
        admitted = _admitted(permitted.get(namespace), resolved)
        app = (
            by_arn_and_namespace.get((resolved or "", namespace))
            or by_arn.get(resolved or "")
            or by_account.get((namespace, account))
        )
        found = PodUsage(
            namespace=namespace,
            name=meta["name"],
            service_account=account,
            source=source_of(pod),
            kiam_role=annotation,
            kiam_role_arn=resolved,
            admitted=admitted,
        )
        if app is None:
            if annotation:
                others.append(found)
            continue
        claimed[app].append(_with_needs(found, settings.applications[app]))

    applications = [
        _application(
            name,
            app,
            arns[name],
            pod_role_annotation(arns[name], base),
            claimed[name],
            namespace_exists=app.namespace in permitted,
        )
        for name, app in sorted(settings.applications.items())
    ]
    return Usage(applications, others, _refusals(applications, others))


def _annotation(pod: Mapping[str, Any]) -> str | None:
    value = (pod["metadata"].get("annotations") or {}).get(ROLE_ANNOTATION)
    return value or None


def _admitted(expression: str | None, arn: str | None) -> bool | None:
    if arn is None:
        return None
    if not expression:
        return False  # kiam: no (or an empty) annotation admits nothing
    if kiam.permitted_regexp_problem(expression) is not None:
        return None
    # This program never lets kiam drop the anchors (settings/server.py refuses the flag).
    return kiam.permits(expression, arn, strict=True)


def _with_needs(pod: PodUsage, app: ApplicationSettings) -> PodUsage:
    wanted = _SUCCESSOR_SOURCE.get(app.served_by)
    if wanted is None or pod.source in (wanted, Source(f"kiam+{wanted.value}")):
        return pod
    needs = Needs.RESTART if pod.service_account == app.service_account else Needs.SERVICE_ACCOUNT
    return PodUsage(**{**pod.__dict__, "needs": needs})


def missing_namespace_note(name: str, app: ApplicationSettings) -> str:
    """Why an application whose namespace the cluster lacks is not ready: a typo, most likely,
    which `pulumi up` would not refuse. While kiam serves it the stack writes the namespace's
    `iam.amazonaws.com/permitted` by server-side apply, which creates a namespace that is missing
    (seen on the real engine with pulumi-kubernetes 4.25: a bare namespace holding only that
    annotation); an EKS Pod Identity association names any namespace."""
    return (
        f"kiam:applications.{name}.namespace: the cluster has no namespace {app.namespace} (a "
        "typo?): while kiam serves the application, `pulumi up` would create that namespace "
        "bare, writing its iam.amazonaws.com/permitted annotation"
    )


def _application(
    name: str,
    app: ApplicationSettings,
    arn: str,
    annotation: str,
    pods: list[PodUsage],
    *,
    namespace_exists: bool = True,
) -> ApplicationUsage:
    served = app.served_by
    if not namespace_exists:
        ready, notes = False, [missing_namespace_note(name, app)]
    elif served is ServedBy.KIAM:
        # Moving on only adds a credential source: kiam keeps serving every pod meanwhile.
        ready, notes = True, [sdk_reminder()]
    else:
        waiting = [p for p in pods if p.needs is not None]
        ready = not waiting
        notes = [
            f"{p.ref}: "
            + (
                "restart it: it was created before its wiring"
                if p.needs is Needs.RESTART
                else f"runs as service account {p.service_account}: give it {app.service_account}"
            )
            for p in waiting
        ]
    return ApplicationUsage(
        name, app, arn, annotation, pods, next=list(served.forward), ready=ready, notes=notes
    )


def loses_kiam(pod: PodUsage) -> bool:
    """Whether the pod gets its credentials from kiam and nothing else: once kiam stops serving
    its role (its application's last step off kiam, or the retirement) it has none. A pod wired
    to a successor never asks kiam, annotated or not (the SDKs read that wiring first)."""
    return pod.source is Source.KIAM


def _refusals(applications: list[ApplicationUsage], others: list[PodUsage]) -> list[str]:
    """Why `kiam:retire` cannot be blessed yet (nothing: it can)."""
    refusals = [
        f"kiam:applications.{a.name} is still served by kiam (servedBy {a.settings.served_by.value})"
        for a in applications
        if a.settings.served_by.kiam
    ]
    pods = sorted(
        [(a.name, p) for a in applications for p in a.pods] + [(None, p) for p in others],
        key=lambda item: item[1].ref,
    )
    for app, pod in pods:
        of = f" (application {app})" if app else " (no application of this stack)"
        if pod.kiam_role is not None:
            refusals.append(f"pod {pod.ref}{of} carries {ROLE_ANNOTATION}: {pod.kiam_role}")
        if pod.needs is not None and pod.source in (Source.KIAM, Source.NONE):
            refusals.append(
                f"pod {pod.ref}{of} lacks its application's Pod Identity or IRSA wiring (needs "
                f"{pod.needs.value}): once kiam is gone it would reach the node's own role"
            )
    return refusals

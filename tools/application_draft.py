"""A draft of `kiam:applications` read from the live cluster: one application per role and
namespace that running pods ask kiam for today, with the role's ARN resolved as kiam resolves it,
and, per application, what blocks each next state and what to do about it.

The draft serves exactly today's access: a role goes in only where its namespace's
`iam.amazonaws.com/permitted` admits it today (kiam refuses it otherwise: such pods are broken
already, and listed), and every namespace annotation found goes in `kiam:existingPermitted` as it
is, so the stack takes it over without changing what it admits (docs/migration.md). Every role
is named by `roleArn` (a role that exists already): nothing is created or deleted in IAM.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kiam_eks.contracts import kiam, pod_identity
from kiam_eks.contracts.iam import ROLE_ARN_PATTERN, role_arn_parts
from kiam_eks.contracts.labels import PERMITTED_ANNOTATION, ROLE_ANNOTATION
from kiam_eks.program.credential_sources import is_live

DEFAULT_SERVICE_ACCOUNT = "default"
_DNS_LABEL = re.compile(r"[^a-z0-9-]+")


@dataclass(frozen=True)
class Workload:
    """What runs a pod: its top owner (Deployment, StatefulSet, CronJob...), or the pod itself."""

    namespace: str
    kind: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}"


@dataclass
class DraftApplication:
    """One application of the draft, and what stands in the way of moving it on."""

    key: str
    namespace: str
    role_arn: str
    service_account: str | None
    workloads: list[Workload]
    blockers: list[str] = field(default_factory=list)
    """Per next state, what blocks it and what to do; [] when nothing does."""

    def settings(self) -> dict[str, Any]:
        """Its entry under `kiam:applications`."""
        entry: dict[str, Any] = {"namespace": self.namespace, "roleArn": self.role_arn}
        if self.service_account is not None:
            entry["serviceAccount"] = self.service_account
        return entry


@dataclass
class Draft:
    applications: list[DraftApplication]
    existing_permitted: dict[str, str]
    """Each namespace annotation found, as it is (`kiam:existingPermitted`)."""
    not_admitted: list[str]
    """Pods whose annotation their namespace does not admit today: broken already, left out."""
    unresolved: list[str]
    """Pods whose annotation kiam cannot turn into a role ARN: left out."""

    def stack_config(self) -> dict[str, Any]:
        """The stack file's `config:` keys the draft gives."""
        config: dict[str, Any] = {
            "kiam:applications": {a.key: a.settings() for a in self.applications}
        }
        if self.existing_permitted:
            config["kiam:existingPermitted"] = dict(sorted(self.existing_permitted.items()))
        return config

    def as_json(self) -> dict[str, Any]:
        return {
            "config": self.stack_config(),
            "applications": {
                a.key: {
                    "workloads": [str(w) for w in a.workloads],
                    "blockers": a.blockers,
                }
                for a in self.applications
            },
            "notAdmitted": self.not_admitted,
            "unresolved": self.unresolved,
        }


def draft(
    pods: Iterable[Mapping[str, Any]],
    namespaces: Iterable[Mapping[str, Any]],
    nodes: Iterable[Mapping[str, Any]],
    owners: Mapping[tuple[str, str, str], tuple[str, str]],
    *,
    role_base_arn: str,
    cluster_account_id: str,
    taken_keys: Iterable[str] = (),
    known: Mapping[tuple[str, str], str] | None = None,
    held_permitted: Mapping[str, str] | None = None,
) -> Draft:
    """The draft of the cluster's live pods.

    `owners` maps (namespace, kind, name) of a pod's controller (a ReplicaSet, a Job) to its
    own controller (a Deployment, a CronJob), as their ownerReferences say; `role_base_arn` is
    the running servers' `--role-base-arn`, against which kiam resolves a bare annotation;
    `taken_keys`, application names the draft must not give (the stack file's others).

    Drawn again once the stack serves some of it: `known` maps the stack file's (namespace, role
    ARN) pairs to their application names, which the draft keeps; `held_permitted` is the stack
    file's `kiam:existingPermitted`, the values the stack found and holds the annotations with:
    the live annotation is then the stack's own union of that value and its roles, so the draft
    gives the found value back instead (what the namespace admits is still judged live)."""
    permitted = {
        n["metadata"]["name"]: (n["metadata"].get("annotations") or {}).get(PERMITTED_ANNOTATION)
        for n in namespaces
    }
    node_kinds = {n["metadata"]["name"]: _unsupported_node(n) for n in nodes}
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    not_admitted, unresolved = [], []
    for pod in sorted(
        (p for p in pods if is_live(p)),
        key=lambda p: (p["metadata"]["namespace"], p["metadata"]["name"]),
    ):
        meta = pod["metadata"]
        annotation = (meta.get("annotations") or {}).get(ROLE_ANNOTATION)
        if not annotation:
            continue
        ref = f"{meta['namespace']}/{meta['name']}"
        arn = kiam.resolve(annotation, role_base_arn)
        if arn is None or not re.fullmatch(ROLE_ARN_PATTERN, arn):
            unresolved.append(f"{ref}: {ROLE_ANNOTATION}: {annotation} is no role ARN for kiam")
            continue
        expression = permitted.get(meta["namespace"])
        if (
            not expression
            or kiam.permitted_regexp_problem(expression) is not None
            or not kiam.permits(expression, arn, strict=True)
        ):
            not_admitted.append(
                f"{ref}: namespace {meta['namespace']} does not admit {arn} today "
                f"({PERMITTED_ANNOTATION}: {expression!r}): kiam refuses it already"
            )
            continue
        groups[(arn, meta["namespace"])].append(pod)

    # Which roles each service account of a namespace runs, for the one-role-per-account rule.
    roles_by_account: dict[tuple[str, str], set[str]] = defaultdict(set)
    for (arn, namespace), members in groups.items():
        for pod in members:
            roles_by_account[(namespace, _service_account(pod))].add(arn)

    applications = []
    keys: set[str] = set(taken_keys)
    for (arn, namespace), members in sorted(groups.items(), key=lambda g: (g[0][1], g[0][0])):
        accounts = sorted({_service_account(p) for p in members})
        workloads = sorted({_workload(p, owners) for p in members}, key=str)
        key = (known or {}).get((namespace, arn)) or _key(namespace, role_arn_parts(arn).name, keys)
        app = DraftApplication(
            key=key,
            namespace=namespace,
            role_arn=arn,
            service_account=None,
            workloads=workloads,
        )
        shared = [a for a in accounts if len(roles_by_account[(namespace, a)]) > 1]
        if len(accounts) > 1:
            app.blockers.append(
                f"its pods run as {len(accounts)} service accounts ({', '.join(accounts)}); Pod "
                "Identity and IRSA serve a role to one: give its workloads one service account of "
                "their own"
            )
        elif shared:
            others = sorted(
                str(w)
                for (other_arn, ns), others_pods in groups.items()
                if ns == namespace and other_arn != arn
                for w in {_workload(p, owners) for p in others_pods}
                if _service_account_of_workload(others_pods, w, owners) == accounts[0]
            )
            app.blockers.append(
                f"service account {accounts[0]} also runs {', '.join(others)} with other roles; "
                f"a service account gets one role: give {', '.join(str(w) for w in workloads)} "
                "a service account of their own"
            )
        elif accounts == [DEFAULT_SERVICE_ACCOUNT]:
            app.blockers.append(
                "its pods run as the namespace's default service account: give its workloads a "
                "service account of their own before moving, so the role goes to them alone"
            )
        else:
            app.service_account = accounts[0]
        unsupported = sorted(
            {
                f"{p['metadata']['name']} on {kind} node {p['spec'].get('nodeName')}"
                for p in members
                if (kind := node_kinds.get((p.get("spec") or {}).get("nodeName") or ""))
            }
        )
        if unsupported:
            app.blockers.append(
                f"podIdentity: pods {', '.join(unsupported)}: EKS Pod Identity serves "
                f"{pod_identity.SUPPORTED_NODES} nodes only; move it to irsa instead"
            )
        account = role_arn_parts(arn).account_id
        if account != cluster_account_id:
            app.blockers.append(
                f"the role is in account {account}: Pod Identity reaches it by role chaining "
                "(the stack creates the chain role), IRSA through an IAM OIDC provider for the "
                f"cluster in account {account}; either way its owner adds what the stack output "
                "applications.<app>.trust.next says"
            )
        applications.append(app)
    found = {k: (held_permitted or {}).get(k, v) for k, v in permitted.items() if v is not None}
    return Draft(applications, found, not_admitted, unresolved)


def _service_account(pod: Mapping[str, Any]) -> str:
    return str((pod.get("spec") or {}).get("serviceAccountName") or DEFAULT_SERVICE_ACCOUNT)


def _workload(
    pod: Mapping[str, Any], owners: Mapping[tuple[str, str, str], tuple[str, str]]
) -> Workload:
    meta = pod["metadata"]
    namespace = meta["namespace"]
    controller = next((o for o in meta.get("ownerReferences") or [] if o.get("controller")), None)
    if controller is None:
        return Workload(namespace, "Pod", meta["name"])
    kind, name = controller["kind"], controller["name"]
    # A ReplicaSet's Deployment, a Job's CronJob: one level more, where the owner says so.
    kind, name = owners.get((namespace, kind, name), (kind, name))
    return Workload(namespace, kind, name)


def _service_account_of_workload(
    pods: list[Mapping[str, Any]],
    workload: Workload,
    owners: Mapping[tuple[str, str, str], tuple[str, str]],
) -> str | None:
    return next((_service_account(p) for p in pods if _workload(p, owners) == workload), None)


def _unsupported_node(node: Mapping[str, Any]) -> str | None:
    """`Fargate` or `Windows` for a node EKS Pod Identity does not serve, else None."""
    labels = node["metadata"].get("labels") or {}
    if labels.get(pod_identity.COMPUTE_TYPE_LABEL) == pod_identity.FARGATE_COMPUTE_TYPE:
        return "Fargate"
    if labels.get(pod_identity.OS_LABEL) == pod_identity.WINDOWS_OS:
        return "Windows"
    return None


def _key(namespace: str, role_name: str, taken: set[str]) -> str:
    """An application name (a DNS label): the namespace and the role's name, made unique."""
    base = _DNS_LABEL.sub("-", f"{namespace}-{role_name}".lower()).strip("-")[:60].strip("-")
    key, n = base, 2
    while key in taken:
        key, n = f"{base}-{n}", n + 1
    taken.add(key)
    return key

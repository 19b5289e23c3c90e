"""Whether a pending create's Kubernetes object exists, read from the cluster the stack manages.

A pulumi-kubernetes type token is `kubernetes:<group>/<version>:<Kind>` with `core` for the core
group (`kubernetes:core/v1:ConfigMap`, `kubernetes:apps/v1:DaemonSet`); its inputs hold the
object's `metadata.name` (generated at check time for an auto-named object, so known before the
create) and `metadata.namespace`. The object's REST path comes from the API's own discovery
(`/api/v1`, `/apis/<group>/<version>`: each resource's `kind`, plural `name` and `namespaced`;
Kubernetes API concepts, "Discovery API"). The provider's ID of an object is `<namespace>/<name>`,
or `<name>` for a cluster-scoped one, which is what an import takes.

An imported object also needs the field manager its create applied with. pulumi-kubernetes
applies server-side under a name it draws at random for each create (`pulumi-kubernetes-<8 hex>`)
and keeps only in the resource's outputs (`__fieldManager`), which a killed create never wrote;
on a later read or update it takes the name from the state, else draws a new one (provider
`fieldManagerName`: "1. Resource annotation, 2. Value from the Pulumi state, 3. Randomly generated
name"). A new name then conflicts with the fields the first one owns: measured on the real
engine, the next agent change failed with "Server-Side Apply field conflict ... conflicts with
pulumi-kubernetes-d118382b: .spec.template.spec.containers[name=kiam-agent].args". So the manager
the object's `metadata.managedFields` names is recorded with it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kiam_eks.program.kube_api import KubeApi
from tools.interrupted.pending import Finding, PendingOperation

PREFIX = "kubernetes:"
# A patch resource (`...Patch`) applies fields to an object that exists whether or not the patch
# did; the next `up` applies it again (server-side apply is idempotent), so its pending create is
# cleared. A provider resource (`pulumi:providers:kubernetes`) makes no object at all.
PATCH_SUFFIX = "Patch"
PROVIDERS = "pulumi:providers:"
# Where an object without a namespace of its own goes: the provider's default, `default` unless a
# kubeconfig context says otherwise (pulumi-kubernetes docs, "namespace" provider argument).
DEFAULT_NAMESPACE = "default"
FIELD_MANAGER = "__fieldManager"
MANAGER_PREFIX = "pulumi-kubernetes"


def _pulumi_manager(found: dict[str, Any]) -> str | None:
    """The one pulumi-kubernetes field manager of the object (its server-side apply, else any)."""
    entries = [
        m
        for m in (found.get("metadata") or {}).get("managedFields") or []
        if str(m.get("manager", "")).startswith(MANAGER_PREFIX)
    ]
    applied = {m["manager"] for m in entries if m.get("operation") == "Apply"}
    names = applied or {m["manager"] for m in entries}
    return next(iter(names)) if len(names) == 1 else None


@dataclass
class KubernetesObjects:
    api: KubeApi
    _discovered: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def find(self, op: PendingOperation) -> Finding:
        if op.type.startswith(PROVIDERS):
            return Finding("absent")
        if not op.type.startswith(PREFIX):
            return Finding("unknown", why=f"not a Kubernetes object ({op.type})")
        group_version, kind = op.type[len(PREFIX) :].split(":", 1)
        if kind.endswith(PATCH_SUFFIX):
            return Finding("absent")
        metadata = op.inputs.get("metadata") or {}
        name = metadata.get("name")
        if not name:
            return Finding("unknown", why="its inputs name no object (metadata.name)")
        resource = self._resource(group_version, kind)
        if resource is None:
            return Finding("absent")  # the API serves no such kind: nothing of it can exist
        base = "/api/v1" if group_version == "core/v1" else f"/apis/{group_version}"
        if resource.get("namespaced"):
            namespace = metadata.get("namespace") or DEFAULT_NAMESPACE
            path, object_id = (
                f"{base}/namespaces/{namespace}/{resource['name']}/{name}",
                f"{namespace}/{name}",
            )
        else:
            path, object_id = f"{base}/{resource['name']}/{name}", name
        found = self.api.get_or_none(path)
        if not found:
            return Finding("absent")
        manager = _pulumi_manager(found)
        return Finding("exists", id=object_id, outputs={FIELD_MANAGER: manager} if manager else {})

    def _resource(self, group_version: str, kind: str) -> dict[str, Any] | None:
        if group_version not in self._discovered:
            path = "/api/v1" if group_version == "core/v1" else f"/apis/{group_version}"
            listing = self.api.get_or_none(path) or {}
            self._discovered[group_version] = list(listing.get("resources") or [])
        return next(
            (
                r
                for r in self._discovered[group_version]
                if r.get("kind") == kind and "/" not in r.get("name", "")
            ),
            None,
        )

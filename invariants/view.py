"""Finds kiam's parts among rendered resources, by what they are rather than by what they are called."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import Any

from components.policies import ROLE_TAG
from contracts.labels import (
    EXISTING_PERMITTED_ANNOTATION,
    NODE_GROUP_LABEL,
    PERMITTED_ANNOTATION,
)
from contracts.tokens import (
    DAEMON_SET,
    DEPLOYMENT,
    NAMESPACE,
    NAMESPACE_PATCH,
    NODE,
    NODE_GROUP,
    ROLE,
    ROLE_POLICY,
    SERVICE,
)
from invariants.model import UNKNOWN, Resource, by_type, dig, is_unknown

SERVER_CONTAINER, AGENT_CONTAINER = "kiam-server", "kiam-agent"


def _component(resource: Resource) -> str | None:
    labels = dig(resource.inputs, "metadata", "labels", default={}) or {}
    if is_unknown(labels) or labels.get("app.kubernetes.io/name") != "kiam":
        return None
    component = labels.get("app.kubernetes.io/component")
    return component if isinstance(component, str) else None


class KiamView:
    """The kiam objects of one stack, located once for every check."""

    def __init__(self, resources: Sequence[Resource]) -> None:
        self.resources = list(resources)

    def of_type(self, type_: str) -> list[Resource]:
        return by_type(self.resources, type_)

    @cached_property
    def servers(self) -> list[Resource]:
        return [r for r in self.of_type(DEPLOYMENT) if _component(r) == "server"]

    @cached_property
    def agents(self) -> list[Resource]:
        return [r for r in self.of_type(DAEMON_SET) if _component(r) == "agent"]

    @cached_property
    def node_groups(self) -> list[Resource]:
        """The dedicated node group: an EKS managed node group, or where a stack registers its
        nodes itself (the real-engine suite's kwok stand-in), Nodes carrying the group label."""
        return [
            *self.of_type(NODE_GROUP),
            *(
                n
                for n in self.of_type(NODE)
                if NODE_GROUP_LABEL in (dig(n.inputs, "metadata", "labels", default={}) or {})
            ),
        ]

    def roles_tagged(self, value: str) -> list[Resource]:
        return [r for r in self.of_type(ROLE) if dig(r.inputs, "tags", ROLE_TAG) == value]

    def inline_policies_of(self, role: Resource) -> list[Resource]:
        """The inline policies whose `role` comes from this role."""
        return [
            p
            for p in self.of_type(ROLE_POLICY)
            if role.urn in p.property_dependencies.get("role", frozenset())
        ]

    def permitted(self, namespace: str) -> list[Any]:
        """The `iam.amazonaws.com/permitted` values this stack gives a namespace (created or
        patched); an element may be `UNKNOWN` during a preview.

        Where the stack took over a value someone else set, the patch recording that value
        (`kiam.pulumi.io/existing-permitted`) is the one that decides: it is applied with force
        after the patch that only re-asserts the value found, and before the one that shares the
        found value once it is given back (components/namespace_permissions.py)."""
        found: list[tuple[bool, Any]] = []
        for r in [*self.of_type(NAMESPACE), *self.of_type(NAMESPACE_PATCH)]:
            name = dig(r.inputs, "metadata", "name")
            value = dig(r.inputs, "metadata", "annotations", PERMITTED_ANNOTATION)
            if is_unknown(name) or (name == namespace and value is not None):
                annotations = dig(r.inputs, "metadata", "annotations", default={}) or {}
                taking_over = (
                    isinstance(annotations, dict) and EXISTING_PERMITTED_ANNOTATION in annotations
                )
                found.append((taking_over, UNKNOWN if is_unknown(name) else value))
        if any(taking_over for taking_over, _ in found):
            return [value for taking_over, value in found if taking_over]
        return [value for _, value in found]

    def by_name(self, type_: str, name: Any, namespace: Any = None) -> Resource | None:
        for r in self.of_type(type_):
            meta = r.inputs.get("metadata") or {}
            if meta.get("name") == name and (
                namespace is None or meta.get("namespace") == namespace
            ):
                return r
        return None

    def dialed_service(self, agent: Resource) -> tuple[str | None, Resource | None]:
        """The host an agent dials and the Service of this stack with that name, if any."""
        addresses = flag_values(dig(container(agent, AGENT_CONTAINER), "args"), "--server-address")
        if len(addresses) != 1:
            return None, None
        host = addresses[0].rsplit(":", 1)[0]
        parts = host.split(".")
        namespace = parts[1] if len(parts) > 1 else dig(agent.inputs, "metadata", "namespace")
        return host, self.by_name(SERVICE, parts[0], namespace)

    def server_taints(self) -> list[dict[str, str]]:
        """The taints of the dedicated node groups, in Kubernetes spelling."""
        effects = {
            "NO_SCHEDULE": "NoSchedule",
            "NO_EXECUTE": "NoExecute",
            "PREFER_NO_SCHEDULE": "PreferNoSchedule",
        }
        taints = []
        for group in self.node_groups:
            if group.type == NODE:  # already in Kubernetes spelling
                taints += [
                    {
                        "key": t.get("key"),
                        "value": t.get("value", ""),
                        "effect": t.get("effect", ""),
                    }
                    for t in dig(group.inputs, "spec", "taints", default=[]) or []
                    # A Node as the API server returns it (the previews' dry runs) also carries
                    # Kubernetes' own condition taints (node.kubernetes.io/not-ready); a group's
                    # taint never is one: EKS refuses keys under kubernetes.io.
                    if "kubernetes.io/" not in str(t.get("key"))
                ]
                continue
            for taint in group.inputs.get("taints") or []:
                taints.append(
                    {
                        "key": taint.get("key"),
                        "value": taint.get("value", ""),
                        "effect": effects.get(taint.get("effect"), ""),
                    }
                )
        # One entry per distinct taint: every stand-in node carries the group's one taint.
        return [dict(t) for t in dict.fromkeys(tuple(sorted(t.items())) for t in taints)]


def pod_spec(workload: Resource) -> Any:
    return dig(workload.inputs, "spec", "template", "spec", default={})


def pod_labels(workload: Resource) -> Any:
    return dig(workload.inputs, "spec", "template", "metadata", "labels", default={}) or {}


def container(workload: Resource, name: str) -> Any:
    containers = dig(pod_spec(workload), "containers", default=[]) or []
    if is_unknown(containers):
        return containers
    return next(
        (c for c in containers if c.get("name") == name), containers[0] if containers else {}
    )


def flag_values(args: Any, flag: str) -> list[str]:
    """Values of `--flag=value` in a container's args (all of them: a repeated flag is suspect)."""
    if is_unknown(args) or not isinstance(args, list):
        return []
    prefix = f"{flag}="
    return [a[len(prefix) :] for a in args if isinstance(a, str) and a.startswith(prefix)]


def tolerates(toleration: Any, taint: dict[str, str]) -> bool:
    """Kubernetes' matching of one toleration against one taint."""
    effect = toleration.get("effect")
    if effect and effect != taint["effect"]:
        return False
    key = toleration.get("key")
    operator = toleration.get("operator", "Equal")
    if not key:
        return bool(operator == "Exists")
    if key != taint["key"]:
        return False
    return bool(operator == "Exists" or (toleration.get("value") or "") == taint["value"])

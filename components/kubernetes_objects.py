"""The Kubernetes objects kiam registers, by their type tokens, through the same Kubernetes provider
as pulumi_kubernetes' generated classes, but without importing those classes.

Why: `import pulumi_kubernetes.core.v1` runs every core/v1 module the SDK generates (about 100
classes and their input and output types) and took 0.50 s on this machine; core, apps, rbac,
policy and meta v1 together 0.68 s. A typed apps/v1 object imports core/v1 too, as its outputs
are translated into its output types. A program pays that on every run, twice per `pulumi up`
(the preview, then the update): at 1,000 applications it was about 0.7 s of a 4.5 s program run
(docs/performance.md). The provider is the same plugin either way: what reaches the engine is
the type token and the object's fields, which these classes send exactly as the generated ones
do (the pulumi_kubernetes Python SDK, 4.34.2 here, `core/v1/Secret.py` and the others,
`_internal_init`; tests/contracts/test_kubernetes_objects.py holds each kind to its class):

- `apiVersion` and `kind` always set, each field under its Kubernetes (camelCase) name;
- fields given as None left out (the SDK drops a property whose value is None);
- the output-only `status` declared as an output where the generated class declares it;
- the same aliases (the object's older API groups) and, for a Secret, `data` and `stringData`
  secret in its inputs and outputs.

Outputs are plain values: `obj.metadata["name"]`, not `obj.metadata.name`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import pulumi

from kiam_eks.contracts import tokens


@dataclass(frozen=True)
class ObjectKind:
    """What the generated class of one kind adds to the fields it is given."""

    token: str
    api_version: str
    kind: str
    outputs: tuple[str, ...] = ()
    """Output-only fields the generated class declares (its `__props__` set to None)."""
    aliases: tuple[str, ...] = ()
    """Type tokens of the kind's older API groups (the generated class's `alias_opts`)."""
    secret_fields: tuple[str, ...] = ()
    """Fields the generated class makes secret, in and out (`additional_secret_outputs`)."""

    def options(self, opts: pulumi.ResourceOptions | None) -> pulumi.ResourceOptions:
        own = pulumi.ResourceOptions(
            aliases=[pulumi.Alias(type_=alias) for alias in self.aliases] or None,
            additional_secret_outputs=list(self.secret_fields) or None,
        )
        return pulumi.ResourceOptions.merge(opts, own)


def _older(kind: str, *groups: str) -> tuple[str, ...]:
    """The type tokens of `kind` in its older API groups."""
    return tuple(f"kubernetes:{group}:{kind}" for group in groups)


_APPS_BETA = ("apps/v1beta2", "extensions/v1beta1")
_RBAC_BETA = ("rbac.authorization.k8s.io/v1alpha1", "rbac.authorization.k8s.io/v1beta1")

NAMESPACE = ObjectKind(tokens.NAMESPACE, "v1", "Namespace", ("status",))
NAMESPACE_PATCH = ObjectKind(tokens.NAMESPACE_PATCH, "v1", "Namespace", ("status",))
CONFIG_MAP = ObjectKind("kubernetes:core/v1:ConfigMap", "v1", "ConfigMap")
SECRET = ObjectKind(tokens.SECRET, "v1", "Secret", secret_fields=("data", "stringData"))
SERVICE = ObjectKind(tokens.SERVICE, "v1", "Service", ("status",))
SERVICE_ACCOUNT = ObjectKind("kubernetes:core/v1:ServiceAccount", "v1", "ServiceAccount")
NODE = ObjectKind(tokens.NODE, "v1", "Node", ("status",))
DEPLOYMENT = ObjectKind(
    tokens.DEPLOYMENT,
    "apps/v1",
    "Deployment",
    ("status",),
    _older("Deployment", "apps/v1beta1", *_APPS_BETA),
)
DAEMON_SET = ObjectKind(
    tokens.DAEMON_SET, "apps/v1", "DaemonSet", ("status",), _older("DaemonSet", *_APPS_BETA)
)
DAEMON_SET_PATCH = ObjectKind(
    tokens.DAEMON_SET_PATCH,
    "apps/v1",
    "DaemonSet",
    ("status",),
    _older("DaemonSetPatch", *_APPS_BETA),
)
CLUSTER_ROLE = ObjectKind(
    "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole",
    "rbac.authorization.k8s.io/v1",
    "ClusterRole",
    aliases=_older("ClusterRole", *_RBAC_BETA),
)
CLUSTER_ROLE_BINDING = ObjectKind(
    tokens.CLUSTER_ROLE_BINDING,
    "rbac.authorization.k8s.io/v1",
    "ClusterRoleBinding",
    aliases=_older("ClusterRoleBinding", *_RBAC_BETA),
)
POD_DISRUPTION_BUDGET = ObjectKind(
    tokens.PDB,
    "policy/v1",
    "PodDisruptionBudget",
    ("status",),
    _older("PodDisruptionBudget", "policy/v1beta1"),
)


def _camel(field: str) -> str:
    head, *rest = field.split("_")
    return head + "".join(part.title() for part in rest)


class KubernetesObject(pulumi.CustomResource):
    """One Kubernetes object of `KIND`: its fields as keyword arguments, in the generated classes'
    snake_case (`automount_service_account_token=False`) or as Kubernetes spells them."""

    KIND: ClassVar[ObjectKind]

    metadata: pulumi.Output[Any]
    """The object's metadata as the cluster holds it: `obj.metadata["name"]`."""

    def __init__(
        self, name: str, opts: pulumi.ResourceOptions | None = None, **fields: Any
    ) -> None:
        k = self.KIND
        props: dict[str, Any] = {"apiVersion": k.api_version, "kind": k.kind}
        for field, value in fields.items():
            key = _camel(field)
            if key in k.secret_fields and value is not None:
                value = pulumi.Output.secret(value)
            props[key] = value
        props.update({output: None for output in k.outputs})
        super().__init__(k.token, name, props, k.options(opts))


class Namespace(KubernetesObject):
    KIND = NAMESPACE


class NamespacePatch(KubernetesObject):
    KIND = NAMESPACE_PATCH


class ConfigMap(KubernetesObject):
    KIND = CONFIG_MAP


class Secret(KubernetesObject):
    KIND = SECRET


class Service(KubernetesObject):
    KIND = SERVICE


class ServiceAccount(KubernetesObject):
    KIND = SERVICE_ACCOUNT


class Node(KubernetesObject):
    KIND = NODE


class Deployment(KubernetesObject):
    KIND = DEPLOYMENT


class DaemonSet(KubernetesObject):
    KIND = DAEMON_SET


class DaemonSetPatch(KubernetesObject):
    KIND = DAEMON_SET_PATCH


class ClusterRole(KubernetesObject):
    KIND = CLUSTER_ROLE


class ClusterRoleBinding(KubernetesObject):
    KIND = CLUSTER_ROLE_BINDING


class PodDisruptionBudget(KubernetesObject):
    KIND = POD_DISRUPTION_BUDGET

"""The `iam.amazonaws.com/permitted` annotation kiam reads, on namespaces this program does not own."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.labels import PERMITTED_ANNOTATION

# What Go's regexp treats as special; role ARNs may contain `.` and `+`.
_REGEXP_SPECIAL = set(r"\.+*?()|[]{}^$")


def permitted_regexp(role_arns: Sequence[str]) -> str:
    """A regexp admitting exactly these full role ARNs (kiam matches it against the whole ARN)."""
    escaped = sorted(
        "".join(f"\\{c}" if c in _REGEXP_SPECIAL else c for c in arn) for arn in role_arns
    )
    return f"^({'|'.join(escaped)})$"


@dataclass(frozen=True, kw_only=True)
class NamespacePermissionsArgs:
    """Inputs of `NamespacePermissions`."""

    role_arns_by_namespace: Mapping[str, Sequence[pulumi.Input[str]]]
    """For each namespace, the application role ARNs its pods may assume."""


class NamespacePermissions(pulumi.ComponentResource):
    """One server-side-apply patch per namespace: only the annotation is ours, never the namespace,
    so deleting the stack removes the annotation and leaves the namespace alone."""

    def __init__(
        self, name: str, args: NamespacePermissionsArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("kiam:index:NamespacePermissions", name, None, opts)
        for namespace, arns in sorted(args.role_arns_by_namespace.items()):
            k8s.core.v1.NamespacePatch(
                f"{name}-{namespace}",
                metadata={
                    "name": namespace,
                    "annotations": {
                        PERMITTED_ANNOTATION: pulumi.Output.all(*arns).apply(
                            lambda resolved: permitted_regexp(list(resolved))
                        )
                    },
                },
                opts=pulumi.ResourceOptions(parent=self),
            )
        self.register_outputs({})

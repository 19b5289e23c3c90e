"""The `iam.amazonaws.com/permitted` annotation kiam reads, on namespaces this program does not own.

Each namespace gets one server-side-apply patch that owns exactly that annotation, so the namespace
stays with whoever created it and deleting the stack removes the annotation and nothing else.

A namespace whose annotation someone else set first (a running kiam install, `kubectl annotate`) is
different: the API server refuses to let the patch take a field another field manager owns (a
*conflict*), which is the right answer for an owner nobody mentioned. When the stack says which
value it found there (`kiam:existingPermitted`), the annotation is taken over in three steps:

1. `-existing` re-asserts the value found, without force: the API server accepts that only while
   the annotation still holds exactly that value (it then shares ownership), so a value that
   changed since it was read stops `pulumi up` with a conflict before anything changes.
2. the namespace's patch then takes the annotation over with force, writing a regexp that admits
   what the found value admits *and* the stack's roles (pods relying on the old value keep their
   credentials during a migration), and records the found value in `kiam.pulumi.io/existing-permitted`.
   While it holds that union it is kept on delete: a `pulumi destroy` leaves the union, never an
   unannotated namespace whose pods the running kiam would then refuse.
3. once none of the stack's applications uses the namespace, the patch writes the found value back
   and `-given-back`, kept on delete, shares its ownership: deleting the patch later (destroy, or
   removing the namespace's entry) then leaves exactly the value found, and nothing of the stack.

A `pulumi destroy` cannot write anything (the Kubernetes provider only gives up a patch's fields),
so the found value comes back through step 3, a `pulumi up`, and not through the destroy itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi

from kiam_eks.components import kubernetes_objects as kube
from kiam_eks.contracts import tokens
from kiam_eks.contracts.labels import (
    EXISTING_PERMITTED_ANNOTATION,
    PATCH_FORCE_ANNOTATION,
    PERMITTED_ANNOTATION,
)

# What Go's regexp treats as special; role ARNs may contain `.` and `+`.
_REGEXP_SPECIAL = set(r"\.+*?()|[]{}^$")


def permitted_regexp(role_arns: Sequence[str]) -> str:
    """A regexp admitting exactly these full role ARNs (kiam matches it against the whole ARN)."""
    escaped = sorted(
        "".join(f"\\{c}" if c in _REGEXP_SPECIAL else c for c in arn) for arn in role_arns
    )
    return f"^({'|'.join(escaped)})$"


def permitted_union(existing: str, role_arns: Sequence[str]) -> str:
    """A regexp admitting what `existing` admits and exactly these ARNs, both as kiam matches.

    kiam v4.2 compiles `"^" + expression + "$"` (its servers here never disable that), so
    `existing + "$|" + ours` compiles to `^existing$|^(ours)$$`: the alternatives of the anchored
    `existing`, exactly as kiam reads it alone, or one of the ARNs. An empty `existing` admits
    nothing (kiam refuses every pod), so the union is the ARNs alone.
    """
    if not role_arns:
        return existing
    ours = permitted_regexp(role_arns)
    return f"{existing}$|{ours}" if existing else ours


@dataclass(frozen=True, kw_only=True)
class NamespacePermissionsArgs:
    """Inputs of `NamespacePermissions`."""

    role_arns_by_namespace: Mapping[str, Sequence[pulumi.Input[str]]]
    """For each namespace, the application role ARNs its pods may assume."""
    existing: Mapping[str, str] = field(default_factory=dict)
    """`kiam:existingPermitted`: for namespaces whose annotation someone else set, the value found."""


class NamespacePermissions(pulumi.ComponentResource):
    """One server-side-apply patch per namespace: only the annotation is ours, never the namespace,
    so deleting the stack removes the annotation and leaves the namespace alone; an annotation
    someone else set is taken over only as `kiam:existingPermitted` declares it, and given back."""

    def __init__(
        self, name: str, args: NamespacePermissionsArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(tokens.NAMESPACE_PERMISSIONS, name, None, opts)
        namespaces = sorted({*args.role_arns_by_namespace, *args.existing})
        for namespace in namespaces:
            arns = list(args.role_arns_by_namespace.get(namespace, []))
            existing = args.existing.get(namespace)
            if existing is None:
                self._patch(f"{name}-{namespace}", namespace, _regexp_of(arns), {})
            else:
                self._take_over(f"{name}-{namespace}", namespace, existing, arns)
        self.register_outputs({})

    def _patch(
        self,
        name: str,
        namespace: str,
        value: pulumi.Input[str],
        extra: dict[str, str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> kube.NamespacePatch:
        return kube.NamespacePatch(
            name,
            metadata={
                "name": namespace,
                "annotations": {PERMITTED_ANNOTATION: value, **extra},
            },
            opts=pulumi.ResourceOptions.merge(pulumi.ResourceOptions(parent=self), opts),
        )

    def _take_over(
        self, name: str, namespace: str, existing: str, arns: list[pulumi.Input[str]]
    ) -> None:
        check = self._patch(
            f"{name}-existing",
            namespace,
            existing,
            {},
            # It asserts the value once, before the takeover; afterwards the annotation holds
            # the union, which a refresh must not turn into an update of this patch.
            pulumi.ResourceOptions(ignore_changes=["metadata.annotations"]),
        )
        holding = bool(arns)
        value = (
            pulumi.Output.all(*arns).apply(lambda resolved: permitted_union(existing, resolved))
            if holding
            else existing
        )
        takeover = self._patch(
            name,
            namespace,
            value,
            {PATCH_FORCE_ANNOTATION: "true", EXISTING_PERMITTED_ANNOTATION: existing},
            pulumi.ResourceOptions(depends_on=[check], retain_on_delete=holding),
        )
        if not holding:
            # Shares the given-back value, so it stays when the takeover patch gives up its fields.
            self._patch(
                f"{name}-given-back",
                namespace,
                existing,
                {},
                pulumi.ResourceOptions(depends_on=[takeover], retain_on_delete=True),
            )


def _regexp_of(arns: list[pulumi.Input[str]]) -> pulumi.Output[str]:
    return pulumi.Output.all(*arns).apply(lambda resolved: permitted_regexp(list(resolved)))

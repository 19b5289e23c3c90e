"""15. A retired stack (`kiam:retire: true`) holds none of kiam's objects and every application's."""

from __future__ import annotations

from kiam_eks.contracts.labels import NAME, NAME_LABEL, TLS_SECRET_TYPE
from kiam_eks.contracts.tokens import (
    LAUNCH_TEMPLATE,
    NODE_GROUP,
    POLICY_ATTACHMENT,
    ROLE,
    ROLE_POLICY,
    ROLE_POLICY_ATTACHMENT,
    SECRET,
)
from kiam_eks.invariants.model import Resource, Violation, dig, is_unknown
from kiam_eks.invariants.pod_identity import associations, chain_roles
from kiam_eks.invariants.view import KiamView

CHECK_ID = "retired"


def _kiam_labelled(resource: Resource) -> bool:
    """A Kubernetes object of kiam's own, by the name label every one of them carries
    (`contracts.labels`). A patch is not one: it owns fields of an object, not the object
    (retirement rolls the agents through one before they go)."""
    if not resource.type.startswith("kubernetes:") or resource.type.endswith("Patch"):
        return False
    labels = dig(resource.inputs, "metadata", "labels", default={}) or {}
    return not is_unknown(labels) and labels.get(NAME_LABEL) == NAME


def retired(view: KiamView) -> list[Violation]:
    """15. With kiam:retire the stack holds none of kiam's objects (servers, agents, their Service, RBAC, TLS Secrets and certificates, the dedicated node group, kiam's IAM roles and their policies) and still holds every application role.

    kiam's objects are found by what they are: Kubernetes objects labelled as kiam's, Secrets
    of type kubernetes.io/tls and pulumi-tls resources, whatever the cloud side created for the
    server nodes (or any EKS node group and launch template), and every IAM role that is no
    application's, with what grants it permissions. The application roles' policies and Pod
    Identity associations are judged, in every state, by guarantees 8 and 13.
    """
    expected = view.expected
    if not expected.retire:
        return []
    out: set[Violation] = set()

    def report(resource: Resource, what: str) -> None:
        out.add(Violation(CHECK_ID, resource.urn, f"is {what}, which kiam:retire removes"))

    for r in view.resources:
        if _kiam_labelled(r):
            report(r, f"kiam's {dig(r.inputs, 'metadata', 'name')} ({r.type.rsplit(':', 1)[1]})")
        elif r.type == SECRET and r.inputs.get("type") == TLS_SECRET_TYPE:
            report(r, "a TLS Secret (kiam's certificates)")
        elif r.type.startswith("tls:"):
            report(r, "a certificate or key of kiam's (pulumi-tls)")
        elif r in view.node_groups or r.type in (NODE_GROUP, LAUNCH_TEMPLATE):
            report(r, "part of kiam's dedicated server nodes")

    application_roles = [
        role for app in expected.applications if (role := view.application_role(app)) is not None
    ]
    # The role an association chains through to an existing role in another account serves
    # that application: it stays, as the association does.
    application_roles += [role for a in associations(view) for role in chain_roles(view, a)]
    for role in view.of_type(ROLE):
        if role not in application_roles:
            report(role, "an IAM role that is no application's (kiam's)")
    granted = {
        *(p.source.urn for role in application_roles for p in view.inline_policies_of(role)),
        *(p.source.urn for role in application_roles for p in view.managed_policies_of(role)),
    }
    for grant in [
        *view.of_type(ROLE_POLICY),
        *view.of_type(ROLE_POLICY_ATTACHMENT),
        *view.of_type(POLICY_ATTACHMENT),
    ]:
        if grant.urn not in granted:
            report(grant, "a policy of no application's role (kiam's)")

    # Where the stack creates IAM roles at all (not the real-engine suite's computed ones).
    if any(r.type.startswith("aws:") for r in view.resources):
        for app in expected.applications:
            if app.owned and view.application_role(app) is None:
                out.add(
                    Violation(
                        CHECK_ID,
                        "stack",
                        f"application {app.name}: no role {app.role_name} at path {app.path}; "
                        "retiring kiam keeps every application role",
                    )
                )
    return sorted(out)

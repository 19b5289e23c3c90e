"""What a caller needs next for each application: the `applications` output of `Kiam` (and the
stack output of the same name), from its settings and what the cloud side made for it."""

from __future__ import annotations

from typing import Any

import pulumi

from kiam_eks.components.cloud import ApplicationAccess
from kiam_eks.settings.applications import ApplicationSettings


def application_output(
    settings: ApplicationSettings,
    role: ApplicationAccess,
    association: pulumi.Resource | None,
) -> dict[str, Any]:
    """What one application's pod template and service account need in its state, and where it
    goes next.

    - `podAnnotation`: kiam's `iam.amazonaws.com/role`, only while kiam serves the role (a pod
      keeping it afterwards asks kiam for a role its namespace no longer admits); `{}` otherwise.
    - `serviceAccount`: the service account Pod Identity or IRSA serves the role to, with the
      annotations it needs (IRSA's `eks.amazonaws.com/role-arn`; none for Pod Identity, whose
      association lives in EKS); null while only kiam serves it.
    - `podIdentityAssociationId`: the association's id while Pod Identity serves it, else null.
    - `trust`, for a role that exists already (`roleArn`) only: the statements its trust policy
      must hold now (`required`) and those each next state adds (`next`), for its owner to put in.
    """
    served_by = settings.served_by
    service_account: dict[str, Any] | None = None
    if settings.service_account is not None and served_by.successor:
        service_account = {
            "name": settings.service_account,
            "namespace": settings.namespace,
            "annotations": role.service_account_annotation if served_by.irsa else {},
        }
    output: dict[str, Any] = {
        "servedBy": served_by.value,
        "next": served_by.next.value if served_by.next is not None else None,
        "roleArn": role.role_arn,
        "podAnnotation": role.pod_annotation if served_by.kiam else {},
        "serviceAccount": service_account,
        "podIdentityAssociationId": association.id
        if isinstance(association, pulumi.CustomResource)
        else None,
    }
    if role.owner_trust is not None:
        output["trust"] = role.owner_trust
    return output

"""Build one stack from validated settings, a cloud side and providers: `__main__.py` runs it with
the AWS cloud side (and through it the tests and the offline plan), the real-engine tests with
stand-ins (`e2e/program`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi

from kiam_eks.components.cloud import ApplicationAccess, CloudSide
from kiam_eks.components.kiam import Kiam, KiamArgs
from kiam_eks.contracts import names
from kiam_eks.program.last_update import read_last_update
from kiam_eks.settings import installed
from kiam_eks.settings.applications import ApplicationSettings
from kiam_eks.settings.loader import stack_file_for
from kiam_eks.settings.stack import StackSettings
from kiam_eks.settings.transitions import Transition, judge


def judge_change(settings: StackSettings) -> Transition:
    """The change from what this stack's last update installed to `settings`, judged before
    anything is registered (settings/transitions.py): raises `RefusedChangeError` for a change
    that would take credentials away, and says in the engine's log what it sequences."""
    last = read_last_update()
    transition = judge(
        settings, last.installed(), last.resources, stack_file_for(pulumi.get_stack())
    )
    for verdict in transition.verdicts:
        # Diagnostics a preview shows under the resources: what the change does, and how.
        pulumi.log.info(f"{verdict.kind.value} change: {verdict}")
    return transition


def build(
    settings: StackSettings,
    cloud: CloudSide,
    providers: Sequence[pulumi.ProviderResource],
    transition: Transition | None = None,
) -> Kiam:
    """The `Kiam` component, with the stack's providers handed down to every child."""
    return Kiam(
        names.INSTALL_NAME,
        KiamArgs(settings=settings, cloud=cloud, transition=transition),
        pulumi.ResourceOptions(providers=list(providers)),
    )


def export_outputs(
    kiam: Kiam, settings: StackSettings, transition: Transition | None = None
) -> None:
    """The stack outputs the README documents.

    Once kiam is retired (`kiam:retire`) only `applications` remains: kiam's outputs (its roles,
    node group, server address, namespace) are absent rather than null, so a consumer that still
    requires one (`pulumi stack output serverRoleArn`, a StackReference's `require_output`) fails
    loudly instead of reading a null as a value."""
    if kiam.server_nodes is not None:
        pulumi.export("nodeRoleArn", kiam.roles.node_role_arn)
        pulumi.export("serverRoleArn", kiam.roles.server_role_arn)
        pulumi.export("roleBaseArn", kiam.roles.role_base_arn)
        pulumi.export("applicationRolePatterns", kiam.roles.application_role_patterns)
        pulumi.export("nodeGroupName", kiam.server_nodes.node_group_name)
        pulumi.export(names.SERVER_ADDRESS_OUTPUT, kiam.server_address)
        pulumi.export("namespace", settings.namespace.name)
    applications: pulumi.Input[dict[str, Any]] = {
        app: application_output(
            settings.applications[app], role, kiam.pod_identity_associations.get(app)
        )
        for app, role in kiam.applications.items()
    }
    if kiam.retirement is not None:
        # Recorded only once the agents are rolled: a failed roll leaves the previous outputs,
        # `serverAddress` included, so the next `pulumi up` rolls again
        # (components/agent_retirement.py).
        applications = pulumi.Output.all(kiam.retirement.done, applications).apply(
            lambda done_and_applications: done_and_applications[1]
        )
    pulumi.export("applications", applications)
    previous = transition.previous if transition is not None else None
    leaves = installed.installed_by(settings, previous).to_output()
    # Recorded only once the rollouts (and a retirement's roll) are done: an update that fails
    # half way leaves the facts of the one before, and the next judges the same change again.
    pulumi.export(installed.OUTPUT, kiam.settled.apply(lambda _: leaves))


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

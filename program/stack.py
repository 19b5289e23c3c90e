"""Build one stack from validated settings, a cloud side and providers: `__main__.py` runs it with
the AWS cloud side (and through it the tests and the offline plan), the real-engine tests with
stand-ins (`e2e/program`)."""

from __future__ import annotations

from collections.abc import Sequence

import pulumi

from components.cloud import CloudSide
from components.kiam import Kiam, KiamArgs
from contracts import names
from settings.stack import StackSettings


def build(
    settings: StackSettings, cloud: CloudSide, providers: Sequence[pulumi.ProviderResource]
) -> Kiam:
    """The `Kiam` component, with the stack's providers handed down to every child."""
    return Kiam(
        names.INSTALL_NAME,
        KiamArgs(settings=settings, cloud=cloud),
        pulumi.ResourceOptions(providers=list(providers)),
    )


def export_outputs(kiam: Kiam, settings: StackSettings) -> None:
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
        pulumi.export("serverAddress", kiam.server_address)
        pulumi.export("namespace", settings.namespace.name)
    pulumi.export(
        "applications",
        {
            app: {
                "roleArn": role.role_arn,
                "podAnnotation": role.pod_annotation,
                "serviceAccountAnnotation": role.service_account_annotation,
            }
            for app, role in kiam.applications.items()
        },
    )

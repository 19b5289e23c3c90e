"""Build one stack from validated settings and providers; `__main__.py` runs it, and through it the
tests and the offline plan."""

from __future__ import annotations

import pulumi

from components.kiam import Kiam, KiamArgs
from program.providers import Providers
from settings.stack import StackSettings

# The top component's name; every child name (and kiam's IAM role names) starts with it.
KIAM_NAME = "kiam"


def build(settings: StackSettings, providers: Providers) -> Kiam:
    """The `Kiam` component, with the stack's providers handed down to every child."""
    return Kiam(
        KIAM_NAME,
        KiamArgs(settings=settings, oidc_issuer=providers.oidc_issuer),
        pulumi.ResourceOptions(providers=providers.as_list()),
    )


def export_outputs(kiam: Kiam, settings: StackSettings) -> None:
    """The stack outputs the README documents."""
    pulumi.export("nodeRoleArn", kiam.iam.node_role.arn)
    pulumi.export("serverRoleArn", kiam.iam.server_role.arn)
    pulumi.export("roleBaseArn", kiam.iam.role_base_arn)
    pulumi.export("applicationRolePatterns", kiam.iam.application_role_patterns)
    pulumi.export("nodeGroupName", kiam.node_group.node_group_name)
    pulumi.export("serverAddress", kiam.server_address)
    pulumi.export("namespace", settings.namespace.name)
    pulumi.export(
        "applications",
        {
            app: {
                "roleArn": role.role.arn,
                "podAnnotation": role.pod_annotation,
                "serviceAccountAnnotation": role.service_account_annotation,
            }
            for app, role in kiam.applications.items()
        },
    )

"""Build one stack from validated settings: `__main__.py`, the tests and the offline plan all call this."""

from __future__ import annotations

import pulumi

from components.kiam import Kiam, KiamArgs
from program.providers import create_providers
from settings.stack import StackSettings

# The top component's name; every child name (and kiam's IAM role names) starts with it.
KIAM_NAME = "kiam"


def deploy(settings: StackSettings) -> Kiam:
    """Create the providers and the `Kiam` component, and export the stack outputs."""
    providers = create_providers(settings)
    kiam = Kiam(
        KIAM_NAME,
        KiamArgs(settings=settings, oidc_issuer=providers.oidc_issuer),
        pulumi.ResourceOptions(providers=providers.as_list()),
    )
    pulumi.export("nodeRoleArn", kiam.iam.node_role.arn)
    pulumi.export("serverRoleArn", kiam.iam.server_role.arn)
    pulumi.export("roleBaseArn", kiam.iam.role_base_arn)
    pulumi.export("applicationRolePattern", kiam.iam.application_role_pattern)
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
    return kiam

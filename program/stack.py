"""Build one stack from validated settings and providers: `Kiam` from the stack settings as they
are (`Kiam.of_settings`: typed, validated once when the stack file was read), on AWS for
`__main__.py` (and through it the tests and the offline plan), on the stand-ins for the
real-engine tests (`e2e/program`)."""

from __future__ import annotations

from collections.abc import Sequence

import pulumi

from kiam_eks.components.cloud import CloudSide
from kiam_eks.components.kiam import Kiam
from kiam_eks.components.last_update import judged_change
from kiam_eks.contracts import names
from kiam_eks.settings.loader import stack_file_for
from kiam_eks.settings.stack import StackSettings
from kiam_eks.transitions import installed
from kiam_eks.transitions.judge import Transition


def judge_change(settings: StackSettings) -> Transition:
    """The change from what this stack's last update installed to `settings`, judged before
    anything is registered, as `Kiam` judges itself in any other program
    (components/last_update.py): the program needs it first, for its providers."""
    return judged_change(
        settings, names.INSTALL_NAME, stack_file_for(pulumi.get_stack()), program_outputs=True
    )


def build(
    settings: StackSettings,
    providers: Sequence[pulumi.ProviderResource],
    *,
    transition: Transition | None = None,
    oidc_issuer: pulumi.Input[str] | None = None,
    cloud: CloudSide | None = None,
) -> Kiam:
    """The `Kiam` component from the stack's settings, with the stack's providers handed down to
    every child; on AWS unless given another cloud side (the e2e stand-ins)."""
    return Kiam.of_settings(
        names.INSTALL_NAME,
        settings,
        pulumi.ResourceOptions(providers=list(providers)),
        oidc_issuer=oidc_issuer,
        cloud=cloud,
        transition=transition,
    )


def export_outputs(kiam: Kiam, settings: StackSettings) -> None:
    """The stack outputs docs/using-it.md documents.

    Once kiam is retired (`kiam:retire`) only `applications` and `installed` remain: kiam's
    outputs (its roles, node group, server address, namespace) are absent rather than null, so a
    consumer that still requires one (`pulumi stack output serverRoleArn`, a StackReference's `require_output`) fails
    loudly instead of reading a null as a value."""
    if kiam.server_nodes is not None:
        pulumi.export("nodeRoleArn", kiam.roles.node_role_arn)
        pulumi.export("serverRoleArn", kiam.roles.server_role_arn)
        pulumi.export("roleBaseArn", kiam.roles.role_base_arn)
        pulumi.export("applicationRolePatterns", kiam.roles.application_role_patterns)
        pulumi.export("nodeGroupName", kiam.server_nodes.node_group_name)
        pulumi.export(names.SERVER_ADDRESS_OUTPUT, kiam.server_address)
        pulumi.export("namespace", settings.namespace.name)
    # Each application's access: known once a retirement's roll is done (components/kiam.py).
    pulumi.export("applications", kiam.application_outputs)
    # The component's record (components/kiam.py), which the judge reads; exported too, as
    # every version did: an older version of the program, rolled back to, reads it there, and
    # the offline plan's `--diff` reads it from an earlier plan's outputs (tools/plan.py).
    pulumi.export(installed.OUTPUT, kiam.installed)

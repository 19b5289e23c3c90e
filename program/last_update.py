"""Reading what the stack's last update left, before the program registers anything.

The engine's builtin provider answers `pulumi:pulumi:readStackResourceOutputs` for a stack name
with every resource in that stack's stored state, its type and outputs, the root stack's outputs
being the stack outputs (pulumi/pulumi pkg/resource/deploy/builtins.go `Invoke`,
`readStackResourceOutputs`; pkg/backend/backend.go `GetStackResourceOutputs`, which leaves out
resources marked for deletion). It reads the backend's checkpoint, in a preview as in an update;
at the start of an update that checkpoint is still the previous update's (the root stack, the
only registration before this read, keeps its old outputs until the program's end:
pkg/resource/deploy/step.go `SameStep`). A stack with no update yet has no resources.

The self-managed ("DIY") backend names every stack's organization `organization`
(pulumi/pulumi pkg/backend/diy/state.go), which `pulumi.get_organization()` reports.
"""

from __future__ import annotations

import pulumi
from pulumi.runtime import invoke

from settings.installed import LastUpdate

READ_STACK_RESOURCES = "pulumi:pulumi:readStackResourceOutputs"


def own_stack_name() -> str:
    """This stack's fully qualified name, as the engine looks a stack up."""
    return f"{pulumi.get_organization()}/{pulumi.get_project()}/{pulumi.get_stack()}"


def read_last_update() -> LastUpdate:
    """This stack's last update, read synchronously (an invoke blocks until answered): the
    program decides what to register from it."""
    result = invoke(READ_STACK_RESOURCES, {"stackName": own_stack_name()})
    return LastUpdate.of_stack_resources(result.value or {})

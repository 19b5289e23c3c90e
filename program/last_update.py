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
(pulumi/pulumi pkg/backend/diy/state.go), which `pulumi.get_organization()` reports. It reads the
checkpoint file the engine is writing at the same moment (the root stack's step is persisted as
the program starts): measured on the real engine, a read landing on the write answers "failed to
load checkpoint: EOF", so a failed read is tried again for a few seconds before it stops the
program.

The read goes to the engine's resource monitor directly, with `acceptResources` false: the
outputs of the stack's components hold references to their resources, which the SDK's own
invoke would try to rebuild through `pulumi:pulumi:getResource` and fail on (the resources are
not registered yet in this run: "unknown resource"); without it the engine hands each reference
over as its URN (pkg/resource/deploy/source_eval.go, `resmon.Invoke`: `KeepResources:
req.GetAcceptResources()`).
"""

from __future__ import annotations

import time
from typing import Any

import pulumi
from google.protobuf import json_format, struct_pb2
from pulumi.runtime import rpc
from pulumi.runtime import settings as runtime_settings
from pulumi.runtime.proto import resource_pb2

from kiam_eks.settings.installed import LastUpdate

READ_STACK_RESOURCES = "pulumi:pulumi:readStackResourceOutputs"
ATTEMPTS, PAUSE_SECONDS = 20, 0.25


def own_stack_name() -> str:
    """This stack's fully qualified name, as the engine looks a stack up."""
    return f"{pulumi.get_organization()}/{pulumi.get_project()}/{pulumi.get_stack()}"


def read_last_update() -> LastUpdate:
    """This stack's last update, read synchronously (an invoke blocks until answered): the
    program decides what to register from it."""
    for attempt in range(ATTEMPTS):
        try:
            return LastUpdate.of_stack_resources(_invoke({"stackName": own_stack_name()}))
        except Exception as error:  # the engine's answer to a torn read is an RPC error
            if attempt == ATTEMPTS - 1:
                raise pulumi.RunError(
                    f"cannot read what this stack's last update left: {error}"
                ) from None
            time.sleep(PAUSE_SECONDS)
    raise AssertionError("unreachable")


def _invoke(args: dict[str, Any]) -> dict[str, Any]:
    request = struct_pb2.Struct()
    request.update(args)
    monitor = runtime_settings.get_monitor()
    if monitor is None:
        raise RuntimeError("no Pulumi engine to ask")
    response = monitor.Invoke(
        resource_pb2.ResourceInvokeRequest(
            tok=READ_STACK_RESOURCES, args=request, acceptResources=False
        )
    )
    if response.failures:
        reasons = "; ".join(f.reason for f in response.failures)
        raise RuntimeError(f"{READ_STACK_RESOURCES} failed: {reasons}")
    answer = _unwrap_secrets(json_format.MessageToDict(getattr(response, "return")))
    return dict(answer) if isinstance(answer, dict) else {}


def _unwrap_secrets(value: Any) -> Any:
    """The values of secrets, as the program wrote them (only the facts are read from them)."""
    if isinstance(value, dict):
        if value.get(rpc._special_sig_key) == rpc._special_secret_sig:
            return _unwrap_secrets(value.get("value"))
        return {k: _unwrap_secrets(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unwrap_secrets(v) for v in value]
    return value

"""Asking the engine for this stack's stored state, as early as the program can.

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

The engine takes a while to build that answer for a large stack (it serializes every resource's
outputs: at 1,000 applications the program waited about 0.3 s for it, sampled with py-spy on the
real engine, docs/performance.md). So the entry points call `start_reading` first thing: the
question goes out on a thread of its own, the engine answers while the program imports its
modules and validates the stack file, and `stack_resources` takes that answer when the change is
judged. Nothing is registered before then, so the early answer is the one a later question would
have had. Against a real engine only: under the SDK's mocks (the tests, the offline plan) the
answer is immediate, and the mocks' `Invoke` makes an event loop for the thread that calls it
(pulumi/pulumi sdk/python/lib/pulumi/runtime/mocks.py `MockMonitor.Invoke`,
`_ensure_event_loop`), which a second thread would then share nothing with.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from typing import Any

import pulumi
from google.protobuf import struct_pb2
from pulumi.runtime import settings as runtime_settings
from pulumi.runtime.proto import resource_pb2, resource_pb2_grpc

READ_STACK_RESOURCES = "pulumi:pulumi:readStackResourceOutputs"
ATTEMPTS, PAUSE_SECONDS = 20, 0.25

_early: Future[struct_pb2.Struct] | None = None
"""The answer `start_reading` asked for, until `stack_resources` takes it."""


def own_stack_name() -> str:
    """This stack's fully qualified name, as the engine looks a stack up."""
    return f"{pulumi.get_organization()}/{pulumi.get_project()}/{pulumi.get_stack()}"


def start_reading() -> None:
    """Ask the engine now, on a thread, when a real engine answers; else do nothing."""
    global _early
    if _early is not None or not isinstance(
        runtime_settings.get_monitor(), resource_pb2_grpc.ResourceMonitorStub
    ):
        return
    answer: Future[struct_pb2.Struct] = Future()
    stack_name = own_stack_name()

    def ask() -> None:
        try:
            answer.set_result(read_now(stack_name))
        except BaseException as error:  # handed to the program, which raises it
            answer.set_exception(error)

    # Not a daemon: a program that stops before taking the answer (a refused stack file) waits
    # for the call in flight at exit rather than tearing the interpreter down under it.
    threading.Thread(target=ask, name="read-stack-state").start()
    _early = answer


def stack_resources() -> struct_pb2.Struct:
    """The engine's answer: the one `start_reading` asked for, taken once, or asked now."""
    global _early
    early, _early = _early, None
    return early.result() if early is not None else read_now(own_stack_name())


def read_now(stack_name: str) -> struct_pb2.Struct:
    """Asked and waited for (an invoke blocks until answered), tried again on a torn read."""
    for attempt in range(ATTEMPTS):
        try:
            return _invoke({"stackName": stack_name})
        except Exception as error:  # the engine's answer to a torn read is an RPC error
            if attempt == ATTEMPTS - 1:
                raise pulumi.RunError(
                    f"cannot read what this stack's last update left: {error}"
                ) from None
            time.sleep(PAUSE_SECONDS)
    raise AssertionError("unreachable")


def _invoke(args: dict[str, Any]) -> struct_pb2.Struct:
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
    result: struct_pb2.Struct = getattr(response, "return")
    return result

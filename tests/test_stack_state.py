"""The question for the stack's stored state (components/stack_state.py): asked early on a
thread of its own against a real engine, its answer taken once; asked when needed under the
SDK's mocks; a torn read tried again; a read that keeps failing stops the program."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pulumi
import pytest
from google.protobuf import struct_pb2
from pulumi.runtime.proto import resource_pb2, resource_pb2_grpc

from kiam_eks.components import stack_state

STACK_NAME = "organization/kiam-eks/dev"


class EngineMonitor(resource_pb2_grpc.ResourceMonitorStub):
    """A real engine's monitor, as the SDK holds it (a gRPC stub), answering from memory."""

    def __init__(self, failures: int = 0) -> None:  # no channel: Invoke is answered here
        self.asked: list[tuple[str, str, str, bool]] = []
        self.failures = failures
        self.release = threading.Event()
        self.release.set()

    def Invoke(self, request: Any) -> Any:  # noqa: N802 (the gRPC method name)
        self.release.wait(10)
        args = dict(request.args.fields)
        self.asked.append(
            (
                threading.current_thread().name,
                request.tok,
                args["stackName"].string_value,
                request.acceptResources,
            )
        )
        if self.failures:
            self.failures -= 1
            raise RuntimeError("failed to load checkpoint: EOF")
        answer = struct_pb2.Struct()
        answer.update({"outputs": {"asked": len(self.asked)}})
        return resource_pb2.ResourceInvokeResponse(**{"return": answer})


@pytest.fixture(autouse=True)
def nothing_asked_yet(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(stack_state, "own_stack_name", lambda: STACK_NAME)
    monkeypatch.setattr(stack_state, "_early", None)
    yield


def engine(monkeypatch: pytest.MonkeyPatch, monitor: object) -> None:
    monkeypatch.setattr(stack_state.runtime_settings, "get_monitor", lambda: monitor)


def asked(answer: struct_pb2.Struct) -> float:
    return answer.fields["outputs"].struct_value.fields["asked"].number_value


def test_a_real_engine_is_asked_early_on_a_thread_and_its_answer_taken_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monitor = EngineMonitor()
    monitor.release.clear()
    engine(monkeypatch, monitor)
    stack_state.start_reading()
    stack_state.start_reading()  # a second call asks nothing more
    assert monitor.asked == []  # the program goes on while the engine builds the answer
    monitor.release.set()
    assert asked(stack_state.stack_resources()) == 1
    assert monitor.asked == [
        ("read-stack-state", stack_state.READ_STACK_RESOURCES, STACK_NAME, False)
    ]
    # Taken once: a later question is asked then, on the caller's thread.
    assert asked(stack_state.stack_resources()) == 2
    assert monitor.asked[1][0] == threading.current_thread().name


def test_under_the_sdks_mocks_nothing_is_asked_before_it_is_needed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    mocked = EngineMonitor()
    engine(monkeypatch, object())  # not a gRPC stub: the SDK's MockMonitor, say
    stack_state.start_reading()
    assert stack_state._early is None
    engine(monkeypatch, mocked)
    assert asked(stack_state.stack_resources()) == 1
    assert mocked.asked[0][0] == threading.current_thread().name


def test_a_torn_read_is_tried_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stack_state, "PAUSE_SECONDS", 0)
    monitor = EngineMonitor(failures=2)
    engine(monkeypatch, monitor)
    stack_state.start_reading()
    assert asked(stack_state.stack_resources()) == 3
    assert len(monitor.asked) == 3


def test_a_read_that_keeps_failing_stops_the_program_with_the_engines_words(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(stack_state, "PAUSE_SECONDS", 0)
    monitor = EngineMonitor(failures=stack_state.ATTEMPTS)
    engine(monkeypatch, monitor)
    stack_state.start_reading()
    with pytest.raises(pulumi.RunError) as refused:
        stack_state.stack_resources()
    assert str(refused.value) == (
        "cannot read what this stack's last update left: failed to load checkpoint: EOF"
    )
    assert len(monitor.asked) == stack_state.ATTEMPTS

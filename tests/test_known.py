"""`components.known.lifted` means what `pulumi.Output.from_input` means for the values the
components pass it (plain mappings and lists around a few Outputs): the same value, unknown while
any Output in it is, secret if any is, depending on every resource any of them depends on."""

from __future__ import annotations

import asyncio
from typing import Any

import pulumi
import pytest

from kiam_eks.components.known import lifted


def _output(value: Any, *, known: bool = True, secret: bool = False) -> pulumi.Output[Any]:
    """An Output as the SDK makes them, with its value, knownness and secrecy set."""
    loop = asyncio.get_event_loop()

    def done(result: Any) -> asyncio.Future[Any]:
        future: asyncio.Future[Any] = loop.create_future()
        future.set_result(result)
        return future

    return pulumi.Output(set(), done(value), done(known), done(secret))


async def _observed(output: pulumi.Output[Any]) -> tuple[Any, bool, bool]:
    return (await output.future(), await output.is_known(), await output.is_secret())


def _both(build: Any) -> tuple[tuple[Any, bool, bool], tuple[Any, bool, bool]]:
    """(lifted, from_input) observed for the same structure, built afresh for each."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        ours = loop.run_until_complete(_observed(lifted(build())))
        theirs = loop.run_until_complete(_observed(pulumi.Output.from_input(build())))
    finally:
        loop.close()
        asyncio.set_event_loop(asyncio.new_event_loop())
    return ours, theirs


@pytest.mark.parametrize(
    ("case", "build", "expected"),
    [
        (
            "plain values only",
            lambda: {"a": {"arn": "x", "ports": [1, 2]}, "b": ["y"]},
            ({"a": {"arn": "x", "ports": [1, 2]}, "b": ["y"]}, True, False),
        ),
        (
            "known outputs at any depth",
            lambda: {"a": {"arn": _output("x"), "list": [_output(1), 2]}, "b": "z"},
            ({"a": {"arn": "x", "list": [1, 2]}, "b": "z"}, True, False),
        ),
        (
            "one secret output makes the whole secret",
            lambda: {"a": {"arn": _output("x", secret=True)}, "b": _output("y")},
            ({"a": {"arn": "x"}, "b": "y"}, True, True),
        ),
        (
            "one unknown output makes the whole unknown",
            lambda: {"a": {"arn": _output(None, known=False)}, "b": _output("y")},
            (None, False, False),
        ),
        (
            "an output's document is taken whole, as from_input rebuilds it",
            lambda: {"a": {"trust": _output({"required": [{"Effect": "Allow"}], "next": {}})}},
            ({"a": {"trust": {"required": [{"Effect": "Allow"}], "next": {}}}}, True, False),
        ),
        (
            "a secret document makes the whole secret",
            lambda: {"a": _output({"k": ["v"]}, secret=True), "b": "z"},
            ({"a": {"k": ["v"]}, "b": "z"}, True, True),
        ),
        (
            "a document with an unknown inside makes the whole unknown",
            lambda: {"a": _output({"k": [pulumi.UNKNOWN]}), "b": _output("y")},
            (None, False, False),
        ),
        (
            "an output whose value holds outputs is lifted through them",
            lambda: {"a": _output({"k": _output("inner", secret=True)}), "b": [_output(2)]},
            ({"a": {"k": "inner"}, "b": [2]}, True, True),
        ),
        (
            "an output whose value holds an unknown output is unknown",
            lambda: {"a": _output([_output(None, known=False)])},
            (None, False, False),
        ),
    ],
)
def test_lifted_means_what_from_input_means(
    case: str, build: Any, expected: tuple[Any, bool, bool]
) -> None:
    ours, theirs = _both(build)
    assert ours == expected, case
    assert theirs == expected, case


def test_lifted_depends_on_every_resource_its_outputs_depend_on() -> None:
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        first, second = object(), object()

        def with_resources(resource: Any) -> pulumi.Output[str]:
            output = _output("v")
            return pulumi.Output({resource}, output.future(), output.is_known(), output.is_secret())

        value = {"a": [with_resources(first)], "b": {"c": with_resources(second)}, "d": 1}
        resources = loop.run_until_complete(lifted(value).resources())
    finally:
        loop.close()
        asyncio.set_event_loop(asyncio.new_event_loop())
    assert resources == {first, second}


def test_an_outputs_document_costs_the_same_whatever_its_size(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`Output.all` would lift every dict, list and value of a document into an Output of its
    own (25 for one existing role's trust, 800 roles at 1,000 applications); `lifted` takes it
    whole, so a document of 100 statements costs what one of 1 does."""
    calls: list[Any] = []
    original = pulumi.Output.from_input

    def counted(value: Any) -> Any:
        calls.append(value)
        return original(value)

    monkeypatch.setattr(pulumi.Output, "from_input", staticmethod(counted))

    def lifts(statements: int) -> int:
        calls.clear()
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        try:
            document = {"required": [{"Effect": "Allow", "Action": ["a", "b"]}] * statements}
            result = loop.run_until_complete(_observed(lifted({"trust": _output(document)})))
        finally:
            loop.close()
            asyncio.set_event_loop(asyncio.new_event_loop())
        assert result == ({"trust": document}, True, False)
        return len(calls)

    assert lifts(1) == lifts(100)
    assert lifts(100) < 10

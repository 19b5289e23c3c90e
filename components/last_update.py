"""Reading what the stack's last update left, before the program registers anything: the
engine's answer (components/stack_state.py, which also says what the engine reads it from) as
`LastUpdate`, and the change to the settings judged against it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pulumi
from google.protobuf import struct_pb2
from pulumi.runtime import rpc

from kiam_eks.components.stack_state import stack_resources
from kiam_eks.contracts.tokens import KIAM, KIAM_KUBERNETES, STACK
from kiam_eks.settings.kubernetes_side import KubernetesSide, KubernetesSideSettings
from kiam_eks.settings.stack import StackSettings
from kiam_eks.transitions.installed import OUTPUT, RECORDING_COMPONENTS, Installed, LastUpdate
from kiam_eks.transitions.judge import Transition, judge, judge_kubernetes_side
from kiam_eks.transitions.verdicts import RefusedChangeError


def read_last_update() -> LastUpdate:
    """This stack's last update: the engine's answer, asked early by the entry points or now
    (an invoke blocks until answered); the program decides what to register from it."""
    return last_update_of(stack_resources())


def judged_change(
    settings: StackSettings, name: str, source: str, *, program_outputs: bool = False
) -> Transition:
    """The change from what the `Kiam` component `name` last installed to `settings`, judged
    before anything is registered (transitions/): raises `RefusedChangeError` for a
    change that would take credentials away, and says in the engine's log what it sequences.

    What was installed is the component's own record, its output `installed`, whatever program
    made it. Without one: this repository's program (`program_outputs`) reads its stack output
    `installed` (or an older version's outputs: transitions/installed.py), which every version of
    it exported; a component another program made with a version before the record (0.1.0) is
    composed as that version composed every update, as a first install, with a warning, and
    records what it installs for the next; a component not in the state is a first install."""
    last = read_last_update()
    previous = _recorded(last, KIAM, name, source, warn=not program_outputs)
    if previous is None and program_outputs:
        previous = last.installed()
    transition = judge(settings, previous, last.resources, source)
    _say(transition, settings)
    return transition


def judged_kubernetes_side(settings: KubernetesSideSettings, name: str, source: str) -> Transition:
    """`judged_change` for the `KiamKubernetes` component `name`, from its own record
    (transitions/judge.py `judge_kubernetes_side`)."""
    last = read_last_update()
    transition = judge_kubernetes_side(
        settings, _recorded(last, KIAM_KUBERNETES, name, source, warn=True), source
    )
    _say(transition, settings)
    return transition


def _recorded(
    last: LastUpdate, kind: str, name: str, source: str, *, warn: bool
) -> Installed | None:
    """The component's record; refused when it cannot be read (nothing can be judged)."""
    try:
        previous = last.recorded(kind, name)
    except ValueError as unreadable:
        raise RefusedChangeError(
            source, [f"{unreadable}: the change cannot be judged, so nothing is changed"]
        ) from None
    if previous is None and warn and last.component(kind, name) is not None:
        pulumi.log.warn(
            f"{source}: its last update recorded nothing of what it installed (the output "
            f"{OUTPUT!r}, written from version 0.2.0 on), so this change is not judged against "
            "it: it is applied as a first install would be, and recorded for the next"
        )
    return previous


def _say(transition: Transition, settings: KubernetesSide) -> None:
    """What the change does, in the engine's log: a preview shows it under the resources."""
    for verdict in transition.verdicts:
        pulumi.log.info(f"{verdict.kind.value} change: {verdict}")
    agents_roll = settings.adoption_state.stack_owns_agents and not settings.retire
    if agents_roll or transition.roll_agents_before_retiring:
        # How long a rollout of the agents takes on this cluster, beside any diff that starts one:
        # the program cannot know whether this update changes their template (the engine diffs
        # it), so every preview says it.
        pulumi.log.info(f"agent rollout: {settings.agent.rollout.describe()}")


def last_update_of(answer: struct_pb2.Struct) -> LastUpdate:
    """The engine's answer as `LastUpdate.of_stack_resources` reads it: each resource's type,
    the root stack's outputs and those of kiam's components. The other resources' outputs (every
    Kubernetes object's live state, most of the answer) are left unread, and the root stack's
    are converted only if read: only a stack whose component recorded nothing reads them
    (`judged_change`), and at 1,000 applications they are as large as the record itself."""
    resources: dict[str, Any] = {}
    listed = answer.fields.get("outputs")
    if listed is not None and listed.WhichOneof("kind") == "struct_value":
        for urn, resource in listed.struct_value.fields.items():
            if resource.WhichOneof("kind") != "struct_value":
                continue
            fields = resource.struct_value.fields
            kind = fields["type"].string_value if "type" in fields else ""
            entry: dict[str, Any] = {"type": kind}
            if kind == STACK and "outputs" in fields:
                entry["outputs"] = _ReadWhenAsked(fields["outputs"])
            elif kind in RECORDING_COMPONENTS and "outputs" in fields:
                entry["outputs"] = _plain_value(fields["outputs"])
            resources[urn] = entry
    return LastUpdate.of_stack_resources({"outputs": resources})


def plain_struct(struct: struct_pb2.Struct) -> dict[str, Any]:
    """A protobuf Struct as the JSON values `json_format.MessageToDict` gives (numbers as floats),
    each secret replaced by its value, as the program wrote it (only the facts are read from
    them). Walked here rather than by `MessageToDict`, which looks every field's descriptor up:
    the state of a stack of 1,000 applications holds tens of thousands of values."""
    fields = struct.fields
    signature = fields.get(rpc._special_sig_key)
    if signature is not None and signature.string_value == rpc._special_secret_sig:
        secret = fields.get("value")
        return _plain_value(secret) if secret is not None else None  # type: ignore[return-value]
    return {key: _plain_value(value) for key, value in fields.items()}


def _plain_value(value: struct_pb2.Value) -> Any:
    kind = value.WhichOneof("kind")
    if kind == "struct_value":
        return plain_struct(value.struct_value)
    if kind == "list_value":
        return [_plain_value(item) for item in value.list_value.values]
    if kind is None or kind == "null_value":
        return None
    return getattr(value, kind)


class _ReadWhenAsked(Mapping[str, Any]):
    """A protobuf value holding a struct, as the mapping `_plain_value` makes of it, converted
    the first time it is read; a value that is not a struct reads as empty."""

    def __init__(self, value: struct_pb2.Value) -> None:
        self._value = value
        self._plain: dict[str, Any] | None = None

    def _read(self) -> dict[str, Any]:
        if self._plain is None:
            plain = _plain_value(self._value)
            self._plain = plain if isinstance(plain, dict) else {}
        return self._plain

    def __getitem__(self, key: str) -> Any:
        return self._read()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._read())

    def __len__(self) -> int:
        return len(self._read())

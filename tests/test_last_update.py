"""The reading of `pulumi:pulumi:readStackResourceOutputs`' answer (components/last_update.py):
what `LastUpdate` needs of it, read from the protobuf Struct the engine sends."""

from __future__ import annotations

from typing import Any

from google.protobuf import json_format, struct_pb2
from pulumi.runtime import rpc

from kiam_eks.components.last_update import last_update_of
from kiam_eks.contracts.tokens import STACK

STACK_URN = "urn:pulumi:dev::kiam-eks::pulumi:pulumi:Stack::kiam-eks-dev"
DAEMON_SET_URN = "urn:pulumi:dev::kiam-eks::kubernetes:apps/v1:DaemonSet::kiam-agent"
# How the engine marks a secret and a resource reference inside outputs (pulumi/pulumi
# sdk/python/lib/pulumi/runtime/rpc.py `_special_secret_sig`, `_special_resource_sig`).
RESOURCE_SIG = "5cf8f73096256a8f31e491e813e4eb8e"


def secret(value: Any) -> dict[str, Any]:
    return {rpc._special_sig_key: rpc._special_secret_sig, "value": value}


def answer_of(outputs: dict[str, Any]) -> struct_pb2.Struct:
    struct = struct_pb2.Struct()
    struct.update({"outputs": outputs})
    return struct


def test_the_stack_outputs_are_read_as_json_values_with_each_secret_unwrapped() -> None:
    stack_outputs = {
        "installed": secret({"cluster": {"name": "dev"}, "retired": False, "port": 8181}),
        "applications": {"billing": {"servedBy": "kiam", "serviceAccount": None, "list": [1, {}]}},
        "namespace": "kiam",
    }
    last = last_update_of(answer_of({STACK_URN: {"type": STACK, "outputs": stack_outputs}}))
    assert last.outputs == {
        # As json_format.MessageToDict reads a Struct: every number a float.
        "installed": {"cluster": {"name": "dev"}, "retired": False, "port": 8181.0},
        "applications": {
            "billing": {"servedBy": "kiam", "serviceAccount": None, "list": [1.0, {}]}
        },
        "namespace": "kiam",
    }
    assert last.resources == {STACK_URN: STACK}


def test_it_reads_what_message_to_dict_would_with_the_secrets_unwrapped() -> None:
    outputs = {
        "a": [None, True, 2.5, "x", {"b": secret([secret("deep")])}],
        "ref": {rpc._special_sig_key: RESOURCE_SIG, "urn": DAEMON_SET_URN},
    }
    struct = answer_of({STACK_URN: {"type": STACK, "outputs": outputs}})
    expected = json_format.MessageToDict(struct)["outputs"][STACK_URN]["outputs"]
    expected["a"][4]["b"] = ["deep"]
    assert last_update_of(struct).outputs == expected


def test_other_resources_give_their_type_only() -> None:
    last = last_update_of(
        answer_of(
            {
                STACK_URN: {"type": STACK, "outputs": {}},
                DAEMON_SET_URN: {
                    "type": "kubernetes:apps/v1:DaemonSet",
                    "outputs": {"status": {"numberReady": 3}},
                },
                "not-a-resource": "ignored",
            }
        )
    )
    assert last.resources == {STACK_URN: STACK, DAEMON_SET_URN: "kubernetes:apps/v1:DaemonSet"}
    assert last.outputs == {}


def test_a_stack_with_no_update_yet_has_nothing() -> None:
    last = last_update_of(struct_pb2.Struct())
    assert (last.outputs, last.resources) == ({}, {})
    assert last.installed() is None


def test_the_stack_outputs_are_converted_only_when_read(monkeypatch: Any) -> None:
    # Only a stack whose component recorded nothing reads them; at 1,000 applications they are
    # as large as the component's record, read on every run.
    from kiam_eks.components import last_update

    converted: list[str] = []
    convert = last_update._plain_value

    def recording(value: struct_pb2.Value) -> Any:
        if value.WhichOneof("kind") == "struct_value" and "namespace" in value.struct_value.fields:
            converted.append("stack outputs")
        return convert(value)

    monkeypatch.setattr(last_update, "_plain_value", recording)
    last = last_update_of(answer_of({STACK_URN: {"type": STACK, "outputs": {"namespace": "kiam"}}}))
    assert converted == []
    assert last.outputs["namespace"] == "kiam"
    assert dict(last.outputs) == {"namespace": "kiam"}
    assert converted == ["stack outputs"]


def test_stack_outputs_that_are_not_a_struct_read_as_empty() -> None:
    struct = struct_pb2.Struct()
    struct.update({"outputs": {STACK_URN: {"type": STACK, "outputs": "not a struct"}}})
    assert dict(last_update_of(struct).outputs) == {}

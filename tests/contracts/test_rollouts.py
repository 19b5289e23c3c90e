"""What restarts a workload's pods and what the Pulumi engine reports about a step, spelled out
literally from where it is written, so a wrong belief in `contracts/rollouts.py` fails here.

Kubernetes docs, concepts/workloads/controllers/deployment ("Updating a Deployment"): "A
Deployment's rollout is triggered if and only if the Deployment's Pod template (that is,
.spec.template) is changed"; tasks/manage-daemon/update-daemon-set: with RollingUpdate, "after you
update a DaemonSet template, old DaemonSet pods will be killed"; concepts/services-networking/
endpoint-slices: the control plane labels each slice `kubernetes.io/service-name`.
pulumi/pulumi sdk/go/common/apitype/events.go: `StepEventStateMetadata.Inputs` ("the resource's
input properties (as specified by the program)"), `PolicyEvent.EnforcementLevel` ("one of
"warning", "mandatory", "remediate", or "none""); the Automation API's `OpType` (pulumi/automation/
events.py) has `replace`, `create-replacement` and `delete-replaced`.
"""

from __future__ import annotations

from pulumi.automation.events import OpType, StepEventStateMetadata

from kiam_eks.contracts.rollouts import (
    ENDPOINT_SLICE_SERVICE_LABEL,
    MANDATORY_ENFORCEMENT,
    POD_TEMPLATE_PATH,
    REPLACE_OPS,
    STEP_INPUTS,
    UNCHANGED_OPS,
)


def test_a_pod_template_change_is_what_restarts_pods() -> None:
    assert POD_TEMPLATE_PATH == ("spec", "template")


def test_endpoint_slices_name_their_service_in_this_label() -> None:
    assert ENDPOINT_SLICE_SERVICE_LABEL == "kubernetes.io/service-name"


def test_the_engine_operations_that_replace_and_that_change_nothing() -> None:
    assert {"replace", "create-replacement", "delete-replaced"} == REPLACE_OPS
    assert {"same", "read", "refresh"} == UNCHANGED_OPS
    # Each is an operation the Automation API knows.
    assert {op.value for op in OpType} >= REPLACE_OPS | UNCHANGED_OPS


def test_a_step_state_carries_the_program_inputs_under_this_attribute() -> None:
    state = StepEventStateMetadata.from_json(
        {"type": "t", "urn": "u", "id": "", "parent": "", "provider": "", "inputs": {"a": 1}}
    )
    assert getattr(state, STEP_INPUTS) == {"a": 1}


def test_a_mandatory_violation_is_spelled_as_the_engine_spells_it() -> None:
    assert MANDATORY_ENFORCEMENT == "mandatory"

"""What makes Kubernetes restart a workload's pods, and what the Pulumi engine reports about a step:
the facts the fleet preview (`tools/fleet`) reads a preview's steps with, and the health gate reads
a cluster with."""

from __future__ import annotations

# A Deployment rolls out new pods if and only if its pod template changes: "A Deployment's rollout
# is triggered if and only if the Deployment's Pod template (that is, .spec.template) is changed"
# (kubernetes.io/docs/concepts/workloads/controllers/deployment/, "Updating a Deployment"). A
# DaemonSet with the RollingUpdate strategy (the default, and the agent's) does the same: "after you
# update a DaemonSet template, old DaemonSet pods will be killed, and new DaemonSet pods will be
# created automatically" (kubernetes.io/docs/tasks/manage-daemon/update-daemon-set/).
POD_TEMPLATE_PATH = ("spec", "template")

# EndpointSlices of a Service carry its name in this label ("the control plane ... sets
# kubernetes.io/service-name", kubernetes.io/docs/concepts/services-networking/endpoint-slices/);
# an endpoint serves when `conditions.ready` is true.
ENDPOINT_SLICE_SERVICE_LABEL = "kubernetes.io/service-name"

# The engine's step operations that replace a resource (pulumi/pulumi sdk/go/common/apitype,
# `OpType`; the Automation API's `OpType` in pulumi/automation/events.py): a create-before-delete
# replacement shows as `create-replacement` then `delete-replaced`, summarised as `replace`.
REPLACE_OPS = frozenset({"replace", "create-replacement", "delete-replaced"})
# The operations that change nothing.
UNCHANGED_OPS = frozenset({"same", "read", "refresh"})
# A step's `old` and `new` state carry the resource's `inputs` "as specified by the program"
# (StepEventStateMetadata.Inputs, pulumi/pulumi sdk/go/common/apitype/events.go): a pod template
# changes when `inputs.spec.template` differs between them (a value unknown until the update,
# such as a replaced node group's new name, differs too).
STEP_INPUTS = "inputs"

# A policy violation's enforcement level (PolicyEvent.EnforcementLevel, same file: "warning",
# "mandatory", "remediate" or "none"): a mandatory one fails the preview or the update.
MANDATORY_ENFORCEMENT = "mandatory"

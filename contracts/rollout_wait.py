"""When `pulumi up` may call a Deployment rollout done: what the Kubernetes provider's own wait
checks, why that is not enough for the servers, and the wait the server Deployment asks for
instead.

The guarantee that a node group replacement deletes the old nodes only once every server is Ready
on the new ones rests on this wait: the engine deletes the replaced group after the Deployment's
update step returns (README, "The ordering").
"""

from __future__ import annotations

import json

# pulumi-kubernetes's built-in Deployment wait (provider/pkg/await/deployment.go, the same from
# v4.25.0 through v4.32.0) is done when the Deployment's conditions read Available and Progressing
# with reason `NewReplicaSetAvailable`, and the new ReplicaSet's `readyReplicas` reach that
# ReplicaSet's own `spec.replicas`. Mid-rollout the new ReplicaSet's `spec.replicas` is the step the
# controller has scaled it to (1 of 2), and the Deployment controller may write its first status of
# a new generation with the previous rollout's `NewReplicaSetAvailable` still in place: it leaves
# the condition alone when it sees no progress yet (kubernetes pkg/controller/deployment/
# progress.go, `syncRolloutStatus`). The provider then returns with one new server Ready, and the
# engine deletes the old nodes under the other: seen once in `make e2e` (node changes without a
# spare node, instance type: `pulumi up` returned after 5.4 s with one server on the new nodes).
BUILT_IN_DEPLOYMENT_WAIT_DONE_REASON = "NewReplicaSetAvailable"
# What that wait reports when it is done (`checkAndLogStatus`, after an emoji where the terminal
# shows them): the real-engine suite reads the engine's event log for it.
BUILT_IN_DEPLOYMENT_WAIT_DONE_MESSAGE = "Deployment initialization complete"

# An object carrying this annotation is awaited by the conditions it lists instead of the built-in
# wait ("Use our built-in await logic only if the user hasn't specified any await overrides",
# provider/pkg/await/await.go; honoured since v4.18.4: "pulumi.com/waitFor and other await
# annotations now correctly take precedence over default await logic", CHANGELOG). A JSON array of
# expressions waits until all of them hold at once on the same object (pkg/await/condition/all.go:
# "resolves when all of them are simultaneously satisfied"); a `jsonpath=` expression is judged only
# once `.status.observedGeneration` has caught up with `.metadata.generation`
# (pkg/await/condition/jsonpath.go), and compares the selected value's text with the value after `=`
# (pkg/jsonpath/jsonpath.go, `Matches`).
WAIT_FOR_ANNOTATION = "pulumi.com/waitFor"
JSONPATH_PREFIX = "jsonpath="
# A `jsonpath=` condition reports "Found " and its expression without the prefix once it holds
# (pkg/await/condition/jsonpath.go, `Satisfied`).
JSONPATH_FOUND_PREFIX = "Found "
# `pulumi.com/skipAwait: "true"` wins over everything (pkg/metadata/overrides.go, `ReadyCondition`:
# "If the "pulumi.com/skipAwait" annotation is true, the ready condition will no-op").
SKIP_AWAIT_ANNOTATION = "pulumi.com/skipAwait"

# `kubectl rollout status` calls a Deployment rolled out once the controller has observed its
# generation and `updatedReplicas` reaches `spec.replicas`, no old replica is left (`replicas` is
# not above `updatedReplicas`) and every updated replica is available (`availableReplicas` not
# below `updatedReplicas`) (k8s.io/kubectl pkg/polymorphichelpers/rollout_status.go,
# `DeploymentStatusViewer.Status`). Each count equal to `spec.replicas` at once is that.
ROLLED_OUT_STATUS_COUNTS = ("updatedReplicas", "replicas", "availableReplicas")


def rolled_out_wait_for(replicas: int) -> str:
    """The `pulumi.com/waitFor` value that holds `pulumi up` until a Deployment of `replicas` is
    rolled out as `kubectl rollout status` judges it: every replica updated and available, and no
    old one left."""
    return json.dumps(
        [f"{JSONPATH_PREFIX}{{.status.{count}}}={replicas}" for count in ROLLED_OUT_STATUS_COUNTS]
    )

"""When `pulumi up` may call the server rollout done, spelled out literally from where it is
written, so a wrong belief in `contracts/rollout_wait.py` fails here.

pulumi/pulumi-kubernetes provider/pkg/await/deployment.go (v4.25.0 to v4.32.0): the built-in wait
is done on the Progressing reason "NewReplicaSetAvailable" and the new ReplicaSet's `readyReplicas
>= specReplicas`, its own `spec.replicas`. kubernetes pkg/controller/deployment/progress.go,
`syncRolloutStatus`: the condition is rewritten only on completion, on progress or on a timeout.
The built-in wait logs "Deployment initialization complete" when done (`checkAndLogStatus`); a
JSONPath condition logs `"Found "+jp.jsp.String()` (pkg/await/condition/jsonpath.go).
pkg/metadata/annotations.go: `AnnotationWaitFor = AnnotationPrefix + "waitFor"` (prefix
"pulumi.com/"); pkg/metadata/overrides.go, `ReadyCondition`: "If the "pulumi.com/skipAwait"
annotation is true, the ready condition will no-op", "If the "pulumi.com/waitFor" annotation is a
JSON array of string expressions, the ready condition will wait for all expressions to succeed",
each with a "jsonpath=" or "condition=" prefix; pkg/await/await.go: "Use our built-in await logic
only if the user hasn't specified any await overrides". k8s.io/kubectl
pkg/polymorphichelpers/rollout_status.go: waiting while `UpdatedReplicas < *Spec.Replicas`,
`Replicas > UpdatedReplicas` ("old replicas are pending termination") or `AvailableReplicas <
UpdatedReplicas`.
"""

from __future__ import annotations

import json

from kiam_eks.contracts.rollout_wait import (
    BUILT_IN_DEPLOYMENT_WAIT_DONE_MESSAGE,
    BUILT_IN_DEPLOYMENT_WAIT_DONE_REASON,
    JSONPATH_FOUND_PREFIX,
    JSONPATH_PREFIX,
    ROLLED_OUT_STATUS_COUNTS,
    SKIP_AWAIT_ANNOTATION,
    WAIT_FOR_ANNOTATION,
    rolled_out_wait_for,
)


def test_the_built_in_wait_trusts_the_reason_the_controller_may_leave_in_place() -> None:
    assert BUILT_IN_DEPLOYMENT_WAIT_DONE_REASON == "NewReplicaSetAvailable"


def test_what_each_wait_reports_when_it_is_done() -> None:
    assert BUILT_IN_DEPLOYMENT_WAIT_DONE_MESSAGE == "Deployment initialization complete"
    assert JSONPATH_FOUND_PREFIX == "Found "


def test_the_annotations_that_replace_and_that_skip_the_built_in_wait() -> None:
    assert WAIT_FOR_ANNOTATION == "pulumi.com/waitFor"
    assert SKIP_AWAIT_ANNOTATION == "pulumi.com/skipAwait"
    assert JSONPATH_PREFIX == "jsonpath="


def test_a_deployment_is_rolled_out_when_these_counts_reach_its_replicas() -> None:
    assert ROLLED_OUT_STATUS_COUNTS == ("updatedReplicas", "replicas", "availableReplicas")


def test_the_wait_is_a_json_array_of_one_jsonpath_equality_per_count() -> None:
    assert rolled_out_wait_for(2) == (
        '["jsonpath={.status.updatedReplicas}=2", "jsonpath={.status.replicas}=2", '
        '"jsonpath={.status.availableReplicas}=2"]'
    )
    # The provider splits an expression at its one `=` outside `==` into path and value
    # (pkg/jsonpath/jsonpath.go, `Parse`), the path wrapped in braces.
    for expression in json.loads(rolled_out_wait_for(5)):
        path, value = expression.removeprefix("jsonpath=").split("=")
        assert path.startswith("{.status.") and path.endswith("}")
        assert value == "5"

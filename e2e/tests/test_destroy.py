"""Scenario 9, destroy: `pulumi destroy` removes everything the stack created and nothing else; a
namespace it only annotated keeps existing, with everything it had, without the annotation."""

from __future__ import annotations

from e2e.harness.environment import Environment
from e2e.tests.conftest import deploy, example_config
from kiam_eks.components.namespace_permissions import permitted_regexp

PERMITTED = "iam.amazonaws.com/permitted"
APPLICATIONS = {
    "billing": {"namespace": "billing", "roleName": "billing-api"},
    "search": {"namespace": "search", "roleName": "search-api"},
}


def _kiam_objects(env: Environment) -> dict[str, list[str]]:
    kube = env.kube
    found = {
        "namespaces": [
            n["metadata"]["name"]
            for n in kube.items("/api/v1/namespaces")
            if n["metadata"]["name"] == "kiam"
        ],
        "clusterroles": [
            r["metadata"]["name"]
            for r in kube.items("/apis/rbac.authorization.k8s.io/v1/clusterroles")
            if r["metadata"]["name"].startswith("kiam")
        ],
        "clusterrolebindings": [
            r["metadata"]["name"]
            for r in kube.items("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings")
            if r["metadata"]["name"].startswith("kiam")
        ],
        "dedicated nodes": env.dedicated_nodes(),
    }
    return {k: v for k, v in found.items() if v}


def test_destroy_removes_what_the_stack_created_and_restores_what_it_annotated(
    env: Environment,
) -> None:
    config = {**example_config("dev"), "kiam:applications": APPLICATIONS}
    stack, shape = deploy(env, "dev", config)
    # Someone else's labels and annotations on the application namespaces, set before kiam.
    for namespace in ("billing", "search"):
        env.kube.kubectl("label", "namespace", namespace, "team=payments", "env=dev")
        env.kube.kubectl("annotate", "namespace", namespace, "owner=payments@example.com")
    before = {n: env.kube.get(f"/api/v1/namespaces/{n}")["metadata"] for n in ("billing", "search")}
    other_nodes = sorted(shape.node_names)

    stack.up()
    outputs = stack.outputs()
    for app, namespace in (("billing", "billing"), ("search", "search")):
        annotations = env.kube.get(f"/api/v1/namespaces/{namespace}")["metadata"]["annotations"]
        arn = outputs["applications"][app]["roleArn"]
        assert annotations[PERMITTED] == permitted_regexp([arn])
    assert set(_kiam_objects(env)) == {
        "namespaces",
        "clusterroles",
        "clusterrolebindings",
        "dedicated nodes",
    }

    stack.destroy()
    assert stack.resources() == []
    assert _kiam_objects(env) == {}
    for namespace in ("billing", "search"):
        after = env.kube.get(f"/api/v1/namespaces/{namespace}")["metadata"]
        assert PERMITTED not in (after.get("annotations") or {})
        assert after["labels"] == before[namespace]["labels"]
        assert after["annotations"] == before[namespace]["annotations"]
    # The rest of the cluster is as it was.
    remaining = sorted(n["metadata"]["name"] for n in env.kube.items("/api/v1/nodes"))
    assert remaining == other_nodes

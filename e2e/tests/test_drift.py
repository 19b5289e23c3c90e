"""A `kubectl` edit of a field Pulumi manages, as docs/operations.md describes it:
invisible to a plain `pulumi up`; `pulumi up --refresh` then stops at its preview with a
field-manager conflict; two recoveries put the stack's value back and leave Pulumi the field's
only owner: the update without its preview (the provider's update takes the field over, its
preview's dry run does not), or clearing the object's managed fields first."""

from __future__ import annotations

from e2e.harness.environment import Environment
from e2e.tests.conftest import deploy, example_config

DEPLOYMENT = "/apis/apps/v1/namespaces/kiam/deployments/kiam-server"


def test_a_kubectl_edit_is_invisible_then_conflicts_then_recovers(env: Environment) -> None:
    stack, _ = deploy(env, "dev", example_config("dev"))
    stack.up()
    edit_min_ready_seconds(env, 5)
    # Pulumi diffs against its own state, not the cluster: the edit goes unnoticed.
    stack.up("--expect-no-changes")
    assert env.kube.get(DEPLOYMENT)["spec"]["minReadySeconds"] == 5

    # `pulumi up` as users run it: preview (here the conflict shows), then update.
    refreshed = stack.run("up", "--stack", "dev", "--yes", "--refresh", check=False)
    assert refreshed.returncode != 0
    assert "Server-Side Apply field conflict detected" in refreshed.output
    assert 'conflict with "kubectl-patch"' in refreshed.output
    assert ".spec.minReadySeconds" in refreshed.output

    # Recovery 1: the update alone.
    stack.up("--refresh", skip_preview="the recovery is the update without its preview")
    assert_restored(env)
    # Recovery 2: drift again, clear the managed fields, then the usual `pulumi up --refresh`.
    edit_min_ready_seconds(env, 5)
    env.kube.kubectl(
        "-n", "kiam", "patch", "deployment", "kiam-server", "--type", "merge",
        "-p", '{"metadata":{"managedFields":[{}]}}',
    )  # fmt: skip
    stack.run("up", "--stack", "dev", "--yes", "--refresh")
    assert_restored(env)
    stack.up("--expect-no-changes")
    stack.destroy()


def edit_min_ready_seconds(env: Environment, value: int) -> None:
    env.kube.kubectl(
        "-n", "kiam", "patch", "deployment", "kiam-server", "--type", "merge",
        "-p", f'{{"spec":{{"minReadySeconds":{value}}}}}',
    )  # fmt: skip


def assert_restored(env: Environment) -> None:
    deployment = env.kube.get(DEPLOYMENT)
    assert deployment["spec"]["minReadySeconds"] == 10
    managers = {f["manager"] for f in deployment["metadata"]["managedFields"]}
    assert "kubectl-patch" not in managers
    assert any(m.startswith("pulumi-kubernetes") for m in managers)

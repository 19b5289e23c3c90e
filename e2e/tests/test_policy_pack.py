"""Scenario 7, the policy pack under the real CLI: `pulumi preview` and `pulumi up` with
`--policy-pack` pass on every example stack; a deliberately broken program is stopped by the
mandatory policy with its message, and nothing is created."""

from __future__ import annotations

import pytest

from e2e.harness.environment import Environment
from e2e.harness.pulumi import PulumiStack
from e2e.harness.toolchain import REPO
from e2e.tests.conftest import EXAMPLE_STACKS, deploy, example_config

LAUNCHER = REPO / "policy" / "pack-launcher"
BROKEN = REPO / "e2e" / "fixtures" / "broken"
ANTI_AFFINITY_MESSAGE = (
    "no required pod anti-affinity on kubernetes.io/hostname selecting server pods only"
)


# Every policy as the pack declares it, none disabled: the guarantees run unchanged on the
# stand-ins (tests/test_guarantees_on_standins.py shows the same stacks keeping them).
PACK_ARGS = ["--policy-pack", str(LAUNCHER)]


@pytest.mark.parametrize("name", EXAMPLE_STACKS)
def test_every_example_stack_passes_the_pack(env: Environment, name: str) -> None:
    stack, _ = deploy(env, name, example_config(name))
    try:
        preview = stack.preview(*PACK_ARGS)
        assert "Policies:" in preview.output and "✅ kiam" in preview.output, preview.output
        up = stack.run("up", "--stack", name, "--yes", *PACK_ARGS)
        assert "✅ kiam" in up.output, up.output
    finally:
        stack.destroy()


def broken(env: Environment, name: str, breakage: str) -> PulumiStack:
    """A stack of the e2e program with one deliberate breakage (`e2e/fixtures/broken`)."""
    stack, _ = deploy(env, name, example_config("dev"))
    stack.program_dir = BROKEN
    stack.extra_env["KIAM_E2E_BREAK"] = breakage
    stack.create(env.root / "stack-files" / f"Pulumi.{name}.yaml")
    return stack


def deployment_exists(env: Environment) -> bool:
    return env.kube.get_or_none("/apis/apps/v1/namespaces/kiam/deployments/kiam-server") is not None


def test_a_resource_policy_stops_pulumi_up_before_anything_is_created(env: Environment) -> None:
    stack = broken(env, "no-anti-affinity", "server-anti-affinity")
    up = stack.run("up", "--stack", stack.stack, "--yes", *PACK_ARGS, check=False)
    assert up.returncode != 0
    assert "[mandatory]  kiam-server-anti-affinity-resource" in up.output, up.output
    assert ANTI_AFFINITY_MESSAGE in up.output
    # `pulumi up` previews first; the preview fails, so nothing at all is created.
    assert [r["type"] for r in stack.resources()] in ([], ["pulumi:pulumi:Stack"])
    assert not deployment_exists(env)


def test_without_a_preview_a_resource_policy_still_prevents_its_resource(env: Environment) -> None:
    stack = broken(env, "no-anti-affinity-unpreviewed", "server-anti-affinity")
    up = stack.up(*PACK_ARGS, check=False, skip_preview="what the pack does without a preview")
    assert up.returncode != 0
    assert "kiam-server-anti-affinity-resource" in up.output, up.output
    # The steps before the Deployment's ran; its own never did.
    assert not deployment_exists(env)
    created = {r["type"] for r in stack.resources()}
    assert "kubernetes:core/v1:Namespace" in created
    assert "kubernetes:apps/v1:Deployment" not in created
    stack.destroy()


def test_a_stack_policy_stops_pulumi_up_at_its_preview(env: Environment) -> None:
    stack = broken(env, "tolerant-agents", "agent-tolerations")
    up = stack.run("up", "--stack", stack.stack, "--yes", *PACK_ARGS, check=False)
    assert up.returncode != 0
    assert "[mandatory]  kiam-agent-placement" in up.output, up.output
    assert "tolerates the server taint dedicated=kiam-server" in up.output
    assert [r["type"] for r in stack.resources()] in ([], ["pulumi:pulumi:Stack"])


def test_without_a_preview_a_stack_policy_only_reports_after_the_changes(env: Environment) -> None:
    stack = broken(env, "tolerant-agents-unpreviewed", "agent-tolerations")
    up = stack.up(*PACK_ARGS, check=False, skip_preview="what the pack does without a preview")
    assert up.returncode != 0
    assert "[mandatory]  kiam-agent-placement" in up.output, up.output
    # Stack policies judge the finished stack: the agents were rolled out before the report.
    daemon_set = env.kube.get("/apis/apps/v1/namespaces/kiam/daemonsets/kiam-agent")
    assert daemon_set["spec"]["template"]["spec"]["tolerations"] == [{"operator": "Exists"}]
    stack.destroy()

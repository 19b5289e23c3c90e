"""Scenario: a retirement whose roll stops half way, watched (components/agent_retirement.py).

The dev stack is installed; an admission policy (a ValidatingAdmissionPolicy of the real API
server) refuses the retiring agent on every workload node but one, so the roll of
`kiam:retire: true` stops at the first refused node it reaches (the DaemonSet controller stops its
old agent, and cannot create the new one), and the `pulumi up` is interrupted (SIGINT, as an
operator's ^C sends it, or as `tools.fleet` passes on a deploy job's cancel or timeout,
docs/fleet.md "Interrupted deploys"). What must hold:

- the interrupted `up` fails; the stack's outputs are still the install's (`serverAddress`, the
  `installed` facts), the agent DaemonSet still exists, and no agent pod was deleted by Pulumi;
- with the policy gone and `kiam:retire` set back to false, `pulumi up` (previewed) applies the
  agent DaemonSet with force: every agent rolls back to `--no-iptables-remove`, the stack's own
  command line, and the patch leaves the state; the next `up` removes the force annotation and
  the one after changes nothing;
- `kiam:retire: true` once more rolls every agent and retires kiam; afterwards no node keeps a
  kiam DNAT rule (the rule model, e2e/harness/node_rules.py, as kiam's agents write them).
"""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from e2e.harness.environment import Environment
from e2e.harness.kube import ApiError, is_ready
from e2e.harness.pulumi import PulumiStack, Result, type_and_name
from e2e.harness.waiting import wait_for
from e2e.tests.conftest import REPORT, deploy, example_config, fresh_environment, set_settings
from kiam_eks.contracts import names, tokens
from kiam_eks.contracts.labels import PATCH_FORCE_ANNOTATION

NAMESPACE = "kiam"
REMOVE, KEEP = "--iptables-remove", "--no-iptables-remove"
POLICY = "kiam-e2e-refuse-retiring-agent"
DEADLINE_SECONDS = 180


def refusing_policy(nodes: list[str]) -> list[dict[str, Any]]:
    """Refuse the creation of a retiring agent pod (one started with --iptables-remove) bound to
    any of `nodes`: the DaemonSet controller's pod for a node names it in its node affinity."""
    listed = ", ".join(f"'{n}'" for n in nodes)
    expression = (
        "!(object.spec.containers.exists(c, c.args.exists(a, a == '--iptables-remove')) && "
        "has(object.spec.affinity) && has(object.spec.affinity.nodeAffinity) && "
        "object.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        ".nodeSelectorTerms.exists(t, has(t.matchFields) && t.matchFields.exists(f, "
        f"f.values.exists(v, v in [{listed}]))))"
    )
    return [
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": POLICY},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {
                    "resourceRules": [
                        {
                            "apiGroups": [""],
                            "apiVersions": ["v1"],
                            "operations": ["CREATE"],
                            "resources": ["pods"],
                        }
                    ]
                },
                "validations": [{"expression": expression, "message": "retiring agent refused"}],
            },
        },
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": POLICY},
            "spec": {"policyName": POLICY, "validationActions": ["Deny"]},
        },
    ]


def refuses(env: Environment, node: str) -> bool:
    """Whether the API server refuses a retiring agent pod for `node` now (a dry run)."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "policy-probe", "namespace": NAMESPACE},
        "spec": {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchFields": [
                                    {"key": "metadata.name", "operator": "In", "values": [node]}
                                ]
                            }
                        ]
                    }
                }
            },
            "containers": [{"name": "agent", "image": "x", "args": ["agent", REMOVE]}],
        },
    }
    try:
        env.kube.request("POST", f"/api/v1/namespaces/{NAMESPACE}/pods?dryRun=All", pod)
    except ApiError as error:
        return "retiring agent refused" in str(error)
    return False


def agents(env: Environment) -> list[dict[str, Any]]:
    return env.pods(NAMESPACE, "agent")


def args_of(pod: dict[str, Any]) -> list[str]:
    return list(pod["spec"]["containers"][0].get("args") or [])


def wait(what: str, condition: Any) -> None:
    wait_for(what, condition, DEADLINE_SECONDS)


@dataclass
class Story:
    agent_nodes: set[str] = field(default_factory=set)
    blocked: set[str] = field(default_factory=set)
    interrupted: int = 0
    interrupted_log: str = ""
    rolled_before_interrupt: set[str] = field(default_factory=set)
    pods_at_stall: list[tuple[Any, ...]] = field(default_factory=list)
    """(node, rolled, Ready, stopping) of each agent pod when the roll was seen stopped."""
    outputs_before: dict[str, Any] = field(default_factory=dict)
    outputs_after_interrupt: dict[str, Any] = field(default_factory=dict)
    daemon_set_after_interrupt: dict[str, Any] | None = None
    patch_in_state: bool = False
    restore: Result | None = None
    forced_annotation: dict[str, str] = field(default_factory=dict)
    args_after_restore: dict[str, list[str]] = field(default_factory=dict)
    patch_in_state_after_restore: bool = True
    annotation_after_next: dict[str, str] = field(default_factory=dict)
    daemon_set_inputs_after_next: dict[str, Any] = field(default_factory=dict)
    annotation_owners: list[str] = field(default_factory=list)
    no_change: Result | None = None
    retired_outputs: dict[str, Any] = field(default_factory=dict)
    rules_after: dict[str, Any] = field(default_factory=dict)
    rule_model_errors: list[str] = field(default_factory=list)


def _patch_in_state(stack: PulumiStack) -> bool:
    return any(
        type_and_name(r["urn"]) == (tokens.DAEMON_SET_PATCH, names.RETIREMENT_PATCH)
        for r in stack.resources()
    )


@pytest.fixture(scope="module")
def story(bin_dir: Path, session_root: Path) -> Iterator[Story]:
    with fresh_environment(session_root, bin_dir, "retire-interrupted") as env:
        s = Story()
        config = example_config("dev")
        stack, _ = deploy(env, "dev", config)
        stack.up()
        s.outputs_before = stack.outputs()
        s.agent_nodes = {p["spec"]["nodeName"] for p in agents(env)}
        # Every node but one refuses the retiring agent; the policy is in force before the roll
        # starts (the API server takes a moment to enforce a new policy, longer than kwok's roll).
        s.blocked = set(sorted(s.agent_nodes)[1:])
        env.kube.apply(refusing_policy(sorted(s.blocked)))
        wait("the policy in force", lambda: refuses(env, sorted(s.blocked)[0]))

        set_settings(env, stack, {**config, "kiam:retire": True})
        process, log = stack.start("up", "--stack", stack.stack, "--yes")

        def rolled() -> set[str]:
            return {
                p["spec"]["nodeName"] for p in agents(env) if REMOVE in args_of(p) and is_ready(p)
            }

        def stalled() -> bool:
            s.rolled_before_interrupt = rolled()
            on = {p["spec"].get("nodeName") for p in agents(env)}
            s.pods_at_stall = [
                (
                    p["spec"].get("nodeName"),
                    REMOVE in args_of(p),
                    is_ready(p),
                    bool(p["metadata"].get("deletionTimestamp")),
                )
                for p in agents(env)
            ]
            return bool(s.blocked - on)

        wait("the roll stopped at a refused node", stalled)
        process.send_signal(signal.SIGINT)
        s.interrupted = process.wait(timeout=300)
        s.interrupted_log = log.read_text()
        s.outputs_after_interrupt = stack.outputs()
        s.daemon_set_after_interrupt = env.kube.get_or_none(
            f"/apis/apps/v1/namespaces/{NAMESPACE}/daemonsets/{names.AGENT_NAME}"
        )
        s.patch_in_state = _patch_in_state(stack)

        env.kube.kubectl("delete", "validatingadmissionpolicybinding", POLICY)
        env.kube.kubectl("delete", "validatingadmissionpolicy", POLICY)
        set_settings(env, stack, config)
        s.restore = stack.up()
        ds = env.kube.get(f"/apis/apps/v1/namespaces/{NAMESPACE}/daemonsets/{names.AGENT_NAME}")
        s.forced_annotation = dict(ds["metadata"].get("annotations") or {})
        wait(
            "an agent on every node",
            lambda: {p["spec"]["nodeName"] for p in agents(env) if is_ready(p)} == s.agent_nodes,
        )
        s.args_after_restore = {p["spec"]["nodeName"]: args_of(p) for p in agents(env)}
        s.patch_in_state_after_restore = _patch_in_state(stack)
        stack.up()
        ds = env.kube.get(f"/apis/apps/v1/namespaces/{NAMESPACE}/daemonsets/{names.AGENT_NAME}")
        s.annotation_after_next = dict(ds["metadata"].get("annotations") or {})
        s.annotation_owners = sorted(
            m["manager"]
            for m in ds["metadata"].get("managedFields") or []
            if f"f:{PATCH_FORCE_ANNOTATION}"
            in (((m.get("fieldsV1") or {}).get("f:metadata") or {}).get("f:annotations") or {})
        )
        s.daemon_set_inputs_after_next = next(
            r.get("inputs") or {}
            for r in stack.resources()
            if type_and_name(r["urn"]) == (tokens.DAEMON_SET, names.AGENT_NAME)
        )
        s.no_change = stack.up("--expect-no-changes")

        set_settings(env, stack, {**config, "kiam:retire": True})
        stack.up()
        s.retired_outputs = stack.outputs()
        workers = s.agent_nodes
        s.rules_after = {
            node: [r.port for r in rules]
            for node, rules in env.node_rules.snapshot().items()
            if node in workers
        }
        s.rule_model_errors = list(env.node_rules.errors)
        REPORT.append(
            f"retire interrupted: rolled {len(s.rolled_before_interrupt)} of "
            f"{len(s.agent_nodes)} nodes before ^C; restore `up` {s.restore.seconds:.1f} s; "
            f"the patch's annotation kept by {s.annotation_owners}"
        )
        yield s
        stack.destroy()


def test_the_interrupted_retirement_fails_and_keeps_the_install(story: Story) -> None:
    assert story.interrupted != 0, story.interrupted_log
    # The roll stopped: at most the one node the policy let through rolled, a refused node has no
    # agent any more (its old one was stopped, its new one refused), and its rule stays behind.
    assert story.blocked and not story.blocked & story.rolled_before_interrupt, story.pods_at_stall
    # The outputs are the install's: the next up judges it installed and rolls again.
    assert story.outputs_after_interrupt == story.outputs_before
    assert story.outputs_after_interrupt[names.SERVER_ADDRESS_OUTPUT]
    assert story.daemon_set_after_interrupt is not None
    assert story.daemon_set_after_interrupt["metadata"].get("deletionTimestamp") is None
    # The patch was applied (agents rolled): the state holds it, which the next up reads.
    assert story.patch_in_state


def test_going_back_rolls_every_agent_to_the_stacks_own_command_line(story: Story) -> None:
    assert story.restore is not None and story.restore.returncode == 0
    assert (
        "sequenced change: kiam:retire: a retirement that stopped half way left agents running "
        "with --iptables-remove" in story.restore.output
    )
    assert story.forced_annotation.get(PATCH_FORCE_ANNOTATION) == "true"
    assert sorted(story.args_after_restore) == sorted(story.agent_nodes)
    for node, args in story.args_after_restore.items():
        assert KEEP in args and REMOVE not in args, (node, args)
    assert story.patch_in_state_after_restore is False
    # The stack applies the DaemonSet without force again. The live object keeps the annotation
    # the interrupted retirement's patch set (its field manager, forgotten with the patch, shares
    # it): harmless, as pulumi-kubernetes decides force from the program's inputs, never from the
    # live object (provider/pkg/await/await.go `patchForce(inputs, ...)`).
    annotations = story.daemon_set_inputs_after_next["metadata"].get("annotations") or {}
    assert PATCH_FORCE_ANNOTATION not in annotations
    assert story.annotation_after_next.get(PATCH_FORCE_ANNOTATION) == "true"
    assert len(story.annotation_owners) == 1, story.annotation_owners
    assert story.no_change is not None and story.no_change.returncode == 0


def test_retiring_again_leaves_no_rule_on_any_node(story: Story) -> None:
    assert names.SERVER_ADDRESS_OUTPUT not in story.retired_outputs
    assert story.retired_outputs["installed"]["retired"] is True
    assert story.rule_model_errors == []
    assert story.rules_after and all(ports == [] for ports in story.rules_after.values()), (
        json.dumps(story.rules_after)
    )

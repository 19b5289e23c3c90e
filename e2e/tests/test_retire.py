"""Scenario: kiam retired in one `pulumi up` (`kiam:retire`), watched.

The dev stack is installed with one application already served by IRSA (it needs no stand-in),
then `kiam:retire: true` is applied. While it runs, every change of the namespace's pods and of
the agent DaemonSet is recorded in the API server's order. What must hold:

- every agent is rolled to `--iptables-remove`, `kiam:agent.rollout` at a time, before the DaemonSet is
  deleted, and every agent pod that stops once the deletion began carries the flag (so each
  removes its node's DNAT rule);
- the agent pods are all gone before the first server pod is asked to stop;
- exactly kiam's resources leave the stack and the cluster, none of the application's;
- the next `pulumi up` only forgets the kept patch (its stack's last outputs show kiam retired,
  components/agent_retirement.py), touching nothing in the cluster, and the one after changes
  nothing;
- after `pulumi refresh` (which forgets the patch once its DaemonSet is gone), `pulumi up` is clean
  and the one after changes nothing; `pulumi destroy` of the retired stack is clean.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from e2e.harness.environment import Environment, write_stack_file
from e2e.harness.pod_record import Moment, Recorder
from e2e.harness.pulumi import PulumiStack, read_event_log, type_and_name
from e2e.tests.conftest import (
    REPORT,
    deploy,
    example_config,
    fresh_environment,
    set_settings,
)
from kiam_eks.contracts import kiam, tokens
from kiam_eks.contracts.labels import selector_labels
from kiam_eks.settings.agent_rollout import AgentRolloutSettings

NAMESPACE = "kiam"  # the dev stack's (the default)
APP_NAMESPACE = "billing"
REMOVE = kiam.AGENT_REMOVE_RULE_FLAG
KEEP = "--no-iptables-remove"


@dataclass
class Retired:
    env: Environment
    stack: PulumiStack
    before: set[tuple[str, str]]
    after: set[tuple[str, str]]
    moments: list[Moment]
    events: list[dict[str, Any]]
    agent_nodes: set[str]
    applications_before: dict[str, Any]


APPLICATION = {
    "billing": {
        "namespace": APP_NAMESPACE,
        "roleName": "billing-api",
        "servedBy": "irsa",
        "serviceAccount": "api",
    }
}


@pytest.fixture(scope="module")
def retired(bin_dir: Path, session_root: Path) -> Iterator[Retired]:
    with fresh_environment(session_root, bin_dir, "retire") as env:
        config = {**example_config("dev"), "kiam:applications": APPLICATION}
        stack, _ = deploy(env, "dev", config)
        stack.up()
        before = {type_and_name(r["urn"]) for r in stack.resources()}
        applications_before = stack.outputs()["applications"]
        agent_nodes = {p["spec"]["nodeName"] for p in env.pods(NAMESPACE, "agent")}
        assert agent_nodes, "the install has no agents to retire"
        set_settings(env, stack, {**config, "kiam:retire": True})
        log = env.root / "retire.events.jsonl"
        recorder = Recorder(env.kube, NAMESPACE)
        with recorder.running():
            result = stack.up(event_log=log)
        assert not recorder.errors, recorder.errors
        REPORT.append(
            f"retire: `pulumi up` {result.seconds:.1f} s, {len(agent_nodes)} agents rolled "
            f"then deleted, {len(recorder.moments)} watched changes"
        )
        after = {type_and_name(r["urn"]) for r in stack.resources()}
        yield Retired(
            env,
            stack,
            before,
            after,
            recorder.moments,
            read_event_log(log),
            agent_nodes,
            applications_before,
        )
        stack.destroy()


def _deletion_began(moments: list[Moment]) -> float:
    return next(m.t for m in moments if m.daemon_set_deleting)


def test_every_agent_is_rolled_to_remove_its_rule_before_the_daemon_set_goes(
    retired: Retired,
) -> None:
    moments, nodes = retired.moments, retired.agent_nodes
    began = _deletion_began(moments)
    before = [m for m in moments if m.t < began]
    # The roll completed: a moment with one Ready agent per node, every one with the flag.
    rolled = [
        m
        for m in before
        if sorted(p.node for p in m.agents() if p.ready and not p.stopping) == sorted(nodes)
        and all(REMOVE in p.args and KEEP not in p.args for p in m.agents())
    ]
    assert rolled, "the agents were never all rolled to --iptables-remove before the deletion"
    # When the deletion began, every agent pod there was carried the flag.
    at_deletion = next(m for m in moments if m.t >= began)
    assert at_deletion.agents() and all(REMOVE in p.args for p in at_deletion.agents())
    # And every agent that stopped from then on removed its rule on exit.
    stopped_after = {p.name: p for m in moments if m.t >= began for p in m.agents() if p.stopping}
    assert set(stopped_after) == {p.name for p in at_deletion.agents()}
    assert all(REMOVE in p.args for p in stopped_after.values())


def test_the_roll_restarts_at_most_max_unavailable_agents_at_a_time(retired: Retired) -> None:
    began = _deletion_began(retired.moments)
    worst = max(m.without_agent(retired.agent_nodes) for m in retired.moments if m.t < began)
    # kiam:agent.rollout's default, 10% of the dev cluster's 3 agent nodes, rounded up: never two
    # nodes without a serving agent at once (and the roll did take one away at a time).
    assert AgentRolloutSettings().at_once(len(retired.agent_nodes)) == 1
    assert worst == 1


def test_agents_are_gone_before_any_server_is_asked_to_stop(retired: Retired) -> None:
    moments = retired.moments
    last_agent = max(
        m.t for i, m in enumerate(moments) if i > 0 and moments[i - 1].agents() and not m.agents()
    )
    first_server_stop = min(
        m.t for m in moments if any(p.role == "server" and p.stopping for p in m.pods)
    )
    assert last_agent < first_server_stop
    # The engine agrees: it finished deleting the DaemonSet before it began the Deployment.
    events = retired.events

    def sequence(kind: str, type_: str, op: str) -> int:
        return next(
            int(e["sequence"])
            for e in events
            if kind in e
            and e[kind]["metadata"]["type"] == type_
            and e[kind]["metadata"]["op"] == op
        )

    assert sequence("resOutputsEvent", tokens.DAEMON_SET_PATCH, "create") < sequence(
        "resourcePreEvent", tokens.DAEMON_SET, "delete"
    )
    assert sequence("resOutputsEvent", tokens.DAEMON_SET, "delete") < sequence(
        "resourcePreEvent", tokens.DEPLOYMENT, "delete"
    )


# Everything of the dev stack's kiam install on the stand-ins (whose IAM and certificate
# authority are computed, not resources), and nothing of the application's.
KIAM_INSTALL = {
    ("kiam:e2e:KwokNodeGroup", "kiam-server-nodes"),
    ("kubernetes:core/v1:ConfigMap", "kiam-server-nodes"),
    (tokens.NODE, "kiam-server-nodes-0"),
    (tokens.NODE, "kiam-server-nodes-1"),
    (tokens.NAMESPACE, "kiam-namespace"),
    (tokens.TLS, "kiam-tls"),
    (tokens.SECRET, "kiam-tls-agent"),
    (tokens.SECRET, "kiam-tls-server"),
    (tokens.SERVER, "kiam-server"),
    ("kubernetes:core/v1:ServiceAccount", "kiam-server"),
    ("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole", "kiam-server"),
    (tokens.CLUSTER_ROLE_BINDING, "kiam-server"),
    (tokens.SERVICE, "kiam-server"),
    (tokens.DEPLOYMENT, "kiam-server"),
    (tokens.PDB, "kiam-server"),
    (tokens.AGENT, "kiam-agent"),
    ("kubernetes:core/v1:ServiceAccount", "kiam-agent"),
    (tokens.DAEMON_SET, "kiam-agent"),
}
# What retirement registers besides the patch: its component.
RETIREMENT = {(tokens.AGENT_RETIREMENT, "kiam-agent-retirement")}
KEPT = {
    ("pulumi:pulumi:Stack", "kiam-dev"),
    ("pulumi:providers:kubernetes", "kubernetes"),
    # The engine's builtin provider, which answers the program's read of its last update
    # (components/last_update.py), from the first update on (measured in the state).
    ("pulumi:providers:pulumi", "default"),
    (tokens.KIAM, "kiam"),
}


def test_exactly_kiams_resources_leave_the_stack(retired: Retired) -> None:
    assert retired.before - retired.after == KIAM_INSTALL
    assert retired.before == KEPT | KIAM_INSTALL  # nothing else was there, nothing else left
    assert retired.after == KEPT | RETIREMENT | {(tokens.DAEMON_SET_PATCH, "kiam-agent-retirement")}


def test_the_cluster_keeps_nothing_of_kiam_and_everything_of_the_application(
    retired: Retired,
) -> None:
    kube = retired.env.kube
    assert kube.get_or_none(f"/api/v1/namespaces/{NAMESPACE}") is None
    for role in ("server", "agent"):
        query = ",".join(f"{k}={v}" for k, v in selector_labels(role).items())
        assert kube.items(f"/api/v1/pods?labelSelector={query}") == []
    assert retired.env.dedicated_nodes() == []
    cluster_roles = kube.items("/apis/rbac.authorization.k8s.io/v1/clusterroles")
    assert [r["metadata"]["name"] for r in cluster_roles if "kiam" in r["metadata"]["name"]] == []
    # IRSA serves the application: nothing of it is in the cluster for kiam (no namespace
    # permission), and what its pods need is the stack output, unchanged.
    assert retired.stack.outputs()["applications"] == retired.applications_before


def test_the_retired_stack_exports_only_the_applications(retired: Retired) -> None:
    assert sorted(retired.stack.outputs()) == ["applications", "installed"]
    assert retired.stack.outputs()["installed"]["retired"] is True


def _steps(events: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    """(op, type, name) of every step the engine took that changed the state: same steps and
    the re-read of the stack reference (a read, which `--expect-no-changes` does not count)
    left out."""
    return {
        (
            e["resourcePreEvent"]["metadata"]["op"],
            *type_and_name(e["resourcePreEvent"]["metadata"]["urn"]),
        )
        for e in events
        if "resourcePreEvent" in e
        and e["resourcePreEvent"]["metadata"]["op"] not in ("same", "read")
    }


def test_the_next_up_forgets_the_kept_patch_and_the_one_after_changes_nothing(
    retired: Retired,
) -> None:
    log = retired.env.root / "after-retirement.events.jsonl"
    retired.stack.up(event_log=log)
    # The last outputs show kiam retired: the patch is no longer registered, and being kept on
    # delete it leaves the state without a call to the cluster.
    assert _steps(read_event_log(log)) == {
        ("delete", tokens.DAEMON_SET_PATCH, "kiam-agent-retirement")
    }
    assert {type_and_name(r["urn"]) for r in retired.stack.resources()} == KEPT | RETIREMENT
    result = retired.stack.up("--expect-no-changes")
    assert "unchanged" in result.output


def test_retiring_while_kiam_serves_an_application_stops_the_cli(retired: Retired) -> None:
    env = retired.env
    config = {
        **example_config("dev"),
        "kiam:applications": {"search": {"namespace": APP_NAMESPACE, "roleName": "search-api"}},
        "kiam:retire": True,
    }
    stack = env.stack("refused")
    stack.create(write_stack_file(env.root / "stack-files" / "Pulumi.refused.yaml", config))
    try:
        result = stack.preview(check=False)
        assert result.returncode != 0
        message = (
            "kiam:retire would remove kiam while it still serves kiam:applications.search "
            "(servedBy kiam): move each to podIdentity or irsa first, one step at a time "
            "(docs/leaving-kiam.md)"
        )
        assert message in result.output and "Traceback" not in result.output
        assert [r["type"] for r in stack.resources()] in ([], ["pulumi:pulumi:Stack"])
    finally:
        stack.remove()


def test_after_a_refresh_of_the_retired_stack_up_is_clean_and_so_is_destroy(
    bin_dir: Path, session_root: Path
) -> None:
    with fresh_environment(session_root, bin_dir, "retire-refresh") as env:
        config = {**example_config("dev"), "kiam:applications": APPLICATION}
        stack, _ = deploy(env, "dev", config)
        stack.up()
        set_settings(env, stack, {**config, "kiam:retire": True})
        stack.up()
        patch = (tokens.DAEMON_SET_PATCH, "kiam-agent-retirement")
        assert patch in {type_and_name(r["urn"]) for r in stack.resources()}
        stack.run("refresh", "--stack", stack.stack, "--yes")
        # What used to break every later up: the refresh forgets the patch of a DaemonSet gone.
        assert {type_and_name(r["urn"]) for r in stack.resources()} == KEPT | RETIREMENT
        log = env.root / "after-refresh.events.jsonl"
        stack.up(event_log=log)
        assert _steps(read_event_log(log)) == set()
        assert "unchanged" in stack.up("--expect-no-changes").output
        result = stack.destroy()
        assert stack.resources() == []
        assert "kiam-agent-retirement" in result.output


def test_destroying_the_retired_stack_is_clean(bin_dir: Path, session_root: Path) -> None:
    with fresh_environment(session_root, bin_dir, "retire-destroy") as env:
        config = {**example_config("dev"), "kiam:applications": APPLICATION}
        stack, _ = deploy(env, "dev", config)
        stack.up()
        set_settings(env, stack, {**config, "kiam:retire": True})
        stack.up()
        result = stack.destroy()
        assert stack.resources() == []
        # The kept patch is forgotten without touching the cluster.
        assert "kiam-agent-retirement" in result.output

"""tools.fleet: the fleet file, wave planning and stack patterns, the preview's reading of the
engine's events, its table and Markdown, and the command's exit codes (with a fake engine)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kiam_eks.contracts import tokens
from tests.fleet_fakes import (
    SERVER_NODES_URN,
    FakeEngine,
    error,
    info,
    project,
    step,
    summary,
    template,
    violation,
)
from tools.fleet.cli import main
from tools.fleet.fleet_file import FleetFileError, load_fleet_file, seconds_of
from tools.fleet.preview import EventSummary, StackPreview, preview_fleet
from tools.fleet.report import markdown_table, text_table
from tools.fleet.waves import fleet_stacks, plan_waves, render_plan, select

WAVES: list[dict[str, Any]] = [
    {"name": "canary", "stacks": ["dev"], "soak": "2m"},
    {"name": "rest", "stacks": ["prod-*"], "parallel": 2, "soak": "10m"},
]
STACKS = ["dev", "prod-eu", "prod-us"]


def fleet_file(tmp_path: Path, **extra: Any) -> Path:
    return project(tmp_path, STACKS, {"waves": WAVES, **extra})


# --- the fleet file ------------------------------------------------------------------------------


def test_a_fleet_file_resolves_paths_against_its_folder(tmp_path: Path) -> None:
    fleet = load_fleet_file(fleet_file(tmp_path))
    assert fleet.project == tmp_path
    assert fleet.policy_pack == tmp_path / "policy"
    assert fleet.state_file == tmp_path / ".fleet" / "rollout-state.json"
    assert [(w.name, w.parallel, w.soak_seconds) for w in fleet.waves] == [
        ("canary", 1, 120),
        ("rest", 2, 600),
    ]
    assert fleet_stacks(fleet) == STACKS


@pytest.mark.parametrize(
    ("document", "problems"),
    [
        (
            {"waves": [{"name": "a", "stacks": ["dev"], "soak": "5 minutes"}]},
            [
                "waves[0].soak: '5 minutes' is not a duration: use whole numbers with h, m and s, e.g. 5m"
            ],
        ),
        (
            {"waves": [{"name": "a", "stacks": ["dev"], "parallel": 0}]},
            ["waves[0].parallel: Input should be greater than or equal to 1 (got 0)"],
        ),
        (
            {"waves": [{"name": "a", "stacks": []}]},
            ["waves[0].stacks: List should have at least 1 item after validation, not 0 (got [])"],
        ),
        (
            {"waves": [{"name": "a", "stacks": ["dev"], "soakTime": "1m"}]},
            ["waves[0].soakTime: is not a known key (allowed here: name, parallel, soak, stacks)"],
        ),
        (
            {"waves": [{"name": "a", "stacks": ["dev"]}], "stacks": {"dev": {"kubeConfig": "k"}}},
            [
                "stacks.dev.kubeConfig: is not a known key (allowed here: env, kubeconfig, "
                "stackFile, workDir)"
            ],
        ),
        (
            {"waves": [{"name": "Canary!", "stacks": ["dev"]}]},
            ["waves[0].name: 'Canary!' is not a lower-case name of letters, digits and dashes"],
        ),
        (
            {"waves": [{"name": "a", "stacks": ["dev"]}, {"name": "a", "stacks": ["prod-*"]}]},
            ["waves: names must be unique (a repeated)"],
        ),
        ({}, ["waves: is required"]),
        (
            {"waves": [{"name": "a", "stacks": ["dev"]}], "adoption": {"gate": "cluster"}},
            ["adoption.gate: Input should be 'fleet' or 'wave' (got 'cluster')"],
        ),
    ],
)
def test_fleet_file_mistakes_are_named_with_their_key_path(
    tmp_path: Path, document: dict[str, Any], problems: list[str]
) -> None:
    path = project(tmp_path, STACKS, document)
    with pytest.raises(FleetFileError) as raised:
        load_fleet_file(path)
    assert raised.value.problems == problems
    assert str(raised.value).startswith(f"{path}: invalid fleet file (1 problem):\n  - ")


def test_a_fleet_file_that_is_not_a_mapping_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text("- a\n- b\n")
    with pytest.raises(FleetFileError) as raised:
        load_fleet_file(path)
    assert raised.value.problems == ["must be a mapping (got list)"]


@pytest.mark.parametrize(
    ("text", "seconds"), [("0s", 0), ("90s", 90), ("5m", 300), ("1h30m", 5400)]
)
def test_durations(text: str, seconds: int) -> None:
    assert seconds_of(text) == seconds


# --- waves and patterns --------------------------------------------------------------------------


def test_waves_hold_the_stacks_their_patterns_match_in_order(tmp_path: Path) -> None:
    fleet = load_fleet_file(fleet_file(tmp_path))
    planned = plan_waves(fleet, STACKS, "fleet.yaml")
    assert [(p.wave.name, p.stacks) for p in planned] == [
        ("canary", ("dev",)),
        ("rest", ("prod-eu", "prod-us")),
    ]
    assert render_plan(planned) == (
        "Rollout plan: 2 waves, 3 stacks\n"
        "  1. canary: dev (1 at once, soak 2m)\n"
        "  2. rest: prod-eu, prod-us (2 at once, soak 10m)"
    )


def test_a_stack_in_two_waves_in_none_and_a_pattern_matching_nothing_are_refused(
    tmp_path: Path,
) -> None:
    waves = [
        {"name": "one", "stacks": ["prod-*", "staging-*"]},
        {"name": "two", "stacks": ["prod-eu"]},
    ]
    fleet = load_fleet_file(project(tmp_path, STACKS, {"waves": waves}))
    with pytest.raises(FleetFileError) as raised:
        plan_waves(fleet, STACKS, "fleet.yaml")
    assert raised.value.problems == [
        "waves[0].stacks: 'staging-*' matches no stack (stacks: dev, prod-eu, prod-us)",
        "waves[1].stacks: prod-eu is already in wave one: a stack belongs to one wave",
        "waves: dev is in no wave: every stack of the fleet rolls out in exactly one",
    ]


def test_a_selection_keeps_the_fleet_order_and_refuses_a_pattern_matching_nothing() -> None:
    assert select(STACKS, []) == STACKS
    assert select(STACKS, ["prod-us", "d?v"]) == ["dev", "prod-us"]
    with pytest.raises(
        ValueError, match=r"no stack matches 'qa-\*' \(stacks: dev, prod-eu, prod-us\)"
    ):
        select(STACKS, ["qa-*", "dev"])


# --- reading a preview's events ------------------------------------------------------------------


def read(events: list[Any], failure: str | None = None) -> StackPreview:
    folded = EventSummary("dev")
    for e in events:
        folded(e)
    return folded.finish(failure)


def test_a_pod_template_change_restarts_a_metadata_change_does_not() -> None:
    row = read(
        [
            step("update", tokens.DEPLOYMENT, "kiam-server", old=template("a"), new=template("b")),
            step(
                "update",
                tokens.DAEMON_SET,
                "kiam-agent",
                old={"metadata": {"labels": {"x": "1"}}, **template("a")},
                new={"metadata": {"labels": {"x": "2"}}, **template("a")},
            ),
            summary({"kiam|local|/work/policy/pack-launcher": ""}, update=2, same=20),
        ]
    )
    assert (row.servers, row.agents, row.node_group_replaced) == ("restart", "-", False)
    assert row.changes == {"create": 0, "update": 2, "replace": 0, "delete": 0}
    assert row.policy == "passed (kiam)"
    assert not row.failed


def test_a_replaced_child_of_the_server_nodes_is_a_node_group_replacement() -> None:
    row = read(
        [
            step("replace", tokens.NODE_GROUP, "kiam-server", SERVER_NODES_URN, old={}, new={}),
            step("replace", tokens.LAUNCH_TEMPLATE, "lt", old={}, new={}),  # not a server node
            step("create", tokens.DAEMON_SET, "kiam-agent", new=template("a")),
        ]
    )
    assert (row.node_group_replaced, row.servers, row.agents) == (True, "-", "new")
    updated = step("update", tokens.NODE_GROUP, "g", SERVER_NODES_URN, old={}, new={})
    assert read([updated]).node_group_replaced is False


def test_what_review_must_not_miss_is_noted() -> None:
    row = read(
        [
            step("replace", tokens.SECRET, "kiam-tls-server", old={}, new={}),
            step("create-replacement", tokens.SECRET, "kiam-tls-server", old={}, new={}),
            step("delete", tokens.NAMESPACE, "kiam-namespace", old={}),
            step(
                "replace",
                "tls:index/locallySignedCert:LocallySignedCert",
                "kiam-tls-agent",
                old={},
                new={},
            ),
            step("update", tokens.SECRET, "kiam-tls-agent", old={}, new={}),
            info("sequenced change: kiam:server.serviceName: the running agents dial ..."),
            info("an info message the program did not write"),
        ]
    )
    assert row.notes == [
        "replaces Secret kiam-tls-server",
        "deletes Namespace kiam-namespace",
        "replaces LocallySignedCert kiam-tls-agent",
        "sequenced: kiam:server.serviceName",
    ]
    # A deleted namespace takes every server and agent with it.
    assert (row.servers, row.agents) == ("deleted", "deleted")
    # One the engine only forgets (kept on delete) takes nothing.
    kept = read([step("delete", tokens.NAMESPACE, "kiam-namespace", old={}, retain=True)])
    assert (kept.notes, kept.servers, kept.agents) == (
        ["deletes Namespace kiam-namespace"],
        "-",
        "-",
    )


def test_policy_violations_and_errors() -> None:
    row = read(
        [
            violation("kiam-agent-placement"),
            violation("kiam-server-anti-affinity-resource"),
            violation("kiam-agent-placement"),
            violation("advice", "warning"),
            error("  preview failed:\n   policy violations  "),
            summary({"kiam": "0.0.1"}),
        ],
        failure="exit status 255",
    )
    assert row.policy == "failed: kiam-agent-placement, kiam-server-anti-affinity-resource"
    assert row.error == "preview failed: policy violations"
    assert row.failed
    assert read([violation("advice", "warning"), summary({"kiam": "1"})]).policy == (
        "passed (kiam), 1 warnings"
    )
    assert read([summary()]).policy == "not run"
    assert read([], failure="first\nlast line").error == "last line"


def test_previews_run_in_parallel_and_invalid_stacks_are_not_previewed() -> None:
    engine = FakeEngine(previews={"prod-eu": [summary(update=1)]}, failing={"prod-us": "boom"})
    lines: list[str] = []
    rows = preview_fleet(engine, STACKS, 2, {"dev": "invalid settings"}, lines.append)
    assert [(r.stack, r.invalid_settings, r.error) for r in rows] == [
        ("dev", True, "invalid settings"),
        ("prod-eu", False, None),
        ("prod-us", False, "boom"),
    ]
    assert sorted(c for c in engine.calls) == [("preview", "prod-eu"), ("preview", "prod-us")]
    assert sorted(lines) == [
        "dev: invalid settings",
        "prod-eu: previewed",
        "prod-eu: previewing",
        "prod-us: failed",
        "prod-us: previewing",
    ]


# --- the table -----------------------------------------------------------------------------------


def rows() -> list[StackPreview]:
    return [
        StackPreview(
            "dev",
            {"create": 0, "update": 2, "replace": 0, "delete": 0},
            servers="restart",
            agents="restart",
            policy_packs={"kiam": "0.0.1"},
        ),
        StackPreview(
            "prod-eu",
            {"create": 0, "update": 1, "replace": 3, "delete": 0},
            node_group_replaced=True,
            servers="restart",
            notes=["replaces Secret kiam-tls-server", "sequenced: kiam:server.serviceName"],
            policy_packs={"kiam": "0.0.1"},
        ),
        StackPreview("prod-us", error="invalid settings", invalid_settings=True),
    ]


def test_the_text_table() -> None:
    assert text_table(rows()) == (
        "stack    create  update  replace  delete  node group  servers  agents   policy         notes                                                                error\n"
        "-------  ------  ------  -------  ------  ----------  -------  -------  -------------  -------------------------------------------------------------------  ----------------\n"
        "dev      0       2       0        0       -           restart  restart  passed (kiam)\n"
        "prod-eu  0       1       3        0       replaced    restart  -        passed (kiam)  replaces Secret kiam-tls-server; sequenced: kiam:server.serviceName\n"
        "prod-us  -       -       -        -       -           -        -        -                                                                                   invalid settings\n"
        "\n"
        "3 stacks previewed: 2 with changes, 1 failed (prod-us)"
    )


def test_the_markdown_table() -> None:
    assert markdown_table(rows()) == (
        "### Fleet preview\n"
        "\n"
        "| stack | create | update | replace | delete | node group | servers | agents | policy | notes | error |\n"
        "|---|---:|---:|---:|---:|---|---|---|---|---|---|\n"
        "| dev | 0 | 2 | 0 | 0 | - | restart | restart | passed (kiam) |  |  |\n"
        "| prod-eu | 0 | 1 | 3 | 0 | replaced | restart | - | passed (kiam) | replaces Secret kiam-tls-server; sequenced: kiam:server.serviceName |  |\n"
        "| prod-us | - | - | - | - | - | - | - | - |  | invalid settings |\n"
        "\n"
        "3 stacks previewed: 2 with changes, 1 failed (prod-us)\n"
    )


# --- the command ---------------------------------------------------------------------------------


def run(path: Path, engine: FakeEngine, *args: str) -> int:
    return main(["--fleet", str(path), *args], engine_factory=lambda fleet: engine)


def test_preview_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = fleet_file(tmp_path)
    assert run(path, FakeEngine(), "preview") == 0
    assert capsys.readouterr().out.endswith("3 stacks previewed: 0 with changes, 0 failed\n")
    assert (
        run(path, FakeEngine(previews={"dev": [violation("p"), summary({"kiam": "1"})]}), "preview")
        == 1
    )
    assert run(path, FakeEngine(failing={"prod-eu": "boom"}), "preview", "--stacks", "prod-*") == 1
    out = capsys.readouterr().out
    assert "dev  " in out.splitlines()[2]  # the first run's table: dev failed its policy
    assert run(path, FakeEngine(), "preview", "--stacks", "qa-*") == 2
    assert (
        capsys.readouterr().err
        == "--stacks: no stack matches 'qa-*' (stacks: dev, prod-eu, prod-us)\n"
    )


def test_invalid_settings_exit_2_and_are_never_previewed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = fleet_file(tmp_path)
    stack_file = tmp_path / "stacks" / "Pulumi.prod-us.yaml"
    stack_file.write_text(stack_file.read_text().replace("replicas: 2", "replicas: 0"))
    engine = FakeEngine()
    markdown = tmp_path / "preview.md"
    assert run(path, engine, "preview", "--markdown", str(markdown)) == 2
    assert ("preview", "prod-us") not in engine.calls
    captured = capsys.readouterr()
    assert f"{stack_file}: invalid kiam settings (1 problem):" in captured.err
    assert "kiam:server.replicas" in captured.err
    assert (
        "| prod-us | - | - | - | - | - | - | - | - |  | invalid settings |" in markdown.read_text()
    )


def test_an_invalid_fleet_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = project(tmp_path, STACKS, {"waves": [{"name": "all", "stacks": ["prod-*"]}]})
    assert run(path, FakeEngine(), "up", "--dry-run") == 2
    assert capsys.readouterr().err == (
        f"{path}: invalid fleet file (1 problem):\n"
        "  - waves: dev is in no wave: every stack of the fleet rolls out in exactly one\n"
    )


def test_up_dry_run_prints_the_plan_and_touches_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    engine = FakeEngine()
    assert run(fleet_file(tmp_path), engine, "up", "--dry-run") == 0
    assert capsys.readouterr().out == (
        "Rollout plan: 2 waves, 3 stacks\n"
        "  1. canary: dev (1 at once, soak 2m)\n"
        "  2. rest: prod-eu, prod-us (2 at once, soak 10m)\n"
    )
    assert engine.calls == []
    assert not (tmp_path / ".fleet").exists()


def test_waves_lists_the_names_for_the_deploy_workflow(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(fleet_file(tmp_path), FakeEngine(), "waves") == 0
    assert capsys.readouterr().out == '["canary", "rest"]\n'
    assert run(fleet_file(tmp_path / "x"), FakeEngine(), "up", "--dry-run", "--waves", "rest") == 0
    assert capsys.readouterr().out == (
        "Rollout plan: 1 waves, 2 stacks\n  1. rest: prod-eu, prod-us (2 at once, soak 10m)\n"
    )
    assert run(fleet_file(tmp_path / "y"), FakeEngine(), "up", "--waves", "last") == 2
    assert capsys.readouterr().err == "--waves: no wave named last\n"


def test_the_committed_fleet_file_plans_every_stack(capsys: pytest.CaptureFixture[str]) -> None:
    from tools.mock_engine import PROJECT_DIR

    assert main(["--fleet", str(PROJECT_DIR / "fleet.yaml"), "up", "--dry-run"]) == 0
    assert capsys.readouterr().out == (
        "Rollout plan: 2 waves, 2 stacks\n"
        "  1. canary: dev (1 at once, soak 5m)\n"
        "  2. production: production (1 at once, soak 15m)\n"
    )

"""Fixtures of the real-engine suite: the toolchain, one control plane per test module (stopped at
its end), and stacks of the e2e program built from the example stack files."""

from __future__ import annotations

import copy
import itertools
import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from e2e.harness import toolchain
from e2e.harness.cluster import INSTANT, PodTiming
from e2e.harness.environment import Environment, write_stack_file
from e2e.harness.pulumi import PulumiStack, type_and_name
from e2e.harness.shape import WORKERS, ClusterShape
from kiam_eks.settings.loader import example_stacks, stack_file_for

EXAMPLE_STACKS = example_stacks(toolchain.REPO)
_clusters = itertools.count()
# Measured facts the scenarios report (timelines, minimums), printed after the run.
REPORT: list[str] = []


@pytest.fixture(scope="session")
def bin_dir() -> Path:
    return toolchain.bin_dir()


@pytest.fixture(scope="session")
def session_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("kiam-e2e")
    yield root
    # `make e2e` leaves nothing running: no process of any control plane of this session remains.
    left = subprocess.run(["pgrep", "-af", str(root)], capture_output=True, text=True).stdout
    assert not left.strip(), f"processes left running:\n{left}"


@contextmanager
def fresh_environment(
    session_root: Path, bin_dir: Path, label: str, timing: PodTiming = INSTANT
) -> Iterator[Environment]:
    """A control plane of its own, its pods taking `timing` to start and stop, stopped (and its
    processes gone) when the block ends."""
    index = next(_clusters)
    environment = Environment.start(
        session_root / f"{index}-{label}", bin_dir, name=f"e2e-{os.getpid()}-{index}", timing=timing
    )
    try:
        yield environment
    finally:
        environment.stop()


@contextmanager
def installed_dev_with_capacity(
    session_root: Path, bin_dir: Path, label: str, *, spare: bool
) -> Iterator[tuple[Environment, PulumiStack, dict[str, Any]]]:
    """The dev stack installed on a control plane of its own, its node group sized for its
    servers, plus one spare node if asked: what the watched rollouts start from."""
    replicas = int(example_config("dev")["kiam:server"]["replicas"])
    with fresh_environment(session_root, bin_dir, f"{label}-{'spare' if spare else 'none'}") as env:
        size = replicas + (1 if spare else 0)
        config = with_changes(
            example_config("dev"), nodeGroup={"desiredSize": size, "maxSize": size + 1}
        )
        stack, _ = deploy(env, "dev", config)
        stack.up()
        yield env, stack, config


@pytest.fixture(scope="module")
def env(bin_dir: Path, session_root: Path, request: pytest.FixtureRequest) -> Iterator[Environment]:
    """A fresh control plane for one test module."""
    with fresh_environment(session_root, bin_dir, request.module.__name__.rsplit(".", 1)[-1]) as e:
        yield e


@pytest.fixture(scope="module")
def installed_dev(env: Environment) -> Iterator[PulumiStack]:
    """The dev example stack, installed on the module's control plane, destroyed at its end."""
    stack, _ = deploy(env, "dev", example_config("dev"))
    stack.up()
    yield stack
    stack.destroy()


def example_config(stack: str) -> dict[str, Any]:
    config: dict[str, Any] = yaml.safe_load((toolchain.REPO / stack_file_for(stack)).read_text())[
        "config"
    ]
    return copy.deepcopy(config)


def with_changes(config: dict[str, Any], **sections: dict[str, Any]) -> dict[str, Any]:
    """`config` with keys of whole sections (`nodeGroup={...}`) merged over it."""
    changed = copy.deepcopy(config)
    for section, values in sections.items():
        changed[f"kiam:{section}"] = {**changed.get(f"kiam:{section}", {}), **values}
    return changed


def deploy(
    env: Environment, name: str, config: dict[str, Any], workers: int = WORKERS
) -> tuple[PulumiStack, ClusterShape]:
    """Shape the cluster for this config (with `workers` workload nodes), and create its stack
    (nothing is deployed yet)."""
    stack_file = write_stack_file(env.root / "stack-files" / f"Pulumi.{name}.yaml", config)
    _, shape = env.shape_for(stack_file, workers)
    stack = env.stack(name)
    stack.create(stack_file)
    return stack, shape


def set_settings(env: Environment, stack: PulumiStack, config: dict[str, Any]) -> None:
    """Change the stack's settings as a user edits the stack file."""
    stack_file = write_stack_file(env.root / "stack-files" / f"Pulumi.{stack.stack}.yaml", config)
    stack.use_settings(stack_file)


# The test modules, longest first, by what each took in one process on 2 cores (2026-12-01, beside
# a mutation run at nice 19: 2359 s in all; docs/performance.md). Two workers each take the next
# module as they near the end of one (pytest-xdist --dist loadfile, --no-loadscope-reorder), so
# with the longest started first the two finish close together. tests/test_e2e_suite_order.py
# holds that every module is here.
LONGEST_FIRST = (
    "test_node_changes",  # 440 s
    "test_interrupted",  # 212 s (alone, 2026-12-03)
    "test_fleet",  # 271 s
    "test_adoption",  # 260 s
    "test_leaving_kiam",  # 250 s
    "test_transitions",  # 180 s
    "test_retire",  # 160 s
    "test_policy_pack",  # 139 s
    "test_consumers",  # 124 s (alone, 2026-12-02)
    "test_namespace_permissions",  # 106 s
    "test_install",  # 98 s
    "test_long_lived_cluster",  # 98 s (beside a cold CI run at nice 19, 2026-12-02)
    "test_retire_interrupted",  # 72 s
    "test_drift",  # 65 s
    "test_previews",  # 56 s
    "test_drain",  # 55 s
    "test_bad_input",  # 55 s
    "test_upgrade",  # 51 s
    "test_monitoring",  # 47 s
    "test_destroy",  # 38 s
    "test_kiam_usage",  # 16 s
    "test_scale",  # the CI shape (KIAM_E2E_SCALE=ci); `make e2e-scale` runs it alone at full size
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: index for index, name in enumerate(LONGEST_FIRST)}
    # A stable sort: each module's tests keep their order.
    items.sort(key=lambda item: rank.get(item.path.stem, len(rank)))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        help="rewrite e2e/golden/ from this run's previews instead of comparing with them",
    )


def changes(preview_json: str) -> dict[tuple[str, str], str]:
    """(type, name) -> operation of every step that changes something, from `preview --json`."""
    return {
        type_and_name(s["urn"]): s["op"]
        for s in json.loads(preview_json).get("steps") or []
        if s["op"] not in ("same", "read")
    }


def pytest_sessionfinish(session: pytest.Session) -> None:
    # On a pytest-xdist worker (`make e2e` runs two): hand the measured lines to the controller,
    # which prints them (pytest_testnodedown); `workeroutput` is xdist's channel for this.
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["measured"] = list(REPORT)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    REPORT.extend(getattr(node, "workeroutput", {}).get("measured", []))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if REPORT:
        terminalreporter.section("measured")
        for line in REPORT:
            terminalreporter.write_line(line)

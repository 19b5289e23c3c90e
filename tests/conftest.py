"""Shared test helpers: example stacks, a valid base configuration, and runs through the mock engine.

Every run goes through `tools.mock_engine`, the same engine the offline plan uses, and sets its
mocks afresh, so tests never share a root stack or a config map.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from kiam_eks.contracts import pod_identity
from kiam_eks.invariants.expected import Expected
from kiam_eks.settings.loader import example_stacks, settings_from_values
from tools.mock_engine import PROJECT_DIR, MockEngine, Recording, run_main

STACKS_DIR = PROJECT_DIR / "stacks"
EXAMPLE_STACKS = example_stacks(PROJECT_DIR)

# The smallest valid configuration; tests change one thing at a time.
BASE_CONFIG: dict[str, Any] = {
    "kiam:cluster": {
        "name": "test",
        "accountId": "111122223333",
        "region": "eu-west-1",
        "kubernetesVersion": "1.33",
    },
    "kiam:nodeGroup": {
        "subnets": [
            {"id": "subnet-00000000000000001", "zone": "eu-west-1a"},
            {"id": "subnet-00000000000000002", "zone": "eu-west-1b"},
            {"id": "subnet-00000000000000003", "zone": "eu-west-1c"},
        ]
    },
}


def example_config(stack: str) -> dict[str, Any]:
    """The `config:` map of `stacks/Pulumi.<stack>.yaml`."""
    config: dict[str, Any] = yaml.safe_load((STACKS_DIR / f"Pulumi.{stack}.yaml").read_text())[
        "config"
    ]
    return config


def base_config(**sections: dict[str, Any]) -> dict[str, Any]:
    """BASE_CONFIG with whole sections (`server={...}`) merged over it, by their key under `kiam:`."""
    config = copy.deepcopy(BASE_CONFIG)
    for key, value in sections.items():
        name = "kiam:" + ("nodeGroup" if key == "node_group" else key)
        existing = config.get(name)
        config[name] = (
            {**existing, **value}
            if isinstance(existing, dict) and isinstance(value, dict)
            else value
        )
    return config


def expected_of(config: dict[str, Any]) -> Expected:
    """What a stack's config asks for, as the guarantees judge it (passed explicitly: a module
    fixture's resources outlive the run that made them, and the runtime's config with it)."""
    values = {k.removeprefix("kiam:"): v for k, v in config.items() if k.startswith("kiam:")}
    return Expected.of(settings_from_values(values, "test config"))


def run_program(config: dict[str, Any], stack: str = "test") -> Recording:
    """Run the real `__main__.py` with this config map."""
    return run_main(config, stack=stack)


def run_component(
    build: Callable[[], Any], cluster_addons: tuple[str, ...] | None = None
) -> Recording:
    """Run a function that creates resources (one component) under the mock engine, on a
    cluster running `cluster_addons` (by default Pod Identity's agent)."""
    return MockEngine(cluster_addons=cluster_addons).run(build)


def addons_of(settings: Any) -> tuple[str, ...]:
    """The add-ons of the cluster a stack's settings expect (`addons_the_stack_expects`)."""
    return () if settings.pod_identity_agent.manage_addon else (pod_identity.AGENT_ADDON,)


@pytest.fixture(scope="module")
def base_run() -> Recording:
    return run_program(base_config())


def types_and_names(registrations: list[Any]) -> set[tuple[str, str]]:
    return {(r.type, r.name) for r in registrations}


def pod_spec(reg: Any) -> Any:
    return reg.inputs["spec"]["template"]["spec"]


def only_container(reg: Any) -> Any:
    containers = pod_spec(reg)["containers"]
    assert len(containers) == 1
    return containers[0]


@pytest.fixture
def registered_types(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The type of every resource the mock engine is asked to register, in order."""
    from tools import mock_engine

    seen: list[str] = []
    original = mock_engine.RecordingMonitor.RegisterResource

    def spy(self: mock_engine.RecordingMonitor, request: Any) -> Any:
        seen.append(request.type)
        return original(self, request)

    monkeypatch.setattr(mock_engine.RecordingMonitor, "RegisterResource", spy)
    return seen


@pytest.fixture
def tmp_stack(tmp_path: Path) -> Callable[[Any], Path]:
    """Write a stack file (a config map, or raw text) and return its path."""

    def write(content: Any, name: str = "Pulumi.case.yaml") -> Path:
        path = tmp_path / name
        path.write_text(
            content if isinstance(content, str) else yaml.safe_dump({"config": content})
        )
        return path

    return write

"""The real-engine harness's cluster shape: how many workload nodes, and how long kwok takes to
start and stop a pod (e2e/harness/shape.py, e2e/harness/cluster.py, `make sandbox NODES=...`)."""

from __future__ import annotations

from typing import Any

import pytest

from e2e import sandbox
from e2e.harness.cluster import PodTiming, with_pod_timing
from e2e.harness.shape import WORKERS, shape_of
from kiam_eks.settings.loader import settings_from_stack_file
from tests.conftest import PROJECT_DIR

# kwok's saved configuration as kwokctl writes it: its options, then its default stages.
SAVED = [
    {"kind": "KwokctlConfiguration", "apiVersion": "config.kwok.x-k8s.io/v1alpha1"},
    {"kind": "Stage", "metadata": {"name": "node-initialize"}, "spec": {"next": {}}},
    {"kind": "Stage", "metadata": {"name": "pod-ready"}, "spec": {"next": {"statusTemplate": ""}}},
    {"kind": "Stage", "metadata": {"name": "pod-complete"}, "spec": {"next": {}}},
    {"kind": "Stage", "metadata": {"name": "pod-delete"}, "spec": {"next": {"delete": True}}},
]


def delay(docs: list[dict[str, Any]], name: str) -> Any:
    return next(d for d in docs if d.get("metadata", {}).get("name") == name)["spec"].get("delay")


def test_the_pod_stages_wait_as_long_as_the_timing_says_unless_a_pod_says_otherwise() -> None:
    timed = with_pod_timing(SAVED, PodTiming(start_seconds=10, stop_seconds=2.5))
    assert delay(timed, "pod-ready") == {
        "durationMilliseconds": 10000,
        "durationFrom": {
            "expressionFrom": '.metadata.annotations["pod-ready.stage.kwok.x-k8s.io/delay"]'
        },
    }
    assert delay(timed, "pod-delete")["durationMilliseconds"] == 2500
    # Nothing else changes: the nodes' stages, the pods' completion, what each stage does next.
    assert delay(timed, "node-initialize") is None and delay(timed, "pod-complete") is None
    assert [d["spec"].get("next") for d in timed[1:]] == [d["spec"]["next"] for d in SAVED[1:]]
    assert delay(SAVED, "pod-ready") is None  # the saved configuration itself is left alone


def test_a_kwok_without_the_pod_stages_is_an_error_not_a_cluster_of_instant_pods() -> None:
    without_delete = [d for d in SAVED if d.get("metadata", {}).get("name") != "pod-delete"]
    with pytest.raises(RuntimeError, match=r"no stage \['pod-delete'\]"):
        with_pod_timing(without_delete, PodTiming(start_seconds=1))


def test_the_default_timing_is_kwoks_own() -> None:
    assert PodTiming().instant and not PodTiming(stop_seconds=1).instant


def test_a_cluster_of_hundreds_of_workers_across_the_zones_with_distinct_addresses() -> None:
    settings, _ = settings_from_stack_file(PROJECT_DIR / "stacks" / "Pulumi.dev.yaml")
    assert len([n for n in shape_of(settings).node_names if n.startswith("worker-")]) == WORKERS
    shape = shape_of(settings, 500)
    workers = [n for n in shape.nodes if n["metadata"]["name"].startswith("worker-")]
    assert len(workers) == 500
    addresses = [n["status"]["addresses"][0]["address"] for n in shape.nodes]
    assert len(set(addresses)) == len(addresses)
    assert all(0 <= int(part) <= 255 for a in addresses for part in a.split("."))
    zones = {n["metadata"]["labels"]["topology.kubernetes.io/zone"] for n in workers}
    assert zones == {"eu-west-1a", "eu-west-1b"}
    # The first workers keep the addresses they always had: running sandboxes see no change.
    assert workers[2]["status"]["addresses"][0]["address"] == f"10.0.{sum(b'worker-2') % 250}.12"


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (["--nodes", "0"], "'0' is not a number of nodes from 1 to 1000"),
        (["--nodes", "1001"], "'1001' is not a number of nodes from 1 to 1000"),
        (["--pod-start", "ten"], "'ten' is not a duration such as 10s (at most 10m)"),
        (["--pod-stop", "11m"], "'11m' is not a duration such as 10s (at most 10m)"),
    ],
)
def test_the_sandbox_refuses_a_shape_it_cannot_run(
    argv: list[str], problem: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        sandbox.main(["up", "--stack", "dev", *argv])
    assert exit_.value.code == 2
    assert problem in capsys.readouterr().err

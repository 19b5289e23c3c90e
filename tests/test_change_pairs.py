"""Changes judged together (issue 36): two changes the table allows alone may be unsafe in one
update. Each pair of the single changes of tests/test_transitions.py (`CHANGES`, one per
setting), from a base stack, both allowed alone from the pair's stack, is judged together, and
is either refused, or rendered by the mock engine after the base's install and proven by
guarantee 16 on the change (invariants/transitions.py: nothing the running install's pods rely on
is taken before its replacement serves them).

`make test` runs, from the dev stack, every pair of two changes the table sequences
(`kiam:cluster.clusterDomain`, `kiam:server.serviceName`, `kiam:namespace.create`,
`kiam:retire`) and the retirement beside every other change (the update whose order matters
most: it rolls every agent to remove its rule, then deletes kiam). `make test-pairs`
(`KIAM_PAIRS=all`) runs every pair of every base (docs/performance.md has its count and time).
"""

from __future__ import annotations

import copy
import itertools
import json
import os
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from kiam_eks.transitions.installed import installed_by, read_installed
from kiam_eks.transitions.judge import judge
from kiam_eks.transitions.verdicts import Kind, RefusedChangeError
from tests.test_transitions import (
    BASES,
    CHANGES,
    SOURCE,
    _change_violations,
    judged,
    previous_config,
    settings_of,
)
from tools.mock_engine import Recording, mock_cluster_authority, mock_cluster_endpoint, run_main

SERVED_BY = "kiam:applications.<name>.servedBy"
ALL = os.environ.get("KIAM_PAIRS") == "all"
RETIRE = "kiam:retire"


def pair_base(base: str, keys: tuple[str, str]) -> dict[str, Any]:
    """The base stack as both changes need it (an application for an application change, at
    `kiam` for a `servedBy` one: tests/test_transitions.py `previous_config`)."""
    applications = [k for k in keys if k.startswith("kiam:applications")]
    key = SERVED_BY if SERVED_BY in keys else (applications[0] if applications else keys[0])
    return previous_config(base, key)


def changed(before: dict[str, Any], base: str, keys: tuple[str, ...]) -> dict[str, Any] | None:
    after = copy.deepcopy(before)
    for key in keys:
        if not CHANGES[key][0](after, base):
            return None
    return after


def allowed(before: dict[str, Any], after: dict[str, Any]) -> bool:
    try:
        judge(settings_of(after), installed_by(settings_of(before), None), {}, SOURCE)
    except RefusedChangeError:
        return False
    return True


@cache
def _install(before: str) -> Recording:
    return run_main(json.loads(before), stack="test")


def install(before: dict[str, Any]) -> Recording:
    return _install(json.dumps(before, sort_keys=True))


def pairs() -> list[tuple[str, str, str]]:
    chosen = []
    for base in BASES if ALL else ("dev",):
        kinds = {key: judged(key, base) for key in CHANGES}
        ordered = {k for k, v in kinds.items() if v is not None and v[0] is Kind.SEQUENCED}
        for pair in itertools.combinations(CHANGES, 2):
            if ALL or set(pair) <= ordered or RETIRE in pair:
                chosen.append((base, *pair))
    return chosen


def renderable(config: dict[str, Any], folder: Path) -> dict[str, Any]:
    """`config` as the program can run it: the kubeconfig the change gives reaches the stack's own
    cluster (program/cluster_identity.py refuses any other), and the applications file it names
    exists, empty, beside the program's working folder (settings/loader.py)."""
    if "kiam:kubeconfig" in config:
        name = config["kiam:cluster"]["name"]
        region = config["kiam:cluster"]["region"]
        cluster = {
            "server": mock_cluster_endpoint(name, region),
            "certificate-authority-data": mock_cluster_authority(name),
        }
        config = config | {
            "kiam:kubeconfig": yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [{"name": "eks", "cluster": cluster}],
                    "contexts": [{"name": "ops", "context": {"cluster": "eks", "user": "ops"}}],
                    "users": [{"name": "ops", "user": {"token": "t"}}],
                    "current-context": "ops",
                }
            )
        }
    if "kiam:applicationsFile" in config:
        listed = folder / config["kiam:applicationsFile"]
        listed.parent.mkdir(parents=True, exist_ok=True)
        listed.write_text("applications: {}\n")
    return config


@pytest.mark.parametrize(("base", "first", "second"), pairs())
def test_a_pair_allowed_alone_is_refused_together_or_keeps_guarantee_16(
    base: str, first: str, second: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    before = pair_base(base, (first, second))
    alone = [changed(before, base, (key,)) for key in (first, second)]
    together = changed(before, base, (first, second))
    together = None if together is None else renderable(together, tmp_path)
    if together is None or any(a is None for a in alone):
        return  # a change that does not apply to this stack: no pair here
    try:
        settings_of(together)
    except Exception:
        return  # the two do not fit together: the loader refuses the stack file
    if not all(allowed(before, a) for a in alone if a is not None):
        return  # refused alone: the table's own tests hold it
    if not allowed(before, together):
        return  # refused together, before anything is registered
    first_run = install(before)
    run = run_main(together, stack="test", last_run=first_run)
    assert _change_violations(run, together, read_installed(first_run.stack_outputs)) == []


def test_the_pairs_the_program_orders_are_all_here() -> None:
    """The sequenced changes are the ones the table says, so the pairs above hold each."""
    ordered = {
        key for key in CHANGES if (r := judged(key, "dev")) is not None and r[0] is Kind.SEQUENCED
    }
    assert ordered == {
        "kiam:cluster.clusterDomain",
        "kiam:server.serviceName",
        "kiam:namespace.create",
        "kiam:retire",
    }

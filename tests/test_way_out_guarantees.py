"""The real program, through the mock engine, in every `servedBy` state and retired: every
guarantee holds (the checks themselves are tested on hand-built breakages in test_invariants.py;
this holds the program to them in each state of the way out)."""

from __future__ import annotations

from typing import Any

import pytest

from kiam_eks.invariants import check_all
from kiam_eks.invariants.recorded import resources_from_recording
from tests.conftest import base_config, expected_of, run_program
from tools.mock_engine import run_main

STATES = ["kiam", "kiam+podIdentity", "podIdentity", "kiam+irsa", "irsa"]


def config(state: str, *, manage: bool, retire: bool = False) -> dict[str, Any]:
    billing: dict[str, Any] = {"namespace": "billing", "roleName": "billing-api"}
    if state != "kiam":
        billing |= {"servedBy": state, "serviceAccount": "api"}
    extra: dict[str, Any] = {"retire": True} if retire else {}
    return base_config(
        applications={"billing": billing, "ledger": {"namespace": "billing", "roleName": "ledger"}}
        if not retire
        else {"billing": billing},
        podIdentityAgent={"manageAddon": manage},
        **extra,
    )


@pytest.mark.parametrize("manage", [False, True], ids=["addon-checked", "addon-managed"])
@pytest.mark.parametrize("state", STATES)
def test_every_state_keeps_every_guarantee(state: str, manage: bool) -> None:
    cfg = config(state, manage=manage)
    run = run_program(cfg)
    assert check_all(resources_from_recording(run), expected_of(cfg)) == []


@pytest.mark.parametrize("state", ["podIdentity", "irsa"])
def test_a_retiring_stack_keeps_every_guarantee(state: str) -> None:
    installed = run_program(config(state, manage=True))
    cfg = config(state, manage=True, retire=True)
    # The retiring up: the stack's last outputs are the install's (serverAddress among them).
    run = run_main(cfg, stack="test", last_outputs=installed.stack_outputs)
    resources = resources_from_recording(run)
    assert any(r.type == "kubernetes:apps/v1:DaemonSetPatch" for r in resources)
    assert check_all(resources, expected_of(cfg)) == []


@pytest.mark.parametrize("state", ["podIdentity", "irsa"])
def test_a_retired_stack_keeps_every_guarantee(state: str) -> None:
    cfg = config(state, manage=True, retire=True)
    run = run_main(cfg, stack="test", last_outputs={"applications": {}})
    resources = resources_from_recording(run)
    assert not any(r.type == "kubernetes:apps/v1:DaemonSetPatch" for r in resources)
    assert check_all(resources, expected_of(cfg)) == []

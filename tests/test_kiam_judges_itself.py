"""`Kiam` judges its own change in any program: it records what each update installed (its output
`installed`) and, before it registers anything, judges the next change from that record with the
table this repository's program uses (components/last_update.py `judged_change`), so a program
of your own is refused, or sequenced, as the program is."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any, cast

import pulumi
import pytest

from kiam_eks import Kiam, KiamArgs
from kiam_eks.contracts import tokens
from kiam_eks.settings.installed import OUTPUT, installed_by
from kiam_eks.settings.public_args import kiam_settings
from kiam_eks.settings.transitions import RefusedChangeError, judge
from tests.test_kiam_args import ARGS
from tools.mock_engine import MockEngine, Recording


def run(args: dict[str, Any], last: Recording | None = None) -> tuple[Recording, list[Exception]]:
    """`Kiam` from a program of its own, after the update `last` (None: a new stack); what it
    registered, and the refusal it raised, if any."""
    refused: list[Exception] = []

    def program() -> None:
        try:
            Kiam("kiam", cast(KiamArgs, args))
        except RefusedChangeError as error:
            refused.append(error)

    return MockEngine(last_run=last).run(program), refused


def record_of(recording: Recording) -> Any:
    return recording.component_outputs[recording.one(tokens.KIAM).urn][OUTPUT]


@pytest.fixture(scope="module")
def first() -> Recording:
    recording, refused = run(ARGS)
    assert refused == []
    return recording


def test_each_update_records_the_facts_it_installed(first: Recording) -> None:
    assert record_of(first) == installed_by(kiam_settings("Kiam", ARGS), None).to_output()
    # The agents' port, which every node's DNAT rule names: what the next change is judged by.
    assert record_of(first)["agents"]["port"] == 8181


def test_a_change_that_would_strand_the_agents_rule_is_refused_before_anything_registers(
    first: Recording,
) -> None:
    changed = {**ARGS, "agent": {"port": 8182}}
    recording, refused = run(changed, first)
    assert recording.registrations == []
    # The program's judge, on the same facts, says exactly this.
    previous = installed_by(kiam_settings("Kiam", ARGS), None)
    with pytest.raises(RefusedChangeError) as program:
        judge(kiam_settings("Kiam", changed), previous, {}, "Kiam 'kiam'")
    assert [str(e) for e in refused] == [str(program.value)]
    assert "kiam:agent.port" in str(refused[0])


def test_a_namespace_the_stack_created_is_released_not_deleted(first: Recording) -> None:
    recording, refused = run({**ARGS, "namespace": {"create": False}}, first)
    assert refused == []
    namespace = recording.one(tokens.NAMESPACE, "kiam-namespace")
    assert namespace.retain_on_delete is True
    assert record_of(recording)["namespace"] == {"name": "kiam", "owner": "released"}
    # And the update after it forgets the namespace, which stays in the cluster.
    after, _ = run({**ARGS, "namespace": {"create": False}}, recording)
    assert after.by_type(tokens.NAMESPACE) == []


def test_a_component_without_a_record_is_applied_as_it_was_with_a_warning(
    first: Recording, caplog: pytest.LogCaptureFixture
) -> None:
    """Installed by 0.1.0, which recorded nothing: composed as that version composed every
    update, and recorded for the next."""
    unrecorded = replace(first, component_outputs={})
    with caplog.at_level(logging.WARNING):
        recording, refused = run({**ARGS, "agent": {"port": 8182}}, unrecorded)
    assert refused == []
    assert record_of(recording)["agents"]["port"] == 8182
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
        "Kiam 'kiam': its last update recorded nothing of what it installed (the output "
        "'installed', written from version 0.2.0 on), so this change is not judged against it: "
        "it is applied as a first install would be, and recorded for the next"
    ]


def test_a_record_that_cannot_be_read_changes_nothing(first: Recording) -> None:
    urn = first.one(tokens.KIAM).urn
    torn = replace(first, component_outputs={urn: {OUTPUT: {"namespace": "kiam"}}})
    recording, refused = run(ARGS, torn)
    assert recording.registrations == []
    assert len(refused) == 1
    assert str(refused[0]).startswith(
        "Kiam 'kiam': refused: this change from what the stack's last update installed would "
        "take credentials away (1 problem):\n  - the output 'installed' of kiam:index:Kiam "
        "'kiam' cannot be read: "
    )
    assert str(refused[0]).endswith("the change cannot be judged, so nothing is changed")


def test_added_to_a_program_that_ran_before_it_is_a_first_install(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The program's own outputs (here two of the names this repository's program once
    exported) are not read as a kiam install: only the component's record is."""

    def before() -> None:
        pulumi.export("namespace", "team-a")
        pulumi.export("applications", {})

    earlier = MockEngine().run(before)
    with caplog.at_level(logging.WARNING):
        recording, refused = run(ARGS, earlier)
    assert refused == []
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert record_of(recording) == installed_by(kiam_settings("Kiam", ARGS), None).to_output()
    assert recording.one(tokens.NAMESPACE, "kiam-namespace").retain_on_delete is False

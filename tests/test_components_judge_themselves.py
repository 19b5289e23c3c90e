"""`Kiam` and `KiamKubernetes` judge their own change in any program: each records what its
update installed (its output `installed`) and, before it registers anything, judges the next
change from that record with the table this repository's program uses
(components/last_update.py), so a program of your own is refused, or sequenced, as the program
is."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, cast

import pulumi
import pytest

from kiam_eks import Kiam, KiamArgs, KiamKubernetes, KiamKubernetesArgs
from kiam_eks.components.pod_identity import (
    agent_installed_elsewhere_message,
    agent_missing_message,
)
from kiam_eks.components.public_args import kiam_settings, kubernetes_side
from kiam_eks.contracts import tokens
from kiam_eks.contracts.pod_identity import AGENT_ADDON
from kiam_eks.transitions.installed import OUTPUT, installed_by, kubernetes_side_installed
from kiam_eks.transitions.judge import judge
from kiam_eks.transitions.verdicts import RefusedChangeError
from tests.test_kiam_args import ARGS
from tests.test_kiam_kubernetes import ARGS as SIDE_ARGS
from tools.mock_engine import MockEngine, Recording


def run_after(
    component: Callable[[str, Any], Any], args: Mapping[str, Any], last: Recording | None
) -> tuple[Recording, list[Exception]]:
    """`component` from a program of its own, after the update `last` (None: a new stack); what
    it registered, and the refusal it raised, if any."""
    refused: list[Exception] = []

    def program() -> None:
        try:
            component("kiam", args)
        except RefusedChangeError as error:
            refused.append(error)

    return MockEngine(last_run=last).run(program), refused


def run(
    args: Mapping[str, Any], last: Recording | None = None
) -> tuple[Recording, list[Exception]]:
    return run_after(lambda name, a: Kiam(name, cast(KiamArgs, a)), args, last)


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


# --- KiamKubernetes ------------------------------------------------------------------------------


def run_side(
    args: Mapping[str, Any], last: Recording | None = None
) -> tuple[Recording, list[Exception]]:
    return run_after(lambda name, a: KiamKubernetes(name, cast(KiamKubernetesArgs, a)), args, last)


def side_record(recording: Recording) -> Any:
    return recording.component_outputs[recording.one(tokens.KIAM_KUBERNETES).urn][OUTPUT]


@pytest.fixture(scope="module")
def side() -> Recording:
    recording, refused = run_side(SIDE_ARGS)
    assert refused == []
    return recording


def test_kiam_kubernetes_records_its_kubernetes_side(side: Recording) -> None:
    settings = kubernetes_side("KiamKubernetes", SIDE_ARGS).settings
    assert side_record(side) == kubernetes_side_installed(settings, None).to_output()
    assert side_record(side)["agents"]["port"] == 8181
    assert side_record(side)["namespace"] == {"name": "kiam", "owner": "stack"}


def test_kiam_kubernetes_refuses_an_agent_port_change_as_kiam_does(
    side: Recording, first: Recording
) -> None:
    recording, refused = run_side({**SIDE_ARGS, "agent": {"port": 8182}}, side)
    assert recording.registrations == []
    _, whole = run({**ARGS, "agent": {"port": 8182}}, first)
    # The same judge and the same words; only the component's name differs.
    assert [str(e).replace("KiamKubernetes 'kiam'", "Kiam 'kiam'") for e in refused] == [
        str(e) for e in whole
    ]


def test_kiam_kubernetes_releases_the_namespace_it_created(side: Recording) -> None:
    released, refused = run_side({**SIDE_ARGS, "namespace": {"create": False}}, side)
    assert refused == []
    assert released.one(tokens.NAMESPACE, "kiam-namespace").retain_on_delete is True
    assert side_record(released)["namespace"] == {"name": "kiam", "owner": "released"}
    forgotten, _ = run_side({**SIDE_ARGS, "namespace": {"create": False}}, released)
    assert forgotten.by_type(tokens.NAMESPACE) == []
    assert side_record(forgotten)["namespace"] == {"name": "kiam", "owner": "existing"}


def test_kiam_kubernetes_refuses_to_move_the_address_agents_dial(side: Recording) -> None:
    """`Kiam` sequences it, naming both addresses in the certificate it issues; the given
    certificates cannot be re-issued here."""
    recording, refused = run_side({**SIDE_ARGS, "server": {"service_name": "kiam-grpc"}}, side)
    assert recording.registrations == []
    assert [str(e) for e in refused] == [
        "KiamKubernetes 'kiam': refused: this change from what the stack's last update "
        "installed would take credentials away (1 problem):\n"
        "  - kiam:server.serviceName: the running agents dial "
        "kiam-server.kiam.svc.cluster.local:9610 until each is rolled, and the servers must "
        "meanwhile present a certificate naming both that and the new address, which "
        "KiamKubernetes cannot issue: it serves the certificates it is given. Keep "
        "kiam-server.kiam.svc.cluster.local"
    ]


def test_kiam_kubernetes_without_a_record_is_applied_as_before_with_a_warning(
    side: Recording, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        recording, refused = run_side(
            {**SIDE_ARGS, "agent": {"port": 8182}}, replace(side, component_outputs={})
        )
    assert refused == []
    assert side_record(recording)["agents"]["port"] == 8182
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
        "KiamKubernetes 'kiam': its last update recorded nothing of what it installed (the "
        "output 'installed', written from version 0.2.0 on), so this change is not judged "
        "against it: it is applied as a first install would be, and recorded for the next"
    ]


def test_two_components_of_one_name_cannot_be_judged(first: Recording) -> None:
    """Matched by type and name: two `Kiam` named alike under different parents would make
    either record the other's, so the change is refused rather than judged from the wrong one."""
    urn = first.one(tokens.KIAM).urn
    twin = urn.replace("$kiam:index:Kiam::", "$my:index:Platform$kiam:index:Kiam::")
    both = replace(
        first,
        registrations=[*first.registrations, replace(first.one(tokens.KIAM), urn=twin)],
    )
    recording, refused = run(ARGS, both)
    assert recording.registrations == []
    assert len(refused) == 1
    assert "the stack holds 2 kiam:index:Kiam components named 'kiam'" in str(refused[0])
    assert str(refused[0]).endswith("the change cannot be judged, so nothing is changed")


# --- the Pod Identity agent add-on, checked by the component itself --------------------------------

POD_IDENTITY_APP = {
    "billing": {
        "namespace": "billing",
        "roleName": "billing-api",
        "servedBy": "kiam+podIdentity",
        "serviceAccount": "api",
    }
}


def run_on(cluster_addons: tuple[str, ...], **changes: Any) -> list[Exception]:
    """`Kiam` with billing served by Pod Identity, in a program of its own, on a cluster running
    `cluster_addons`: the refusal it stopped with, if any."""
    failed: list[Exception] = []

    def program() -> None:
        aws = pulumi.ProviderResource("aws", "aws-explicit")
        try:
            Kiam(
                "kiam",
                cast(KiamArgs, {**ARGS, "applications": POD_IDENTITY_APP, **changes}),
                pulumi.ResourceOptions(providers=[aws]),
            )
        except pulumi.RunError as error:
            failed.append(error)

    MockEngine(cluster_addons=cluster_addons).run(program)
    return failed


def test_an_agent_add_on_it_would_create_that_the_cluster_runs_already_is_refused() -> None:
    refused = run_on((AGENT_ADDON,), pod_identity_agent={"manageAddon": True})
    assert [str(e) for e in refused] == [
        agent_installed_elsewhere_message("payments-eks", "v1.3.4-eksbuild.1")
    ]
    assert run_on((), pod_identity_agent={"manageAddon": True}) == []


def test_an_agent_add_on_left_to_others_must_be_on_the_cluster() -> None:
    refused = run_on(())
    assert len(refused) == 1
    assert str(refused[0]).startswith(
        agent_missing_message("payments-eks", {"billing": "kiam+podIdentity"}, "")[:80]
    )
    assert run_on((AGENT_ADDON,)) == []

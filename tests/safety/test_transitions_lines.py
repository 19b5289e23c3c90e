"""transitions/ (the change judge): what the mutants the other tests let live would change."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any, cast

import pytest

from kiam_eks.contracts import names, tokens
from kiam_eks.contracts.iam import role_arn_parts
from kiam_eks.contracts.tokens import DAEMON_SET_PATCH
from kiam_eks.settings.agent import TolerationSettings
from kiam_eks.transitions.installed import Installed, InstalledNamespace, installed_by
from kiam_eks.transitions.judge import (
    Transition,
    _previous_server_names,
    _retirement_patch_left,
    agents_lost,
    first_update,
    judge,
    namespace_mode,
)
from kiam_eks.transitions.judges import covers, describe, s_path
from kiam_eks.transitions.verdicts import Kind, RefusedChangeError, Row, Verdict, changed_settings
from tests.conftest import base_config, run_component
from tests.test_transitions import SOURCE, migration_config, settings_of

LEGACY = "^arn:aws:iam::.*:role/legacy-.*$"


def permitted_config() -> dict[str, Any]:
    """billing served by kiam, in a namespace whose found annotation the stack holds; `archive`
    (sorted first) found annotated too, with no application of the stack: given back."""
    return base_config(
        applications={
            "billing": {"namespace": "billing", "roleName": "billing-api", "servedBy": "kiam"}
        },
        existingPermitted={"archive": "^arn:aws:iam::.*:role/archive-.*$", "billing": LEGACY},
    )


def refusals(after: dict[str, Any], before: dict[str, Any]) -> list[str]:
    with pytest.raises(RefusedChangeError) as refusal:
        judge(settings_of(after), installed_by(settings_of(before), None), {}, SOURCE)
    return list(refusal.value.problems)


def test_a_held_found_annotation_is_kept_after_one_given_back() -> None:
    before = permitted_config()
    facts = installed_by(settings_of(before), None).existing_permitted
    assert [(ns, p.holding) for ns, p in facts.items()] == [("archive", False), ("billing", True)]
    changed = copy.deepcopy(before)
    changed["kiam:existingPermitted"]["billing"] = "^arn:aws:iam::.*:role/.*$"
    give_back = (
        "give the value back first: remove the stack's applications from billing (keep "
        "kiam:existingPermitted.billing) and `pulumi up`, then change it"
    )
    assert refusals(changed, before) == [
        "kiam:existingPermitted.billing: the stack holds billing's annotation as the union of the "
        f"value it found, {LEGACY!r}, and its own roles; '^arn:aws:iam::.*:role/.*$' would drop "
        "what the found value admits while the stack holds it: " + give_back
    ]
    dropped = copy.deepcopy(before)
    del dropped["kiam:existingPermitted"]["billing"]
    assert refusals(dropped, before) == [
        "kiam:existingPermitted.billing: the stack holds billing's iam.amazonaws.com/permitted "
        f"(the value it found, {LEGACY!r}, with its own roles); dropping the entry would take the "
        "found value's roles from billing's pods at once: " + give_back
    ]
    # The one given back may change or go.
    archive = copy.deepcopy(before)
    del archive["kiam:existingPermitted"]["archive"]
    verdicts = judge(settings_of(archive), installed_by(settings_of(before), None), {}, SOURCE)
    assert [v.kind.value for v in verdicts.verdicts] == []


@pytest.mark.parametrize(
    ("toleration", "described"),
    [
        ({"operator": "Exists"}, "every taint"),
        ({"operator": "Exists", "effect": "NoExecute"}, "every taint:NoExecute"),
        ({"key": "gpu", "operator": "Exists"}, "gpu (any value)"),
        ({"key": "pool", "value": "batch", "effect": "NoSchedule"}, "pool=batch:NoSchedule"),
        ({"key": "pool"}, "pool="),
    ],
)
def test_a_toleration_is_named_as_kubernetes_matches_it(
    toleration: dict[str, Any], described: str
) -> None:
    assert describe(TolerationSettings.model_validate(toleration)) == described


def test_a_kiam_used_as_a_component_without_a_last_update_has_nothing_to_roll() -> None:
    """`Kiam` built by a program of its own, with no transition: its first update, so a
    retirement has no running agents to roll and registers no patch."""
    from kiam_eks.components.kiam import Kiam, KiamArgs
    from kiam_eks.components.public_args import arguments_of
    from kiam_eks.settings.loader import settings_from_values

    values = {k.removeprefix("kiam:"): v for k, v in base_config().items()}
    settings = settings_from_values({**values, "retire": True}, "test")

    def retired() -> None:
        Kiam("kiam", cast(KiamArgs, arguments_of(settings)))

    rec = run_component(retired)
    assert rec.by_type(tokens.AGENT_RETIREMENT)
    assert rec.by_type(tokens.DAEMON_SET_PATCH) == []


# --- the judges, one condition at a time ----------------------------------------------------------

MOVE = (
    "To move: add the new one as another application, move the pods to it (recreate them), and "
    "remove kiam:applications.billing once none runs on the old one"
)


def judged(after: dict[str, Any], previous: Installed) -> Transition:
    return judge(settings_of(after), previous, {}, SOURCE)


def verdicts(after: dict[str, Any], before: dict[str, Any]) -> list[tuple[str, str]]:
    """(setting, kind) of every change judged from `before` to `after` (none refused)."""
    transition = judged(after, installed_by(settings_of(before), None))
    return [(v.setting, v.kind.value) for v in transition.verdicts]


def keys(problems: list[str]) -> list[str]:
    return [p.split(": ", 1)[0] for p in problems]


def installed(config: dict[str, Any], **facts: Any) -> Installed:
    return installed_by(settings_of(config), None).model_copy(update=facts)


def billing(served_by: str, service_account: str | None = None, **more: str) -> dict[str, Any]:
    app = {"namespace": "billing", "roleName": "billing-api", "servedBy": served_by, **more}
    if service_account is not None:
        app["serviceAccount"] = service_account
    return base_config(applications={"billing": app})


def test_verdicts_rows_and_transitions_are_values() -> None:
    verdict = Verdict("kiam:retire", Kind.SAFE, "x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        verdict.message = "y"  # type: ignore[misc]
    row = Row("kiam:x.*", (Kind.SAFE,), "what")
    with pytest.raises(dataclasses.FrozenInstanceError):
        row.what = "else"  # type: ignore[misc]
    transition = first_update(settings_of(base_config()))
    with pytest.raises(dataclasses.FrozenInstanceError):
        transition.restore_agents = True  # type: ignore[misc]


def test_a_prefix_row_covers_only_the_keys_below_it() -> None:
    row = Row("kiam:applications.*", (Kind.REFUSED,), "what")
    assert row.covers("kiam:applications.billing")
    assert not row.covers("kiam:applicationsX")
    assert not row.covers("kiam:applications")


def test_a_refusal_counts_its_problems() -> None:
    assert str(RefusedChangeError("Pulumi.a.yaml", ["one"])) == (
        "Pulumi.a.yaml: refused: this change from what the stack's last update installed would "
        "take credentials away (1 problem):\n  - one"
    )
    assert str(RefusedChangeError("Pulumi.a.yaml", ["one", "two"])).endswith(
        "(2 problems):\n  - one\n  - two"
    )


def test_a_first_update_keeps_and_arranges_nothing() -> None:
    settings = settings_of(base_config())
    transition = first_update(settings)
    assert transition == Transition(
        previous=None,
        verdicts=(),
        namespace="create",
        previous_server_names=(),
        roll_agents_before_retiring=False,
        restore_agents=False,
    )
    assert transition.installed is None
    later = judged(base_config(), installed(base_config()))
    assert later.installed is later.previous


def test_a_retirement_registers_no_namespace_to_create() -> None:
    assert namespace_mode(settings_of(base_config()), None) == "create"
    assert namespace_mode(settings_of(base_config(retire=True)), None) == "use"


def test_a_cluster_change_asks_for_a_retirement_only_while_kiam_runs() -> None:
    other = base_config(cluster={"name": "other"})
    hint = "retire kiam there first (kiam:retire: true, one `pulumi up`), then "
    [running] = refusals(other, base_config())
    assert f"to leave it, {hint}give other a stack of its own" in running
    with pytest.raises(RefusedChangeError) as refusal:
        judged(other, installed(base_config(), retired=True))
    [retired] = refusal.value.problems
    assert retired.endswith("to leave it, give other a stack of its own")


def test_a_found_namespace_may_be_set_to_create_only_by_a_retirement() -> None:
    found = base_config(namespace={"create": False})
    assert keys(refusals(base_config(namespace={"create": True}), found)) == [
        "kiam:namespace.create"
    ]
    retiring = base_config(namespace={"create": True}, retire=True)
    assert verdicts(retiring, found) == [("kiam:retire", "sequenced")]


def test_the_server_port_is_judged_only_while_servers_run_where_the_agents_dial() -> None:
    port = base_config(server={"grpcPort": 443})
    assert judged(port, installed(base_config(), retired=True)).verdicts == (
        Verdict("kiam:retire", Kind.SAFE, "kiam is installed again, as on a new cluster"),
    )
    assert verdicts(base_config(server={"grpcPort": 443}, retire=True), base_config()) == [
        ("kiam:retire", "sequenced")
    ]
    moved = base_config(server={"grpcPort": 443}, namespace={"name": "kiam2"})
    assert keys(refusals(moved, base_config())) == ["kiam:namespace.name"]


@pytest.mark.parametrize(
    ("change", "key", "new"),
    [
        ({"server": {"serviceName": "kiam-srv"}}, "kiam:server.serviceName", "kiam-srv.kiam.svc.cluster.local:9610"),
        ({"cluster": {"clusterDomain": "example.local"}}, "kiam:cluster.clusterDomain", "kiam-server.kiam.svc.example.local:9610"),
    ],
)  # fmt: skip
def test_a_server_address_change_keeps_the_old_name_while_agents_move(
    change: dict[str, Any], key: str, new: str
) -> None:
    [verdict] = judged(base_config(**change), installed(base_config())).verdicts
    assert verdict == Verdict(
        key,
        Kind.SEQUENCED,
        "the running agents dial kiam-server.kiam.svc.cluster.local:9610 until each is rolled: "
        "this update's server certificate names kiam-server.kiam.svc.cluster.local too, the "
        f"servers restart onto it before the agents move to {new}, and the old name's Service "
        "stays until the end of the update; the next `pulumi up` re-issues the certificate "
        "without the old names",
    )


def test_an_adoption_block_is_refused_on_a_stack_that_installed_kiam_but_not_on_a_legacy_one() -> (
    None
):
    servers = migration_config("servers")
    without = {k: v for k, v in servers.items() if k != "kiam:adoption"}
    with pytest.raises(RefusedChangeError) as refusal:
        judged(servers, installed(without))
    assert keys(refusal.value.problems) == ["kiam:adoption"]
    assert judged(servers, installed(without, legacy=True)).verdicts == ()


def test_an_adoption_two_phases_back_is_refused() -> None:
    assert refusals(migration_config("servers"), migration_config("complete")) == [
        "kiam:adoption.phase: complete back to servers would delete the agent DaemonSet the "
        "stack owns since complete (no longer kept on delete) without removing its iptables "
        "rule: one phase at a time, takeover first (docs/migration.md, Phase 3)"
    ]


def test_role_arns_split_into_path_and_name() -> None:
    assert s_path("arn:aws:iam::111122223333:role/kiam-apps/") == "/kiam-apps/"
    parts = role_arn_parts("arn:aws:iam::111122223333:role/kiam-apps/team/billing-api")
    assert (parts.path, parts.name) == ("/kiam-apps/team/", "billing-api")


def test_an_application_removed_does_not_hide_the_next_ones_change() -> None:
    before = base_config(
        applications={
            "alpha": {"namespace": "alpha", "roleName": "alpha-api", "servedBy": "kiam"},
            "billing": {"namespace": "billing", "roleName": "billing-api", "servedBy": "kiam"},
        }
    )
    after = billing("kiam", roleName="billing-new")
    assert keys(refusals(after, before)) == ["kiam:applications.billing.roleName"]


@pytest.mark.parametrize(
    ("after", "key", "new_arn"),
    [
        (billing("kiam", roleName="billing-new"), "kiam:applications.billing.roleName", "arn:aws:iam::111122223333:role/kiam-apps/billing-new"),
        (billing("kiam", path="/kiam-apps/team/"), "kiam:applications.billing.path", "arn:aws:iam::111122223333:role/kiam-apps/team/billing-api"),
    ],
)  # fmt: skip
def test_a_role_change_names_what_changed(after: dict[str, Any], key: str, new_arn: str) -> None:
    assert refusals(after, billing("kiam")) == [
        f"{key}: its role is arn:aws:iam::111122223333:role/kiam-apps/billing-api (the stack's "
        f"last update), and {new_arn} is another role: the old one would be deleted at the end "
        "of this update while pods still hold its credentials (for up to the session's length). "
        + MOVE
    ]


def test_a_role_in_another_account_is_the_application_as_a_whole() -> None:
    after = billing("kiam")
    after["kiam:cluster"]["accountId"] = "444455556666"
    assert keys(refusals(after, billing("kiam"))) == [
        "kiam:cluster.accountId",
        "kiam:iam.applicationRolePath",
        "kiam:applications.billing",
    ]


def test_served_by_one_step_is_not_refused_and_longer_ones_name_how_many() -> None:
    assert verdicts(billing("kiam+podIdentity", "api"), billing("kiam")) == []
    skips = (
        ": pods created in one state keep what it wired into them, and lose their credentials "
        "when the next state drops it. One step at a time, each a `pulumi up` (recreate the pods "
        "after each): "
    )
    assert refusals(billing("podIdentity", "api"), billing("kiam")) == [
        "kiam:applications.billing.servedBy: kiam to podIdentity skips a step"
        + skips
        + "kiam -> kiam+podIdentity -> podIdentity (docs/leaving-kiam.md)"
    ]
    assert refusals(billing("irsa", "api"), billing("kiam+podIdentity", "api")) == [
        "kiam:applications.billing.servedBy: kiam+podIdentity to irsa skips steps"
        + skips
        + "kiam+podIdentity -> kiam -> kiam+irsa -> irsa (docs/leaving-kiam.md)"
    ]


def test_only_a_retirement_of_running_agents_rolls_them() -> None:
    assert judged(base_config(), installed(base_config())).roll_agents_before_retiring is False
    assert judged(base_config(retire=True), installed(base_config())).roll_agents_before_retiring


def test_only_the_retirement_patch_is_a_retirement_left_behind() -> None:
    urn = "urn:pulumi:test::kiam::kiam:index:Kiam$kubernetes:apps/v1:DaemonSetPatch::"
    assert _retirement_patch_left({urn + names.RETIREMENT_PATCH: DAEMON_SET_PATCH})
    assert not _retirement_patch_left({urn + "another-patch": DAEMON_SET_PATCH})
    assert not _retirement_patch_left(
        {urn + names.RETIREMENT_PATCH: "kubernetes:apps/v1:DaemonSet"}
    )


def test_the_old_server_names_are_kept_only_while_kiam_runs_on() -> None:
    renamed = settings_of(base_config(server={"serviceName": "kiam-srv"}))
    assert _previous_server_names(installed(base_config()), renamed) == (
        "kiam-server",
        "kiam-server.kiam",
        "kiam-server.kiam.svc",
        "kiam-server.kiam.svc.cluster.local",
    )
    assert _previous_server_names(installed(base_config(), retired=True), renamed) == ()
    retiring = settings_of(base_config(server={"serviceName": "kiam-srv"}, retire=True))
    assert _previous_server_names(installed(base_config()), retiring) == ()


def test_changed_settings_are_those_of_the_kind_asked() -> None:
    judged_ = [
        Verdict("kiam:a", Kind.SAFE, "x"),
        Verdict("kiam:b", Kind.SEQUENCED, "y"),
        Verdict("kiam:c", Kind.SAFE, "z"),
    ]
    assert changed_settings(judged_, Kind.SAFE) == ["kiam:a", "kiam:c"]
    assert changed_settings(judged_, Kind.SEQUENCED) == ["kiam:b"]


def toleration(**values: str) -> TolerationSettings:
    return TolerationSettings.model_validate(values)


@pytest.mark.parametrize(
    ("new", "old", "expected"),
    [
        ({"operator": "Exists"}, {"key": "pool", "value": "a", "effect": "NoSchedule"}, True),
        ({"operator": "Exists", "effect": "NoExecute"}, {"key": "pool", "effect": "NoSchedule"}, False),
        ({"key": "pool", "operator": "Exists"}, {"key": "pool", "value": "a"}, True),
        ({"key": "gpu", "operator": "Exists"}, {"key": "pool", "value": "a"}, False),
        ({"key": "pool", "value": "a"}, {"key": "pool", "value": "a"}, True),
        ({"key": "pool", "value": "a"}, {"key": "pool", "value": "b"}, False),
        ({"key": "pool", "value": "a"}, {"key": "pool", "operator": "Exists"}, False),
        ({"key": "pool"}, {"key": "pool"}, True),
        ({"key": "pool"}, {"key": "pool", "value": "a"}, False),
    ],
)  # fmt: skip
def test_a_toleration_covers_what_kubernetes_would_match(
    new: dict[str, str], old: dict[str, str], expected: bool
) -> None:
    assert covers(toleration(**new), toleration(**old)) is expected


def test_agents_are_lost_when_the_stack_stops_owning_them_or_tolerates_less() -> None:
    tolerating = base_config(agent={"tolerations": [{"key": "pool", "operator": "Exists"}]})
    agents = installed(tolerating).agents
    assert agents is not None
    assert agents_lost(None, settings_of(base_config(retire=True))) is False
    assert agents_lost(agents, settings_of(tolerating)) is False
    assert agents_lost(agents, settings_of({**tolerating, "kiam:retire": True})) is True
    assert agents_lost(agents, settings_of(migration_config("servers"))) is True
    assert agents_lost(agents, settings_of(base_config())) is True


def test_a_namespace_of_a_retired_kiam_may_change() -> None:
    moved = base_config(namespace={"name": "kiam2"})
    assert judged(moved, installed(base_config(), retired=True)).verdicts == (
        Verdict("kiam:retire", Kind.SAFE, "kiam is installed again, as on a new cluster"),
    )


def test_a_released_namespace_is_forgotten_by_the_next_update() -> None:
    released = installed(base_config(), namespace=InstalledNamespace(name="kiam", owner="released"))
    [verdict] = judged(base_config(namespace={"create": False}), released).verdicts
    assert verdict == Verdict(
        "kiam:namespace.create",
        Kind.SEQUENCED,
        "the stack forgets namespace kiam, released by its last update, without deleting it",
    )

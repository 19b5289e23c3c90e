"""settings/transitions.py: what the mutants the other tests let live would change."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kiam_eks.contracts import tokens
from kiam_eks.settings.agent import TolerationSettings
from kiam_eks.settings.installed import installed_by
from kiam_eks.settings.transitions import RefusedChangeError, describe, judge
from tests.conftest import base_config, run_component
from tests.test_transitions import SOURCE, settings_of

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
    from kiam_eks.program.aws_cloud import AwsCloud
    from kiam_eks.settings.loader import settings_from_values

    values = {k.removeprefix("kiam:"): v for k, v in base_config().items()}
    settings = settings_from_values({**values, "retire": True}, "test")

    def retired() -> None:
        Kiam("kiam", KiamArgs(settings=settings, cloud=AwsCloud(settings, oidc_issuer=None)))

    rec = run_component(retired)
    assert rec.by_type(tokens.AGENT_RETIREMENT)
    assert rec.by_type(tokens.DAEMON_SET_PATCH) == []

"""The CrossGuard pack: its callbacks, fed resources the way the policy SDK hands them over.

`policy/__main__.py` is never imported: constructing a PolicyPack starts a server and blocks.
"""

from __future__ import annotations

import copy
from typing import Any

from pulumi_policy import (
    PolicyResource,
    PolicyResourceOptions,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.policy import PolicyCustomTimeouts
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE, unknown_checking_proxy

from invariants import CHECKS
from policy.kiam_policy import POLICIES
from tools.mock_engine import Recording


def policy_resources(rec: Recording, change: Any = None) -> list[PolicyResource]:
    by_urn: dict[str, PolicyResource] = {}
    custom = [r for r in rec.registrations if r.custom]
    for r in custom:
        props = copy.deepcopy(r.inputs)
        if change:
            change(r, props)
        opts = PolicyResourceOptions(
            protect=False,
            ignore_changes=[],
            delete_before_replace=r.delete_before_replace,
            aliases=[],
            custom_timeouts=PolicyCustomTimeouts(0, 0, 0),
            additional_secret_outputs=[],
        )
        by_urn[r.urn] = PolicyResource(
            r.type, unknown_checking_proxy(props), r.urn, r.name, opts, None, None, [], {}
        )
    for r in custom:
        resource = by_urn[r.urn]
        resource.dependencies = [by_urn[u] for u in r.dependencies if u in by_urn]
        resource.property_dependencies = {
            k: [by_urn[u] for u in v if u in by_urn] for k, v in r.property_dependencies.items()
        }
    return list(by_urn.values())


def run_pack(resources: list[PolicyResource]) -> list[tuple[str, str, str | None]]:
    reported: list[tuple[str, str, str | None]] = []
    for policy in POLICIES:
        assert isinstance(policy, StackValidationPolicy)
        policy.validate(
            StackValidationArgs(resources),
            lambda message, urn=None, policy=policy: reported.append((policy.name, message, urn)),
        )
    return reported


def test_one_mandatory_policy_per_invariant() -> None:
    assert [p.name for p in POLICIES] == [f"kiam-{check_id}" for check_id in CHECKS]
    assert {p.enforcement_level.value for p in POLICIES} == {"mandatory"}


def test_a_clean_stack_passes_every_policy(base_run: Recording) -> None:
    assert run_pack(policy_resources(base_run)) == []


def test_a_broken_stack_fails_the_matching_policy(base_run: Recording) -> None:
    def skip_await(reg: Any, props: dict[str, Any]) -> None:
        if reg.type == "kubernetes:apps/v1:Deployment":
            props["metadata"]["annotations"] = {"pulumi.com/skipAwait": "true"}

    deployment = base_run.one("kubernetes:apps/v1:Deployment")
    assert run_pack(policy_resources(base_run, skip_await)) == [
        (
            "kiam-node-group-replacement",
            "[node-group-replacement] skips the rollout wait (pulumi.com/skipAwait)",
            deployment.urn,
        )
    ]


def test_delete_before_replace_reaches_the_check_through_resource_options(
    base_run: Recording,
) -> None:
    resources = policy_resources(base_run)
    group = next(r for r in resources if r.resource_type == "aws:eks/nodeGroup:NodeGroup")
    group.opts.delete_before_replace = True
    assert run_pack(resources) == [
        (
            "kiam-node-group-replacement",
            "[node-group-replacement] is delete-before-replace: servers would lose their nodes first",
            group.urn,
        )
    ]


def test_values_unknown_at_preview_are_not_judged(base_run: Recording) -> None:
    def unknown_args(reg: Any, props: dict[str, Any]) -> None:
        if reg.type == "kubernetes:apps/v1:Deployment":
            props["spec"]["template"]["spec"]["containers"][0]["args"] = UNKNOWN_STRING_VALUE

    assert run_pack(policy_resources(base_run, unknown_args)) == []

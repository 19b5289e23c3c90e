"""The CrossGuard pack: its callbacks, fed resources the way the policy SDK hands them over.

`policy/__main__.py` is never imported: constructing a PolicyPack starts a server and blocks.
"""

from __future__ import annotations

import copy
import json
from types import SimpleNamespace
from typing import Any

import pulumi
import pytest
from pulumi_policy import (
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.policy import PolicyCustomTimeouts
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE, unknown_checking_proxy

from kiam_eks.invariants import CHECKS, Resource
from kiam_eks.invariants.per_resource import RESOURCE_LEVEL
from kiam_eks.invariants.recorded import resources_from_recording
from policy.kiam_policy import POLICIES
from tests import guarantee_views as g
from tests.conftest import base_config, run_program
from tools.mock_engine import Recording

STACK = "pulumi:pulumi:Stack"
BASE = base_config()


def _opts(delete_before_replace: bool = False, parent: str | None = None) -> PolicyResourceOptions:
    return PolicyResourceOptions(
        protect=False,
        ignore_changes=[],
        delete_before_replace=delete_before_replace,
        aliases=[],
        custom_timeouts=PolicyCustomTimeouts(0, 0, 0),
        additional_secret_outputs=[],
        parent=parent,
    )


def policy_resources(rec: Recording, change: Any = None) -> list[PolicyResource]:
    """The resources as the engine hands them to stack policies: the root stack (its props are
    the stack outputs) and every custom resource."""
    root = next(r.parent for r in rec.registrations if r.parent.split("::")[2] == STACK)
    outputs = copy.deepcopy(rec.stack_outputs)
    if change:
        change(SimpleNamespace(type=STACK, name=root.rsplit("::", 1)[1]), outputs)
    by_urn: dict[str, PolicyResource] = {
        root: PolicyResource(
            STACK,
            unknown_checking_proxy(outputs),
            root,
            root.rsplit("::", 1)[1],
            _opts(),
            None,
            None,
            [],
            {},
        )
    }
    custom = [r for r in rec.registrations if r.custom]
    for r in custom:
        props = copy.deepcopy(r.inputs)
        if change:
            change(r, props)
        by_urn[r.urn] = PolicyResource(
            r.type,
            unknown_checking_proxy(props),
            r.urn,
            r.name,
            # The engine hands each resource its parent's URN in its options.
            _opts(r.delete_before_replace, r.parent),
            None,
            None,
            [],
            {},
        )
    for r in custom:
        resource = by_urn[r.urn]
        resource.dependencies = [by_urn[u] for u in r.dependencies if u in by_urn]
        resource.property_dependencies = {
            k: [by_urn[u] for u in v if u in by_urn] for k, v in r.property_dependencies.items()
        }
    return list(by_urn.values())


def hand_over_config(config: dict[str, Any]) -> None:
    """As the engine starts the pack (`PULUMI_CONFIG`) and pulumi-policy loads it before each
    analysis: the stack's config in the Pulumi runtime, values as strings."""
    pulumi.runtime.set_all_config(
        {k: v if isinstance(v, str) else json.dumps(v) for k, v in config.items()}, []
    )


def run_pack(
    resources: list[PolicyResource], config: dict[str, Any] | None = None
) -> list[tuple[str, str, str | None]]:
    """As the engine runs the pack: each resource policy on each resource (before its step; a
    violation names the resource), then each stack policy on all of them, with the stack's
    config handed over (the base stack's unless told)."""
    hand_over_config(BASE if config is None else config)
    reported: list[tuple[str, str, str | None]] = []
    for policy in POLICIES:
        if isinstance(policy, ResourceValidationPolicy):
            for r in resources:
                args = ResourceValidationArgs(r.resource_type, r.props, r.urn, r.name, r.opts, None)
                policy.validate(
                    args,
                    lambda message, urn=None, policy=policy, r=r: reported.append(
                        (policy.name, message, urn or r.urn)
                    ),
                )
    for policy in POLICIES:
        if isinstance(policy, StackValidationPolicy):
            policy.validate(
                StackValidationArgs(resources),
                lambda message, urn=None, policy=policy: reported.append(
                    (policy.name, message, urn)
                ),
            )
    return reported


def test_a_mandatory_stack_policy_per_guarantee_and_a_resource_policy_per_part_one_resource_decides() -> (
    None
):
    assert [p.name for p in POLICIES] == [
        *(f"kiam-{check_id}-resource" for check_id in RESOURCE_LEVEL),
        *(f"kiam-{check_id}" for check_id in CHECKS),
    ]
    assert [type(p).__name__ for p in POLICIES] == [
        *(["ResourceValidationPolicy"] * len(RESOURCE_LEVEL)),
        *(["StackValidationPolicy"] * len(CHECKS)),
    ]
    assert {p.enforcement_level.value for p in POLICIES} == {"mandatory"}


def test_what_one_resource_decides_is_reported_once_by_its_resource_policy(
    base_run: Recording,
) -> None:
    def drop_anti_affinity(reg: Any, props: dict[str, Any]) -> None:
        if reg.type == "kubernetes:apps/v1:Deployment":
            del props["spec"]["template"]["spec"]["affinity"]

    deployment = base_run.one("kubernetes:apps/v1:Deployment")
    assert run_pack(policy_resources(base_run, drop_anti_affinity)) == [
        (
            "kiam-server-anti-affinity-resource",
            "[server-anti-affinity] no required pod anti-affinity on kubernetes.io/hostname "
            "selecting server pods only",
            deployment.urn,
        )
    ]


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
            "kiam-node-group-replacement-resource",
            "[node-group-replacement] is delete-before-replace: servers would lose their nodes first",
            group.urn,
        )
    ]


def test_values_unknown_at_preview_are_not_judged(base_run: Recording) -> None:
    def unknown_args(reg: Any, props: dict[str, Any]) -> None:
        if reg.type == "kubernetes:apps/v1:Deployment":
            props["spec"]["template"]["spec"]["containers"][0]["args"] = UNKNOWN_STRING_VALUE

    assert run_pack(policy_resources(base_run, unknown_args)) == []


# An application with its own path under a name prefix (issue 11), seen as the pack sees it.
APPS = base_config(
    iam={"applicationRoleNamePrefix": "app-"},
    applications={
        "search": {"namespace": "search", "roleName": "app-search", "path": "/kiam-apps/team-a/"}
    },
)
SEARCH = "arn:aws:iam::111122223333:role/kiam-apps/team-a/app-search"


@pytest.fixture(scope="module")
def apps_run() -> Recording:
    return run_program(APPS)


def known_arns(*names: str) -> Any:
    """Props as on `up` (or a preview of existing roles): the policy SDK hands over outputs."""

    def change(reg: Any, props: dict[str, Any]) -> None:
        if reg.type == "aws:iam/role:Role" and reg.name in names:
            props["arn"] = reg.outputs["arn"]

    return change


def both(*changes: Any) -> Any:
    def change(reg: Any, props: dict[str, Any]) -> None:
        for c in changes:
            c(reg, props)

    return change


def bare_name_annotation(reg: Any, props: dict[str, Any]) -> None:
    """The stack tells pod authors the bare role name (its `applications` output)."""
    if reg.type == STACK:
        props["applications"]["search"]["podAnnotation"]["iam.amazonaws.com/role"] = "app-search"


def base_pattern_only(reg: Any, props: dict[str, Any]) -> None:
    if reg.name == "kiam-iam-server-assume-applications":
        policy = json.loads(props["policy"])
        policy["Statement"][0]["Resource"] = "arn:aws:iam::111122223333:role/kiam-apps/app-*"
        props["policy"] = json.dumps(policy)


ALL_ROLES = ("kiam-iam-server-node", "kiam-iam-server", "kiam-app-search")


def test_reachable_applications_pass_on_up(apps_run: Recording) -> None:
    assert run_pack(policy_resources(apps_run, known_arns(*ALL_ROLES)), APPS) == []


def test_an_annotation_kiam_resolves_elsewhere_fails_on_up(apps_run: Recording) -> None:
    role = apps_run.one("aws:iam/role:Role", "kiam-app-search")
    resources = policy_resources(apps_run, both(known_arns(*ALL_ROLES), bare_name_annotation))
    assert run_pack(resources, APPS) == [
        (
            "kiam-application-reachable",
            "[application-reachable] pod annotation iam.amazonaws.com/role: app-search resolves "
            "against --role-base-arn=arn:aws:iam::111122223333:role/kiam-apps/ to "
            f"arn:aws:iam::111122223333:role/kiam-apps/app-search, not {SEARCH}",
            role.urn,
        )
    ]


def test_a_new_role_of_a_deployed_stack_is_judged_at_preview(apps_run: Recording) -> None:
    """The server role exists (its ARN is known); the new application role has no ARN yet."""
    role = apps_run.one("aws:iam/role:Role", "kiam-app-search")
    resources = policy_resources(
        apps_run, both(known_arns("kiam-iam-server-node", "kiam-iam-server"), base_pattern_only)
    )
    assert run_pack(resources, APPS) == [
        (
            "kiam-application-reachable",
            "[application-reachable] the kiam-server role's policy does not allow "
            f"sts:AssumeRole on {SEARCH}",
            role.urn,
        )
    ]


def test_the_first_preview_judges_no_application(apps_run: Recording) -> None:
    """No role exists yet: no ARN is known, so nothing about applications is judged until `up`."""
    assert run_pack(policy_resources(apps_run, base_pattern_only), APPS) == []


def test_without_the_stacks_settings_the_guarantees_that_need_them_fail_closed(
    base_run: Recording,
) -> None:
    """An engine that hands the pack no config: the guarantees judged against the settings
    report that they cannot be judged, instead of passing; the others judge as usual."""
    why = (
        "stacks/Pulumi.test.yaml: invalid kiam settings (2 problems):\n"
        "  - kiam:cluster: is required\n"
        "  - kiam:nodeGroup: is required"
    )
    assert run_pack(policy_resources(base_run), config={}) == [
        (
            f"kiam-{check}",
            f"[{check}] cannot be judged: the pack could not read the stack's kiam settings "
            f"({why})",
            None,
        )
        for check in (
            "presence",
            "iam-least-privilege",
            "application-reachable",
            "pod-identity",
            "off-kiam",
            "retired",
        )
    ]


@pytest.mark.parametrize(
    ("role", "whose", "why_not"),
    [
        ("kiam-iam-server-node", "the server node role", "beyond the EKS node policies"),
        ("kiam-iam-server", "the kiam-server role", "while it needs none"),
    ],
)
def test_administrator_access_on_a_kiam_role_fails_the_preview(
    base_run: Recording, role: str, whose: str, why_not: str
) -> None:
    """A managed policy attached to kiam's own roles: judged at the first preview, since the
    attachment's policy ARN is known before anything exists."""
    admin = "arn:aws:iam::aws:policy/AdministratorAccess"
    resources = policy_resources(base_run)
    target = next(r for r in resources if r.resource_type == "aws:iam/role:Role" and r.name == role)
    urn = f"urn:pulumi:test::kiam::kiam:index:Iam$aws:iam/rolePolicyAttachment:RolePolicyAttachment::{role}-admin"
    attachment = PolicyResource(
        "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
        unknown_checking_proxy({"role": UNKNOWN_STRING_VALUE, "policyArn": admin}),
        urn,
        f"{role}-admin",
        _opts(),
        None,
        None,
        [target],
        {"role": [target]},
    )
    assert run_pack([*resources, attachment]) == [
        (
            "kiam-iam-least-privilege",
            f"[iam-least-privilege] gives {whose} the managed policy {admin}, {why_not}",
            urn,
        )
    ]


def test_the_pack_takes_the_stack_config_the_engine_configures_it_with(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A pack the CLI starts itself (policy/pack-launcher) has no PULUMI_CONFIG: the config comes
    only in the engine's ConfigureStack request, served on another thread than the analyses."""
    import threading

    from policy import kiam_policy

    monkeypatch.delenv("PULUMI_CONFIG", raising=False)
    monkeypatch.setattr(kiam_policy, "_stack_config", {})
    pulumi.runtime.set_all_config({}, [])
    config = {k: json.dumps(v) for k, v in BASE.items()}
    configure = threading.Thread(target=kiam_policy.take_stack_config, args=(config, []))
    configure.start()
    configure.join()
    expected, why_not = kiam_policy._expected()
    assert why_not == ""
    assert expected is not None and expected.own_agents is True
    # Config in the environment wins, as for the program.
    monkeypatch.setenv("PULUMI_CONFIG", json.dumps({"kiam:cluster": "{}"}))
    pulumi.runtime.set_all_config({}, [])
    assert kiam_policy._expected()[0] is None


# The way out of kiam (issue 18): each state as the pack sees it on `up`, built by hand from the
# two-application run (tests/guarantee_views.py) and judged against that state's settings.


def policy_resources_of(resources: list[Resource]) -> list[PolicyResource]:
    """Resources as the engine hands them to stack policies on `up`: props are the inputs, and
    the outputs of what exists (a role's ARN)."""
    by_urn: dict[str, PolicyResource] = {}
    for r in resources:
        props = copy.deepcopy(dict(r.inputs))
        if "arn" in r.outputs:
            props["arn"] = r.outputs["arn"]
        by_urn[r.urn] = PolicyResource(
            r.type,
            unknown_checking_proxy(props),
            r.urn,
            r.name,
            _opts(r.delete_before_replace, r.parent or None),
            None,
            None,
            [],
            {},
        )
    for r in resources:
        resource = by_urn[r.urn]
        resource.dependencies = [by_urn[u] for u in r.dependencies if u in by_urn]
        resource.property_dependencies = {
            k: [by_urn[u] for u in v if u in by_urn] for k, v in r.property_dependencies.items()
        }
    return list(by_urn.values())


@pytest.fixture(scope="module")
def two_apps() -> list[Resource]:
    return resources_from_recording(run_program(g.KIAM_CONFIG))


@pytest.mark.parametrize(
    ("build", "config"),
    [
        (g.moving, g.MOVING_CONFIG),
        (g.moved, g.MOVED_CONFIG),
        (g.irsa_only, g.IRSA_CONFIG),
        (g.retired, g.RETIRED_CONFIG),
    ],
    ids=["kiam+podIdentity", "podIdentity", "irsa", "retired"],
)
def test_every_state_of_the_way_out_passes_the_pack(
    two_apps: list[Resource], build: Any, config: dict[str, Any]
) -> None:
    assert run_pack(policy_resources_of(build(two_apps)), config) == []


def test_a_pod_identity_application_without_its_association_fails_the_pack(
    two_apps: list[Resource],
) -> None:
    broken = g.without(g.moved(two_apps), g.ASSOCIATION, "kiam-app-billing-pod-identity")
    assert run_pack(policy_resources_of(broken), g.MOVED_CONFIG) == [
        (
            "kiam-pod-identity",
            "[pod-identity] application billing: no Pod Identity association of "
            "test/billing/payer names its role",
            g.find(two_apps, g.ROLE, "kiam-app-billing").urn,
        )
    ]


def test_a_moved_application_its_namespace_still_admits_fails_the_pack(
    two_apps: list[Resource],
) -> None:
    broken = [*g.moved(two_apps), g.find(two_apps, g.PATCH, "kiam-permissions-billing")]
    assert run_pack(policy_resources_of(broken), g.MOVED_CONFIG) == [
        (
            "kiam-off-kiam",
            f"[off-kiam] application billing: namespace billing permits '^({g.BILLING})$', "
            f"which still admits {g.BILLING} though servedBy podIdentity is no longer kiam",
            g.find(two_apps, g.ROLE, "kiam-app-billing").urn,
        )
    ]


def test_a_retired_stack_keeping_kiams_service_fails_the_pack(two_apps: list[Resource]) -> None:
    service = g.find(two_apps, "kubernetes:core/v1:Service", "kiam-server")
    resources = policy_resources_of([*g.retired(two_apps), service])
    assert run_pack(resources, g.RETIRED_CONFIG) == [
        (
            "kiam-retired",
            "[retired] is kiam's kiam-server (Service), which kiam:retire removes",
            service.urn,
        )
    ]


def test_the_preview_of_a_move_judges_the_association_by_the_role_it_is_built_from(
    two_apps: list[Resource],
) -> None:
    """A preview of the move: the association's role ARN is not known yet, but it is built from
    the application's role, so it is judged; built from another role, it fails already."""
    moved = g.moved(two_apps)
    old = g.find(moved, g.ASSOCIATION, "kiam-app-billing-pod-identity")
    preview = g.replace(moved, old, g.with_inputs(old, roleArn=UNKNOWN_STRING_VALUE))
    assert run_pack(policy_resources_of(preview), g.MOVED_CONFIG) == []
    search = g.find(two_apps, g.ROLE, "kiam-app-search")
    wrong = g.replace(
        moved,
        old,
        g.association(search, "billing", "billing", "payer", g.SEARCH),
    )
    wrong_preview = [
        g.with_inputs(r, roleArn=UNKNOWN_STRING_VALUE) if r.type == g.ASSOCIATION else r
        for r in wrong
    ]
    reported = run_pack(policy_resources_of(wrong_preview), g.MOVED_CONFIG)
    assert [(policy, message) for policy, message, _ in reported] == [
        (
            "kiam-pod-identity",
            "[pod-identity] application billing: no Pod Identity association of "
            "test/billing/payer names its role",
        ),
        (
            "kiam-pod-identity",
            "[pod-identity] application billing: the association of test/billing/payer names "
            "the role app-search, not its role arn:aws:iam::111122223333:role/kiam-apps/app-billing",
        ),
        (
            "kiam-pod-identity",
            "[pod-identity] application search: the association of test/billing/payer names "
            "its role, which servedBy kiam+irsa does not serve through Pod Identity",
        ),
    ]

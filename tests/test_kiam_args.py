"""`Kiam`'s public arguments (`KiamArgs`): the one adapter from the stack settings gives back the
same settings for every state a running install can be in; the cluster's name and OIDC issuer may
be another resource's outputs, and then every resource gets exactly what a string would have
given it; a mistake is refused, named by the argument, before anything is registered."""

from __future__ import annotations

import json
import re
import runpy
from typing import Any, cast

import pulumi
import pytest

from kiam_eks import ArgumentsError, Kiam, KiamArgs
from kiam_eks.components.public_args import (
    CLUSTER_NAME_FROM_OUTPUT,
    KIAM_ARGUMENTS,
    KIAM_INPUTS,
    PROGRAM_SETTINGS,
    SUBNETS_FROM_OUTPUTS,
    arguments_of,
    kiam_settings,
    subnet_ids_known,
)
from kiam_eks.contracts import tokens
from kiam_eks.settings.loader import read_stack_file, settings_from_values
from kiam_eks.settings.stack import StackSettings
from tests import guarantee_views as g
from tests.conftest import EXAMPLE_STACKS, addons_of, base_config, example_config, run_component
from tests.test_adoption import PHASES, adoption_config, helm_adoption_config
from tests.test_retire import installed_config, retired_config
from tests.test_served_by import STATES, config
from tests.urn_cases import MIGRATION_FILES
from tools.mock_engine import PROJECT_DIR, MockEngine, Recording

ISSUER = "https://oidc.eks.eu-west-1.amazonaws.com/id/EXAMPLED539D4633E53DE1B71EXAMPLE"


def settings_of(config: dict[str, Any]) -> StackSettings:
    values = {k.removeprefix("kiam:"): v for k, v in config.items() if k.startswith("kiam:")}
    return settings_from_values(values, "test config")


# Every state tests/urn_cases.py holds the URNs of, as its stack settings.
CONFIGS: dict[str, dict[str, Any]] = {
    **{f"stack {s}": example_config(s) for s in EXAMPLE_STACKS},
    **{f"migration {p.stem}": read_stack_file(p) for p in MIGRATION_FILES},
    **{f"adoption {p}": adoption_config(p) for p in PHASES},
    **{f"helm adoption {p}": helm_adoption_config(p) for p in PHASES},
    **{f"served by {s}, add-on managed {m}": config(s, manage=m) for s in STATES for m in (0, 1)},
    **{f"existing roles {s}": g.existing_config(s, s) for s in ("kiam", "podIdentity", "irsa")},
    "installed, before retiring": installed_config(),
    "retired": retired_config(),
}


def without_program_settings(settings: StackSettings) -> dict[str, Any]:
    dumped = settings.model_dump()
    dumped.pop("kubeconfig")
    dumped["cluster"].pop("kubernetes_auth")
    return dumped


@pytest.mark.parametrize("case", sorted(CONFIGS))
def test_the_adapter_gives_back_the_same_settings(case: str) -> None:
    settings = settings_of(CONFIGS[case])
    rebuilt = kiam_settings("test", arguments_of(settings))
    assert without_program_settings(rebuilt) == without_program_settings(settings)
    assert rebuilt.adoption_state == settings.adoption_state


@pytest.mark.parametrize("case", sorted(CONFIGS))
def test_the_programs_typed_path_composes_what_the_arguments_compose(case: str) -> None:
    """`Kiam.of_settings` (the program's: settings validated once, from its stack file) and
    `Kiam(name, args)` (every other program's) register the same resources, inputs and outputs."""
    settings = settings_of(CONFIGS[case])

    def exported(kiam: Kiam) -> None:
        for output in ("applications", "server_address", "role_base_arn", "server_role_arn"):
            pulumi.export(output, getattr(kiam, output))

    args = cast(KiamArgs, arguments_of(settings))
    args["oidc_issuer"] = ISSUER
    typed = run_component(
        lambda: exported(Kiam.of_settings("kiam", settings, oidc_issuer=ISSUER)),
        addons_of(settings),
    )
    through_arguments = run_component(lambda: exported(Kiam("kiam", args)), addons_of(settings))
    assert registered(typed) == registered(through_arguments)
    assert typed.stack_outputs == through_arguments.stack_outputs


def test_every_setting_is_an_argument_or_the_programs_own() -> None:
    """A new stack setting must become an argument of `Kiam` (or be declared the program's)."""
    settings = {
        f.alias or n for n, f in StackSettings.model_fields.items() if (f.alias or n) != "cluster"
    }
    cluster = {
        f"cluster.{f.alias or n}"
        for n, f in StackSettings.model_fields["cluster"].annotation.model_fields.items()  # type: ignore[union-attr]
    }
    assert settings | cluster == {*KIAM_ARGUMENTS.values(), *PROGRAM_SETTINGS}
    assert set(KiamArgs.__annotations__) == {*KIAM_ARGUMENTS, *KIAM_INPUTS}


def build(
    settings: StackSettings,
    cluster_name: pulumi.Input[str],
    issuer: pulumi.Input[str],
    subnet_ids: pulumi.Input[list[pulumi.Input[str]]] | None = None,
) -> Recording:
    args = cast(KiamArgs, arguments_of(settings))
    args["cluster_name"] = cluster_name
    args["oidc_issuer"] = issuer
    if subnet_ids is not None:
        args["node_group"] = {k: v for k, v in args["node_group"].items() if k != "subnets"}
        args["subnet_ids"] = subnet_ids
    return run_component(lambda: Kiam("kiam", args), addons_of(settings))


def registered(recording: Recording) -> list[tuple[str, str, str, Any]]:
    return sorted(
        (r.type, r.name, r.parent or "", json.dumps(r.inputs, sort_keys=True, default=str))
        for r in recording.registrations
    )


OUTPUT_CASES = [
    "stack dev",
    "served by podIdentity, add-on managed 1",
    "served by kiam+irsa, add-on managed 0",
    "existing roles kiam",
    "existing roles podIdentity",
    "retired",
]


@pytest.mark.parametrize("case", OUTPUT_CASES)
def test_a_cluster_name_issuer_and_subnets_given_as_outputs_make_exactly_the_same_resources(
    case: str,
) -> None:
    """Every resource naming the cluster (the node group and its launch template, the roles'
    descriptions and Pod Identity trusts, the chain roles, the associations and the add-on) or
    the subnets gets what the strings would have given it, and none the stand-ins the settings
    hold."""
    settings = settings_of(CONFIGS[case])
    name = settings.cluster.name
    ids = [subnet.id for subnet in settings.node_group.subnets]
    as_strings = build(settings, name, ISSUER)
    as_outputs = build(
        settings,
        pulumi.Output.from_input(name),
        pulumi.Output.from_input(ISSUER),
        pulumi.Output.from_input([pulumi.Output.from_input(i) for i in ids]),
    )
    assert registered(as_outputs) == registered(as_strings)
    placeholders = [CLUSTER_NAME_FROM_OUTPUT, *(s["id"] for s in SUBNETS_FROM_OUTPUTS)]
    # Each as a whole JSON string: a subnet id of the test stacks may start like one.
    inputs = [each[3] for each in registered(as_outputs)]
    assert [p for p in placeholders if any(json.dumps(p) in i for i in inputs)] == []


def test_the_resources_that_name_the_cluster_name_the_output() -> None:
    settings = settings_of(config("podIdentity", manage=True))
    recording = build(settings, pulumi.Output.from_input("payments-eks"), ISSUER)
    assert recording.one(tokens.NODE_GROUP).inputs["clusterName"] == "payments-eks"
    template = recording.one("aws:ec2/launchTemplate:LaunchTemplate")
    assert template.inputs["namePrefix"] == "payments-eks-kiam-server-"
    assert recording.one(tokens.POD_IDENTITY_ASSOCIATION).inputs["clusterName"] == "payments-eks"
    assert recording.one("aws:eks/addon:Addon").inputs["clusterName"] == "payments-eks"
    assert {
        r.inputs["description"]
        for r in recording.by_type(tokens.ROLE)
        if r.name.startswith("kiam-iam")
    } == {
        "kiam server nodes of EKS cluster payments-eks",
        "kiam-server of EKS cluster payments-eks",
    }
    trust = json.loads(recording.one(tokens.ROLE, "kiam-app-billing").inputs["assumeRolePolicy"])
    tags = [
        statement["Condition"]["StringEquals"]["aws:RequestTag/eks-cluster-name"]
        for statement in trust["Statement"]
        if "pods.eks.amazonaws.com" in json.dumps(statement["Principal"])
    ]
    assert tags == ["payments-eks"]


def test_a_cluster_name_output_is_checked_once_known() -> None:
    settings = settings_of(base_config())
    with pytest.raises(Exception, match="cluster_name: 'bad name' is not an EKS cluster name"):
        build(settings, pulumi.Output.from_input("bad name"), ISSUER)


@pytest.mark.parametrize(
    ("ids", "problem"),
    [
        (["subnet-0aaa1111"], "subnet_ids: List should have at least 2 items after validation"),
        (["subnet-0aaa1111", "subnet-1"], "subnet_ids: 'subnet-1' is not a subnet id"),
        (["subnet-0aaa1111", "subnet-0aaa1111"], "subnet_ids: lists subnet-0aaa1111 more than"),
    ],
)
def test_subnet_ids_given_as_outputs_are_checked_once_known(ids: list[str], problem: str) -> None:
    settings = settings_of(base_config())
    with pytest.raises(Exception, match=re.escape(problem)):
        build(settings, settings.cluster.name, ISSUER, pulumi.Output.from_input(ids))


def test_subnet_ids_given_as_strings_are_the_node_groups_subnets() -> None:
    args = {k: v for k, v in ARGS.items() if k != "node_group"}
    ids = ["subnet-0aaa1111", "subnet-0bbb2222"]
    recording = run_component(lambda: Kiam("kiam", cast(KiamArgs, {**args, "subnet_ids": ids})))
    assert recording.one(tokens.NODE_GROUP).inputs["subnetIds"] == ids


def test_a_cloud_side_given_needs_the_cluster_name_as_a_string() -> None:
    args = cast(KiamArgs, arguments_of(settings_of(base_config())))
    args["cluster_name"] = pulumi.Output.from_input("payments-eks")
    with pytest.raises(ArgumentsError) as refused:
        run_component(lambda: Kiam("kiam", args, cloud=cast(Any, object())))
    assert str(refused.value) == (
        "Kiam 'kiam': invalid arguments (1 problem):\n"
        "  - cluster_name, subnet_ids: must be known values when a cloud side is given"
    )


def test_a_cloud_side_given_needs_the_subnet_ids_as_strings() -> None:
    args = cast(KiamArgs, {k: v for k, v in ARGS.items() if k != "node_group"})
    args["subnet_ids"] = [pulumi.Output.from_input("subnet-0aaa1111"), "subnet-0bbb2222"]
    with pytest.raises(ArgumentsError) as refused:
        run_component(lambda: Kiam("kiam", args, cloud=cast(Any, object())))
    assert str(refused.value) == (
        "Kiam 'kiam': invalid arguments (1 problem):\n"
        "  - cluster_name, subnet_ids: must be known values when a cloud side is given"
    )


@pytest.mark.parametrize(
    ("subnet_ids", "known"),
    [
        (["subnet-0aaa1111", "subnet-0bbb2222"], True),
        ([], True),
        (["subnet-0aaa1111", pulumi.Output.from_input("subnet-0bbb2222")], False),
        (pulumi.Output.from_input(["subnet-0aaa1111", "subnet-0bbb2222"]), False),
    ],
)
def test_subnet_ids_are_known_only_as_a_list_of_strings(subnet_ids: Any, known: bool) -> None:
    assert subnet_ids_known(subnet_ids) is known


ARGS = {
    "cluster_name": "payments-eks",
    "account_id": "111122223333",
    "region": "eu-west-1",
    "kubernetes_version": "1.33",
    "node_group": {
        "subnets": [
            {"id": "subnet-0aaa1111", "zone": "eu-west-1a"},
            {"id": "subnet-0bbb2222", "zone": "eu-west-1b"},
        ]
    },
}


@pytest.mark.parametrize(
    ("changes", "problems"),
    [
        (
            {"clusterName": "payments-eks", "cluster_name": None, "node_group": None},
            [
                "clusterName: is not an argument of Kiam (allowed: account_id, adoption, agent, "
                "applications, cluster_domain, cluster_name, existing_permitted, iam, "
                "kubernetes_version, monitoring, namespace, node_group, oidc_issuer, "
                "pod_identity_agent, region, retire, server, subnet_ids, tls)",
                "cluster_name: is required",
                "node_group: is required",
            ],
        ),
        (
            {"account_id": 111122223333, "region": "mars-1"},
            [
                "account_id: got the number 111122223333, not a string: an account id must be "
                "quoted in the stack file (accountId: '111122223333' if that is the account) or "
                "set with `pulumi config set --path --type string kiam:cluster.accountId <id>`",
                "region: 'mars-1' is not an AWS region such as eu-west-1",
            ],
        ),
        (
            {"subnet_ids": ["subnet-0ccc3333", "subnet-0ddd4444"]},
            ["subnet_ids: give the subnets here or as node_group.subnets, not both"],
        ),
        (
            {"node_group": {"subnets": [{"id": "subnet-1"}], "minSize": 2}},
            [
                "node_group.subnets[0].id: 'subnet-1' is not a subnet id such as subnet-0abc1234",
            ],
        ),
        (
            {"node_group": {**ARGS["node_group"], "minSize": 2, "desiredSize": 2}},
            [
                "node_group.minSize must be at least server.replicas (got 2 nodes for 3 servers): "
                "hard anti-affinity puts one server per node, so the extra servers would stay "
                "Pending"
            ],
        ),
    ],
)
def test_bad_arguments_are_refused_before_anything_is_registered(
    changes: dict[str, Any], problems: list[str]
) -> None:
    args = {k: v for k, v in {**ARGS, **changes}.items() if v is not None}
    refused: list[ArgumentsError] = []

    def program() -> None:
        try:
            Kiam("kiam", cast(KiamArgs, args))
        except ArgumentsError as error:
            refused.append(error)

    recording = run_component(program)
    assert [error.problems for error in refused] == [problems]
    noun = "problem" if len(problems) == 1 else "problems"
    assert str(refused[0]).startswith(f"Kiam 'kiam': invalid arguments ({len(problems)} {noun}):")
    assert [r.type for r in recording.registrations if r.type != "pulumi:pulumi:Stack"] == []


def test_the_arguments_work_as_written_in_a_program() -> None:
    """`Kiam` in a program of your own: a whole install from literal arguments."""
    recording = run_component(lambda: Kiam("kiam", cast(KiamArgs, ARGS)))
    top = recording.one(tokens.KIAM)
    assert top.name == "kiam"
    assert recording.one(tokens.NODE_GROUP).inputs["subnetIds"] == [
        "subnet-0aaa1111",
        "subnet-0bbb2222",
    ]


WHOLE_EXAMPLE = PROJECT_DIR / "examples" / "python-whole" / "__main__.py"


def test_the_readme_example_installs_the_whole_of_kiam_from_the_clusters_outputs() -> None:
    """examples/python-whole (the README's): the cluster's look-up outputs as `Kiam`'s inputs."""
    engine = MockEngine(
        config={
            "kiam:clusterName": "payments-eks",
            "kiam:kubeconfig": "apiVersion: v1\nkind: Config\n",
            "kiam:accountId": "111122223333",
            "kiam:region": "eu-west-1",
        }
    )
    recording = engine.run(lambda: runpy.run_path(str(WHOLE_EXAMPLE), run_name="__main__"))
    assert recording.one(tokens.NODE_GROUP).inputs["clusterName"] == "payments-eks"
    server_role = recording.one(tokens.ROLE, "kiam-iam-server").outputs["arn"]
    assert recording.stack_outputs["serverRoleArn"] == server_role
    assert recording.stack_outputs["billing"]["podAnnotation"] == {
        "iam.amazonaws.com/role": "billing-api"
    }
    provider = recording.one("pulumi:providers:kubernetes", "cluster")
    for kind in (tokens.DEPLOYMENT, tokens.DAEMON_SET):
        assert recording.one(kind).provider.startswith(f"{provider.urn}::"), kind

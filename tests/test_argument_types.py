"""`Kiam`'s named argument types (components/argument_types.py): generated from the settings
models and current; every setting of every state a running install can be in travels through
them unchanged, spelled as a TypeScript or YAML program spells it (camelCase, mapped by the
component provider) or as a Python program does (snake_case); a misspelt key fails mypy, and at
run time is refused, named, before anything is registered."""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import pytest
from mypy import api as mypy_api
from pulumi import InputPropertyError
from pulumi.provider.experimental.component import ComponentProvider

from kiam_eks import ArgumentsError, Kiam, KiamArgs
from kiam_eks.components import argument_types
from kiam_eks.components.public_args import arguments_of, kiam_settings
from kiam_eks.settings.stack import StackSettings
from tests.test_kiam_args import CONFIGS, settings_of, without_program_settings
from tools import api_reference
from tools import argument_types as generator

PROJECT_DIR = Path(__file__).resolve().parent.parent
REPO_FIXTURES = PROJECT_DIR / "e2e" / "fixtures"


def test_the_generated_types_are_current() -> None:
    assert generator.TARGET.read_text() == generator.render(), (
        "components/argument_types.py is stale: run python -m tools.argument_types --write"
    )


def test_each_section_argument_is_its_named_type() -> None:
    hints = KiamArgs.__annotations__
    written = {
        argument: _spelled(typing.get_args(hints[argument])[0])
        for argument in generator.section_models()
    }
    assert written == generator.section_annotations()
    assert written["node_group"] == "NodeGroupOptions"
    assert written["applications"] == "dict[str, ApplicationOptions]"


def _spelled(annotation: Any) -> str:
    if typing.get_origin(annotation) is dict:
        return f"dict[str, {_spelled(typing.get_args(annotation)[1])}]"
    return str(annotation.__name__)


def test_only_the_one_key_the_schema_spells_otherwise_says_so() -> None:
    """The schema camelCases each Python name; where the stack file's key differs, the type's
    description says the stack file's spelling, and that is the one case."""
    source = generator.TARGET.read_text()
    assert source.count("In a stack file `") == 1
    assert "disk_size_gib: NotRequired[int]" in source
    assert "In a stack file `diskSizeGiB`" in source


def _provider_mapping() -> tuple[ComponentProvider, Any]:
    provider = api_reference.component_provider()
    return provider, provider._component_defs["Kiam"]


def _schema_spelling(value: Any, annotation: Any) -> Any:
    """`value` (Python names, as `model_dump` gives them) as a TypeScript or YAML program writes
    it: each key of a named type in the schema's camelCase, a map's own keys as they are."""
    while typing.get_origin(annotation) in (typing.NotRequired, typing.Required):
        annotation = typing.get_args(annotation)[0]
    origin = typing.get_origin(annotation)
    if origin is list and isinstance(value, list):
        return [_schema_spelling(v, typing.get_args(annotation)[0]) for v in value]
    if origin is dict and isinstance(value, dict):
        inner = typing.get_args(annotation)[1]
        return {k: _schema_spelling(v, inner) for k, v in value.items()}
    if (typing.is_typeddict(annotation) or annotation is KiamArgs) and isinstance(value, dict):
        fields = annotation.__annotations__
        return {
            api_reference.camel(k): _schema_spelling(v, fields.get(k)) for k, v in value.items()
        }
    return value


def _sent_by_another_language(settings: Any) -> dict[str, Any]:
    """The arguments of `settings` as another language's program sends them to the engine."""
    # The sections in their Python names (the adapter writes the stack file's camelCase).
    dumped = settings.model_dump()
    python_names = {
        argument: dumped[argument] if argument in StackSettings.model_fields else value
        for argument, value in arguments_of(settings).items()
    }
    return dict(_schema_spelling(python_names, KiamArgs))


def _strangers(value: Any, annotation: Any) -> list[str]:
    """Each key in `value`, walked as `annotation` types it, that its named type does not have."""
    while typing.get_origin(annotation) in (typing.NotRequired, typing.Required):
        annotation = typing.get_args(annotation)[0]
    origin = typing.get_origin(annotation)
    if origin is list:
        return [k for item in value or [] for k in _strangers(item, typing.get_args(annotation)[0])]
    if origin is dict:
        inner = typing.get_args(annotation)[1]
        return [k for item in (value or {}).values() for k in _strangers(item, inner)]
    if not (typing.is_typeddict(annotation) and isinstance(value, dict)):
        return []
    fields = annotation.__annotations__
    return [
        f"{annotation.__name__}.{key}" if key not in fields else stranger
        for key, item in value.items()
        for stranger in ([None] if key not in fields else _strangers(item, fields[key]) or [None])
        if key not in fields or stranger is not None
    ]


@pytest.mark.parametrize("case", sorted(CONFIGS))
def test_every_setting_reaches_the_component_through_the_named_types(case: str) -> None:
    """What the engine sends from a TypeScript or YAML program (camelCase throughout), mapped
    by the component provider as it maps a `Kiam` it constructs, reaches `Kiam` with every key
    of every named type in its Python name, and gives back exactly the settings."""
    settings = settings_of(CONFIGS[case])
    provider, kiam = _provider_mapping()
    mapped = provider.map_inputs(_sent_by_another_language(settings), kiam)
    annotations = KiamArgs.__annotations__
    strangers = [
        key
        for argument in generator.section_models()
        for key in _strangers(mapped.get(argument), annotations[argument])
    ]
    assert strangers == []
    assert "min_size" in mapped["node_group"]
    rebuilt = kiam_settings("test", mapped)
    assert without_program_settings(rebuilt) == without_program_settings(settings)


def test_a_python_program_spells_the_keys_in_snake_case() -> None:
    camel = kiam_settings("test", arguments_of(settings_of(CONFIGS["stack dev"])))
    args: KiamArgs = {
        "cluster_name": "dev",
        "account_id": camel.cluster.account_id,
        "region": camel.cluster.region,
        "kubernetes_version": camel.cluster.kubernetes_version,
        "node_group": {
            "subnets": [{"id": s.id, "zone": s.zone or ""} for s in camel.node_group.subnets],
            "min_size": 4,
            "desired_size": 4,
            "max_size": 5,
            "taint": {"key": "kiam", "effect": "NO_EXECUTE"},
        },
        "agent": {"rollout": {"max_unavailable": "25%", "restart_seconds": 20}},
        "applications": {"billing": {"namespace": "billing", "role_name": "billing-api"}},
    }
    settings = kiam_settings("test", dict(args))
    assert (settings.node_group.min_size, settings.node_group.taint.key) == (4, "kiam")
    assert settings.node_group.taint.effect == "NO_EXECUTE"
    assert settings.agent.rollout.max_unavailable == "25%"
    assert settings.applications["billing"].role_name == "billing-api"


def test_a_misspelt_key_is_refused_by_name_before_anything_is_registered() -> None:
    args: Any = {
        "cluster_name": "dev",
        "account_id": "111122223333",
        "region": "eu-west-1",
        "kubernetes_version": "1.33",
        "node_group": {
            "subnets": [
                {"id": "subnet-0a1b2c3d4e5f60001", "zone": "eu-west-1a"},
                {"id": "subnet-0a1b2c3d4e5f60002", "zone": "eu-west-1b"},
            ],
            "min_sise": 3,
        },
    }
    with pytest.raises(ArgumentsError, match=r"node_group\.min_sise: is not a known setting"):
        Kiam("kiam", args)


# The Python program the e2e suite type-checks against the pip-installed package too.
CONSUMER = (REPO_FIXTURES / "typed_consumer" / "kiam.py.template").read_text()


def test_mypy_catches_a_misspelt_key_in_a_python_program(tmp_path: Path) -> None:
    """A Python program's misspelt section key fails mypy, naming the key and the type; the
    same program spelled right passes."""
    programs = {}
    for key in ("min_size", "min_sise"):
        programs[key] = tmp_path / f"{key}.py"
        programs[key].write_text(CONSUMER.format(key=key))
    # One run for both programs: mypy reports each error with its file.
    out, _, status = mypy_api.run(
        [*map(str, programs.values()), "--strict", "--follow-imports=silent",
         "--no-incremental", "--cache-dir=/dev/null"]
    )  # fmt: skip
    assert status == 1
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert errors, out
    assert all(line.startswith(str(programs["min_sise"])) for line in errors), out
    assert any(
        'Extra key "min_sise" for TypedDict "NodeGroupOptions"' in line for line in errors
    ), out
    assert argument_types.NodeGroupOptions.__required_keys__ == {"subnets"}


def _schema_keys(annotation: Any) -> str:
    return ", ".join(sorted(api_reference.camel(k) for k in annotation.__annotations__))


@pytest.mark.parametrize(
    ("sent", "path", "reason"),
    [
        (
            {"nodeGroup": {"minSise": 3}},
            "nodeGroup.minSise",
            "'nodeGroup.minSise' is not an input of 'Kiam'; allowed here: "
            + _schema_keys(argument_types.NodeGroupOptions),
        ),
        (
            {"nodeGroup": {"minSise": 3, "maxSise": 4}},
            "nodeGroup.maxSise",
            "'nodeGroup.maxSise' is not an input of 'Kiam' (2 unknown: maxSise, minSise); "
            "allowed here: " + _schema_keys(argument_types.NodeGroupOptions),
        ),
        (
            {"clusterNmae": "dev"},
            "clusterNmae",
            "'clusterNmae' is not an input of 'Kiam'; allowed here: " + _schema_keys(KiamArgs),
        ),
        (
            {"applications": {"billing": {"namespace": "billing", "servedby": "kiam"}}},
            "applications.billing.servedby",
            "'applications.billing.servedby' is not an input of 'Kiam'; allowed here: "
            + _schema_keys(argument_types.ApplicationOptions),
        ),
    ],
)
def test_another_languages_misspelt_key_is_refused_by_the_provider_not_dropped(
    sent: dict[str, Any], path: str, reason: str
) -> None:
    """A key the schema does not name, sent by a program no compiler checked (plain JavaScript,
    TypeScript through `any`), stops the component provider with its path; the SDK's own
    provider would drop it and install the default (components/provider_host.py)."""
    settings = settings_of(CONFIGS["stack dev"])
    provider, kiam = _provider_mapping()
    inputs = _sent_by_another_language(settings)
    for key, value in sent.items():
        if isinstance(value, dict) and isinstance(inputs.get(key), dict):
            inputs[key] = {**inputs[key], **value}
        else:
            inputs[key] = value
    with pytest.raises(InputPropertyError) as refused:
        provider.map_inputs(inputs, kiam)
    assert (refused.value.property_path, refused.value.reason) == (path, reason)

"""The component package: the schema the provider serves is committed and current, as is the API
reference generated from it, and both say exactly what the public classes say."""

from __future__ import annotations

import ast
import inspect
import itertools
from pathlib import Path
from typing import Any

import yaml

from kiam_eks.components.kiam import Kiam, KiamArgs
from kiam_eks.components.kiam_kubernetes import KiamKubernetes, KiamKubernetesArgs
from kiam_eks.components.public_args import (
    KIAM_ARGUMENTS,
    KUBERNETES_SIDE_ARGUMENTS,
    KUBERNETES_SIDE_INPUTS,
)
from kiam_eks.contracts import tokens
from tools import api_reference


def test_the_committed_schema_is_the_one_the_provider_serves() -> None:
    assert api_reference.SCHEMA.read_text() == api_reference.render_schema(), (
        "provider/schema.json is stale: run python -m tools.api_reference --write"
    )


def test_the_api_reference_is_generated_from_it() -> None:
    assert api_reference.REFERENCE.read_text() == api_reference.render(), (
        "docs/api.md is stale: run python -m tools.api_reference --write"
    )


# Each public component, its arguments, and the outputs every language reads.
PUBLIC: dict[str, tuple[Any, set[str]]] = {
    tokens.KIAM: (
        KiamArgs,
        {
            "nodeRoleArn",
            "serverRoleArn",
            "roleBaseArn",
            "nodeGroupName",
            "serverAddress",
            "applications",
            "installed",
        },
    ),
    tokens.KIAM_KUBERNETES: (
        KiamKubernetesArgs,
        {
            "serverAddress",
            "serverDnsNames",
            "namespace",
            "serverDeploymentName",
            "agentDaemonSetName",
            "installed",
        },
    ),
}


def test_the_schema_holds_exactly_the_public_components_under_their_tokens() -> None:
    schema = api_reference.schema()
    assert schema["name"] == tokens.COMPONENT_PACKAGE
    assert set(schema["resources"]) == set(PUBLIC)
    for token, (args, outputs) in PUBLIC.items():
        resource = schema["resources"][token]
        assert resource["isComponent"] is True
        required = sorted(args.__required_keys__)
        assert sorted(resource["requiredInputs"]) == sorted(
            api_reference.camel(name) for name in required
        )
        assert set(resource["inputProperties"]) == {
            api_reference.camel(name) for name in args.__annotations__
        }
        assert set(resource["properties"]) == outputs


def test_values_other_resources_compute_are_inputs_and_the_settings_plain() -> None:
    resources = api_reference.schema()["resources"]
    not_plain = {
        token: {name for name, prop in resource["inputProperties"].items() if not prop.get("plain")}
        for token, resource in resources.items()
    }
    assert not_plain == {
        tokens.KIAM: {"clusterName", "oidcIssuer", "subnetIds"},
        tokens.KIAM_KUBERNETES: {
            "nodeGroupName",
            "serverRoleArn",
            "caCertificatePem",
            "serverCertificatePem",
            "serverPrivateKeyPem",
            "agentCertificatePem",
            "agentPrivateKeyPem",
        },
    }
    # Inside the sections, every value is plain (docs/api.md says why).
    types = api_reference.schema()["types"]
    assert {
        (token, name)
        for token, declared in types.items()
        for name, prop in declared["properties"].items()
        if not prop.get("plain")
    } == set()


def _field_docstrings(cls: type) -> dict[str, str]:
    tree = ast.parse(inspect.getsource(cls))
    body = tree.body[0].body  # type: ignore[attr-defined]
    found: dict[str, str] = {}
    for node, after in itertools.pairwise(body):
        if isinstance(node, ast.AnnAssign) and isinstance(after, ast.Expr):
            found[node.target.id] = after.value.value  # type: ignore[attr-defined]
    return found


def test_each_setting_of_kiam_kubernetes_is_kiams_argument_of_that_name() -> None:
    docstrings = _field_docstrings(KiamKubernetesArgs)
    assert set(docstrings) == set(KiamKubernetesArgs.__annotations__)
    # The adapter's two lists are exactly the component's arguments (components/public_args.py).
    assert set(KiamKubernetesArgs.__annotations__) == {
        *KUBERNETES_SIDE_ARGUMENTS,
        *KUBERNETES_SIDE_INPUTS,
    }
    kiam = _field_docstrings(KiamArgs)
    for argument in KUBERNETES_SIDE_ARGUMENTS:
        assert f"(`kiam:{KIAM_ARGUMENTS[argument]}`" in docstrings[argument], argument
        if argument != "node_group":  # Kiam's makes the group; this one names one made elsewhere
            assert (
                KiamKubernetesArgs.__annotations__[argument] == KiamArgs.__annotations__[argument]
            ), argument
            assert docstrings[argument] == kiam[argument], argument
    outputs = _field_docstrings(KiamKubernetes)
    assert set(outputs) == {api_reference.snake(name) for name in PUBLIC[tokens.KIAM_KUBERNETES][1]}


def test_each_argument_of_kiam_names_the_setting_it_is() -> None:
    docstrings = _field_docstrings(KiamArgs)
    assert set(docstrings) == set(KiamArgs.__annotations__)
    for argument, key_path in KIAM_ARGUMENTS.items():
        assert f"(`kiam:{key_path}`" in docstrings[argument], argument
    outputs = _field_docstrings(Kiam)
    assert set(outputs) == {api_reference.snake(name) for name in PUBLIC[tokens.KIAM][1]}


def test_the_plugin_runs_the_provider_in_its_own_virtualenv_with_this_package() -> None:
    plugin = yaml.safe_load((api_reference.PROVIDER_DIR / "PulumiPlugin.yaml").read_text())
    assert plugin == {
        "runtime": {"name": "python", "options": {"toolchain": "pip", "virtualenv": "venv"}}
    }
    lines = (api_reference.PROVIDER_DIR / "requirements.txt").read_text().splitlines()
    assert [line for line in lines if line and not line.startswith("#")] == [".."]
    assert (api_reference.PROVIDER_DIR / ".." / "pyproject.toml").resolve() == Path(
        api_reference.ROOT / "pyproject.toml"
    )

"""The kiam_eks package: what it maps, what it exports, and that moving the modules into it left
every running install's URNs as they were."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pulumi
import pytest

import kiam_eks
from kiam_eks.components.kiam_kubernetes import KiamKubernetes
from kiam_eks.contracts import tokens
from tests.conftest import PROJECT_DIR, base_config, run_component, run_program
from tests.test_kiam_kubernetes import ARGS
from tests.test_retire import retired_config, retiring_run
from tests.urn_cases import CASES, urns
from tools.package_layout import PACKAGE, module_file, package_dirs

RECORDED = PROJECT_DIR / "tests" / "fixtures" / "urns-before-package.json"


def test_the_package_maps_each_of_its_folders_once() -> None:
    setuptools = tomllib.loads((PROJECT_DIR / "pyproject.toml").read_text())["tool"]["setuptools"]
    dirs = package_dirs()
    assert setuptools["packages"] == sorted(dirs)
    assert {name: path.relative_to(PROJECT_DIR).as_posix() for name, path in dirs.items()} == {
        "kiam_eks": "src/kiam_eks",
        "kiam_eks.components": "components",
        "kiam_eks.contracts": "contracts",
        "kiam_eks.invariants": "invariants",
        "kiam_eks.program": "program",
        "kiam_eks.settings": "settings",
        "kiam_eks.specs": "specs",
        "kiam_eks.transitions": "transitions",
    }
    assert all((path / "__init__.py").is_file() for path in dirs.values())
    # No folder of them has a subfolder that would be left out of the wheel.
    assert [p for path in dirs.values() for p in path.glob("*/__init__.py")] == []
    assert setuptools["package-data"] == {PACKAGE: ["py.typed"]}
    assert (dirs[PACKAGE] / "py.typed").is_file()


def test_module_file_finds_a_module_through_the_mapping() -> None:
    assert module_file("kiam_eks.components.kiam") == PROJECT_DIR / "components" / "kiam.py"
    assert module_file("kiam_eks.settings") == PROJECT_DIR / "settings" / "__init__.py"
    assert module_file("kiam_eks") == PROJECT_DIR / "src" / "kiam_eks" / "__init__.py"
    assert module_file("kiam_eks.components.nothing") is None
    assert module_file("tools.plan") is None


def test_the_tests_run_against_the_installed_package() -> None:
    """`make` installs the package (requirements.txt), editable: the link tree under build/."""
    installed = Path(kiam_eks.components.__file__)
    assert installed.parts[-4:] == (installed.parts[-4], "kiam_eks", "components", "__init__.py")
    assert installed.parent.parent.parent.parent == PROJECT_DIR / "build"
    assert installed.resolve() == PROJECT_DIR / "components" / "__init__.py"


def test_the_public_names_load_on_first_use() -> None:
    from kiam_eks.components.kiam import Kiam, KiamArgs
    from kiam_eks.components.kiam_kubernetes import KiamKubernetes, KiamKubernetesArgs
    from kiam_eks.components.public_args import ArgumentsError

    assert kiam_eks.__all__ == sorted(kiam_eks._PUBLIC)
    assert {name: getattr(kiam_eks, name) for name in kiam_eks.__all__} == {
        "ArgumentsError": ArgumentsError,
        "Kiam": Kiam,
        "KiamArgs": KiamArgs,
        "KiamKubernetes": KiamKubernetes,
        "KiamKubernetesArgs": KiamKubernetesArgs,
    }
    with pytest.raises(AttributeError, match="module 'kiam_eks' has no attribute 'Nothing'"):
        _ = kiam_eks.Nothing  # type: ignore[attr-defined]


def test_each_component_registers_the_token_named_like_its_class(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`kiam:index:<class name>`, as a component provider infers it for other languages."""
    seen: set[tuple[str, str]] = set()
    original = pulumi.ComponentResource.__init__

    def record(self: pulumi.ComponentResource, t: str, *args: Any, **kwargs: Any) -> None:
        seen.add((type(self).__name__, t))
        original(self, t, *args, **kwargs)

    monkeypatch.setattr(pulumi.ComponentResource, "__init__", record)
    served_by_kiam = {
        "billing": {"namespace": "billing", "roleName": "billing-api"},
        # A role that exists already (components/existing_role.py).
        "ledger": {"namespace": "ledger", "roleArn": "arn:aws:iam::444455556666:role/ledger"},
    }
    run_program(
        base_config(
            applications=served_by_kiam, monitoring={"enabled": True, "prometheusOperator": True}
        )
    )
    retiring_run(retired_config())  # applications, and the retirement of a running install
    run_component(lambda: KiamKubernetes("kiam", ARGS))  # the Kubernetes side alone
    ours = {(name, t) for name, t in seen if t.startswith(f"{tokens.COMPONENT_PACKAGE}:index:")}
    assert ours == {(t.split(":")[-1], t) for t in tokens.COMPONENTS}


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_urn_is_the_one_registered_before_the_move(case: str) -> None:
    recorded: dict[str, list[str]] = json.loads(RECORDED.read_text())
    assert sorted(recorded) == sorted(CASES)
    assert urns(case) == recorded[case]

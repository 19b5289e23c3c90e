"""The import contracts `lint-imports` enforces in `make test` (pyproject.toml) cover every package
of the project, and __main__.py, which the linter cannot name (it is no package), imports the top
layers only."""

from __future__ import annotations

import ast
import subprocess
import tomllib
from typing import Any

from tools.mock_engine import PROJECT_DIR
from tools.package_layout import PACKAGE, package_dirs


def import_linter() -> dict[str, Any]:
    """The linter's configuration."""
    config: dict[str, Any] = tomllib.loads((PROJECT_DIR / "pyproject.toml").read_text())
    return config["tool"]["importlinter"]


def contract(contract_id: str) -> dict[str, Any]:
    return next(c for c in import_linter()["contracts"] if c["id"] == contract_id)


# The package's subpackages (pyproject.toml's package-dir) and the packages outside it, but the
# tests, which may import anything.
SUBPACKAGES = sorted(name for name in package_dirs() if name != PACKAGE)
OUTSIDE = sorted(
    p.parent.name
    for p in PROJECT_DIR.glob("*/__init__.py")
    if p.parent.name != "tests" and f"{PACKAGE}.{p.parent.name}" not in SUBPACKAGES
)
PACKAGES = sorted([*SUBPACKAGES, *OUTSIDE])


def test_the_packages_of_the_project() -> None:
    assert SUBPACKAGES == [
        "kiam_eks.components", "kiam_eks.contracts", "kiam_eks.invariants", "kiam_eks.program",
        "kiam_eks.settings", "kiam_eks.specs", "kiam_eks.transitions",
    ]  # fmt: skip
    assert OUTSIDE == ["e2e", "policy", "tools"]


def test_every_package_has_a_layer_and_is_checked_for_cycles() -> None:
    """A new package outside the contracts would escape every rule: name it in a layer."""
    assert sorted(import_linter()["root_packages"]) == sorted([PACKAGE, *OUTSIDE])
    layers = contract("layers")["layers"]
    assert layers == [
        "e2e",
        "tools",
        "kiam_eks.program | policy",
        "kiam_eks.components | kiam_eks.invariants",
        "kiam_eks.specs | kiam_eks.transitions",
        "kiam_eks.settings",
        "kiam_eks.contracts",
    ]
    assert sorted(name.strip() for layer in layers for name in layer.split("|")) == PACKAGES
    assert sorted(contract("acyclic")["ancestors"]) == sorted([PACKAGE, *PACKAGES])


def test_the_guarantees_reach_no_component_tool_or_cloud_sdk() -> None:
    guarantees = contract("guarantees")
    assert guarantees["source_modules"] == ["kiam_eks.invariants", "policy"]
    assert set(guarantees["forbidden_modules"]) == {
        "kiam_eks.specs", "kiam_eks.components", "kiam_eks.program", "tools", "e2e", "pulumi_aws",
        "pulumi_kubernetes", "pulumi_tls",
    }  # fmt: skip


def test_main_imports_the_program_and_settings_only() -> None:
    tree = ast.parse((PROJECT_DIR / "__main__.py").read_text())
    modules = {
        alias.name if isinstance(node, ast.Import) else str(node.module)
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert {".".join(m.split(".")[:2]) for m in modules} - {"pulumi"} == {
        "kiam_eks.program",
        "kiam_eks.settings",
    }


def test_the_folder_table_names_every_top_level_folder_once_and_lives_in_one_place() -> None:
    """docs/architecture.md's table is where a newcomer finds what lives where: a folder added
    without a row there, or a second copy of the table elsewhere that could drift, fails."""
    header = "| folder | what lives there |"
    pages = [PROJECT_DIR / "README.md", *sorted((PROJECT_DIR / "docs").rglob("*.md"))]
    assert [p.name for p in pages if header in p.read_text()] == ["architecture.md"]
    text = (PROJECT_DIR / "docs" / "architecture.md").read_text()
    rows = [
        line.split("|")[1].strip().strip("`")
        for line in text.splitlines()
        if line.startswith("| `")
    ]
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=PROJECT_DIR, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    folders = sorted({f.split("/")[0] + "/" for f in tracked if "/" in f and not f.startswith(".")})
    assert sorted(r.split("/")[0] + "/" for r in rows if "/" in r) == folders
    assert "__main__.py" in rows and len(rows) == len(set(rows))

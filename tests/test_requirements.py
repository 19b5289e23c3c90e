"""Each requirements file holds exactly what its users import: `pulumi up` gets the program's
packages and no test tool, the offline plan adds its validators, and `make` installs each set
for the targets that need it."""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import re
import subprocess
import sys
import tomllib
from collections.abc import Mapping
from pathlib import Path

import pytest

from tools.mock_engine import PROJECT_DIR
from tools.package_layout import PACKAGE, module_file

# The project's own packages, as they are on disk (a new one needs no edit here): the package and
# the folders outside it (tools, e2e, policy, tests).
FIRST_PARTY = {p.parent.name for p in PROJECT_DIR.glob("*/__init__.py")} | {PACKAGE}


# The walk parses each module once for the whole file: five walks share most of the package.
@functools.cache
def _module_file(module: str) -> Path | None:
    if module.split(".")[0] == PACKAGE:
        return module_file(module)
    base = PROJECT_DIR.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


@functools.cache
def _imported_modules(path: Path) -> frozenset[str]:
    """Every module `path` imports, at the top or inside a function (a lazy import still runs)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            # `from package import module` loads the submodule too.
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return frozenset(found)


def third_party_imports(*roots: Path) -> set[str]:
    """The top-level names of the non-standard-library packages loaded by running `roots`,
    following the project's own modules (and their packages' `__init__`) transitively."""
    seen: set[Path] = set()
    pending = list(roots)
    external: set[str] = set()
    while pending:
        path = pending.pop()
        if path in seen:
            continue
        seen.add(path)
        for module in _imported_modules(path):
            top = module.split(".")[0]
            if top in FIRST_PARTY:
                parts = module.split(".")
                for depth in range(1, len(parts) + 1):
                    file = _module_file(".".join(parts[:depth]))
                    if file is not None:
                        pending.append(file)
            elif top not in sys.stdlib_module_names and top != "__future__":
                external.add(top)
    return external


def distributions(import_names: set[str]) -> set[str]:
    """The installed distributions providing these top-level import names, normalised."""
    providers = _packages_distributions()
    return {_normalise(dist) for name in import_names for dist in providers[name]}


@functools.cache
def _packages_distributions() -> Mapping[str, list[str]]:
    return importlib.metadata.packages_distributions()


def requirement_names(file: str) -> set[str]:
    """The names a requirements file lists itself (not those of the files it includes)."""
    names = set()
    for line in (PROJECT_DIR / file).read_text().splitlines():
        line = line.strip()
        if line and not line.startswith(("#", "-")):
            match = re.match(r"[A-Za-z0-9._-]+", line)
            assert match, line
            names.add(_normalise(match.group()))
    return names


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_requirements_txt_is_exactly_what_the_program_imports() -> None:
    """What `pulumi up` loads: __main__.py and everything it imports, nothing more."""
    imported = third_party_imports(PROJECT_DIR / "__main__.py")
    assert imported == {
        "google",
        "pulumi",
        "pulumi_aws",
        "pulumi_kubernetes",
        "pulumi_tls",
        "pydantic",
        "yaml",
    }
    # `google` is a namespace package several distributions share; the program imports
    # `google.protobuf` (components/last_update.py), which protobuf provides.
    assert distributions(imported - {"google"}) | {"protobuf"} == package_dependencies()
    # requirements.txt installs the package, and with it those, from this checkout.
    assert requirement_lines("requirements.txt") == ["-e . --config-settings editable_mode=strict"]


def package_dependencies() -> set[str]:
    """The names of pyproject.toml's `[project] dependencies`, each with an upper bound."""
    dependencies = tomllib.loads((PROJECT_DIR / "pyproject.toml").read_text())["project"][
        "dependencies"
    ]
    assert all(",<" in dependency for dependency in dependencies), dependencies
    return {_normalise(re.match(r"[A-Za-z0-9._-]+", d).group()) for d in dependencies}  # type: ignore[union-attr]


def requirement_lines(file: str) -> list[str]:
    lines = (PROJECT_DIR / file).read_text().splitlines()
    return [line for line in lines if line.strip() and not line.startswith("#")]


def test_the_plan_requirements_add_exactly_the_validators_the_plan_imports() -> None:
    program = third_party_imports(PROJECT_DIR / "__main__.py")
    plan = third_party_imports(PROJECT_DIR / "tools" / "plan.py", PROJECT_DIR / "__main__.py")
    assert plan - program == {"jsonschema", "kubernetes_validate", "parliament", "referencing"}
    assert distributions(plan - program) == requirement_names("requirements-plan.txt")


def test_the_import_walk_sees_lazy_imports_and_packages() -> None:
    """The two tests above are only as good as this walk: it must follow an import made inside
    a function (the validators) and a package's `__init__` (settings/__init__.py loads yaml)."""
    assert "kubernetes_validate" in third_party_imports(PROJECT_DIR / "tools" / "validate.py")
    assert "kubernetes_validate" not in third_party_imports(PROJECT_DIR / "tools" / "render.py")


def test_each_requirement_has_one_home_and_the_files_include_each_other_in_order() -> None:
    files = ["requirements.txt", "requirements-plan.txt", "requirements-dev.txt"]
    named = [requirement_names(f) for f in files]
    assert all(not (a & b) for i, a in enumerate(named) for b in named[i + 1 :])
    includes = {
        f: re.findall(r"^-r (\S+)$", (PROJECT_DIR / f).read_text(), re.MULTILINE) for f in files
    }
    assert includes == {
        "requirements.txt": [],
        "requirements-plan.txt": ["requirements.txt"],
        "requirements-dev.txt": ["requirements.txt", "requirements-plan.txt"],
    }
    assert {"pytest", "mypy", "ruff", "hypothesis", "import-linter"} <= named[2]


@pytest.mark.parametrize(
    ("target", "files"),
    [
        ("install", ["requirements.txt"]),
        ("plan", ["requirements.txt", "requirements-plan.txt"]),
        ("plans", ["requirements.txt", "requirements-plan.txt"]),
        ("bench", ["requirements.txt", "requirements-plan.txt"]),
        ("test", ["requirements.txt", "requirements-plan.txt", "requirements-dev.txt"]),
    ],
)
def test_make_installs_what_each_target_runs(target: str, files: list[str], tmp_path: Path) -> None:
    """`make -n` against an empty virtualenv path: the requirement files it would install."""
    result = subprocess.run(
        ["make", "-n", target, f"VENV={tmp_path / 'venv'}"],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        check=True,
    )
    assert re.findall(r"pip install --quiet -r (\S+)", result.stdout) == files


# The packages only the plan's validators and the tests use: the plan-diff job of preview.yml runs
# `tools.plan --no-validate` after `make install`, which installs none of them.
NOT_IN_REQUIREMENTS_TXT = [
    "jsonschema",
    "kubernetes_validate",
    "parliament",
    "referencing",
    "pytest",
    "hypothesis",
]
BLOCKED_RUN = f"""
import sys
from importlib.abc import MetaPathFinder

class Block(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {NOT_IN_REQUIREMENTS_TXT!r}:
            raise ImportError(f"{{name}} is not in requirements.txt")
        return None

sys.meta_path.insert(0, Block())
from tools.plan import main
sys.exit(main(sys.argv[1:]))
"""


def test_the_plan_without_validators_needs_only_requirements_txt() -> None:
    result = subprocess.run(
        [sys.executable, "-c", BLOCKED_RUN, "--stack", "dev", "--no-validate"],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "✓ all invariants hold" in result.stdout
    blocked = subprocess.run(
        [sys.executable, "-c", BLOCKED_RUN, "--stack", "dev"],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        check=False,
    )
    # The block works: with validation on, the plan cannot load its validators.
    assert blocked.returncode != 0
    assert "is not in requirements.txt" in blocked.stderr

"""Where each module of the kiam_eks package lives in this checkout, read from pyproject.toml's
`[tool.setuptools.package-dir]` (the one place the mapping is written): `kiam_eks.components` is
the folder `components/`, and so on.

Its users: the checks that walk the package's source (tests/test_requirements.py) and the
mutation runner, which puts a tree of links to a mutated copy's folders ahead of the installed
package (`link_tree`).
"""

from __future__ import annotations

import tomllib
from pathlib import Path

PACKAGE = "kiam_eks"
ROOT = Path(__file__).resolve().parent.parent


def package_dirs(root: Path = ROOT) -> dict[str, Path]:
    """Each package name (`kiam_eks`, `kiam_eks.components`, ...) and its folder under `root`."""
    text = (root / "pyproject.toml").read_text()
    mapping = tomllib.loads(text)["tool"]["setuptools"]["package-dir"]
    return {name: root / folder for name, folder in mapping.items()}


def module_file(module: str, root: Path = ROOT) -> Path | None:
    """The source file of a kiam_eks module (or package), or None for a name outside it."""
    dirs = package_dirs(root)
    parts = module.split(".")
    for depth in range(len(parts), 0, -1):
        folder = dirs.get(".".join(parts[:depth]))
        if folder is None:
            continue
        base = folder.joinpath(*parts[depth:])
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
        return None
    return None


def link_tree(root: Path, into: Path) -> Path:
    """Build, under `into`, a `kiam_eks` whose subpackages are links to `root`'s folders, and
    return `into`: on `sys.path` (PYTHONPATH) ahead of site-packages, `import kiam_eks` then loads
    `root`'s code, not the checkout's editable install."""
    dirs = package_dirs(root)
    top = into / PACKAGE
    top.mkdir(parents=True, exist_ok=True)
    for name, folder in dirs.items():
        if name == PACKAGE:
            for entry in folder.iterdir():
                link = top / entry.name
                if not link.exists():
                    link.symlink_to(entry.resolve())
            continue
        link = top / name.removeprefix(PACKAGE + ".")
        if not link.exists():
            link.symlink_to(folder.resolve(), target_is_directory=True)
    return into

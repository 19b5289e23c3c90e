"""A copy of this checkout's working tree as a clone of it would hold it: the tracked files and
the new ones git does not ignore, as they are now, without environments, builds or caches."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def copy_working_tree(tree: Path, repo: Path = REPO) -> Path:
    """Copy `repo`'s tracked and untracked (not ignored) files to `tree` (replaced if there)."""
    if tree.exists():
        shutil.rmtree(tree)
    listing = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=repo,
        check=True,
        capture_output=True,
    ).stdout.decode()
    for name in filter(None, listing.split("\0")):
        source = repo / name
        if not source.is_file():  # deleted in the work tree, or a submodule
            continue
        destination = tree / name
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, destination, follow_symlinks=False)
    return tree

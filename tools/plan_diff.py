"""Compare two rendered plans object by object: what a merge would change, readable in review.

    python -m tools.plan_diff BASE_DIR HEAD_DIR     # two folders written by `tools.plan --out`
    python -m tools.plan --stack dev --diff BASE_DIR  # the current program against a folder

Exit 0 when the plans are equal, 1 when they differ.
"""

from __future__ import annotations

import difflib
import sys
from dataclasses import dataclass
from pathlib import Path

from tools.render import OBJECT_FOLDERS


@dataclass(frozen=True)
class PlanDiff:
    """Per-object unified diffs and the counts of the summary line."""

    text: str
    added: list[str]
    changed: list[str]
    removed: list[str]

    @property
    def equal(self) -> bool:
        return not (self.added or self.changed or self.removed)

    def summary(self) -> str:
        return f"{len(self.added)} objects added, {len(self.changed)} changed, {len(self.removed)} removed"


def read_plan_dir(path: Path) -> dict[str, str]:
    """The per-object files of a plan folder, by their path inside it (missing folders are empty)."""
    files = {}
    for folder in OBJECT_FOLDERS:
        for file in sorted((path / folder).glob("*")) if (path / folder).is_dir() else []:
            files[f"{folder}/{file.name}"] = file.read_text()
    return files


def diff_plans(base: dict[str, str], head: dict[str, str]) -> PlanDiff:
    """Unified diffs of every object that was added, changed or removed, in path order."""
    objects = {k for k in base | head if k.split("/", 1)[0] in OBJECT_FOLDERS}
    added: list[str] = []
    changed: list[str] = []
    removed: list[str] = []
    chunks: list[str] = []
    for name in sorted(objects):
        before, after = base.get(name), head.get(name)
        if before == after:
            continue
        (added if before is None else removed if after is None else changed).append(name)
        chunks.extend(
            difflib.unified_diff(
                (before or "").splitlines(keepends=True),
                (after or "").splitlines(keepends=True),
                fromfile=f"base/{name}" if before is not None else "/dev/null",
                tofile=f"head/{name}" if after is not None else "/dev/null",
            )
        )
    return PlanDiff(text="".join(chunks), added=added, changed=changed, removed=removed)


def report(result: PlanDiff) -> str:
    """What the command prints: the diffs, then one summary line."""
    body = result.text if result.text.endswith("\n") or not result.text else result.text + "\n"
    return f"{body}{result.summary()}"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    result = diff_plans(read_plan_dir(Path(args[0])), read_plan_dir(Path(args[1])))
    print(report(result))
    return 0 if result.equal else 1


if __name__ == "__main__":
    sys.exit(main())

"""Compare two rendered plans object by object: what a merge would change, readable in review.

    python -m tools.plan_diff BASE_DIR HEAD_DIR     # two folders written by `tools.plan --out`
    python -m tools.plan --stack dev --diff BASE_DIR  # the current program against a folder

Exit 0 when the plans are equal, 1 when they differ.
"""

from __future__ import annotations

import difflib
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kiam_eks.contracts.eks_node_group import FORCE_NEW, REPLACE_ON_CHANGES
from kiam_eks.contracts.rollouts import POD_TEMPLATE_PATH
from tools.render import OBJECT_FOLDERS


@dataclass(frozen=True)
class PlanDiff:
    """Per-object unified diffs and the counts of the summary line."""

    text: str
    added: list[str]
    changed: list[str]
    removed: list[str]
    consequences: list[str] = field(default_factory=list)
    """What the change does to running pods and to what holds them, in words."""

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


def diff_plans(
    base: dict[str, str], head: dict[str, str], agent_rollout: str | None = None
) -> PlanDiff:
    """Unified diffs of every object that was added, changed or removed, in path order;
    `agent_rollout` says how the agents roll on the stack's cluster, when the settings are known
    (`AgentRolloutSettings.describe`)."""
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
    return PlanDiff(
        text="".join(chunks),
        added=added,
        changed=changed,
        removed=removed,
        consequences=consequences(base, head, agent_rollout),
    )


def consequences(
    base: dict[str, str], head: dict[str, str], agent_rollout: str | None = None
) -> list[str]:
    """What a reviewer must not miss: pods that restart or stop, a namespace deleted with
    everything in it, certificates re-issued, the server node group replaced."""
    out: list[str] = []
    before, after = _objects(base), _objects(head)
    for key in sorted(before.keys() | after.keys()):
        kind, name = key
        old, new = before.get(key), after.get(key)
        what = {"Deployment": "the servers", "DaemonSet": "the agents"}.get(kind)
        if kind == "Namespace" and new is None:
            out.append(f"namespace {name} is deleted, and with it every object in it")
        elif what and new is None:
            out.append(f"{what} stop: {kind} {name} is deleted")
        elif what and old is not None and _template(old) != _template(new):
            step = (
                "one server at a time"
                if kind == "Deployment"
                else agent_rollout or f"{_max_unavailable(new)} nodes at a time"
            )
            out.append(f"{what} restart ({kind} {name}'s pod template changes), {step}")
    certificates = sorted(
        f.removeprefix("tls/").removesuffix(".json")
        for f in base.keys() | head.keys()
        if f.startswith("tls/") and base.get(f) != head.get(f)
    )
    if certificates:
        out.append(
            "certificates change (" + ", ".join(certificates) + "): the TLS Secrets holding "
            "them are updated in place"
        )
    for f in sorted(k for k in base.keys() & head.keys() if k.startswith("aws/nodegroup-")):
        old_group, new_group = json.loads(base[f]), json.loads(head[f])
        forcing = {p.split(".", 1)[0] for p in (*FORCE_NEW, *REPLACE_ON_CHANGES)}
        changed = sorted(k for k in forcing if old_group.get(k) != new_group.get(k))
        if changed:
            out.append(
                "the server node group is replaced (" + ", ".join(changed) + "): new nodes "
                "first, the servers Ready there, then the old nodes drained"
            )
    return out


def _objects(files: dict[str, str]) -> dict[tuple[str, str], Any]:
    found: dict[tuple[str, str], Any] = {}
    for name, text in files.items():
        if name.startswith("manifests/"):
            obj = yaml.safe_load(text) or {}
            meta = obj.get("metadata") or {}
            found[(str(obj.get("kind")), str(meta.get("name")))] = obj
    return found


def _max_unavailable(daemon_set: Any) -> Any:
    strategy = (daemon_set.get("spec") or {}).get("updateStrategy") or {}
    return (strategy.get("rollingUpdate") or {}).get("maxUnavailable", 1)


def _template(obj: Any) -> Any:
    for key in POD_TEMPLATE_PATH:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def report(result: PlanDiff) -> str:
    """What the command prints: the diffs, what they do to running pods, one summary line."""
    body = result.text if result.text.endswith("\n") or not result.text else result.text + "\n"
    if result.consequences:
        body += "What it does:\n" + "".join(f"  - {c}\n" for c in result.consequences)
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

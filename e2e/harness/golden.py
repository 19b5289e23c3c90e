"""Golden previews: `pulumi preview` text made comparable from run to run.

What varies between two previews of the same change is removed or put in a fixed order: timings,
local paths, the provider's id, and the order of resource blocks. The engine registers siblings
concurrently, so the blocks of one parent's children come in any order, at every depth (the
children of a new component are nested under it), even with `--parallel 1`.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path

GOLDEN = Path(__file__).resolve().parent.parent / "golden"

# The first line of one resource's block, at any depth:
# `    ~ kubernetes:apps/v1:Deployment: (update)` or `  pulumi:pulumi:Stack: (same)`.
BLOCK_HEADER = re.compile(r"^(?P<indent> +)(?:[-+~]+ ?)?[\w.-]+:[\w./-]+:\w+: \(")
# Where the resource tree ends: the stack outputs and the summary are kept as they are.
TREE_END = ("    --outputs:--", "Resources:")


def normalise(text: str) -> str:
    """The preview without timings, paths and the provider's id, its sibling blocks sorted."""
    text = re.sub(r"Duration: \S+", "Duration: <t>", text)
    text = re.sub(r"(pulumi:providers:kubernetes::kubernetes::)[0-9a-f-]{36}", r"\1<id>", text)
    text = re.sub(r"/tmp/\S+", "<tmp>", text)
    # A CA made for the run (the adoption's running install): its fingerprint is the run's own.
    text = re.sub(r"sha256:[0-9a-f]{64}", "sha256:<fingerprint>", text)
    # The stand-in group's name is the provider's auto-name, `<name>-<8 random characters>`, new
    # for each group, as EKS's suffix is.
    text = re.sub(r"\b(kiam-server-nodes)-[0-9a-z]{8}\b", r"\1-<suffix>", text)
    lines = [line.rstrip() for line in text.splitlines() if "View in Browser" not in line]
    end = next((i for i, line in enumerate(lines) if line.startswith(TREE_END)), len(lines))
    return "\n".join([*sort_blocks(lines[:end]), *lines[end:]]).strip() + "\n"


def sort_blocks(lines: list[str]) -> list[str]:
    """The lines with every run of sibling resource blocks sorted by their (sorted) text."""
    depths = [len(m["indent"]) for line in lines if (m := BLOCK_HEADER.match(line))]
    if not depths:
        return lines
    depth = min(depths)
    head: list[str] = []
    blocks: list[list[str]] = []
    for line in lines:
        header = BLOCK_HEADER.match(line)
        if header and len(header["indent"]) == depth:
            blocks.append([line])
        elif blocks:
            blocks[-1].append(line)
        else:
            head.append(line)
    ordered = sorted(([block[0], *sort_blocks(block[1:])] for block in blocks), key="\n".join)
    return [*head, *(line for block in ordered for line in block)]


def check_golden(name: str, text: str, update: bool) -> None:
    """`text` is the golden file `name` (with `update`, it becomes it)."""
    path = GOLDEN / name
    if update:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"{path} is missing: run the suite with --update-golden"
    golden = path.read_text()
    assert text == golden, (
        f"{name} differs from the golden file (--update-golden to accept):\n"
        + "".join(
            difflib.unified_diff(
                golden.splitlines(keepends=True),
                text.splitlines(keepends=True),
                fromfile=f"golden/{name}",
                tofile="this run",
            )
        )
    )

"""Rolling one adoption phase (docs/migration.md) across the fleet: each stack's file must stand
at the phase before (or already at this one, when a rollout resumes); the tool then sets
`kiam:adoption.phase` as the stack's wave comes, as `pulumi config set --path` does."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

import yaml

from kiam_eks.settings.adoption import Phase

PHASES: tuple[str, ...] = get_args(Phase)  # servers, takeover, complete
KEY_PATH = "kiam:adoption.phase"


def previous_phase(phase: str) -> str | None:
    """The phase a stack must have completed before it moves to `phase` (None: the first one,
    whose `kiam:adoption` the operator writes by hand, docs/migration.md)."""
    index = PHASES.index(phase)
    return PHASES[index - 1] if index else None


def phase_in(stack_file: Path) -> str | None:
    """`kiam:adoption.phase` in a stack file (None without `kiam:adoption`)."""
    config = (yaml.safe_load(stack_file.read_text()) or {}).get("config") or {}
    adoption = config.get("kiam:adoption")
    return adoption.get("phase") if isinstance(adoption, dict) else None


def refusal(stack: str, stack_file: Path, phase: str) -> str | None:
    """Why `stack` may not move to `phase` now, or None if it may."""
    current = phase_in(stack_file)
    before = previous_phase(phase)
    if current == phase:
        return None
    if before is None:
        return (
            f"{stack}: {stack_file} has {KEY_PATH} {current or 'unset'}; phase servers is "
            "written by hand with the rest of kiam:adoption (docs/migration.md), then rolled out"
        )
    if current != before:
        return (
            f"{stack}: {stack_file} has {KEY_PATH} {current or 'unset'}; moving to {phase} "
            f"needs {before} first"
        )
    return None

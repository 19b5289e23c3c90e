"""Which stacks the fleet holds, which a pattern selects, and the plan of waves a rollout follows."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path

import yaml

from tools.fleet.fleet_file import FleetFile, FleetFileError, Wave


def matches(pattern: str, stack: str) -> bool:
    """A stack name against a name or an fnmatch pattern (`prod-*`, `eu-?`), case-sensitively."""
    return fnmatch.fnmatchcase(stack, pattern)


def select(stacks: list[str], patterns: list[str]) -> list[str]:
    """The stacks any pattern matches, in the fleet's order; every pattern must match one."""
    if not patterns:
        return list(stacks)
    unmatched = [p for p in patterns if not any(matches(p, s) for s in stacks)]
    if unmatched:
        raise ValueError(
            f"no stack matches {', '.join(repr(p) for p in unmatched)} (stacks: {', '.join(stacks)})"
        )
    return [s for s in stacks if any(matches(p, s) for p in patterns)]


def stack_config_dir(project: Path) -> Path:
    """Where the project keeps its stack files (`stackConfigDir` in Pulumi.yaml, else itself;
    a folder without a Pulumi.yaml holds no stack of its own)."""
    settings = project / "Pulumi.yaml"
    document = (yaml.safe_load(settings.read_text()) or {}) if settings.exists() else {}
    return project / str(document.get("stackConfigDir") or ".")


def fleet_stacks(fleet: FleetFile) -> list[str]:
    """Every stack of the fleet, sorted: those with a file in the project's stack folder and those
    the fleet file places elsewhere (`stacks:` with a `workDir`)."""
    found = {
        p.name.removeprefix("Pulumi.").removesuffix(".yaml")
        for p in stack_config_dir(fleet.project).glob("Pulumi.*.yaml")
    }
    return sorted(found | set(fleet.stacks))


def stack_file(fleet: FleetFile, stack: str) -> Path:
    """The settings file of one stack."""
    target = fleet.stacks.get(stack)
    if target is not None and target.stack_file is not None:
        return target.stack_file
    project = target.work_dir if target is not None and target.work_dir else fleet.project
    return stack_config_dir(project) / f"Pulumi.{stack}.yaml"


@dataclass(frozen=True)
class PlannedWave:
    """A wave with the stacks it holds, in order."""

    wave: Wave
    stacks: tuple[str, ...]


def plan_waves(fleet: FleetFile, stacks: list[str], source: str) -> list[PlannedWave]:
    """Each wave's stacks, in declaration order. A stack no wave names, or two waves name, and a
    pattern that matches no stack are mistakes of the fleet file."""
    problems: list[str] = []
    owner: dict[str, str] = {}
    planned: list[PlannedWave] = []
    for index, wave in enumerate(fleet.waves):
        held: list[str] = []
        for pattern in wave.stacks:
            hits = [s for s in stacks if matches(pattern, s)]
            if not hits:
                problems.append(
                    f"waves[{index}].stacks: {pattern!r} matches no stack (stacks: {', '.join(stacks)})"
                )
            for stack in hits:
                if stack in owner and owner[stack] != wave.name:
                    problems.append(
                        f"waves[{index}].stacks: {stack} is already in wave {owner[stack]}: a stack "
                        "belongs to one wave"
                    )
                elif stack not in held:
                    owner[stack] = wave.name
                    held.append(stack)
        planned.append(PlannedWave(wave, tuple(held)))
    missing = [s for s in stacks if s not in owner]
    if missing:
        problems.append(
            f"waves: {', '.join(missing)} {'is' if len(missing) == 1 else 'are'} in no wave: "
            "every stack of the fleet rolls out in exactly one"
        )
    if problems:
        raise FleetFileError(source, problems)
    return planned


def render_plan(planned: list[PlannedWave]) -> str:
    """The dry run's plan of waves, one line per wave."""
    lines = [f"Rollout plan: {len(planned)} waves, {sum(len(p.stacks) for p in planned)} stacks"]
    for number, p in enumerate(planned, 1):
        soak = f"soak {p.wave.soak}" if p.wave.soak_seconds else "no soak"
        lines.append(
            f"  {number}. {p.wave.name}: {', '.join(p.stacks)} ({p.wave.parallel} at once, {soak})"
        )
    return "\n".join(lines)

"""python -m tools.fleet: preview every stack at once, roll a change out in waves behind health gates.

    python -m tools.fleet preview [--stacks PATTERN...] [--parallel N] [--markdown FILE]
    python -m tools.fleet up [--dry-run] [--resume] [--adoption-phase PHASE] [--waves NAME...]
                             [--adopt URN=ID...]
    python -m tools.fleet waves                # the waves' names as JSON (the deploy workflow)

Both read `--fleet fleet.yaml` (the default). Exit codes, as the plan's: 0 clean; 1 a preview,
a policy, an `up` or a health gate failed (the rollout stopped; also when a stack's step raised,
which the rollout records as its failure); 2 the fleet file or a stack's settings are invalid
(nothing was previewed or changed); 130 or 143 cancelled by SIGINT or SIGTERM (each running
`pulumi` cancelled gracefully, its stack recorded as interrupted).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kiam_eks.program.kube_api import KubeApi
from kiam_eks.settings import SettingsError, settings_from_stack_file
from kiam_eks.settings.stack import StackSettings
from tools.fleet.adoption import KEY_PATH, PHASES, refusal
from tools.fleet.cancellation import Cancellation
from tools.fleet.engine import AutomationEngine, Engine, OnEvent
from tools.fleet.fleet_file import DEFAULT_FLEET_FILE, FleetFile, FleetFileError, load_fleet_file
from tools.fleet.gate import Expectation, gate_timeout, read_cluster, run_gate
from tools.fleet.kubeconfig import kubeconfig_for
from tools.fleet.preview import preview_fleet
from tools.fleet.recovery import recover_stack, up_unlocked
from tools.fleet.report import markdown_table, text_table
from tools.fleet.rollout import RolloutState, roll_out, running_elsewhere
from tools.fleet.waves import fleet_stacks, plan_waves, render_plan, select, stack_file
from tools.interrupted.lookup import adopted_arguments

EXIT_OK, EXIT_FAILED, EXIT_INVALID = 0, 1, 2
# A rollout cancelled by a signal exits as a shell reports a process that signal ended:
# 128 + its number (130 for SIGINT, 143 for SIGTERM).
EXIT_SIGNALLED = 128

EngineFactory = Callable[[FleetFile], Engine]


def main(
    argv: list[str] | None = None,
    engine_factory: EngineFactory | None = None,
    cancellation: Cancellation | None = None,
) -> int:
    """The command; `engine_factory` and `cancellation` are the unit tests' (by default the
    Automation API, and SIGINT and SIGTERM handled while the command runs)."""
    if cancellation is None:
        cancellation = Cancellation()
        with cancellation.installed():
            return main(argv, engine_factory, cancellation)
    parser = argparse.ArgumentParser(
        prog="python -m tools.fleet", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--fleet", type=Path, default=DEFAULT_FLEET_FILE, help="the fleet file")
    commands = parser.add_subparsers(dest="command", required=True)
    preview = commands.add_parser("preview", help="preview every stack (or a selection)")
    preview.add_argument("--stacks", nargs="+", default=[], metavar="PATTERN")
    preview.add_argument("--parallel", type=int, default=4, metavar="N")
    preview.add_argument("--markdown", type=Path, metavar="FILE", help="also write the table here")
    up = commands.add_parser("up", help="apply wave by wave, each stack behind its health gate")
    up.add_argument("--dry-run", action="store_true", help="print the plan of waves only")
    up.add_argument("--resume", action="store_true", help="go on from the last stopped rollout")
    up.add_argument("--waves", nargs="+", default=[], metavar="NAME", help="only these waves")
    up.add_argument("--adoption-phase", choices=PHASES, help="move every stack to this phase")
    up.add_argument(
        "--adopt",
        nargs="+",
        default=[],
        metavar="URN=ID",
        help="record an object an interrupted create left (as a recovery message names it)",
    )
    commands.add_parser("waves", help="the waves' names, as JSON")
    args = parser.parse_args(argv)

    try:
        fleet = load_fleet_file(args.fleet)
        stacks = fleet_stacks(fleet)
        planned = plan_waves(fleet, stacks, str(args.fleet))
    except FleetFileError as error:
        print(error, file=sys.stderr)
        return EXIT_INVALID

    if args.command == "waves":
        print(json.dumps([p.wave.name for p in planned]))
        return EXIT_OK

    def factory(f: FleetFile) -> Engine:
        return engine_factory(f) if engine_factory else AutomationEngine(f, cancellation)

    if args.command == "preview":
        try:
            chosen = select(stacks, args.stacks)
        except ValueError as error:
            print(f"--stacks: {error}", file=sys.stderr)
            return EXIT_INVALID
        return _preview(fleet, factory, chosen, args)
    return _up(fleet, factory, planned, args, cancellation)


def _settings(
    fleet: FleetFile, stacks: list[str]
) -> tuple[dict[str, StackSettings], dict[str, str]]:
    """Each stack's settings, and the message of each whose settings are invalid."""
    good: dict[str, StackSettings] = {}
    bad: dict[str, str] = {}
    for stack in stacks:
        try:
            good[stack], _ = settings_from_stack_file(stack_file(fleet, stack))
        except SettingsError as error:
            bad[stack] = str(error)
    return good, bad


def _preview(
    fleet: FleetFile,
    factory: Callable[[FleetFile], Engine],
    stacks: list[str],
    args: argparse.Namespace,
) -> int:
    _, invalid = _settings(fleet, stacks)
    for message in invalid.values():
        print(message, file=sys.stderr)
    started = time.monotonic()
    rows = preview_fleet(
        factory(fleet),
        stacks,
        args.parallel,
        {s: "invalid settings" for s in invalid},
        lambda line: print(line, file=sys.stderr, flush=True),
    )
    print(text_table(rows))
    print(f"({time.monotonic() - started:.1f} s, {args.parallel} at once)", file=sys.stderr)
    if args.markdown:
        args.markdown.write_text(markdown_table(rows))
    if invalid:
        return EXIT_INVALID
    return EXIT_FAILED if any(r.failed for r in rows) else EXIT_OK


def _up(
    fleet: FleetFile,
    factory: Callable[[FleetFile], Engine],
    planned: list,  # type: ignore[type-arg]
    args: argparse.Namespace,
    cancellation: Cancellation,
) -> int:
    if args.waves:
        unknown = [w for w in args.waves if w not in {p.wave.name for p in planned}]
        if unknown:
            print(f"--waves: no wave named {', '.join(unknown)}", file=sys.stderr)
            return EXIT_INVALID
        planned = [p for p in planned if p.wave.name in args.waves]
    try:
        adopted = adopted_arguments(args.adopt)
    except ValueError as error:
        print(error, file=sys.stderr)
        return EXIT_INVALID
    print(render_plan(planned), flush=True)
    if args.dry_run:
        return EXIT_OK
    stacks = [s for p in planned for s in p.stacks]
    settings, invalid = _settings(fleet, stacks)
    if invalid:
        for message in invalid.values():
            print(message, file=sys.stderr)
        return EXIT_INVALID

    state_path = fleet.state_file
    running = running_elsewhere(state_path)
    if running:
        print(
            f"{state_path}: another rollout is running {', '.join(running)} "
            "(this host; its process is alive): wait for it, or stop it (it cancels gracefully "
            "on SIGINT)",
            file=sys.stderr,
        )
        return EXIT_FAILED
    if args.resume and state_path.exists():
        state = RolloutState.load(state_path)
        if state.adoption_phase != args.adoption_phase:
            print(
                f"--resume: the stopped rollout moved to adoption phase {state.adoption_phase}, "
                f"not {args.adoption_phase}",
                file=sys.stderr,
            )
            return EXIT_INVALID
    else:
        state = RolloutState(adoption_phase=args.adoption_phase)

    phase = args.adoption_phase
    if phase and fleet.adoption.gate == "fleet":
        refusals = [
            r
            for s in stacks
            if state.status(s) != "done" and (r := refusal(s, stack_file(fleet, s), phase))
        ]
        if refusals:
            print(
                "\n".join(["Not every stack is ready for this phase:", *refusals]), file=sys.stderr
            )
            return EXIT_FAILED

    engine = factory(fleet)
    apis: dict[str, KubeApi] = {}

    def api(stack: str) -> KubeApi:
        if stack not in apis:
            kubeconfig = kubeconfig_for(fleet, engine, stack, settings[stack], state_path.parent)
            apis[stack] = KubeApi(kubeconfig)
        return apis[stack]

    def prepare(stack: str) -> None:
        if not phase:
            return
        why = refusal(stack, stack_file(fleet, stack), phase)
        if why:
            raise ValueError(why)
        engine.set_config_path(stack, KEY_PATH, phase)
        settings[stack], _ = settings_from_stack_file(stack_file(fleet, stack))

    def gate(stack: str, progress: Callable[[str], None]) -> tuple[bool, str]:
        expect = Expectation.of(settings[stack], engine.outputs(stack))
        cluster = api(stack)
        wave = next(p.wave for p in planned if stack in p.stacks)
        result = run_gate(
            lambda: read_cluster(cluster, expect),
            expect,
            timeout=gate_timeout(fleet.gate.timeout_seconds, settings[stack]),
            poll=fleet.gate.poll_seconds,
            soak=wave.soak_seconds,
            progress=progress,
            sleep=cancellation.sleep,
        )
        return result.ok, result.reason

    def say(line: str) -> None:
        print(line, flush=True)

    state.save(state_path)
    outcome = roll_out(
        _Unlocking(engine, say),
        planned,
        gate,
        state,
        lambda current: current.save(state_path),
        say,
        prepare,
        recover=lambda stack, progress: recover_stack(
            engine, api, stack, settings[stack].cluster.region, adopted, progress
        ),
        cancelled=lambda: cancellation.signal_name if cancellation.cancelled else None,
    )
    print(outcome.render())
    if cancellation.signal is not None:
        return EXIT_SIGNALLED + cancellation.signal
    return EXIT_OK if outcome.ok else EXIT_FAILED


@dataclass(frozen=True)
class _Unlocking:
    """The engine, whose `up` removes the stack's dead locks and runs once more when refused."""

    engine: Engine
    progress: Callable[[str], None]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.engine, name)

    def up(self, stack: str, on_event: OnEvent) -> None:
        up_unlocked(self.engine, stack, on_event, lambda line: self.progress(f"{stack}: {line}"))

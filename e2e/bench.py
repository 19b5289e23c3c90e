"""`make e2e-bench`: the dev stack's Kubernetes side on the real engine against the engine's own
floor, a bare program registering as many plain ConfigMaps on the same cluster.

For each program, `RUNS` times: `pulumi preview` of an empty stack, `pulumi up` (install), a
second `pulumi preview` and `pulumi up` (nothing to change), `pulumi destroy`, the programs taking
turns at each (`measure`); medians and their ratios are printed as the Markdown table
`docs/performance.md` keeps, and for the no-change steps the CPU each kind of process spent (the
CLI, the program, the provider...: e2e/harness/process_cpu.py), which says whose work a
difference between two programs is.

With `--applications N [--namespaces M]` the stack is the scale stack of N applications over M
team namespaces (`tools/scale_stack.py`) instead of the dev example stack: the cluster is shaped
for it (its namespaces created, as its teams' are on a real cluster) and the floor registers as
many ConfigMaps as it has Kubernetes resources (and as many component resources as the stack
has). Beside the bare floor, one carrying the kiam stack's outputs too (its stack outputs, and
what each of its components records, the `Kiam` component's record of what it installed among
them: the same values for the engine to store and compare) and one registering its
ConfigMaps by type token, as the program registers its objects (components/kubernetes_objects.py),
with no SDK class imported. Issue 39's target there: `preview` and the no-change `up` within 1.3x
of the floor at 1,000 applications, which the scale stack keeps in a file of their own
(`kiam:applicationsFile`): no stack file of that shape holds more than 737
(contracts/pulumi_config.py).

    python -m e2e.bench [--runs 5]
    python -m e2e.bench --applications 1000 [--namespaces 20] --runs 1
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from pulumi.runtime import rpc

from e2e.harness import toolchain
from e2e.harness.environment import Environment, write_stack_file
from e2e.harness.process_cpu import KINDS, cpu_by_kind
from e2e.harness.pulumi import PulumiStack
from e2e.harness.waiting import wait_for
from e2e.tests.conftest import example_config
from kiam_eks.contracts.tokens import STACK
from kiam_eks.settings import SettingsError, settings_from_stack_file
from tools.bench import compile_project
from tools.scale_stack import scale_config

FLOOR_PROGRAM = toolchain.REPO / "e2e" / "floor"
STEPS = ("preview", "up", "preview (no change)", "up (no change)", "destroy")
# The floors: (stack name, exports the kiam stack's outputs, registers by type token).
FLOORS = (("floor", False, False), ("floor+outputs", True, False), ("floor-by-token", False, True))
FLOOR_LABELS = {
    "floor": "floor",
    "floor+outputs": "floor + outputs",
    "floor-by-token": "floor by type token",
}
# tools.scale_stack's own default.
DEFAULT_NAMESPACES = 20


Times = dict[str, dict[str, list[float]]]
"""Each stack's seconds of each step, one per run."""
Cpu = dict[str, dict[str, list[dict[str, float]]]]
"""Each stack's CPU of each step, one per run: seconds by kind of process and `ALL_PROCESSES`."""
ALL_PROCESSES = "all, exact"
# The steps issue 39's target is about, whose CPU the bench prints by process.
CPU_STEPS = ("preview (no change)", "up (no change)")


def measure(
    stacks: dict[str, PulumiStack], runs: int, settle: Callable[[], None]
) -> tuple[Times, Cpu]:
    """Each stack's times of each step, and the CPU each kind of process spent on it
    (e2e/harness/process_cpu.py), `runs` rounds in which the stacks take turns at every
    step: a load that drifts during the measurement (another process, the machine) falls on all
    of them alike, as in tools/bench.py. Each round installs every stack (its preview first),
    then times each installed stack's no-change preview and `up` in turn, so that no stack is
    timed right after its own install while the cluster still takes in what it created; then
    destroys them, and `settle` waits until no pod the destroys deleted is still terminating."""
    times: Times = {n: {step: [] for step in STEPS} for n in stacks}
    cpu: Cpu = {n: {step: [] for step in STEPS} for n in stacks}

    def timed(name: str, step: str, run: Callable[[], Any]) -> None:
        with cpu_by_kind() as spent:
            times[name][step].append(run().seconds)
        cpu[name][step].append({**spent.by_kind(), ALL_PROCESSES: spent.total})

    for _ in range(runs):
        for name, stack in stacks.items():
            timed(name, "preview", stack.preview)
            timed(name, "up", stack.up)
        for name, stack in stacks.items():
            timed(name, "preview (no change)", partial(stack.preview, "--expect-no-changes"))
            timed(name, "up (no change)", partial(stack.up, "--expect-no-changes"))
        for name, stack in stacks.items():
            timed(name, "destroy", stack.destroy)
        settle()
    return times, cpu


def cpu_table(cpu: Cpu, columns: list[tuple[str, str]]) -> list[str]:
    """The Markdown table of the median CPU each kind of process spent on each of `CPU_STEPS`,
    one column per (stack, label); a kind no stack spent anything on is left out."""
    lines = [
        f"| step | process | {' | '.join(label for _, label in columns)} |",
        "|---|---|" + "---|" * len(columns),
    ]
    for step in CPU_STEPS:
        for kind in (*KINDS, ALL_PROCESSES):
            medians = [
                statistics.median(run.get(kind, 0.0) for run in cpu[name][step])
                for name, _ in columns
            ]
            if kind == ALL_PROCESSES or any(m > 0 for m in medians):
                cells = " | ".join(f"{m:.2f}" for m in medians)
                lines.append(f"| `{step}` | {kind} | {cells} |")
    return lines


def terminating_pods(env: Environment) -> int:
    return sum(
        1 for pod in env.kube.items("/api/v1/pods") if pod["metadata"].get("deletionTimestamp")
    )


def resource_counts(resources: list[dict[str, Any]]) -> tuple[int, int]:
    """How many Kubernetes resources and how many component resources a stack's exported
    resources (`PulumiStack.resources`) hold (its providers and the root stack left out): what
    the floor registers as many of."""
    kubernetes = sum(
        1 for r in resources if r.get("custom") and r["type"].startswith("kubernetes:")
    )
    return kubernetes, len(_components(resources))


def component_outputs(resources: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What each component resource among a stack's exported resources records, in the
    checkpoint's order, as plain values a floor can register: a resource reference or a secret (a
    mapping holding the engine's signature key, pulumi/pulumi sdk/go/common/resource/sig/sig.go
    `Key`, which the Python SDK names `_special_sig_key`) becomes its URN or its ciphertext, one
    value as it is one to the engine's comparisons."""
    return [_plain(r.get("outputs") or {}) for r in _components(resources)]


def _components(resources: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The component resources: neither a custom resource (a provider is one) nor the root stack."""
    return [r for r in resources if not r.get("custom") and r["type"] != STACK]


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        if rpc._special_sig_key in value:
            return str(value.get("urn") or value.get("ciphertext") or value.get("value"))
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def bench_config(
    applications: int | None, namespaces: int, folder: Path
) -> tuple[str, dict[str, Any]]:
    """The benched stack's column label and `config:` map: the dev example stack, or the scale
    stack of `applications` applications over `namespaces` namespaces (its applications in a file
    in `folder` past what Pulumi's configuration holds)."""
    if applications is None:
        return "dev stack", example_config("dev")
    config = scale_config(applications, namespaces, folder)
    return f"scale stack ({applications} apps, {namespaces} ns)", config


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m e2e.bench", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--applications",
        type=int,
        metavar="N",
        help="bench the scale stack of N applications (tools/scale_stack.py), not the dev stack",
    )
    parser.add_argument(
        "--namespaces",
        type=int,
        metavar="M",
        help=f"the scale stack's team namespaces (default {DEFAULT_NAMESPACES}); "
        "only with --applications",
    )
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be 1 or more")
    if args.applications is None and args.namespaces is not None:
        parser.error("--namespaces needs --applications")
    namespaces = DEFAULT_NAMESPACES if args.namespaces is None else args.namespaces
    if args.applications is not None and (args.applications < 0 or namespaces < 1):
        parser.error("--applications must be 0 or more and --namespaces 1 or more")
    name = "dev" if args.applications is None else "scale"
    with tempfile.TemporaryDirectory(prefix="kiam-e2e-bench-") as tmp:
        root = Path(tmp)
        label, config = bench_config(args.applications, namespaces, root / "applications")
        stack_file = write_stack_file(root / f"Pulumi.{name}.yaml", config)
        try:
            # Refused settings stop here, before anything starts.
            settings_from_stack_file(stack_file)
        except SettingsError as error:
            print(error, file=sys.stderr)
            return 2
        # The programs' own modules read from bytecode, as the SDKs' are (tools/bench.py).
        compile_project(toolchain.REPO / "e2e")
        env = Environment.start(root, toolchain.bin_dir(), "kiam-bench")
        try:
            env.shape_for(stack_file)

            def settle() -> None:
                wait_for("no pod terminating", lambda: terminating_pods(env) == 0, 300)

            kiam = env.stack(name)
            kiam.create(stack_file)
            kiam.up()
            resources = kiam.resources()
            count, components = resource_counts(resources)
            outputs = root / "outputs.json"
            outputs.write_text(json.dumps(kiam.outputs()))
            outputs_size = outputs.stat().st_size
            recorded = root / "component-outputs.json"
            recorded.write_text(json.dumps(component_outputs(resources)))
            recorded_size = recorded.stat().st_size
            kiam.destroy()
            settle()
            floors = {
                key: floor_stack(
                    env,
                    key,
                    count,
                    components,
                    (outputs, recorded) if exported else None,
                    by_token,
                )
                for key, exported, by_token in FLOORS
            }
            results, cpu = measure({"kiam": kiam, **floors}, args.runs, settle)
        finally:
            env.stop()
    print(
        f"{count} Kubernetes resources and {components} component resources each; the second "
        f"floor also exports the kiam stack's outputs ({outputs_size} bytes of JSON) and records its "
        f"components' ({recorded_size} bytes), the third "
        f"registers its ConfigMaps by type token (no SDK class imported); median of "
        f"{args.runs} runs, seconds\n"
    )
    header = " | ".join(f"{FLOOR_LABELS[key]} | ratio" for key, _, _ in FLOORS)
    print(f"| step | {label} | {header} |\n|---|---|" + "---|---|" * len(FLOORS))
    for step in STEPS:
        ours = statistics.median(results["kiam"][step])
        cells = " | ".join(
            f"{floor:.2f} | {ours / floor:.2f}x"
            for floor in (statistics.median(results[key][step]) for key, _, _ in FLOORS)
        )
        print(f"| `{step}` | {ours:.2f} | {cells} |")
    print(
        "\nCPU seconds of each no-change step by process, median of the runs (each process "
        "sampled from /proc, a lower bound; the whole command's tree exact, "
        "e2e/harness/process_cpu.py):\n"
    )
    columns = [("kiam", label)] + [(key, FLOOR_LABELS[key]) for key, _, _ in FLOORS]
    print("\n".join(cpu_table(cpu, columns)))
    print("\nEach run, seconds:")
    for key, steps in results.items():
        print(
            f"- {key}: "
            + "; ".join(f"{s} {', '.join(f'{t:.2f}' for t in steps[s])}" for s in STEPS)
        )
    return 0


def floor_stack(
    env: Environment,
    name: str,
    resources: int,
    components: int,
    outputs: tuple[Path, Path] | None,
    by_token: bool,
) -> PulumiStack:
    """A stack of the floor program on the bench's cluster, registering `resources` ConfigMaps
    (`by_token`: by their type token, with no SDK class) and `components` component resources;
    with `outputs` (two JSON files), exporting the stack outputs in the first and having its
    components record those in the second."""
    stack = env.stack(
        name.replace("+", "-"),
        program_dir=FLOOR_PROGRAM,
        extra_env={
            "KIAM_E2E_FLOOR_RESOURCES": str(resources),
            "KIAM_E2E_FLOOR_COMPONENTS": str(components),
            **(
                {
                    "KIAM_E2E_FLOOR_OUTPUTS": str(outputs[0]),
                    "KIAM_E2E_FLOOR_COMPONENT_OUTPUTS": str(outputs[1]),
                }
                if outputs is not None
                else {}
            ),
            **({"KIAM_E2E_FLOOR_BY_TOKEN": "1"} if by_token else {}),
        },
    )
    stack.create(write_stack_file(env.root / f"Pulumi.{stack.stack}.yaml", {}))
    return stack


if __name__ == "__main__":
    raise SystemExit(main())

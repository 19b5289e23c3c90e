"""`make e2e-bench`: the dev stack's Kubernetes side on the real engine against the engine's own
floor, a bare program registering as many plain ConfigMaps on the same cluster.

For each program, `RUNS` times: `pulumi preview` of an empty stack, `pulumi up` (install), a
second `pulumi up` (nothing to change), `pulumi destroy`; medians and their ratios are printed as
the Markdown table `docs/performance.md` keeps.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from e2e.harness import toolchain
from e2e.harness.environment import Environment, write_stack_file
from e2e.harness.pulumi import PulumiStack
from e2e.tests.conftest import example_config

FLOOR_PROGRAM = toolchain.REPO / "e2e" / "floor"
STEPS = ("preview", "up", "up (no change)", "destroy")


def measure(stack: PulumiStack, runs: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {step: [] for step in STEPS}
    for _ in range(runs):
        times["preview"].append(stack.preview().seconds)
        times["up"].append(stack.up().seconds)
        times["up (no change)"].append(stack.up("--expect-no-changes").seconds)
        times["destroy"].append(stack.destroy().seconds)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kiam-e2e-bench-") as tmp:
        root = Path(tmp)
        env = Environment.start(root, toolchain.bin_dir(), "kiam-bench")
        try:
            config = example_config("dev")
            stack_file = write_stack_file(root / "Pulumi.dev.yaml", config)
            env.shape_for(stack_file)
            kiam = env.stack("dev")
            kiam.create(stack_file)
            kiam.up()
            count = sum(
                1
                for r in kiam.resources()
                if r["type"].startswith("kubernetes:")
                and not r["type"].startswith("pulumi:providers")
            )
            kiam.destroy()
            floor = PulumiStack(
                stack="floor",
                project_dir=root / "projects" / "floor",
                backend_dir=root / "backend",
                home=root / "pulumi-home",
                bin_dir=env.bin_dir,
                kubeconfig=env.plane.kubeconfig,
                state_dir=root / "state" / "floor",
                program_dir=FLOOR_PROGRAM,
                extra_env={"KIAM_E2E_FLOOR_RESOURCES": str(count)},
            )
            floor.create(write_stack_file(root / "Pulumi.floor.yaml", {}))
            results = {"kiam dev": measure(kiam, args.runs), "floor": measure(floor, args.runs)}
        finally:
            env.stop()
    print(f"{count} Kubernetes resources each; median of {args.runs} runs, seconds\n")
    print("| step | dev stack | floor | ratio |\n|---|---|---|---|")
    for step in STEPS:
        ours, base = (statistics.median(results[k][step]) for k in ("kiam dev", "floor"))
        print(f"| `{step}` | {ours:.2f} | {base:.2f} | {ours / base:.2f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

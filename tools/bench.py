"""Time the offline plan of each example stack against the floor of importing the SDKs it uses.

    python -m tools.bench [--runs 5] [--write]

Every measurement is a fresh process (what a user or CI pays), repeated; medians are reported.
The scale stack (tools/scale_stack.py) is planned at 10 and 1,000 applications too (their
applications in a file of their own): the larger within 4x of the smaller. Exit 1 where either
target is missed.
`--write` records the table, with the machine it ran on, in docs/performance.md.
"""

from __future__ import annotations

import argparse
import compileall
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import yaml

from kiam_eks.settings.loader import example_stacks
from tools.scale_stack import scale_stack

PROJECT_DIR = Path(__file__).resolve().parent.parent
REPORT = PROJECT_DIR / "docs" / "performance.md"
TARGET_RATIO = 1.5
# The plan of the scale stack (tools/scale_stack.py) at these sizes: the largest within
# SCALE_TARGET_RATIO of the smallest (issue 39: costs linear in the applications). A stack file of
# the scale stack's shape holds at most 737 applications (the configuration Pulumi hands the
# program, contracts/pulumi_config.py), so every case keeps its applications in a file of their
# own (`kiam:applicationsFile`), as a stack of 1,000 must.
SCALE_APPLICATIONS = (10, 1000)
SCALE_TARGET_RATIO = 4.0


def scale_label(applications: int) -> str:
    return f"plan of {applications:,} applications (scale stack, with validators)"


# The SDK classes the program uses. Their packages load submodules lazily, on first attribute
# access, so the floor must touch each class or it would time almost nothing. Its Kubernetes
# objects are not among them: components/kubernetes_objects.py registers them by type token.
FLOOR = """
import pydantic, yaml, pulumi, pulumi_tls
from pulumi_aws import Provider, ec2, eks, iam
from pulumi_kubernetes import Provider as K8sProvider, apiextensions
ec2.LaunchTemplate, eks.NodeGroup, eks.get_cluster_output, iam.Role, iam.RolePolicy, iam.RolePolicyAttachment
apiextensions.CustomResource
pulumi_tls.PrivateKey, pulumi_tls.LocallySignedCert
"""
# The same imports in a process that then ends as the plan's command line does (`exit_now`),
# without the interpreter's teardown: what importing the SDKs alone costs.
IMPORT_ONLY_FLOOR = FLOOR + "import os; os._exit(0)\n"


def _time(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, cwd=PROJECT_DIR, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def measure(runs: int) -> list[tuple[str, float]]:
    python = sys.executable
    stacks = example_stacks(PROJECT_DIR)
    compile_project()
    cases = [
        ("import floor (SDK classes the program uses)", [python, "-c", FLOOR]),
        ("import floor without the teardown", [python, "-c", IMPORT_ONLY_FLOOR]),
    ]
    for stack in stacks:
        cases.append(
            (f"plan {stack} (with validators)", [python, "-m", "tools.plan", "--stack", stack])
        )
        cases.append(
            (
                f"plan {stack} --no-validate",
                [python, "-m", "tools.plan", "--stack", stack, "--no-validate"],
            )
        )
    for applications in SCALE_APPLICATIONS:
        path = PROJECT_DIR / "build" / "bench" / f"Pulumi.scale-{applications}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        applications_file = path.with_name(f"applications-{applications}.yaml")
        path.write_text(yaml.safe_dump(scale_stack(applications, 20, applications_file)))
        cases.append(
            (
                scale_label(applications),
                [python, "-m", "tools.plan", "--config-file", str(path)],
            )
        )
    _time(cases[0][1])  # warm the OS file cache once, so the first case is not penalised
    # Round by round, every case once per round: a shared machine's load drifts over a
    # measurement, and timing all the floor's runs before all the plans' would put that drift
    # into the ratio.
    times: dict[str, list[float]] = {label: [] for label, _ in cases}
    for _ in range(runs):
        for label, command in cases:
            times[label].append(_time(command))
    return [(label, statistics.median(times[label])) for label, _ in cases]


def compile_project(*folders: Path) -> None:
    """Write the bytecode of this project's modules (and of `folders`), as Python does on their
    first import and pip on installing a package. An environment with PYTHONDONTWRITEBYTECODE set
    (this machine's is, and the e2e harness sets it) would otherwise compile them again in every
    measured process, while the SDKs' bytecode, written by pip, is read: not what a user's second
    plan pays."""
    import kiam_eks

    for folder in (Path(kiam_eks.__file__).parent, PROJECT_DIR / "tools", *folders):
        compileall.compile_dir(folder, quiet=1)


def report(results: list[tuple[str, float]], runs: int) -> str:
    floor, imports_alone = results[0][1], results[1][1]
    rows = "\n".join(
        f"| {label} | {seconds:.2f} s | {seconds / floor:.2f}x | {seconds / imports_alone:.2f}x |"
        for label, seconds in results
    )
    cpu = _cpu()
    return (
        f"Median of {runs} fresh-process runs each, the cases taking turns, measured by "
        f"`make bench` (`python -m tools.bench --runs {runs}`).\n\n"
        f"Machine: {os.cpu_count()} cores, {cpu}, Python {platform.python_version()}, {platform.system()} {platform.machine()}.\n\n"
        "| what | median | vs floor | vs floor without the teardown |\n|---|---|---|---|\n"
        + rows
        + "\n"
    )


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


MARKER = "<!-- bench -->"


def with_table(body: str, table: str) -> str:
    """`body` with the text between MARKER and the next section heading replaced by `table`;
    everything after that heading is kept (the real engine's figures follow the table)."""
    head, _, rest = body.partition(MARKER)
    _, heading, tail = rest.partition("\n## ")
    return f"{head}{MARKER}\n{table.rstrip()}\n" + (f"\n## {tail}" if heading else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.bench")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--write", action="store_true", help="record the figures in docs/performance.md"
    )
    args = parser.parse_args(argv)
    results = measure(args.runs)
    text = report(results, args.runs)
    print(text)
    if args.write:
        REPORT.write_text(with_table(REPORT.read_text() if REPORT.exists() else "", text))
    times = dict(results)
    worst = max(seconds for label, seconds in results if label.endswith("(with validators)"))
    smallest, largest = (
        times[scale_label(n)] for n in (SCALE_APPLICATIONS[0], SCALE_APPLICATIONS[-1])
    )
    print(
        f"scale: {largest / smallest:.2f}x from {SCALE_APPLICATIONS[0]:,} to "
        f"{SCALE_APPLICATIONS[-1]:,} applications (target {SCALE_TARGET_RATIO:g}x)"
    )
    # Judged against the floor without the teardown: the plan's command line skips it too, so
    # against the whole floor the plan would be credited the 0.5 s it does not pay.
    floor_met = worst <= TARGET_RATIO * results[1][1]
    return 0 if floor_met and largest <= SCALE_TARGET_RATIO * smallest else 1


if __name__ == "__main__":
    sys.exit(main())

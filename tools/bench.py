"""Time the offline plan of each example stack against the floor of importing the SDKs it uses.

    python -m tools.bench [--runs 5] [--write]

Every measurement is a fresh process (what a user or CI pays), repeated; medians are reported.
`--write` records the table, with the machine it ran on, in docs/performance.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

from kiam_eks.settings.loader import example_stacks

PROJECT_DIR = Path(__file__).resolve().parent.parent
REPORT = PROJECT_DIR / "docs" / "performance.md"
TARGET_RATIO = 1.5

# The SDK classes the program uses. Their packages load submodules lazily, on first attribute
# access, so the floor must touch each class or it would time almost nothing.
FLOOR = """
import pydantic, yaml, pulumi, pulumi_tls
from pulumi_aws import Provider, ec2, eks, iam
from pulumi_kubernetes import Provider as K8sProvider, apps, core, policy, rbac
ec2.LaunchTemplate, eks.NodeGroup, eks.get_cluster_output, iam.Role, iam.RolePolicy, iam.RolePolicyAttachment
apps.v1.Deployment, apps.v1.DaemonSet, core.v1.Secret, core.v1.Service, core.v1.ServiceAccount
core.v1.Namespace, policy.v1.PodDisruptionBudget, rbac.v1.ClusterRole, rbac.v1.ClusterRoleBinding
pulumi_tls.PrivateKey, pulumi_tls.LocallySignedCert
"""


def _time(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, cwd=PROJECT_DIR, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def measure(runs: int) -> list[tuple[str, float]]:
    python = sys.executable
    stacks = example_stacks(PROJECT_DIR)
    cases = [("import floor (SDK classes the program uses)", [python, "-c", FLOOR])]
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
    _time(cases[0][1])  # warm the OS file cache once, so the first case is not penalised
    return [(label, statistics.median(_time(cmd) for _ in range(runs))) for label, cmd in cases]


def report(results: list[tuple[str, float]], runs: int) -> str:
    floor = results[0][1]
    rows = "\n".join(
        f"| {label} | {seconds:.2f} s | {seconds / floor:.2f}x |" for label, seconds in results
    )
    cpu = _cpu()
    return (
        f"Median of {runs} fresh-process runs each, measured by `make bench` "
        f"(`python -m tools.bench --runs {runs}`).\n\n"
        f"Machine: {os.cpu_count()} cores, {cpu}, Python {platform.python_version()}, {platform.system()} {platform.machine()}.\n\n"
        "| what | median | vs floor |\n|---|---|---|\n" + rows + "\n"
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
    worst = max(seconds for label, seconds in results if "with validators" in label)
    return 0 if worst <= TARGET_RATIO * results[0][1] else 1


if __name__ == "__main__":
    sys.exit(main())

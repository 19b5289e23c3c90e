"""`python -m e2e.scale_tools`: the scale stack installed and changed on the real engine, then
`tools.kiam_usage` and `tools.kiam_draft` run as a user runs them against a cluster of thousands
of application pods.

    python -m e2e.scale_tools [--applications 700] [--namespaces 50] [--pods 3000]

On a control plane of its own (kwok nodes and pods, stand-ins for AWS): the scale stack of
`--applications` applications over `--namespaces` team namespaces (`tools/scale_stack.py`) is
installed with one `pulumi up`, then changed (`kiam:agent.logLevel: debug`) with a second. The
application teams' service accounts are created as the stack's `applications` output describes
them, and `--pods` pods spread over the applications, each admitted as EKS admits it
(`e2e/harness/app_pods.py`): one pod in `PLAIN_EVERY` asks nothing of kiam (no annotation, the
namespace's default service account); every other carries its application's kiam annotation, and
a pod of an application moving to Pod Identity or IRSA runs under its service account, wired by
the association or the IRSA annotation. Once the API lists every pod (and kwok runs them), each
tool runs in its own process (`--config-file`, `--kubeconfig`, `--json`), timed, its peak memory
read from the kernel (`wait4`), and its answer checked: kiam_usage claims every kiam pod for its
application in every namespace and exits 0; kiam_draft drafts an application in every namespace.
The list requests each tool makes (pages of `kiam_eks.program.kube_api.PAGE_SIZE`) are counted by reading
the cluster as the tool does, in this process.

Prints a Markdown table (step, seconds, peak MiB, list requests) and exits 1 if any step failed.
The control plane is stopped at the end, whatever happened.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import datetime
import json
import math
import os
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from e2e.harness import app_pods, toolchain
from e2e.harness.app_pods import APP_LABEL, Workload
from e2e.harness.environment import Environment, write_stack_file
from e2e.harness.kube import Kube
from e2e.harness.pulumi import PulumiStack
from kiam_eks.contracts.labels import ROLE_ANNOTATION
from kiam_eks.program.kube_api import KubeApi
from kiam_eks.settings import SettingsError, settings_from_stack_file
from tools import kiam_draft, kiam_usage
from tools.scale_stack import scale_config

# The largest round size a stack file of the scale stack's shape holds (737, contracts/pulumi_config.py).
DEFAULT_APPLICATIONS = 700
DEFAULT_NAMESPACES = 50
DEFAULT_PODS = 3000
# One pod in this many is not kiam's: no annotation, the namespace's default service account.
PLAIN_EVERY = 25
PLAIN_APP = "plain-workload"
# Workload nodes for the pods (kwok nodes hold 110 pods, one per node goes to each DaemonSet).
PODS_PER_WORKER = 100
MIN_WORKERS = 3
KIAM_NAMESPACE = "kiam"  # the dev stack's, which the scale stack keeps
# Generous: the machine may be busy (the API server, kwok and the tools share two cores).
DEADLINE_SECONDS = 1800
POLL_SECONDS = 1.0
CREATE_THREADS = 4
TOOL_TIMEOUT_SECONDS = 1800
ERROR_TAIL = 6000


@dataclass
class Step:
    """One measured step: wall time, the peak resident memory of its process (MiB), the list
    requests it made, and whether it did what it should."""

    name: str
    seconds: float = 0.0
    peak_mib: str = "-"
    list_requests: str = "-"
    ok: bool = True
    problems: list[str] = field(default_factory=list)


# --- the pods ----------------------------------------------------------------------------------


def workloads_of(applications_output: dict[str, Any]) -> list[Workload]:
    """Each application's pod template as the stack's `applications` output describes it: its
    kiam annotation while kiam serves it, and its service account while Pod Identity or IRSA
    serves it too (the namespace's `default` otherwise)."""
    found = []
    for app, out in sorted(applications_output.items()):
        account = out.get("serviceAccount") or {}
        found.append(
            Workload(
                app=app,
                namespace=_namespace_of(app, out),
                service_account=account.get("name") or "default",
                role_annotation=(out.get("podAnnotation") or {}).get(ROLE_ANNOTATION),
            )
        )
    return found


def _namespace_of(app: str, out: dict[str, Any]) -> str:
    account = out.get("serviceAccount") or {}
    if account.get("namespace"):
        return str(account["namespace"])
    # The scale stack names every application after its team's namespace: team-NN-app-NNNN.
    return app.split("-app-", 1)[0]


def plan_pods(workloads: list[Workload], pods: int) -> list[tuple[str, Workload]]:
    """`pods` (name, workload) pairs, round-robin over the applications; one in PLAIN_EVERY is a
    workload kiam does not serve, in the same namespace."""
    if not workloads:
        raise ValueError("no applications to run pods of")
    planned = []
    for index in range(pods):
        workload = workloads[index % len(workloads)]
        if index % PLAIN_EVERY == PLAIN_EVERY - 1:
            workload = Workload(app=PLAIN_APP, namespace=workload.namespace)
        planned.append((f"{workload.app}-{index:05d}", workload))
    return planned


def service_accounts(applications_output: dict[str, Any]) -> list[dict[str, Any]]:
    """The application teams' service accounts, with the annotations the output asks for."""
    return [
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {
                "name": account["name"],
                "namespace": account["namespace"],
                "annotations": account.get("annotations") or {},
            },
        }
        for _, out in sorted(applications_output.items())
        if (account := out.get("serviceAccount"))
    ]


def create_pods(kube: Kube, planned: list[tuple[str, Workload]]) -> None:
    """Every planned pod, admitted as EKS admits one created now (one admission per workload:
    every pod of a workload is created from the same template)."""
    templates: dict[Workload, dict[str, Any]] = {}
    for name, workload in planned:
        if workload not in templates:
            templates[workload] = app_pods.admitted_pod(kube, workload, name)

    def post(item: tuple[str, Workload]) -> None:
        name, workload = item
        pod = copy.deepcopy(templates[workload])
        pod["metadata"]["name"] = name
        kube.request("POST", f"/api/v1/namespaces/{workload.namespace}/pods", pod)

    with ThreadPoolExecutor(CREATE_THREADS) as pool:
        list(pool.map(post, planned))


def wait_until(what: str, condition: Callable[[], tuple[bool, Any]]) -> float:
    """Poll `condition` (done, what it saw) until done, within DEADLINE_SECONDS; the seconds
    it took."""
    start = time.monotonic()
    while True:
        done, seen = condition()
        if done:
            return time.monotonic() - start
        if time.monotonic() - start > DEADLINE_SECONDS:
            raise TimeoutError(f"{what}: not within {DEADLINE_SECONDS} s (last seen: {seen})")
        time.sleep(POLL_SECONDS)


def app_pod_phases(kube: Kube) -> Counter[str]:
    pods = kube.items(f"/api/v1/pods?labelSelector={APP_LABEL}")
    return Counter(str((p.get("status") or {}).get("phase")) for p in pods)


# --- the tools -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolRun:
    returncode: int
    seconds: float
    peak_mib: float
    stdout: str
    stderr: str


def run_tool(module: str, args: list[str], out_dir: Path) -> ToolRun:
    """`python -m <module> <args>` in its own process, as a user runs it (no KUBECONFIG from
    here): its exit code, wall time, peak resident memory (the kernel's, for that process and
    what it waited for) and output."""
    out_dir.mkdir(parents=True, exist_ok=True)
    stdout_path, stderr_path = out_dir / f"{module}.out", out_dir / f"{module}.err"
    environ = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    with stdout_path.open("w") as stdout, stderr_path.open("w") as stderr:
        started = time.monotonic()
        process = subprocess.Popen(
            [sys.executable, "-m", module, *args],
            cwd=toolchain.REPO,
            env=environ,
            stdout=stdout,
            stderr=stderr,
        )
        _, status, usage = _wait4(process, TOOL_TIMEOUT_SECONDS)
        seconds = time.monotonic() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    return ToolRun(
        returncode=process.returncode,
        seconds=seconds,
        peak_mib=usage.ru_maxrss / 1024,  # KiB on Linux
        stdout=stdout_path.read_text(),
        stderr=stderr_path.read_text(),
    )


def _wait4(
    process: subprocess.Popen[bytes], timeout: float
) -> tuple[int, int, resource.struct_rusage]:
    """`os.wait4` of the process, killing it past `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            return pid, status, usage
        if time.monotonic() > deadline:
            process.kill()
            return os.wait4(process.pid, 0)
        time.sleep(0.05)


@contextmanager
def counting_lists() -> Iterator[list[str]]:
    """The paths of the list requests (`limit=`) the tools' client (`KubeApi` itself, not the
    harness's `Kube`, whose watches run beside) makes while the block runs."""
    seen: list[str] = []
    original = KubeApi.get

    def get(self: KubeApi, path: str) -> Any:
        if type(self) is KubeApi and "limit=" in path:
            seen.append(path)
        return original(self, path)

    KubeApi.get = get  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        KubeApi.get = original  # type: ignore[method-assign]


def describe_lists(paths: list[str]) -> str:
    """`7 (pods 6, namespaces 1)`: the requests, by collection."""
    by = Counter(p.split("?", 1)[0].rsplit("/", 1)[-1] for p in paths)
    return f"{len(paths)} ({', '.join(f'{k} {v}' for k, v in by.items())})"


def check_usage(answer: dict[str, Any], namespaces: set[str], kiam_pods: int) -> list[str]:
    """What is wrong with kiam_usage's JSON: every kiam pod claimed by its application, in
    every namespace, none left over, every application ready."""
    problems = []
    claimed = [p for a in answer["applications"].values() for p in a["pods"]]
    if len(claimed) != kiam_pods:
        problems.append(f"kiam_usage claimed {len(claimed)} pods, {kiam_pods} are kiam's")
    missing = namespaces - {p["namespace"] for p in claimed}
    if missing:
        problems.append(f"kiam_usage has no pod in namespaces {sorted(missing)}")
    if answer["otherKiamPods"]:
        problems.append(f"kiam_usage: {len(answer['otherKiamPods'])} kiam pods unclaimed")
    if not answer["ready"]:
        waiting = [n for n, a in answer["applications"].items() if not a["ready"]]
        problems.append(f"kiam_usage: {len(waiting)} applications not ready: {waiting[:5]}")
    return problems


def check_draft(answer: dict[str, Any], namespaces: set[str]) -> list[str]:
    """What is wrong with kiam_draft's JSON: an application drafted in every namespace."""
    drafted = answer["config"].get("kiam:applications") or {}
    missing = namespaces - {a["namespace"] for a in drafted.values()}
    return [f"kiam_draft drafted nothing in namespaces {sorted(missing)}"] if missing else []


# --- the run -----------------------------------------------------------------------------------


TIME = Path("/usr/bin/time")


def measured_bin_dir(real: Path, root: Path) -> tuple[Path, Path] | None:
    """A copy of the toolchain's bin directory (links) whose `pulumi` runs under GNU time, which
    appends the peak resident memory (KiB: `%M`, the kernel's for the CLI and every process it
    waited for, the language host, the program, the provider) of each run to the returned file;
    None without /usr/bin/time."""
    if not TIME.exists():
        return None
    wrapped, peaks = root / "measured-bin", root / "pulumi-peak-kib"
    wrapped.mkdir(parents=True)
    for entry in real.iterdir():
        if entry.name != "pulumi":
            (wrapped / entry.name).symlink_to(entry)
    command = [str(TIME), "-a", "-o", str(peaks), "-f", "%M", str(real / "pulumi")]
    script = wrapped / "pulumi"
    script.write_text(f'#!/bin/sh\nexec {shlex.join(command)} "$@"\n')
    script.chmod(0o755)
    return wrapped, peaks


@contextmanager
def pulumi_step(step: Step, peaks: Path | None) -> Iterator[None]:
    """Time a `pulumi` command, even one that fails; its peak memory is the last run's line of
    `peaks`."""
    started = time.monotonic()
    try:
        yield
    finally:
        step.seconds = time.monotonic() - started
        if peaks is not None and peaks.exists():
            last = peaks.read_text().split()[-1]
            step.peak_mib = f"{int(last) / 1024:.0f}" if last.isdigit() else "-"


def table(steps: list[Step]) -> str:
    lines = ["| step | seconds | peak MiB | list requests |", "|---|---|---|---|"]
    for s in steps:
        mark = "" if s.ok else " (FAILED)"
        lines.append(f"| {s.name}{mark} | {s.seconds:.1f} | {s.peak_mib} | {s.list_requests} |")
    return "\n".join(lines)


def workers_for(pods: int) -> int:
    return max(MIN_WORKERS, math.ceil(pods / PODS_PER_WORKER) + 1)


def run(args: argparse.Namespace, root: Path, steps: list[Step]) -> None:
    """Every step, in order; the first that raises ends the run (recorded as failed)."""
    config = scale_config(args.applications, args.namespaces, root / "stack-files")
    stack_file = write_stack_file(root / "stack-files" / "Pulumi.scale.yaml", config)
    settings_from_stack_file(stack_file)  # refused settings stop here, before anything starts
    env = Environment.start(root, toolchain.bin_dir(), "kiam-scale-tools")
    try:
        settings, _ = env.shape_for(stack_file, workers_for(args.pods))
        namespaces = {a.namespace for a in settings.applications.values()}
        measured = measured_bin_dir(env.bin_dir, root)
        stack: PulumiStack = env.stack("scale")
        if measured is not None:
            stack = dataclasses.replace(stack, bin_dir=measured[0])
        peaks = measured[1] if measured is not None else None
        stack.create(stack_file)

        step = Step(f"`pulumi up` install ({args.applications} applications)")
        steps.append(step)
        with pulumi_step(step, peaks):
            stack.up()

        step = Step("`pulumi up` change (`kiam:agent.logLevel: debug`)")
        steps.append(step)
        config["kiam:agent"] = {**config.get("kiam:agent", {}), "logLevel": "debug"}
        stack.use_settings(write_stack_file(stack_file, config))
        with pulumi_step(step, peaks):
            stack.up()
        agents = env.pods(KIAM_NAMESPACE, "agent")
        stale = [
            p["metadata"]["name"]
            for p in agents
            if "--level=debug" not in p["spec"]["containers"][0].get("args", [])
        ]
        if not agents or stale:
            step.ok = False
            step.problems.append(f"agents without --level=debug: {stale or 'no agent at all'}")

        outputs = stack.outputs()["applications"]
        step = Step(f"create {args.pods} pods, listed by the API")
        steps.append(step)
        started = time.monotonic()
        accounts = service_accounts(outputs)
        if accounts:
            env.kube.apply(accounts)
        planned = plan_pods(workloads_of(outputs), args.pods)
        create_pods(env.kube, planned)

        def listed() -> tuple[bool, Any]:
            phases = app_pod_phases(env.kube)
            return sum(phases.values()) == args.pods, dict(phases)

        wait_until(f"{args.pods} pods listed", listed)
        step.seconds = time.monotonic() - started

        step = Step(f"{args.pods} pods Running (kwok)")
        steps.append(step)

        def running() -> tuple[bool, Any]:
            phases = app_pod_phases(env.kube)
            return phases.get("Running", 0) == args.pods, dict(phases)

        step.seconds = wait_until(f"{args.pods} pods Running", running)

        kiam_pods = sum(1 for _, w in planned if w.app != PLAIN_APP)
        tool_args = ["--config-file", str(stack_file), "--kubeconfig", str(env.plane.kubeconfig)]
        with counting_lists() as seen:
            kiam_usage.read_cluster(env.plane.kubeconfig)
        usage_lists = describe_lists(seen)
        with counting_lists() as seen:
            kiam_draft.read_objects(env.plane.kubeconfig)
        draft_lists = describe_lists(seen)

        for module, lists in (("tools.kiam_usage", usage_lists), ("tools.kiam_draft", draft_lists)):
            step = Step(f"`python -m {module} --json`", list_requests=lists)
            steps.append(step)
            done = run_tool(module, [*tool_args, "--json"], root / "tool-output")
            step.seconds, step.peak_mib = done.seconds, f"{done.peak_mib:.0f}"
            step.problems += judge_tool(module, done, namespaces, kiam_pods)
            step.ok = not step.problems
    finally:
        env.stop()


def judge_tool(module: str, done: ToolRun, namespaces: set[str], kiam_pods: int) -> list[str]:
    """What is wrong with one tool's run: its exit code, anything on stderr, its answer."""
    problems = []
    # kiam_usage: 0 every application ready; kiam_draft: 0 the draft validates, 1 it does not
    # yet (its `problems`, reported); 2 is bad input for both.
    allowed = (0,) if module == "tools.kiam_usage" else (0, 1)
    if done.returncode not in allowed:
        problems.append(f"exit {done.returncode}")
    if done.stderr:
        problems.append(f"stderr: {done.stderr[-2000:]}")
    try:
        answer = json.loads(done.stdout)
    except ValueError:
        return [*problems, f"no JSON on stdout: {done.stdout[:500]!r}"]
    if module == "tools.kiam_usage":
        problems += check_usage(answer, namespaces, kiam_pods)
    else:
        problems += check_draft(answer, namespaces)
        if answer.get("problems"):
            problems.append(f"the draft does not validate: {answer['problems'][:5]}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m e2e.scale_tools", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--applications", type=int, default=DEFAULT_APPLICATIONS)
    parser.add_argument("--namespaces", type=int, default=DEFAULT_NAMESPACES)
    parser.add_argument("--pods", type=int, default=DEFAULT_PODS)
    args = parser.parse_args(argv)
    if args.applications < 1 or args.namespaces < 1 or args.pods < 1:
        parser.error("--applications, --namespaces and --pods must be 1 or more")
    began = datetime.datetime.now(datetime.UTC)
    steps: list[Step] = []
    error: BaseException | None = None
    with tempfile.TemporaryDirectory(prefix="kiam-e2e-scale-tools-") as tmp:
        try:
            run(args, Path(tmp), steps)
        except SettingsError as refused:  # before anything started
            print(refused, file=sys.stderr)
            return 2
        except Exception as failure:  # reported below, with the steps that ran
            error = failure
            if steps:
                steps[-1].ok = False
    print(
        f"{began:%Y-%m-%d %H:%M} UTC: scale stack of {args.applications} applications over "
        f"{args.namespaces} namespaces, {args.pods} pods on {workers_for(args.pods)} workload "
        f"nodes\n"
    )
    print(table(steps))
    for s in steps:
        for problem in s.problems:
            print(f"\n{s.name}: {problem}")
    if error is not None:
        # A failed `pulumi up` carries its whole output: the end says why.
        print(f"\nfailed: {type(error).__name__}: {str(error)[-ERROR_TAIL:]}", file=sys.stderr)
    return 0 if error is None and all(s.ok for s in steps) else 1


if __name__ == "__main__":
    raise SystemExit(main())

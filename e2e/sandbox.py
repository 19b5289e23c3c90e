"""`make sandbox`: a local control plane shaped by a stack file, with the stack's real `pulumi
preview` and `pulumi up` run on it, left running so you can look around with kubectl.

    python -m e2e.sandbox up --stack dev              # or --config-file path/to/Pulumi.x.yaml
    python -m e2e.sandbox up --stack dev --nodes 200 --pod-start 10s --pod-stop 2s
    python -m e2e.sandbox down

`--nodes` is the number of workload nodes (3 unless given); `--pod-start` and `--pod-stop` how
long every pod takes to turn Ready and to go once deleted (none unless given), so a rollout
takes as long as on your cluster. The timing is the control plane's: it is set when the sandbox
starts, and a running sandbox keeps its own.

Running `up` again applies the (changed) stack file to the running sandbox: that is how a change
is rehearsed before it touches a real cluster. Exit codes as the offline plan's: 2 for invalid
settings (nothing is started), 1 for any failed step.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

from e2e.harness import toolchain
from e2e.harness.cluster import ControlPlane, PodTiming
from e2e.harness.environment import Environment
from e2e.harness.kube import Kube
from e2e.harness.pulumi import PulumiCommandError, install_provider
from e2e.harness.shape import WORKERS
from e2e.harness.watcher import Watcher
from kiam_eks.contracts import names
from kiam_eks.program.kube_api import KubeApi
from kiam_eks.settings import SettingsError
from kiam_eks.settings.base import duration_seconds, is_duration
from kiam_eks.settings.loader import settings_from_stack_file, stack_name_of
from tools.interrupted.kubernetes_objects import KubernetesObjects
from tools.interrupted.recover import NeedsOperator, recover, unlocked
from tools.stack_source import add_stack_source, stack_file_of

CLUSTER_NAME = "kiam-sandbox"
AGAIN = "`make sandbox` again"


def sandbox_root() -> Path:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "kiam-eks" / "sandbox"


def up(stack_file: Path, workers: int = WORKERS, timing: PodTiming | None = None) -> int:
    try:
        settings, _ = settings_from_stack_file(stack_file)
    except SettingsError as error:
        print(error, file=sys.stderr)
        return 2
    root = sandbox_root()
    marker = root / "sandbox.json"
    stack_name = stack_name_of(stack_file)
    if marker.exists():
        running = json.loads(marker.read_text())["stack"]
        if running != stack_name:
            print(
                f"the sandbox runs stack {running!r}; `make sandbox STACK={running}` changes it, "
                "`make sandbox-down` removes it",
                file=sys.stderr,
            )
            return 1
    bin_dir = toolchain.bin_dir("sandbox")
    plane = ControlPlane(name=CLUSTER_NAME, workdir=root / "cluster", bin_dir=bin_dir)
    if plane.is_running():
        env = Environment(root, bin_dir, plane, Kube(plane.kubeconfig, bin_dir / "kubectl"))
        install_provider(root / "pulumi-home", bin_dir)
        print(f"sandbox: using the running control plane ({plane.kubeconfig})")
        if timing is not None:
            print("sandbox: pod timing is set when the sandbox starts; this one keeps its own")
    else:
        print(
            "sandbox: starting a control plane (kube-apiserver, controller-manager, scheduler, etcd, kwok)"
        )
        env = Environment.start(root, bin_dir, CLUSTER_NAME, timing or PodTiming())
    root.mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps({"stack": stack_name}))
    env.shape_for(stack_file, workers)
    stack = env.stack(stack_name)
    namespace = settings.namespace.name
    # Watched while it changes, as the real-engine suite watches: a change that took every server
    # away, even for a moment, shows here as a zero.
    watcher = Watcher(env.kube, namespace, names.SERVER_NAME)

    def say(line: str) -> None:
        print(f"sandbox: {line}", flush=True)

    try:
        stack.create(stack_file)
        # A run that was killed (^C twice, a closed terminal) left a lock and pending operations:
        # recovered here as the fleet recovers a stack (tools/interrupted/).
        objects = KubernetesObjects(KubeApi(plane.kubeconfig))
        recover(stack_name, stack, objects.find, say, then=AGAIN)
        print(stack.preview("--diff").output)
        with watcher.running():
            print(unlocked(stack_name, stack.up, stack, say, then=AGAIN).output)
            watcher.samples.append(watcher.sample())
    except PulumiCommandError as failure:
        print(failure.result.output, file=sys.stderr)
        return 1
    except NeedsOperator as needed:
        print(f"sandbox: stopped, needs a person: {needed}", file=sys.stderr)
        return 1
    print(watched_summary(watcher, settings.server.replicas))
    print(f"\nWhere kiam runs (namespace {namespace}):")
    for node, pods in sorted(env.placement(namespace).items()):
        print(f"  {node}: {', '.join(pods) or '-'}")
    print(f"\nThe sandbox is running. Look around with:\n  export KUBECONFIG={plane.kubeconfig}")
    print(f"KUBECONFIG={plane.kubeconfig}")
    return 0


def watched_summary(watcher: Watcher, replicas: int) -> str:
    """What a person rehearsing a change needs first: did the servers stay, and did the Service
    the agents dial ever run out of ready endpoints."""
    timeline = watcher.timeline
    if not timeline:
        return "\nDuring `pulumi up`: nothing was observed"
    fewest = min(s.ready_servers for s in timeline)
    zero = [s.t for s in timeline if s.ready_endpoints == 0]
    before = timeline[0]
    # On a first install there was nothing to serve before: count from the moment the Service
    # first had a ready endpoint (a Ready pod reaches the EndpointSlice a moment later).
    if before.ready_servers == 0:
        serving = [s.t for s in timeline if s.ready_endpoints > 0]
        if not serving:
            return f"\nDuring `pulumi up`: no server became Ready (of {replicas})"
        fewest = min(s.ready_servers for s in timeline if s.t >= serving[0])
        zero = [s.t for s in timeline if s.t >= serving[0] and s.ready_endpoints == 0]
    endpoints = (
        f"the Service had no ready endpoint at {len(zero)} observed moments"
        if zero
        else "the Service always had a ready endpoint"
    )
    return (
        f"\nDuring `pulumi up`: fewest Ready servers {fewest} (of {replicas}); {endpoints}; "
        f"{len(timeline)} observations"
    )


def down() -> int:
    root = sandbox_root()
    if not root.exists():
        print("sandbox: nothing to remove")
        return 0
    try:
        bin_dir = toolchain.bin_dir("sandbox")
        ControlPlane(name=CLUSTER_NAME, workdir=root / "cluster", bin_dir=bin_dir).stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print("sandbox: removed")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m e2e.sandbox", description=__doc__.split("\n\n")[0]
    )
    commands = parser.add_subparsers(dest="command", required=True)
    start = commands.add_parser("up", help="create or update the sandbox for a stack")
    add_stack_source(start, stack_help="a stack in stacks/ (e.g. dev)", file_help="any stack file")
    start.add_argument(
        "--nodes", type=_nodes, default=WORKERS, help=f"workload nodes (default {WORKERS})"
    )
    start.add_argument(
        "--pod-start", type=_seconds, help="how long a pod takes to turn Ready, e.g. 10s"
    )
    start.add_argument(
        "--pod-stop", type=_seconds, help="how long a deleted pod takes to go, e.g. 2s"
    )
    commands.add_parser("down", help="stop the sandbox and remove its state")
    args = parser.parse_args(argv)
    if args.command == "down":
        return down()
    timing = (
        PodTiming(args.pod_start or 0, args.pod_stop or 0)
        if args.pod_start is not None or args.pod_stop is not None
        else None
    )
    return up(stack_file_of(args, root=toolchain.REPO), args.nodes, timing)


def _nodes(value: str) -> int:
    if not value.isdigit() or not 1 <= int(value) <= 1000:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of nodes from 1 to 1000")
    return int(value)


def _seconds(value: str) -> int:
    if not is_duration(value) or duration_seconds(value) > 600:
        raise argparse.ArgumentTypeError(f"{value!r} is not a duration such as 10s (at most 10m)")
    return duration_seconds(value)


if __name__ == "__main__":
    sys.exit(main())

"""The offline plan: run the real program through the mock engine and show what it would do.

    python -m tools.plan --stack dev [--out DIR]
    python -m tools.plan --config-file path/to/Pulumi.x.yaml [--out DIR]

    python -m tools.plan --stack dev --diff BASE_DIR    # per-object diff against an earlier --out

No cloud credentials, no Pulumi CLI. Exit codes: 0 planned cleanly (with --diff: no change);
1 a validator, a guarantee or an ordering edge failed (with --diff: the plans differ); 2 the
stack settings are invalid, or (with --diff) the change from the base plan is refused, as
`pulumi up` would refuse it from that update (nothing was registered).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import sys
import threading
from collections.abc import Callable, Collection, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from kiam_eks.contracts import tokens
from kiam_eks.invariants import check_all
from kiam_eks.invariants.recorded import resources_from_recording
from kiam_eks.settings import SettingsError, settings_from_stack_file
from kiam_eks.settings.base import UNDECRYPTED_SECRET
from kiam_eks.settings.cluster import ClusterSettings
from kiam_eks.settings.loader import stack_name_of
from kiam_eks.settings.stack import StackSettings
from kiam_eks.transitions.installed import LastUpdate
from kiam_eks.transitions.judge import judge
from kiam_eks.transitions.verdicts import RefusedChangeError
from tools import validate
from tools.stack_source import add_stack_source, stack_file_of

EXIT_OK, EXIT_FAILED, EXIT_INVALID_SETTINGS = 0, 1, 2
RETIRE_KEY = "kiam:retire"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.plan", description=__doc__.split("\n")[0]
    )
    add_stack_source(
        parser, stack_help="plan stacks/Pulumi.<STACK>.yaml", file_help="plan any stack file"
    )
    parser.add_argument("--out", type=Path, help="write resources.json, manifests/ and iam/ here")
    parser.add_argument(
        "--no-validate", action="store_true", help="skip the schema and IAM validators"
    )
    parser.add_argument(
        "--diff",
        type=Path,
        metavar="BASE_DIR",
        help="print per-object diffs against a plan written earlier with --out; exit 1 if any",
    )
    args = parser.parse_args(argv)

    path = stack_file_of(args)
    stack = args.stack or stack_name_of(path)
    try:
        settings, config = settings_from_stack_file(path)
    except SettingsError as error:
        print(error, file=sys.stderr)
        return EXIT_INVALID_SETTINGS

    # The validators' process forks first, before the cloud SDKs are imported: it carries none of
    # their state and loads the validators while this process loads the SDKs and runs the
    # program. A diff only compares renderings; validators and guarantees are the plain plan's.
    with _validator_process(
        enabled=not (args.no_validate or args.diff),
        kubernetes_version=settings.cluster.kubernetes_version,
    ) as validator:
        # Imported here: a settings error above answers without loading the cloud SDKs, which
        # these load (through the mock engine).
        from tools.mock_engine import run_main
        from tools.ordering import ordering_edges
        from tools.plan_diff import diff_plans, read_plan_dir, report
        from tools.render import render

        # With --diff, the base plan is what the stack's last update left: the change is judged
        # from it as `pulumi up` judges it (transitions/), and refused the same way.
        base = _base_update(args.diff) if args.diff else None
        if base is not None:
            try:
                transition = judge(settings, base.installed(), base.resources, str(path))
            except RefusedChangeError as refusal:
                print(refusal, file=sys.stderr)
                return EXIT_INVALID_SETTINGS
            for verdict in transition.verdicts:
                print(f"{verdict.kind.value} change: {verdict}")

        secret_keys = _secret_keys(config)
        install = None
        if settings.retire and base is None:
            # What the stack's last update would have left: kiam installed with these settings.
            # The plan shows the `pulumi up` that retires it (components/agent_retirement.py).
            installed_config = {k: v for k, v in config.items() if k != RETIRE_KEY}
            install = run_main(installed_config, stack=stack, secret_keys=secret_keys)
        recording = run_main(
            config,
            stack=stack,
            secret_keys=secret_keys,
            last_outputs=(
                install.stack_outputs
                if install is not None
                else base.outputs
                if base is not None
                else None
            ),
            last_resources=dict(base.resources) if base is not None else None,
        )
        plan = render(recording)
        violations = check_all(resources_from_recording(recording))
        validated = validator(plan, settings.cluster)

    if args.diff:
        result = diff_plans(
            read_plan_dir(args.diff), plan.files(), settings.agent.rollout.describe()
        )
        print(report(result))
        if args.out:
            write(plan, args.out)
        return EXIT_OK if result.equal else EXIT_FAILED

    edges = ordering_edges(recording)
    print(summary(stack, path, settings, recording, [str(edge) for edge in edges], install))
    print(_section("Guarantees", [f"✗ {v}" for v in violations] or ["✓ all invariants hold"]))
    if not args.no_validate:
        print(
            _section(
                "Validators",
                [f"✗ {f}" for f in validated.findings]
                or [
                    f"✓ {len(plan.manifests)} manifests valid ({_schema_note(settings.cluster.kubernetes_version, validated.schemas)}{_crd_note(validated.custom)}, strict{_patch_note(plan)})",
                    f"✓ {len(plan.iam)} IAM roles lint clean (parliament)",
                ],
            )
        )
    if args.out:
        write(plan, args.out)
        print(
            f"\nWrote {args.out}/resources.json, {len(plan.manifests)} manifests and {len(plan.iam)} IAM roles."
        )
    unordered = [edge for edge in edges if edge.problem is not None]
    return EXIT_FAILED if violations or validated.findings or unordered else EXIT_OK


def _base_update(plan_dir: Path) -> LastUpdate:
    """What a plan written earlier with --out says its update left: its outputs, and its
    resources by URN and type (a plan written before `outputs.json` existed has none)."""
    outputs_file, resources_file = plan_dir / "outputs.json", plan_dir / "resources.json"
    outputs = json.loads(outputs_file.read_text()) if outputs_file.exists() else {}
    resources = json.loads(resources_file.read_text()) if resources_file.exists() else []
    return LastUpdate(outputs=outputs, resources={str(r["urn"]): str(r["type"]) for r in resources})


def _schema_note(kubernetes_version: str, schemas: str) -> str:
    """Which Kubernetes schemas validated the manifests: the cluster's own, or the nearest ones."""
    if schemas == f"{kubernetes_version}.0":
        return f"Kubernetes {kubernetes_version}"
    nearest = schemas.removesuffix(".0")
    return f"Kubernetes {kubernetes_version} with the {nearest} schemas, the nearest kubernetes-validate ships"


def _crd_note(custom: list[str]) -> str:
    """How many manifests were validated against a vendored CRD instead (tools/crds)."""
    return f"; {len(custom)} against the Prometheus Operator's CRDs" if custom else ""


def _patch_note(plan: Any) -> str:
    """How many manifests are patches, which are validated without the schema's required fields
    (`validate.patch_findings`): a patch holds only the fields it sets."""
    count = len(plan.patches)
    if not count:
        return ""
    return f"; {count} {'patch' if count == 1 else 'patches'} without required fields, which the patched object holds"


def _secret_keys(config: dict[str, Any]) -> list[str]:
    """Keys holding a `secure:` value anywhere inside, which the CLI would mark secret."""
    return [k for k, v in config.items() if UNDECRYPTED_SECRET in json.dumps(v)]


@dataclass(frozen=True)
class Validation:
    """What the validators said of one plan."""

    findings: list[validate.Finding]
    schemas: str
    """The Kubernetes schema version the manifests were validated against."""
    custom: list[str]
    """The manifests validated against a vendored CRD instead (`tools/crds`)."""


def validation(
    manifests: dict[str, dict[str, Any]],
    iam: dict[str, dict[str, Any]],
    cluster: ClusterSettings,
    patches: Collection[str],
) -> Validation:
    """Both validators on one rendered plan, in the process that has loaded them."""
    return Validation(
        findings=validate.validate_plan(manifests, iam, cluster, patches),
        schemas=validate.kubernetes_schema_version(cluster.kubernetes_version),
        custom=validate.custom_resource_manifests(manifests),
    )


Validator = Callable[[Any, ClusterSettings], Validation]
"""(plan, cluster settings) -> what the validators said of it"""


@contextlib.contextmanager
def _validator_process(enabled: bool, kubernetes_version: str) -> Iterator[Validator]:
    """Validators loaded in a second process while this one runs the program.

    Loading them (parliament parses ~10 MB of IAM definitions) costs about as much as the
    program run itself; on a machine with two cores the two overlap instead of adding up.
    The process is forked before the cloud SDKs are imported, so it carries none of their state,
    and it answers everything the plan asks of the validators, so this one loads none of them.
    """
    if not enabled:
        yield lambda plan, cluster: Validation(findings=[], schemas="", custom=[])
        return
    # Forking is safe only while this process has one thread (always so for the command line;
    # not inside a test runner that already ran the SDK): otherwise validate here, afterwards.
    if "fork" not in multiprocessing.get_all_start_methods() or threading.active_count() > 1:
        yield lambda plan, cluster: validation(plan.manifests, plan.iam, cluster, plan.patches)
        return
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("fork")) as pool:
        pool.submit(validate.preload, kubernetes_version)
        yield lambda plan, cluster: pool.submit(
            validation, plan.manifests, plan.iam, cluster, plan.patches
        ).result()


def _section(title: str, lines: list[str]) -> str:
    return "\n".join([f"\n{title}", *(f"  {line}" for line in lines)])


def summary(
    stack: str,
    path: Path,
    s: StackSettings,
    recording: Any,
    ordering: list[str],
    install: Any = None,
) -> str:
    """The human part of the plan: key settings, resources by component, the ordering edges as
    checked (`tools.ordering`). With `kiam:retire`, `install` is the run of the same settings
    without it: what the stack's last update left, which the retirement removes."""
    outputs = recording.stack_outputs
    settings_lines = [
        f"cluster       {s.cluster.name} in account {s.cluster.account_id}, {s.cluster.region}, Kubernetes {s.cluster.kubernetes_version}",
        *(
            _install_lines(s, outputs)
            if install is None
            else _retirement_lines(s, recording, install)
        ),
        # What a pod author writes, per application (the `applications` output).
        *(
            f"{'applications' if i == 0 else '':<14}{app}: "
            + _application_summary(s.applications[app].namespace, out)
            for i, (app, out) in enumerate(sorted((outputs.get("applications") or {}).items()))
        ),
    ]
    custom = [
        r
        for r in recording.registrations
        if r.custom and not r.type.startswith("pulumi:providers:")
    ]
    tree = _tree(recording)
    return "\n".join(
        [
            f"Offline plan of stack {stack} ({path}), through the Pulumi mock engine",
            _section("Key settings", settings_lines),
            _section(f"Resources ({len(custom)}) by component", tree),
            _section("Ordering", ordering),
        ]
    )


def _install_lines(s: StackSettings, outputs: dict[str, Any]) -> list[str]:
    """Key settings of a stack that installs kiam."""
    ng, server, agent, adoption = s.node_group, s.server, s.agent, s.adoption_state
    zones = sorted({sub.zone for sub in ng.subnets if sub.zone}) or ["(zones not given)"]
    taint = ng.taint
    return [
        f"server nodes  {', '.join(ng.instance_types)} {ng.capacity_type}, min {ng.min_size} / desired {ng.desired_size} / max {ng.max_size}, zones {', '.join(zones)}",
        f"              taint {taint.key}={taint.value}:{taint.kubernetes_effect}, IMDSv2 only",
        f"servers       {server.replicas} x {server.image}, sessions {server.session_duration} (refresh {server.session_refresh})",
        (
            f"agents        intercept on {agent.host_interface}, dial {outputs.get('serverAddress')}"
            if adoption.stack_owns_agents
            else "agents        the running install's, through its Service (migration phase servers)"
        ),
        *([f"agent rollout {agent.rollout.describe()}"] if adoption.stack_owns_agents else []),
        f"IAM           server may assume {', '.join(outputs.get('applicationRolePatterns') or [])}",
        *(
            [
                f"adoption      phase {adoption.phase}: CA, Service {s.server.service_name}:{s.server.grpc_port} and labels of the running install"
            ]
            if adoption.phase is not None
            else []
        ),
    ]


def _retirement_lines(s: StackSettings, recording: Any, install: Any) -> list[str]:
    """Key settings of a stack that retires kiam: what the retiring `pulumi up` rolls, removes
    and keeps, and what later ones do (components/agent_retirement.py)."""

    def resources(run: Any) -> dict[tuple[str, str], Any]:
        return {
            (r.type, r.name): r
            for r in run.registrations
            if r.custom and not r.type.startswith("pulumi:providers:")
        }

    before, after = resources(install), resources(recording)
    removed = [before[k] for k in sorted(before.keys() - after.keys())]
    kept = sorted(before.keys() & after.keys())
    top = install.one(tokens.KIAM).urn
    # Each removed resource under the component of the install it belongs to.
    parts: dict[str, int] = {}
    for r in removed:
        part = r
        while part.parent != top and part.parent in {x.urn for x in install.registrations}:
            part = install.by_urn(part.parent)
        parts[f"{part.type.rsplit(':', 1)[-1]} {part.name}"] = (
            parts.get(f"{part.type.rsplit(':', 1)[-1]} {part.name}", 0) + 1
        )
    patch = [r for r in recording.registrations if r.type == tokens.DAEMON_SET_PATCH]
    daemon_set = (
        f"{patch[0].inputs['metadata']['namespace']}/{patch[0].inputs['metadata']['name']}"
        if patch
        else "(none)"
    )
    return [
        "retired       kiam:retire: the plan of the `pulumi up` that retires kiam (the stack's last outputs show it installed)",
        f"rolls         the agents of DaemonSet {daemon_set} to --iptables-remove, {s.agent.rollout.describe()}, before anything goes",
        f"removes       {len(removed)} resources of the install: "
        + ", ".join(f"{name} ({count})" for name, count in sorted(parts.items())),
        f"keeps         {len(kept)} resources of the applications: "
        + ", ".join(f"{t.rsplit(':', 1)[-1]} {n}" for t, n in kept),
        "later ups     read the stack retired: no patch (the first forgets the one kept, touching nothing)",
    ]


def _application_summary(namespace: str, out: dict[str, Any]) -> str:
    """What pods of one application need in its state: kiam's annotation while kiam serves it,
    the service account once Pod Identity or IRSA serves it too."""
    annotation = (out.get("podAnnotation") or {}).get("iam.amazonaws.com/role")
    account = out.get("serviceAccount")
    parts = []
    if annotation is not None:
        parts.append(f"pods in {namespace} annotate iam.amazonaws.com/role: {annotation}")
    if account:
        step = f", next {out['next']}" if out.get("next") else ""
        parts.append(
            f"pods in {namespace} run as service account {account['name']} "
            f"(servedBy {out.get('servedBy')}{step})"
        )
    return "; ".join(parts)


def _tree(recording: Any) -> list[str]:
    lines: list[str] = []

    # Each component's children by type and name: the SDK registers those made inside an
    # `apply` in whatever order their inputs resolve, and a plan read in a pull request must not
    # differ between two runs of the same stack.
    def walk(parent: str, depth: int) -> None:
        for r in sorted(recording.children_of(parent), key=lambda r: (r.type, r.name)):
            if r.type.startswith("pulumi:providers:"):
                continue
            lines.append(f"{'  ' * depth}{r.type} {r.name}")
            walk(r.urn, depth + 1)

    roots = {
        r.parent
        for r in recording.registrations
        if r.parent.split("::")[2] == "pulumi:pulumi:Stack"
    }
    for root in sorted(roots):
        walk(root, 0)
    return lines


def write(plan: Any, out: Path) -> None:
    """resources.json and one file per object under manifests/, iam/ and aws/; secrets redacted."""
    # Here, not at the top: tools.render loads the cloud SDKs (see main).
    from tools.render import OBJECT_FOLDERS

    for folder in OBJECT_FOLDERS:
        if (out / folder).is_dir():
            for stale in (out / folder).iterdir():
                stale.unlink()
    for relative, text in plan.files().items():
        (out / relative).parent.mkdir(parents=True, exist_ok=True)
        (out / relative).write_text(text)


def exit_now(code: int) -> NoReturn:
    """End the process with `code` once the output is out, skipping the interpreter's teardown.

    Tearing down the cloud SDKs' modules (hundreds of generated classes) takes a process 0.55 s
    after its work is done (docs/performance.md): the plan has closed every file it wrote and
    joined its validators' process, so what is left for the teardown to free, the OS frees."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    exit_now(main())

"""Draft `kiam:applications` from the live cluster: what every running pod asks kiam for today,
as the stack-file section that serves exactly that, and per application what blocks each next
state (tools/application_draft.py says how it is read).

    python -m tools.kiam_draft --stack prod-eu-1 [--kubeconfig FILE] [--role-base-arn ARN] [--json]
        [--namespace NAME ...]
    python -m tools.kiam_draft --config-file path/to/Pulumi.x.yaml [...]

The cluster is read as `tools.kiam_usage` reads it (the same kubeconfig rules), listing pods,
namespaces, nodes, ReplicaSets and Jobs. A bare annotation is resolved against `--role-base-arn`
(default: the stack's, `arn:<partition>:iam::<kiam:cluster.accountId>:role<kiam:iam.
applicationRolePath>`): give the running servers' flag where it differs. The draft is checked
against the stack file as if pasted into it; what the stack would refuse is printed with it.

Drawn again once the stack serves some of it, the draft keeps the stack file's name of each
application it finds, never gives another role a name the stack file uses (the stack would take
that for the application changing roles, which it refuses), and gives each namespace the
annotation value the stack found (`kiam:existingPermitted`), not the union the stack now writes.

With `--namespace` (repeatable) only those namespaces are drafted, for a cluster moved team by
team: their pods and annotations are read, and the draft is checked in place of the stack
file's applications and `kiam:existingPermitted` entries of those namespaces, beside the ones of
every other namespace (which keep their names: a drafted application never takes one). A name
the cluster has no namespace of is bad input: nothing is drafted.

Prints YAML to paste under the stack file's `config:` (with each application's workloads and
blockers as comments), or with `--json` one object: {"config": {...}, "applications": {app:
{"workloads", "blockers"}}, "notAdmitted": [...], "unresolved": [...], "problems": [...]}.

Exit codes: 0 the draft validates with the stack file; 1 it does not yet (`problems`); 2 bad
input (stack settings, kubeconfig, an unreachable or refusing cluster), with a message.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
from pathlib import Path
from typing import Any

import yaml

from kiam_eks.program.kube_api import ApiError
from kiam_eks.settings import SettingsError
from kiam_eks.settings.loader import settings_from_values
from kiam_eks.specs.iam_policies import role_base_arn
from tools.application_draft import Draft, draft
from tools.kiam_usage import BadInputError, cluster_api, open_stack
from tools.stack_source import add_stack_source, stack_file_of

EXIT_OK, EXIT_INVALID, EXIT_BAD_INPUT = 0, 1, 2
# The stack file's sections a draft gives.
DRAFTED_KEYS = ("kiam:applications", "kiam:existingPermitted")
PROJECT_DIR = Path(__file__).resolve().parents[1]
LISTS = {
    "pods": "/api/v1/pods",
    "namespaces": "/api/v1/namespaces",
    "nodes": "/api/v1/nodes",
    "replicasets": "/apis/apps/v1/replicasets",
    "jobs": "/apis/batch/v1/jobs",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.kiam_draft",
        description=" ".join(__doc__.split("\n\n")[0].split()),
    )
    add_stack_source(
        parser, stack_help="the stack of stacks/Pulumi.<STACK>.yaml", file_help="any stack file"
    )
    parser.add_argument("--kubeconfig", type=Path, help="read the cluster with this kubeconfig")
    parser.add_argument(
        "--role-base-arn", help="the running kiam servers' --role-base-arn (default: the stack's)"
    )
    parser.add_argument("--json", action="store_true", help="print JSON (schema: module doc)")
    parser.add_argument(
        "--namespace",
        action="append",
        metavar="NAME",
        help="draft only this namespace (repeatable); the stack file keeps the others",
    )
    args = parser.parse_args(argv)

    path = stack_file_of(args, PROJECT_DIR)
    try:
        stack, settings, kubeconfig = open_stack(args, path)
        objects = only_namespaces(read_objects(kubeconfig), args.namespace)
    except SettingsError as error:
        print(error, file=sys.stderr)
        return EXIT_BAD_INPUT
    except BadInputError as error:
        print(f"{path}: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    cluster = settings.cluster
    kept = kept_config(path, args.namespace)
    found = draft(
        objects["pods"],
        objects["namespaces"],
        objects["nodes"],
        owners_of(objects["replicasets"], objects["jobs"]),
        role_base_arn=args.role_base_arn
        or role_base_arn(cluster.partition, cluster.account_id, settings.iam),
        cluster_account_id=cluster.account_id,
        taken_keys=settings.applications,
        known={
            (a.namespace, a.arn(cluster.partition, cluster.account_id, settings.iam)): app
            for app, a in settings.applications.items()
        },
        held_permitted=settings.existing_permitted,
    )
    problems = validate(path, found, kept)
    if args.json:
        print(json.dumps({**found.as_json(), "problems": problems}, indent=2))
    else:
        print(as_yaml(stack, found, problems))
    return EXIT_INVALID if problems else EXIT_OK


def read_objects(kubeconfig: Path) -> dict[str, list[dict[str, Any]]]:
    api = cluster_api(kubeconfig)
    try:
        return {name: api.items(url) for name, url in LISTS.items()}
    except ApiError as error:
        raise BadInputError(f"the cluster at {api.server} refused a list: {error}") from None
    except (OSError, urllib.error.URLError) as error:
        raise BadInputError(f"cannot reach the cluster at {api.server}: {error}") from None


def only_namespaces(
    objects: dict[str, list[dict[str, Any]]], wanted: list[str] | None
) -> dict[str, list[dict[str, Any]]]:
    """The objects of the `--namespace` namespaces (every node); all of them without it.
    Raises `BadInputError` for a namespace the cluster does not have."""
    if not wanted:
        return objects
    present = {n["metadata"]["name"] for n in objects["namespaces"]}
    missing = [name for name in wanted if name not in present]
    if missing:
        raise BadInputError(
            f"--namespace {', '.join(missing)}: the cluster has no such namespace (it has "
            f"{', '.join(sorted(present))})"
        )
    return {
        kind: items
        if kind == "nodes"
        else [
            item
            for item in items
            if (item["metadata"]["name"] if kind == "namespaces" else item["metadata"]["namespace"])
            in wanted
        ]
        for kind, items in objects.items()
    }


def kept_config(stack_file: Path, drafted: list[str] | None) -> dict[str, Any] | None:
    """What the draft is checked beside: with `--namespace`, the stack file's applications and
    `kiam:existingPermitted` entries of every other namespace; None without it (the draft
    replaces both sections)."""
    if not drafted:
        return None
    config = (yaml.safe_load(stack_file.read_text()) or {}).get("config") or {}
    apps = config.get("kiam:applications") or {}
    permitted = config.get("kiam:existingPermitted") or {}
    return {
        "kiam:applications": {
            app: entry for app, entry in apps.items() if entry.get("namespace") not in drafted
        },
        "kiam:existingPermitted": {
            ns: value for ns, value in permitted.items() if ns not in drafted
        },
    }


def owners_of(
    replica_sets: list[dict[str, Any]], jobs: list[dict[str, Any]]
) -> dict[tuple[str, str, str], tuple[str, str]]:
    """(namespace, kind, name) of each ReplicaSet and Job to its controller's (kind, name)."""
    owners = {}
    for kind, items in (("ReplicaSet", replica_sets), ("Job", jobs)):
        for item in items:
            meta = item["metadata"]
            controller = next(
                (o for o in meta.get("ownerReferences") or [] if o.get("controller")), None
            )
            if controller is not None:
                owners[(meta["namespace"], kind, meta["name"])] = (
                    controller["kind"],
                    controller["name"],
                )
    return owners


def validate(stack_file: Path, found: Draft, kept: dict[str, Any] | None = None) -> list[str]:
    """What the stack would refuse of the draft, pasted into `stack_file` in place of its own
    `kiam:applications` and `kiam:existingPermitted` (beside what `kept` keeps of them)."""
    config = (yaml.safe_load(stack_file.read_text()) or {}).get("config") or {}
    drafted = found.stack_config()
    if kept is None:
        merged = {**config, **drafted}
    else:
        # Both sections become what is kept of them and the draft, whatever the file held.
        merged = {k: v for k, v in config.items() if k not in DRAFTED_KEYS}
        for key in DRAFTED_KEYS:
            if section := {**kept.get(key, {}), **drafted.get(key, {})}:
                merged[key] = section
    values = {k.removeprefix("kiam:"): v for k, v in merged.items() if k.startswith("kiam:")}
    try:
        settings_from_values(values, str(stack_file))
    except SettingsError as error:
        return list(error.problems)
    return []


def as_yaml(stack: str, found: Draft, problems: list[str]) -> str:
    """The section to paste, each application's workloads and blockers as comments above it."""
    lines = [
        f"# kiam:applications drafted by tools.kiam_draft from the live cluster (stack {stack})"
    ]
    for note, items in (
        (
            "not admitted by their namespace today (kiam refuses them already; left out)",
            found.not_admitted,
        ),
        ("annotations kiam cannot resolve to a role (left out)", found.unresolved),
        ("the stack would refuse this draft", problems),
    ):
        if items:
            lines.append(f"# {note}:")
            lines += [f"#   - {item}" for item in items]
    lines.append("kiam:applications:")
    for app in found.applications:
        lines.append(f"  # workloads: {', '.join(str(w) for w in app.workloads)}")
        lines += [f"  # blocks a move: {b}" for b in app.blockers]
        body = yaml.safe_dump({app.key: app.settings()}, sort_keys=False, width=10_000)
        lines += [f"  {line}" for line in body.splitlines()]
    if found.existing_permitted:
        body = yaml.safe_dump(
            {"kiam:existingPermitted": dict(sorted(found.existing_permitted.items()))},
            width=10_000,
        )
        lines += body.splitlines()
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())

"""What still uses kiam, from the live cluster: per application and per pod, where each running
pod gets its AWS credentials today, which applications are ready for their next `servedBy`
state, and whether kiam can be retired (`kiam:retire`).

    python -m tools.kiam_usage --stack dev [--kubeconfig FILE] [--json] [--check-retire]
        [--check-trust OUTPUTS]
    python -m tools.kiam_usage --config-file path/to/Pulumi.x.yaml [...]

The cluster is read with, in this order: `--kubeconfig FILE`; else the stack's `kiam:kubeconfig`
(a plain value as it is; a Pulumi secret through `pulumi config get kiam:kubeconfig --stack
<stack>`, which needs the Pulumi CLI, the stack's backend and its passphrase; without the CLI the
command stops rather than read another cluster); else `$KUBECONFIG` (one file) or
`~/.kube/config`. The kubeconfig's current context is used: client certificates, a token, or an
exec plugin (such as `aws eks get-token`), which is run once for a token.

Only the live pods are read (`GET /api/v1/pods`, `/api/v1/namespaces`); pods that ended
(Succeeded, Failed) are left out. Credentials, per pod (`program/credential_sources.py`):
`kiam` (the `iam.amazonaws.com/role` annotation only), `web-identity` or `pod-identity` (every
container carries IRSA's or Pod Identity's environment, which the SDKs read before kiam's
metadata API), `kiam+web-identity` or `kiam+pod-identity` (both), `none`. A pod of an application
served by Pod Identity or IRSA without that wiring `needs` a `restart` (EKS wires only pods created
after the association) or the application's `serviceAccount`.

Ready, per application: `kiam` always (moving to `kiam+podIdentity` or `kiam+irsa` only adds a
source; check the SDK minimums first, the notes say which); any other state once none of its
pods needs anything. Never while the cluster has no namespace of its `namespace` (a typo, most
likely: while kiam serves it, `pulumi up` would create the namespace bare by writing its
annotation; the note names the key). Retirement is refused while kiam serves an application, while any live pod
in the cluster carries a kiam annotation, or while a pod of an application lacks its wiring (it
would reach the node's own role once kiam is gone).

`--json` prints one object:

    {
      "stack": "dev",
      "ready": false,                       # every application ready
      "applications": {
        "<application>": {
          "namespace": "billing", "serviceAccount": "api" | null,
          "servedBy": "kiam+podIdentity",
          "roleArn": "arn:aws:iam::111122223333:role/kiam-apps/billing-api",
          "podAnnotation": "billing-api",   # what kiam resolves to roleArn
          "next": ["podIdentity"],          # [] at the end of a path; two from kiam
          "ready": false,
          "notes": ["billing/api-1: restart it: it was created before its wiring"],
          "pods": [<pod>, ...]              # sorted by namespace, name
        }
      },
      "otherKiamPods": [<pod>, ...],        # kiam-annotated pods no application claims
      "retirement": {"blessed": false, "refusals": ["pod billing/api-0 ... carries ..."]}
    }
    <pod> = {"namespace", "name", "serviceAccount",
             "credentials": "kiam" | "kiam+web-identity" | "web-identity" | "kiam+pod-identity"
                            | "pod-identity" | "none",
             "kiamRole": annotation | null, "kiamRoleArn": as kiam resolves it | null,
             "admitted": whether the namespace's iam.amazonaws.com/permitted admits it | null,
             "needs": "restart" | "serviceAccount" | null}

With `--check-trust OUTPUTS` (the stack's `pulumi stack output --json`), each application whose
role exists already (`roleArn`) also gets `"trust"` (`tools/role_trust.py`): what the stack asks
of the role's trust policy (`required` now, `next` by next state), whether IAM was read
(`checked`; a role of an account other than the caller's credentials' is not, `reason` says
which account to read it from), and what the role lacks (`missing`, `missingForNext`). IAM is
read with boto3 (`pip install 'boto3>=1.34,<2.0'`), as the caller's credentials allow.

Exit codes: 0 every application ready (and, with `--check-retire`, retirement blessed); 1 an
application is not ready, a checked role lacks what it needs now, or `--check-retire` and
retirement is refused; 2 bad input (stack settings, kubeconfig, the outputs file, an unreachable
or refusing cluster), with a message and no traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import ssl
import subprocess
import sys
import urllib.error
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from kiam_eks.contracts.kubeconfig import KubeconfigError, current_context
from kiam_eks.program.credential_sources import PodUsage, Usage, usage
from kiam_eks.program.kube_api import (
    ApiError,
    KubeApi,
    anchored,
    private_file,
    resolved,
)
from kiam_eks.settings import SettingsError, settings_from_stack_file
from kiam_eks.settings.base import UNDECRYPTED_SECRET
from kiam_eks.settings.loader import stack_name_of
from kiam_eks.settings.stack import StackSettings
from tools.role_trust import Boto3Iam, TrustCheck, trust_checks
from tools.stack_source import add_stack_source, stack_file_of

EXIT_OK, EXIT_NOT_READY, EXIT_BAD_INPUT = 0, 1, 2
PROJECT_DIR = Path(__file__).resolve().parents[1]


class BadInputError(Exception):
    """Input the command cannot use; the message is meant for the user as it is."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.kiam_usage",
        description=" ".join(__doc__.split("\n\n")[0].split()),
    )
    add_stack_source(
        parser,
        stack_help="the stack of stacks/Pulumi.<STACK>.yaml",
        file_help="any stack file",
    )
    parser.add_argument("--kubeconfig", type=Path, help="read the cluster with this kubeconfig")
    parser.add_argument("--json", action="store_true", help="print JSON (schema: module doc)")
    parser.add_argument(
        "--check-retire",
        action="store_true",
        help="exit 1 unless kiam can be retired (kiam:retire) now",
    )
    parser.add_argument(
        "--check-trust",
        type=Path,
        metavar="OUTPUTS",
        help="the stack's outputs (`pulumi stack output --json > OUTPUTS`): check with IAM, as "
        "the caller's AWS credentials read it, that each role named by roleArn trusts what the "
        "stack asks of it now and before its next step; exit 1 if a role lacks what it needs now",
    )
    args = parser.parse_args(argv)

    path = stack_file_of(args, PROJECT_DIR)
    try:
        stack, settings, kubeconfig = open_stack(args, path)
        pods, namespaces = read_cluster(kubeconfig)
    except SettingsError as error:
        print(error, file=sys.stderr)
        return EXIT_BAD_INPUT
    except BadInputError as error:
        print(f"{path}: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT

    found = usage(settings, pods, namespaces)
    trust: list[TrustCheck] = []
    if args.check_trust is not None:
        try:
            trust = trust_checks(settings, _outputs(args.check_trust), Boto3Iam())
        except (BadInputError, RuntimeError) as error:
            print(f"{args.check_trust}: {error}", file=sys.stderr)
            return EXIT_BAD_INPUT
    print(
        json.dumps(as_json(stack, found, trust), indent=2)
        if args.json
        else table(stack, found, trust)
    )
    lacking = any(check.checked and check.missing for check in trust)
    if not found.ready or lacking or (args.check_retire and not found.retirement_blessed):
        return EXIT_NOT_READY
    return EXIT_OK


def open_stack(args: argparse.Namespace, path: Path) -> tuple[str, StackSettings, Path]:
    """The stack's name, its settings and the kubeconfig its cluster is read with (the module
    doc's order); raises `SettingsError` or `BadInputError` with the user's message."""
    stack = args.stack or stack_name_of(path)
    settings, _ = settings_from_stack_file(path)
    return stack, settings, kubeconfig_of(args.kubeconfig, settings, stack, path)


def _outputs(path: Path) -> dict[str, Any]:
    """The stack outputs `pulumi stack output --json` wrote."""
    try:
        outputs = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise BadInputError(
            f"cannot read the stack's outputs ({error}): write them with "
            "`pulumi stack output --json > FILE`"
        ) from None
    if not isinstance(outputs, dict):
        raise BadInputError("not the JSON object `pulumi stack output --json` writes")
    return outputs


def kubeconfig_of(
    given: Path | None,
    settings: StackSettings,
    stack: str,
    stack_file: Path,
    environ: dict[str, str] | None = None,
) -> Path:
    """The kubeconfig the stack uses (see the module doc for the order)."""
    environ = dict(os.environ) if environ is None else environ
    if given is not None:
        return given
    if settings.kubeconfig is not None:
        value = settings.kubeconfig.get_secret_value()
        if value == UNDECRYPTED_SECRET:
            value = _pulumi_secret(stack, stack_file, environ)
        # Its relative files lead from the folder the program runs in (the project's), as the
        # program reads it.
        return private_file("kubeconfig.yaml", anchored(value, PROJECT_DIR))
    listed = [p for p in environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    if len(listed) > 1:
        raise BadInputError(
            f"KUBECONFIG lists {len(listed)} files; this command reads one: pass --kubeconfig FILE"
        )
    if listed:
        return Path(listed[0])
    return Path(environ.get("HOME", str(Path.home()))) / ".kube" / "config"


def _pulumi_secret(stack: str, stack_file: Path, environ: dict[str, str]) -> str:
    pulumi = shutil.which("pulumi", path=environ.get("PATH"))
    if pulumi is None:
        raise BadInputError(
            "kiam:kubeconfig is a secret only the Pulumi CLI decrypts, and no `pulumi` is on "
            "PATH: install it, or pass --kubeconfig FILE"
        )
    done = subprocess.run(
        [
            pulumi,
            "config",
            "get",
            "kiam:kubeconfig",
            "--stack",
            stack,
            "--config-file",
            str(stack_file),
        ],
        cwd=PROJECT_DIR,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise BadInputError(
            f"`pulumi config get kiam:kubeconfig --stack {stack}` failed: {last} "
            "(or pass --kubeconfig FILE)"
        )
    return done.stdout


def read_cluster(kubeconfig: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every pod and namespace of the cluster."""
    api = cluster_api(kubeconfig)
    try:
        return api.items("/api/v1/pods"), api.items("/api/v1/namespaces")
    except ApiError as error:
        raise BadInputError(
            f"the cluster at {api.server} refused to list pods and namespaces: {error}"
        ) from None
    except (OSError, urllib.error.URLError) as error:
        raise BadInputError(f"cannot reach the cluster at {api.server}: {error}") from None


def cluster_api(kubeconfig: Path) -> KubeApi:
    """The cluster the kubeconfig names, with an exec plugin's token where it uses one."""
    try:
        return KubeApi(_kubeconfig_document(kubeconfig))
    except BadInputError:
        raise
    except (OSError, yaml.YAMLError, ssl.SSLError, KubeconfigError, KeyError, TypeError) as error:
        problem = f"{type(error).__name__}: {error}"
        raise BadInputError(f"cannot use kubeconfig {kubeconfig}: {problem}") from None


def _kubeconfig_document(kubeconfig: Path) -> dict[str, Any]:
    """The kubeconfig's document, its relative file references leading from the file's folder
    and, when its current user runs an exec plugin (`aws eks get-token`), the token that plugin
    prints in the plugin's place (program/kube_api.py `resolved`): written nowhere."""
    document = yaml.safe_load(kubeconfig.read_text())
    current_context(document)  # a kubeconfig without one is not this function's to explain
    try:
        return resolved(document, kubeconfig.parent)
    except KubeconfigError as error:
        raise BadInputError(f"kubeconfig {kubeconfig}: {error}") from None


def as_json(stack: str, found: Usage, trust: Sequence[TrustCheck] = ()) -> dict[str, Any]:
    checks = {c.application: c for c in trust}
    return {
        "stack": stack,
        "ready": found.ready,
        "applications": {
            a.name: a.as_json() | ({"trust": checks[a.name].as_json()} if a.name in checks else {})
            for a in found.applications
        },
        "otherKiamPods": [p.as_json() for p in found.other_kiam_pods],
        "retirement": {
            "blessed": found.retirement_blessed,
            "refusals": found.retirement_refusals,
        },
    }


def table(stack: str, found: Usage, trust: Sequence[TrustCheck] = ()) -> str:
    """The readable report."""
    lines = [f"kiam usage of stack {stack}", ""]
    lines += _columns(
        ["APPLICATION", "NAMESPACE", "SERVED BY", "NEXT", "READY"],
        [
            [
                a.name,
                a.settings.namespace,
                a.settings.served_by.value,
                " or ".join(s.value for s in a.next) or "(end of its path)",
                "yes" if a.ready else "no",
            ]
            for a in found.applications
        ],
    )
    pods: list[tuple[str, PodUsage]] = [(a.name, p) for a in found.applications for p in a.pods] + [
        ("-", p) for p in found.other_kiam_pods
    ]
    lines.append("")
    if pods:
        lines += _columns(
            [
                "POD",
                "APPLICATION",
                "SERVICE ACCOUNT",
                "CREDENTIALS",
                "KIAM ROLE",
                "ADMITTED",
                "NEEDS",
            ],
            [_pod_row(app, p) for app, p in sorted(pods, key=lambda item: item[1].ref)],
        )
    else:
        lines.append("no live pod belongs to an application or carries a kiam annotation")
    notes = [(a.name, n) for a in found.applications for n in a.notes]
    notes += [(c.application, n) for c in trust for n in c.notes()]
    if notes:
        lines += ["", "Notes:"] + [f"  {name}: {n}" for name, n in notes]
    lines.append("")
    if found.retirement_blessed:
        lines.append(
            "kiam:retire: can be blessed (kiam serves no application, no live pod carries a kiam "
            "annotation, every application pod has its wiring)"
        )
    else:
        lines.append("kiam:retire: refused")
        lines += [f"  - {r}" for r in found.retirement_refusals]
    waiting = [a.name for a in found.applications if not a.ready]
    lines.append(f"not ready: {', '.join(waiting)}" if waiting else "every application is ready")
    return "\n".join(lines)


def _pod_row(app: str, p: PodUsage) -> list[str]:
    admitted = {True: "yes", False: "no", None: "-"}[p.admitted]
    return [
        p.ref,
        app,
        p.service_account,
        p.source.value,
        p.kiam_role or "-",
        admitted,
        p.needs.value if p.needs else "-",
    ]


def _columns(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in [header, *rows]
    ]


__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())

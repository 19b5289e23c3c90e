"""A stack file shaped like a long-lived multi-tenant kiam cluster, at any size.

    python -m tools.scale_stack --applications 1000 [--namespaces 20] > Pulumi.scale.yaml

The dev example stack's cluster and node group, and `--applications` applications spread over
`--namespaces` team namespaces, in the proportions issue 39 describes for clusters that ran kiam
for years: four in five serve a role made elsewhere, named by ARN under its team's path (one in
eight of those in a second account); one in five is a role the stack creates under the team's
path; one in ten is moving off kiam (Pod Identity and IRSA in turn). The same arguments always
give the same file, so a measurement can be repeated. The benchmark (`tools.bench`), the tests
of IAM's quotas and the real-engine scale scenarios plan from it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

from kiam_eks.contracts.pulumi_config import MAX_ARG_STRLEN, config_environment_bytes
from kiam_eks.settings.loader import read_stack_file

ACCOUNT = "111122223333"  # the dev stack's account
OTHER_ACCOUNT = "444455556666"
EXISTING_IN = 5  # four in five roles exist already
OTHER_ACCOUNT_IN = 8  # one existing role in eight lives in the other account
MOVING_IN = 10  # one application in ten is moving off kiam
PROJECT_DIR = Path(__file__).resolve().parent.parent
BASE_STACK = "stacks/Pulumi.dev.yaml"


def team(index: int, namespaces: int) -> str:
    """The namespace (and team) of application `index`."""
    return f"team-{index % namespaces:02d}"


def application(index: int, namespaces: int) -> dict[str, Any]:
    """Application `index`'s entry in `kiam:applications`."""
    namespace = team(index, namespaces)
    name = f"{namespace}-app-{index:04d}"
    entry: dict[str, Any] = {"namespace": namespace}
    if index % EXISTING_IN:
        account = OTHER_ACCOUNT if (index // EXISTING_IN) % OTHER_ACCOUNT_IN == 0 else ACCOUNT
        entry["roleArn"] = f"arn:aws:iam::{account}:role/teams/{namespace}/{name}"
    else:
        entry["roleName"] = name
        entry["path"] = f"/kiam-apps/{namespace}/"
        entry["inlinePolicies"] = {
            "queue": {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Action": ["sqs:ReceiveMessage", "sqs:DeleteMessage"],
                        "Resource": f"arn:aws:sqs:eu-west-1:{ACCOUNT}:{name}",
                    }
                ],
            }
        }
    if index % MOVING_IN == MOVING_IN - 1:
        entry["servedBy"] = "kiam+podIdentity" if (index // MOVING_IN) % 2 else "kiam+irsa"
        entry["serviceAccount"] = name
    return entry


def scale_stack(
    applications: int, namespaces: int = 20, applications_file: Path | None = None
) -> dict[str, Any]:
    """The stack file's document: the dev stack with `applications` applications, in the stack
    file or, given `applications_file`, written there and named by `kiam:applicationsFile` (an
    absolute path: it holds wherever the stack file is used from)."""
    config = read_stack_file(PROJECT_DIR / BASE_STACK)
    listed = {
        f"{team(i, namespaces)}-app-{i:04d}": application(i, namespaces)
        for i in range(applications)
    }
    if applications_file is None:
        config["kiam:applications"] = listed
    else:
        applications_file.write_text(
            yaml.safe_dump({"applications": listed}, sort_keys=False, width=100)
        )
        config["kiam:applicationsFile"] = str(applications_file.resolve())
    if any(i % MOVING_IN == MOVING_IN - 1 for i in range(applications)):
        config["kiam:podIdentityAgent"] = {"manageAddon": True}
    return {"config": config}


def scale_config(applications: int, namespaces: int, folder: Path) -> dict[str, Any]:
    """The scale stack's `config:` map, its applications inline while Pulumi can hand them to the
    program in its configuration (contracts/pulumi_config.py), else in `folder`/applications.yaml
    (`kiam:applicationsFile`), as a user's stack of that size must."""
    config: dict[str, Any] = scale_stack(applications, namespaces)["config"]
    if config_environment_bytes(config) <= MAX_ARG_STRLEN:
        return config
    folder.mkdir(parents=True, exist_ok=True)
    listed: dict[str, Any] = scale_stack(applications, namespaces, folder / "applications.yaml")[
        "config"
    ]
    return listed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.scale_stack", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--applications", type=int, required=True)
    parser.add_argument("--namespaces", type=int, default=20)
    parser.add_argument(
        "--applications-file",
        type=Path,
        metavar="PATH",
        help="write the applications here (kiam:applicationsFile), not into the stack file",
    )
    args = parser.parse_args(argv)
    if args.applications < 0 or args.namespaces < 1:
        parser.error("--applications must be 0 or more and --namespaces 1 or more")
    yaml.safe_dump(
        scale_stack(args.applications, args.namespaces, args.applications_file),
        sys.stdout,
        sort_keys=False,
        width=100,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

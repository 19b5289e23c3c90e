"""`python -m tools.kiam_usage`: each kind of pod classified from its API object, the exact table
and JSON, readiness per servedBy state, the retirement verdict, the exit codes, and where the
kubeconfig comes from."""

from __future__ import annotations

import copy
import json
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from e2e.standins.signing import make_ca
from kiam_eks.program.credential_sources import Needs, Source, source_of, usage
from kiam_eks.settings.loader import settings_from_values
from kiam_eks.settings.stack import StackSettings
from tests.conftest import base_config
from tests.kubeconfigs import kubeconfig_document
from tools import kiam_usage
from tools.kiam_usage import BadInputError, kubeconfig_of, main

BASE = "arn:aws:iam::111122223333:role/kiam-apps/"
PI_ENV = [
    {"name": "AWS_CONTAINER_CREDENTIALS_FULL_URI", "value": "http://169.254.170.23/v1/credentials"},
    {
        "name": "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
        "value": "/var/run/secrets/pods.eks.amazonaws.com/serviceaccount/eks-pod-identity-token",
    },
]


def irsa_env(role: str) -> list[dict[str, str]]:
    return [
        {"name": "AWS_ROLE_ARN", "value": BASE + role},
        {
            "name": "AWS_WEB_IDENTITY_TOKEN_FILE",
            "value": "/var/run/secrets/eks.amazonaws.com/serviceaccount/token",
        },
    ]


APPLICATIONS = {
    # Moving to Pod Identity: kiam and Pod Identity both serve service account api.
    "billing": {
        "namespace": "billing",
        "roleName": "billing-api",
        "servedBy": "kiam+podIdentity",
        "serviceAccount": "api",
    },
    # Still on kiam.
    "search": {"namespace": "search", "roleName": "search-api"},
    # Moved to Pod Identity; its role has a path of its own.
    "reports": {
        "namespace": "reports",
        "roleName": "reports-api",
        "path": "/kiam-apps/team-a/",
        "servedBy": "podIdentity",
        "serviceAccount": "reports",
    },
    # Moving to IRSA.
    "ledger": {
        "namespace": "ledger",
        "roleName": "ledger-api",
        "servedBy": "kiam+irsa",
        "serviceAccount": "ledger",
    },
}


def settings_with(applications: dict[str, Any]) -> StackSettings:
    config = base_config(applications=applications)
    return settings_from_values({k[5:]: v for k, v in config.items()}, "test config")


def pod(
    namespace: str,
    name: str,
    *,
    role: str | None = None,
    account: str | None = None,
    env: list[dict[str, str]] | None = None,
    phase: str = "Running",
    containers: int = 1,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [
            {"name": f"c{i}", "image": "app:1", **({"env": env} if env else {})}
            for i in range(containers)
        ]
    }
    if account:
        spec["serviceAccountName"] = account
    return {
        "metadata": {
            "namespace": namespace,
            "name": name,
            **({"annotations": {"iam.amazonaws.com/role": role}} if role else {}),
        },
        "spec": spec,
        "status": {"phase": phase},
    }


def namespace(name: str, permitted: str | None = None) -> dict[str, Any]:
    annotations = {"iam.amazonaws.com/permitted": permitted} if permitted else {}
    return {"metadata": {"name": name, "annotations": annotations}}


PODS = [
    pod("billing", "api-0", role="billing-api", account="api", env=PI_ENV),
    pod("billing", "api-1", role="billing-api", account="api"),  # before the association
    pod("billing", "batch-0", role="billing-api"),  # service account default
    pod("billing", "done-0", role="billing-api", phase="Succeeded"),  # ended: not counted
    pod("search", "web-0", role="search-api"),
    pod("search", "web-1", role=BASE + "search-api"),  # the full ARN resolves the same
    pod("search", "stray-0", role="billing-api"),  # another namespace's role: not admitted
    pod("reports", "r-0", account="reports", env=PI_ENV),
    pod("reports", "r-1", account="reports"),  # no wiring, no annotation: needs restart
    pod("ledger", "l-0", role="ledger-api", account="ledger", env=irsa_env("ledger-api")),
    pod("ledger", "l-1", account="ledger", env=irsa_env("ledger-api")),
    pod("legacy", "old-0", role="legacy-role"),  # no application of this stack
    pod("kube-system", "coredns-0", account="coredns"),  # nothing to do with kiam: not listed
]
NAMESPACES = [
    namespace("billing", BASE + "billing-api"),
    namespace("search", BASE + "search-api"),
    namespace("reports"),  # no longer permits anything: reports left kiam
    namespace("ledger", BASE + "ledger-api"),
    namespace("legacy"),
    namespace("kube-system"),
]


def pod_json(
    ns: str,
    name: str,
    account: str,
    credentials: str,
    role: str | None = None,
    arn: str | None = None,
    admitted: bool | None = None,
    needs: str | None = None,
) -> dict[str, Any]:
    return {
        "namespace": ns,
        "name": name,
        "serviceAccount": account,
        "credentials": credentials,
        "kiamRole": role,
        "kiamRoleArn": arn,
        "admitted": admitted,
        "needs": needs,
    }


REMINDER = (
    "before moving on, check every container's AWS SDK: an SDK older than the Pod Identity "
    "minimum fails instead of falling back to kiam (boto3/botocore 1.34.41, AWS CLI 1.30.0 / "
    "2.15.0, Java v2 2.21.30, Go v2 release-2023-11-14, JavaScript v3 3.458.0; "
    "https://docs.aws.amazon.com/eks/latest/userguide/pod-id-minimum-sdk.html); IRSA minimums: "
    "https://docs.aws.amazon.com/eks/latest/userguide/iam-roles-for-service-accounts-minimum-sdk.html"
)

EXPECTED_JSON: dict[str, Any] = {
    "stack": "test",
    "ready": False,
    "applications": {
        "billing": {
            "namespace": "billing",
            "serviceAccount": "api",
            "servedBy": "kiam+podIdentity",
            "roleArn": BASE + "billing-api",
            "podAnnotation": "billing-api",
            "next": ["podIdentity"],
            "ready": False,
            "notes": [
                "billing/api-1: restart it: it was created before its wiring",
                "billing/batch-0: runs as service account default: give it api",
                "search/stray-0: runs as service account default: give it api",
            ],
            "pods": [
                pod_json(
                    "billing",
                    "api-0",
                    "api",
                    "kiam+pod-identity",
                    "billing-api",
                    BASE + "billing-api",
                    True,
                ),
                pod_json(
                    "billing",
                    "api-1",
                    "api",
                    "kiam",
                    "billing-api",
                    BASE + "billing-api",
                    True,
                    "restart",
                ),
                pod_json(
                    "billing",
                    "batch-0",
                    "default",
                    "kiam",
                    "billing-api",
                    BASE + "billing-api",
                    True,
                    "serviceAccount",
                ),
                pod_json(
                    "search",
                    "stray-0",
                    "default",
                    "kiam",
                    "billing-api",
                    BASE + "billing-api",
                    False,
                    "serviceAccount",
                ),
            ],
        },
        "ledger": {
            "namespace": "ledger",
            "serviceAccount": "ledger",
            "servedBy": "kiam+irsa",
            "roleArn": BASE + "ledger-api",
            "podAnnotation": "ledger-api",
            "next": ["irsa"],
            "ready": True,
            "notes": [],
            "pods": [
                pod_json(
                    "ledger",
                    "l-0",
                    "ledger",
                    "kiam+web-identity",
                    "ledger-api",
                    BASE + "ledger-api",
                    True,
                ),
                pod_json("ledger", "l-1", "ledger", "web-identity"),
            ],
        },
        "reports": {
            "namespace": "reports",
            "serviceAccount": "reports",
            "servedBy": "podIdentity",
            "roleArn": BASE + "team-a/reports-api",
            "podAnnotation": "team-a/reports-api",
            "next": [],
            "ready": False,
            "notes": ["reports/r-1: restart it: it was created before its wiring"],
            "pods": [
                pod_json("reports", "r-0", "reports", "pod-identity"),
                pod_json("reports", "r-1", "reports", "none", needs="restart"),
            ],
        },
        "search": {
            "namespace": "search",
            "serviceAccount": None,
            "servedBy": "kiam",
            "roleArn": BASE + "search-api",
            "podAnnotation": "search-api",
            "next": ["kiam+podIdentity", "kiam+irsa"],
            "ready": True,
            "notes": [REMINDER],
            "pods": [
                pod_json(
                    "search",
                    "web-0",
                    "default",
                    "kiam",
                    "search-api",
                    BASE + "search-api",
                    True,
                ),
                pod_json(
                    "search",
                    "web-1",
                    "default",
                    "kiam",
                    BASE + "search-api",
                    BASE + "search-api",
                    True,
                ),
            ],
        },
    },
    "otherKiamPods": [
        pod_json("legacy", "old-0", "default", "kiam", "legacy-role", BASE + "legacy-role", False)
    ],
    "retirement": {
        "blessed": False,
        "refusals": [
            "kiam:applications.billing is still served by kiam (servedBy kiam+podIdentity)",
            "kiam:applications.ledger is still served by kiam (servedBy kiam+irsa)",
            "kiam:applications.search is still served by kiam (servedBy kiam)",
            "pod billing/api-0 (application billing) carries iam.amazonaws.com/role: billing-api",
            "pod billing/api-1 (application billing) carries iam.amazonaws.com/role: billing-api",
            "pod billing/api-1 (application billing) lacks its application's Pod Identity or "
            "IRSA wiring (needs restart): once kiam is gone it would reach the node's own role",
            "pod billing/batch-0 (application billing) carries iam.amazonaws.com/role: billing-api",
            "pod billing/batch-0 (application billing) lacks its application's Pod Identity or "
            "IRSA wiring (needs serviceAccount): once kiam is gone it would reach the node's own "
            "role",
            "pod ledger/l-0 (application ledger) carries iam.amazonaws.com/role: ledger-api",
            "pod legacy/old-0 (no application of this stack) carries iam.amazonaws.com/role: "
            "legacy-role",
            "pod reports/r-1 (application reports) lacks its application's Pod Identity or IRSA "
            "wiring (needs restart): once kiam is gone it would reach the node's own role",
            "pod search/stray-0 (application billing) carries iam.amazonaws.com/role: billing-api",
            "pod search/stray-0 (application billing) lacks its application's Pod Identity or "
            "IRSA wiring (needs serviceAccount): once kiam is gone it would reach the node's own "
            "role",
            "pod search/web-0 (application search) carries iam.amazonaws.com/role: search-api",
            "pod search/web-1 (application search) carries iam.amazonaws.com/role: "
            "arn:aws:iam::111122223333:role/kiam-apps/search-api",
        ],
    },
}


def test_every_kind_of_pod_by_application_as_json() -> None:
    found = usage(settings_with(APPLICATIONS), PODS, NAMESPACES)
    assert kiam_usage.as_json("test", found) == EXPECTED_JSON


def test_the_table() -> None:
    found = usage(settings_with(APPLICATIONS), PODS, NAMESPACES)
    assert kiam_usage.table("test", found).splitlines() == EXPECTED_TABLE


EXPECTED_TABLE = [
    "kiam usage of stack test",
    "",
    "APPLICATION  NAMESPACE  SERVED BY         NEXT                           READY",
    "billing      billing    kiam+podIdentity  podIdentity                    no",
    "ledger       ledger     kiam+irsa         irsa                           yes",
    "reports      reports    podIdentity       (end of its path)              no",
    "search       search     kiam              kiam+podIdentity or kiam+irsa  yes",
    "",
    "POD              APPLICATION  SERVICE ACCOUNT  CREDENTIALS        KIAM ROLE                                            ADMITTED  NEEDS",
    "billing/api-0    billing      api              kiam+pod-identity  billing-api                                          yes       -",
    "billing/api-1    billing      api              kiam               billing-api                                          yes       restart",
    "billing/batch-0  billing      default          kiam               billing-api                                          yes       serviceAccount",
    "ledger/l-0       ledger       ledger           kiam+web-identity  ledger-api                                           yes       -",
    "ledger/l-1       ledger       ledger           web-identity       -                                                    -         -",
    "legacy/old-0     -            default          kiam               legacy-role                                          no        -",
    "reports/r-0      reports      reports          pod-identity       -                                                    -         -",
    "reports/r-1      reports      reports          none               -                                                    -         restart",
    "search/stray-0   billing      default          kiam               billing-api                                          no        serviceAccount",
    "search/web-0     search       default          kiam               search-api                                           yes       -",
    "search/web-1     search       default          kiam               arn:aws:iam::111122223333:role/kiam-apps/search-api  yes       -",
    "",
    "Notes:",
    "  billing: billing/api-1: restart it: it was created before its wiring",
    "  billing: billing/batch-0: runs as service account default: give it api",
    "  billing: search/stray-0: runs as service account default: give it api",
    "  reports: reports/r-1: restart it: it was created before its wiring",
    f"  search: {REMINDER}",
    "",
    "kiam:retire: refused",
    *(f"  - {r}" for r in EXPECTED_JSON["retirement"]["refusals"]),
    "not ready: billing, reports",
]


@pytest.mark.parametrize(
    ("role", "env", "containers", "source"),
    [
        ("a", None, 1, Source.KIAM),
        ("a", irsa_env("a"), 1, Source.KIAM_WEB_IDENTITY),
        (None, irsa_env("a"), 1, Source.WEB_IDENTITY),
        ("a", PI_ENV, 1, Source.KIAM_POD_IDENTITY),
        (None, PI_ENV, 2, Source.POD_IDENTITY),
        (None, None, 1, Source.NONE),
        # The SDKs read web identity before container credentials.
        (None, irsa_env("a") + PI_ENV, 1, Source.WEB_IDENTITY),
        # An empty annotation is no role (kiam refuses it).
        ("", None, 1, Source.NONE),
        # Only half of the Pod Identity wiring: nothing the SDK can use.
        (None, PI_ENV[:1], 1, Source.NONE),
    ],
)
def test_each_credential_source(
    role: str | None, env: list[dict[str, str]] | None, containers: int, source: Source
) -> None:
    the_pod = pod("ns", "p", env=env, containers=containers)
    if role is not None:
        the_pod["metadata"]["annotations"] = {"iam.amazonaws.com/role": role}
    assert source_of(the_pod) == source


def test_a_container_without_the_wiring_makes_the_pod_fall_back_to_kiam() -> None:
    wired = pod("billing", "api-2", role="billing-api", account="api", env=PI_ENV, containers=2)
    wired["spec"]["containers"][1].pop("env")
    assert source_of(wired) is Source.KIAM
    found = usage(settings_with(APPLICATIONS), [wired], NAMESPACES)
    billing = next(a for a in found.applications if a.name == "billing")
    assert [(p.name, p.needs) for p in billing.pods] == [("api-2", Needs.RESTART)]
    assert not billing.ready


def test_ready_and_blessed_once_every_application_moved_and_no_pod_carries_kiam() -> None:
    moved = copy.deepcopy(APPLICATIONS)
    moved["billing"]["servedBy"] = "podIdentity"
    moved["search"] = {
        "namespace": "search",
        "roleName": "search-api",
        "servedBy": "irsa",
        "serviceAccount": "web",
    }
    moved["ledger"]["servedBy"] = "irsa"
    pods = [
        pod("billing", "api-3", account="api", env=PI_ENV),
        pod("search", "web-2", account="web", env=irsa_env("search-api")),
        pod("reports", "r-0", account="reports", env=PI_ENV),
        pod("ledger", "l-1", account="ledger", env=irsa_env("ledger-api")),
        pod("kube-system", "coredns-0", account="coredns"),
    ]
    found = usage(settings_with(moved), pods, NAMESPACES)
    assert found.ready
    assert found.retirement_blessed
    assert found.retirement_refusals == []
    assert [(a.name, a.next, a.ready) for a in found.applications] == [
        ("billing", [], True),
        ("ledger", [], True),
        ("reports", [], True),
        ("search", [], True),
    ]
    lines = kiam_usage.table("test", found).splitlines()
    assert lines[-2:] == [
        "kiam:retire: can be blessed (kiam serves no application, no live pod carries a kiam "
        "annotation, every application pod has its wiring)",
        "every application is ready",
    ]


def test_an_unreadable_permitted_regexp_leaves_admission_undecided() -> None:
    # Go's regexp refuses a backreference: kiam would refuse every pod, this check cannot match.
    namespaces = [namespace("search", "(a)\\1")]
    found = usage(
        settings_with(APPLICATIONS), [pod("search", "web-0", role="search-api")], namespaces
    )
    assert [p.admitted for a in found.applications for p in a.pods] == [None]


# --- the command: exit codes, output, kubeconfig ----------------------------------------------


@pytest.fixture
def stack_file(tmp_path: Path) -> Path:
    path = tmp_path / "Pulumi.usage.yaml"
    path.write_text(yaml.safe_dump({"config": base_config(applications=APPLICATIONS)}))
    return path


def fake_cluster(
    monkeypatch: pytest.MonkeyPatch, pods: list[dict[str, Any]], namespaces: list[dict[str, Any]]
) -> list[Path]:
    read: list[Path] = []

    def read_cluster(kubeconfig: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        read.append(kubeconfig)
        return pods, namespaces

    monkeypatch.setattr(kiam_usage, "read_cluster", read_cluster)
    return read


def test_json_output_and_exit_1_while_an_application_is_not_ready(
    stack_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    read = fake_cluster(monkeypatch, PODS, NAMESPACES)
    given = tmp_path / "kubeconfig"
    code = main(["--config-file", str(stack_file), "--kubeconfig", str(given), "--json"])
    assert code == 1
    assert read == [given]
    assert json.loads(capsys.readouterr().out) == {**EXPECTED_JSON, "stack": "usage"}


def test_exit_0_when_ready_and_1_with_check_retire_while_kiam_is_used(
    stack_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Only the applications that are ready, and their pods.
    pods = [p for p in PODS if p["metadata"]["namespace"] in ("search", "ledger", "legacy")]
    pods = [p for p in pods if p["metadata"]["name"] != "stray-0"]
    fake_cluster(monkeypatch, pods, NAMESPACES)
    args = ["--config-file", str(stack_file), "--kubeconfig", str(tmp_path / "k")]
    assert main(args) == 0
    assert main([*args, "--check-retire"]) == 1
    out = capsys.readouterr().out
    assert "kiam:retire: refused\n  - kiam:applications.billing is still served by kiam" in out
    assert (
        "  - pod search/web-0 (application search) carries iam.amazonaws.com/role: search-api"
        in out
    )


def test_an_unknown_stack_is_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--stack", "no-such-stack"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.endswith(
        "stacks/Pulumi.no-such-stack.yaml: invalid kiam settings (1 problem):\n"
        "  - the stack file does not exist\n"
    )


def test_a_missing_or_malformed_kubeconfig_is_bad_input(
    stack_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing"
    assert main(["--config-file", str(stack_file), "--kubeconfig", str(missing)]) == 2
    assert capsys.readouterr().err == (
        f"{stack_file}: cannot use kubeconfig {missing}: FileNotFoundError: [Errno 2] No such "
        f"file or directory: '{missing}'\n"
    )
    malformed = tmp_path / "malformed"
    malformed.write_text("apiVersion: v1\nkind: Config\n")
    assert main(["--config-file", str(stack_file), "--kubeconfig", str(malformed)]) == 2
    assert capsys.readouterr().err == (
        f"{stack_file}: cannot use kubeconfig {malformed}: KubeconfigError: it sets no current-context\n"
    )


def kubeconfig_text(server: str, user: dict[str, Any]) -> str:
    return yaml.safe_dump(
        kubeconfig_document(user, server=server, **{"insecure-skip-tls-verify": True})
    )


def test_an_unreachable_cluster_is_bad_input(
    stack_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    # Port 1 on the loopback: nothing listens there, the connection is refused at once.
    kubeconfig.write_text(kubeconfig_text("https://127.0.0.1:1", {"token": "t"}))
    assert main(["--config-file", str(stack_file), "--kubeconfig", str(kubeconfig)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{stack_file}: cannot reach the cluster at https://127.0.0.1:1: ")
    assert "Connection refused" in err
    assert "Traceback" not in err


def settings_from(config: dict[str, Any]) -> StackSettings:
    return settings_from_values({k[5:]: v for k, v in config.items()}, "test config")


def test_the_kubeconfig_order(tmp_path: Path) -> None:
    plain = settings_from(base_config())
    given = tmp_path / "given"
    assert kubeconfig_of(given, plain, "s", tmp_path / "f", {"KUBECONFIG": "/x"}) == given
    assert kubeconfig_of(None, plain, "s", tmp_path / "f", {"KUBECONFIG": "/x"}) == Path("/x")
    assert kubeconfig_of(None, plain, "s", tmp_path / "f", {"HOME": "/home/u"}) == Path(
        "/home/u/.kube/config"
    )
    with pytest.raises(BadInputError) as error:
        kubeconfig_of(None, plain, "s", tmp_path / "f", {"KUBECONFIG": "/x:/y"})
    assert str(error.value) == (
        "KUBECONFIG lists 2 files; this command reads one: pass --kubeconfig FILE"
    )
    # A plain kiam:kubeconfig in the stack file is used as it is, in a file only its owner reads.
    inline = settings_from({**base_config(), "kiam:kubeconfig": "apiVersion: v1\n"})
    path = kubeconfig_of(None, inline, "s", tmp_path / "f", {"KUBECONFIG": "/x"})
    assert path.read_text() == "apiVersion: v1\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_secret_kubeconfig_comes_from_the_pulumi_cli(tmp_path: Path) -> None:
    # The stack file holds it encrypted (`secure:`): the loader sees a placeholder.
    secret, stack_file = _settings_of_file(
        tmp_path, {**base_config(), "kiam:kubeconfig": {"secure": "v1:AAAA"}}
    )
    with pytest.raises(BadInputError) as error:
        kubeconfig_of(None, secret, "prod", stack_file, {"PATH": str(tmp_path / "empty")})
    assert str(error.value) == (
        "kiam:kubeconfig is a secret only the Pulumi CLI decrypts, and no `pulumi` is on PATH: "
        "install it, or pass --kubeconfig FILE"
    )
    # A stand-in `pulumi` that prints its arguments as the decrypted value.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    cli = bin_dir / "pulumi"
    cli.write_text(f"#!{sys.executable}\nimport sys\nprint(' '.join(sys.argv[1:]), end='')\n")
    cli.chmod(0o755)
    path = kubeconfig_of(None, secret, "prod", stack_file, {"PATH": str(bin_dir)})
    assert path.read_text() == f"config get kiam:kubeconfig --stack prod --config-file {stack_file}"
    cli.write_text(
        f"#!{sys.executable}\nimport sys\nprint('error: no stack named prod', file=sys.stderr)\nsys.exit(255)\n"
    )
    with pytest.raises(BadInputError) as error:
        kubeconfig_of(None, secret, "prod", stack_file, {"PATH": str(bin_dir)})
    assert str(error.value) == (
        "`pulumi config get kiam:kubeconfig --stack prod` failed: error: no stack named prod "
        "(or pass --kubeconfig FILE)"
    )


def _settings_of_file(tmp_path: Path, config: dict[str, Any]) -> tuple[StackSettings, Path]:
    from kiam_eks.settings.loader import settings_from_stack_file

    path = tmp_path / "Pulumi.prod.yaml"
    path.write_text(yaml.safe_dump({"config": config}))
    return settings_from_stack_file(path)[0], path


def test_an_exec_plugin_is_run_once_for_a_token(tmp_path: Path) -> None:
    plugin = tmp_path / "get-token"
    plugin.write_text(
        f"#!{sys.executable}\nimport json, os, sys\n"
        "print(json.dumps({'kind': 'ExecCredential', 'status': {'token': "
        "os.environ['CLUSTER'] + ':' + ' '.join(sys.argv[1:])}}))\n"
    )
    plugin.chmod(0o755)
    exec_user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": str(plugin),
            "args": ["eks", "get-token"],
            "env": [{"name": "CLUSTER", "value": "dev"}],
        }
    }
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(kubeconfig_text("https://127.0.0.1:1", exec_user))
    derived = kiam_usage._kubeconfig_document(kubeconfig)
    assert isinstance(derived, dict)
    users = derived["users"]
    assert users == [{"name": "u", "user": {"token": "dev:eks get-token"}}]
    # A kubeconfig without a plugin is used as it is.
    kubeconfig.write_text(kubeconfig_text("https://127.0.0.1:1", {"token": "t"}))
    assert kiam_usage._kubeconfig_document(kubeconfig) == yaml.safe_load(kubeconfig.read_text())
    # A plugin that fails is bad input, with its last line.
    plugin.write_text(f"#!{sys.executable}\nimport sys\nsys.exit('no credentials')\n")
    kubeconfig.write_text(kubeconfig_text("https://127.0.0.1:1", exec_user))
    with pytest.raises(BadInputError) as error:
        kiam_usage._kubeconfig_document(kubeconfig)
    assert str(error.value) == (
        f"kubeconfig {kubeconfig}: its exec plugin {plugin} gave no token: no credentials"
    )


def test_an_exec_token_kubeconfig_keeps_reading_its_files_from_its_own_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The token goes into the document, written nowhere, and the CA file the kubeconfig names by
    a relative path is still found beside the kubeconfig (program/kube_api.py `anchor`)."""
    authority, _ = make_ca("authority", 1)
    folder = tmp_path / "kube"
    (folder / "pki").mkdir(parents=True)
    (folder / "pki" / "ca.crt").write_text(authority)
    plugin = folder / "get-token"
    plugin.write_text(f'#!{sys.executable}\nprint(\'{{"status": {{"token": "t1"}}}}\')\n')
    plugin.chmod(0o755)
    # A plugin named by a relative path is found beside the kubeconfig too, as kubectl finds it.
    document = kubeconfig_document(
        {"exec": {"command": "./get-token"}}, **{"certificate-authority": "pki/ca.crt"}
    )
    (folder / "config").write_text(yaml.safe_dump(document))
    monkeypatch.chdir(tmp_path)

    api = kiam_usage.cluster_api(folder / "config")

    trusted = [c["subject"] for c in api._ssl.get_ca_certs()]
    assert ((("commonName", "authority"),), (("organizationName", "kiam"),)) in trusted
    assert api._token == "t1"
    assert sorted(p.name for p in folder.iterdir()) == ["config", "get-token", "pki"]


def test_an_inline_kubeconfig_keeps_reading_its_files_from_the_project_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`kiam:kubeconfig` has no folder of its own: the program reads its relative files from the
    folder it runs in, the project's, and so does its private copy here, wherever it is run."""
    authority, _ = make_ca("authority", 1)
    (tmp_path / "pki").mkdir()
    (tmp_path / "pki" / "ca.crt").write_text(authority)
    inline = kubeconfig_document({"token": "t"}, **{"certificate-authority": "pki/ca.crt"})
    settings = settings_from({**base_config(), "kiam:kubeconfig": yaml.safe_dump(inline)})
    monkeypatch.setattr(kiam_usage, "PROJECT_DIR", tmp_path)

    copy = kubeconfig_of(None, settings, "s", tmp_path / "f", {})
    api = kiam_usage.cluster_api(copy)

    assert copy.parent.parent != tmp_path
    trusted = [c["subject"] for c in api._ssl.get_ca_certs()]
    assert ((("commonName", "authority"),), (("organizationName", "kiam"),)) in trusted
    # Text that is no kubeconfig is copied as it is, for the reader to explain.
    settings = settings_from({**base_config(), "kiam:kubeconfig": "not: [a kubeconfig"})
    assert (
        kubeconfig_of(None, settings, "s", tmp_path / "f", {}).read_text() == "not: [a kubeconfig"
    )


def test_an_application_in_a_namespace_the_cluster_lacks_is_not_ready_naming_the_key() -> None:
    # A typo: `pulumi up` would create "serach" bare, writing its permitted annotation.
    apps = {**APPLICATIONS, "search": {**APPLICATIONS["search"], "namespace": "serach"}}
    found = usage(settings_with(apps), PODS, NAMESPACES)
    before = usage(settings_with(APPLICATIONS), PODS, NAMESPACES)
    search, was = (next(a for a in u.applications if a.name == "search") for u in (found, before))
    assert (search.ready, search.notes) == (
        False,
        [
            "kiam:applications.search.namespace: the cluster has no namespace serach (a typo?): "
            "while kiam serves the application, `pulumi up` would create that namespace bare, "
            "writing its iam.amazonaws.com/permitted annotation"
        ],
    )
    # Its pods (in search, found by their role) and every other application judged as before.
    assert (was.ready, search.pods) == (True, was.pods)
    assert not found.ready
    assert [a for a in found.applications if a.name != "search"] == [
        a for a in before.applications if a.name != "search"
    ]

"""`python -m tools.kiam_usage` against a real control plane, run as a user runs it (its own
process, the cluster from `KUBECONFIG` or `--kubeconfig`), with real pods of every kind that kwok
runs: a kiam annotation only; kiam plus the IRSA environment; the Pod Identity environment, with
and without the annotation; none; a pod of an application served by Pod Identity created before
its association (no environment: needs a restart); a kiam-annotated pod no application claims.

Three moments of one way out of kiam, each judged by the tool's exact JSON and exit codes:
1. moving: two applications wait for restarts, retirement is refused;
2. after the restarts (the pods recreated with their wiring, as EKS wires a new pod): every
   application is ready, retirement still refused (kiam serves three, pods carry annotations);
3. every application moved in the stack file: refused while any kiam-annotated pod runs, listing
   exactly those; blessed once they are gone.

No stack is deployed: the tool reads only the stack file and the cluster. The namespaces'
`iam.amazonaws.com/permitted` are set as a running kiam left them (`kubectl annotate`), and the
wiring is written into the pods as EKS's webhook writes it (no webhook runs here).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from e2e.harness.environment import Environment, write_stack_file
from e2e.harness.kube import Kube
from e2e.harness.tool_process import run_tool
from e2e.tests.conftest import REPORT, example_config
from kiam_eks.contracts.labels import PERMITTED_ANNOTATION, ROLE_ANNOTATION
from kiam_eks.program.credential_sources import sdk_reminder

ACCOUNT = "111122223333"
BASE = f"arn:aws:iam::{ACCOUNT}:role/kiam-apps/"
# Generous: the machine may be busy (kwok, the API server and the tool share two cores).
DEADLINE_SECONDS = 300
MOVING = {
    "billing": {
        "namespace": "billing",
        "roleName": "billing-api",
        "servedBy": "kiam+podIdentity",
        "serviceAccount": "api",
    },
    "search": {"namespace": "search", "roleName": "search-api"},
    "reports": {
        "namespace": "reports",
        "roleName": "reports-api",
        "servedBy": "podIdentity",
        "serviceAccount": "reports",
    },
    "ledger": {
        "namespace": "ledger",
        "roleName": "ledger-api",
        "servedBy": "kiam+irsa",
        "serviceAccount": "ledger",
    },
}
MOVED = {
    **MOVING,
    "billing": {**MOVING["billing"], "servedBy": "podIdentity"},
    "search": {**MOVING["search"], "servedBy": "irsa", "serviceAccount": "web"},
    "ledger": {**MOVING["ledger"], "servedBy": "irsa"},
}
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


def pod(
    namespace: str,
    name: str,
    *,
    role: str | None = None,
    account: str = "default",
    env: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            **({"annotations": {ROLE_ANNOTATION: role}} if role else {}),
        },
        "spec": {
            "serviceAccountName": account,
            "containers": [{"name": "app", "image": "app:1", **({"env": env} if env else {})}],
        },
    }


def wait_for(what: str, condition: Callable[[], bool], state: Callable[[], Any] = str) -> float:
    """Poll until `condition` holds (generous deadline); the seconds it took. On timeout, the
    message says what `state` saw last."""
    start = time.monotonic()
    while not condition():
        if time.monotonic() - start > DEADLINE_SECONDS:
            raise TimeoutError(f"{what}: not within {DEADLINE_SECONDS}s (last seen: {state()})")
        time.sleep(0.2)
    return time.monotonic() - start


def phase(kube: Kube, namespace: str, name: str) -> str | None:
    found = kube.get_or_none(f"/api/v1/namespaces/{namespace}/pods/{name}")
    return None if found is None else str((found.get("status") or {}).get("phase"))


def phase_is(kube: Kube, namespace: str, name: str, wanted: str | None) -> Callable[[], bool]:
    return lambda: phase(kube, namespace, name) == wanted


def pod_state(kube: Kube, namespace: str, name: str) -> Callable[[], Any]:
    """The pod's status and deletion mark, for a timeout's message."""

    def state() -> Any:
        found = kube.get_or_none(f"/api/v1/namespaces/{namespace}/pods/{name}")
        if found is None:
            return None
        return {
            "deletionTimestamp": found["metadata"].get("deletionTimestamp"),
            "nodeName": found["spec"].get("nodeName"),
            "status": found.get("status"),
        }

    return state


def exists(kube: Kube, path: str) -> Callable[[], bool]:
    return lambda: kube.get_or_none(path) is not None


def run_pods(kube: Kube, pods: list[dict[str, Any]]) -> None:
    kube.apply(pods)
    for p in pods:
        ns, name = p["metadata"]["namespace"], p["metadata"]["name"]
        took = wait_for(
            f"pod {ns}/{name} Running",
            phase_is(kube, ns, name, "Running"),
            pod_state(kube, ns, name),
        )
        REPORT.append(f"kiam usage: pod {ns}/{name} Running after {took:.1f}s")


def delete_pods(kube: Kube, refs: list[str]) -> None:
    for ref in refs:
        ns, name = ref.split("/")
        kube.kubectl("delete", "pod", "-n", ns, name, "--grace-period=0", "--force", "--wait=false")
    for ref in refs:
        ns, name = ref.split("/")
        wait_for(
            f"pod {ref} gone",
            phase_is(kube, ns, name, None),
            pod_state(kube, ns, name),
        )


def kiam_usage(
    env: Environment, stack_file: Path, *args: str, via: str = "KUBECONFIG"
) -> tuple[int, dict[str, Any]]:
    """The tool in its own process, as a user runs it; its exit code and JSON."""
    return run_tool(env, "tools.kiam_usage", stack_file, *args, via=via)


def pod_json(
    ref: str,
    account: str,
    credentials: str,
    role: str | None = None,
    admitted: bool | None = None,
    needs: str | None = None,
) -> dict[str, Any]:
    namespace, name = ref.split("/")
    return {
        "namespace": namespace,
        "name": name,
        "serviceAccount": account,
        "credentials": credentials,
        "kiamRole": role,
        "kiamRoleArn": None if role is None else BASE + role,
        "admitted": admitted,
        "needs": needs,
    }


def application(
    name: str, settings: dict[str, Any], next_states: list[str], ready: bool, pods: list[Any]
) -> dict[str, Any]:
    served = settings.get("servedBy", "kiam")
    notes: list[str] = []
    if served == "kiam":
        notes = [sdk_reminder()]
    notes += [f"{p['namespace']}/{p['name']}: restart it: it was created before its wiring" for p in pods if p["needs"] == "restart"]  # fmt: skip
    return {
        "namespace": settings["namespace"],
        "serviceAccount": settings.get("serviceAccount"),
        "servedBy": served,
        "roleArn": BASE + settings["roleName"],
        "podAnnotation": settings["roleName"],
        "next": next_states,
        "ready": ready,
        "notes": notes,
        "pods": pods,
    }


def carries(ref: str, app: str | None, role: str) -> str:
    of = f"(application {app})" if app else "(no application of this stack)"
    return f"pod {ref} {of} carries {ROLE_ANNOTATION}: {role}"


def lacks(ref: str, app: str) -> str:
    return (
        f"pod {ref} (application {app}) lacks its application's Pod Identity or IRSA wiring "
        "(needs restart): once kiam is gone it would reach the node's own role"
    )


@pytest.fixture(scope="module")
def cluster(env: Environment) -> tuple[Environment, Path, Path]:
    """The moving and the moved stack files, and the cluster shaped for them (nodes, the
    applications' namespaces), with the permitted annotations and service accounts they use."""
    files = env.root / "stack-files"
    config = example_config("dev")
    moving = write_stack_file(files / "Pulumi.usage.yaml", {**config, "kiam:applications": MOVING})
    moved = write_stack_file(files / "Pulumi.moved.yaml", {**config, "kiam:applications": MOVED})
    env.shape_for(moving)
    kube = env.kube
    kube.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "legacy"}}])
    for namespace, role in [("billing", "billing-api"), ("search", "search-api"), ("ledger", "ledger-api")]:  # fmt: skip
        kube.kubectl("annotate", "namespace", namespace, f"{PERMITTED_ANNOTATION}={BASE}{role}")
    kube.apply(
        [
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": n, "namespace": ns}}
            for ns, n in [
                ("billing", "api"),
                ("reports", "reports"),
                ("ledger", "ledger"),
                ("search", "web"),
            ]
        ]
    )
    for ns in ("billing", "search", "reports", "ledger", "legacy"):
        wait_for(
            f"service account default in {ns}",
            exists(kube, f"/api/v1/namespaces/{ns}/serviceaccounts/default"),
        )
    return env, moving, moved


def test_what_still_uses_kiam_through_the_way_out(cluster: tuple[Environment, Path, Path]) -> None:
    env, moving, moved = cluster
    kube = env.kube
    run_pods(
        kube,
        [
            pod("billing", "api-0", role="billing-api", account="api", env=PI_ENV),
            pod("billing", "api-1", role="billing-api", account="api"),  # before the association
            pod("search", "web-0", role="search-api"),
            pod("reports", "r-0", account="reports", env=PI_ENV),
            pod("reports", "r-1", account="reports"),  # before the association
            pod("ledger", "l-0", role="ledger-api", account="ledger", env=irsa_env("ledger-api")),
            pod("legacy", "old-0", role="legacy-role"),
            pod("default", "unrelated-0"),
        ],
    )

    # 1. Moving: billing and reports wait for restarts.
    code, found = kiam_usage(env, moving)
    billing = [
        pod_json("billing/api-0", "api", "kiam+pod-identity", "billing-api", True),
        pod_json("billing/api-1", "api", "kiam", "billing-api", True, "restart"),
    ]
    ledger = [pod_json("ledger/l-0", "ledger", "kiam+web-identity", "ledger-api", True)]
    search = [pod_json("search/web-0", "default", "kiam", "search-api", True)]
    reports = [
        pod_json("reports/r-0", "reports", "pod-identity"),
        pod_json("reports/r-1", "reports", "none", needs="restart"),
    ]
    legacy = [pod_json("legacy/old-0", "default", "kiam", "legacy-role", False)]
    served_by_kiam = [
        "kiam:applications.billing is still served by kiam (servedBy kiam+podIdentity)",
        "kiam:applications.ledger is still served by kiam (servedBy kiam+irsa)",
        "kiam:applications.search is still served by kiam (servedBy kiam)",
    ]
    assert code == 1
    assert found == {
        "stack": "usage",
        "ready": False,
        "applications": {
            "billing": application("billing", MOVING["billing"], ["podIdentity"], False, billing),
            "ledger": application("ledger", MOVING["ledger"], ["irsa"], True, ledger),
            "reports": application("reports", MOVING["reports"], [], False, reports),
            "search": application(
                "search", MOVING["search"], ["kiam+podIdentity", "kiam+irsa"], True, search
            ),
        },
        "otherKiamPods": legacy,
        "retirement": {
            "blessed": False,
            "refusals": [
                *served_by_kiam,
                carries("billing/api-0", "billing", "billing-api"),
                carries("billing/api-1", "billing", "billing-api"),
                lacks("billing/api-1", "billing"),
                carries("ledger/l-0", "ledger", "ledger-api"),
                carries("legacy/old-0", None, "legacy-role"),
                lacks("reports/r-1", "reports"),
                carries("search/web-0", "search", "search-api"),
            ],
        },
    }
    # The same through --kubeconfig, and refused when asked about retirement.
    assert kiam_usage(env, moving, via="flag") == (1, found)
    assert kiam_usage(env, moving, "--check-retire")[0] == 1

    # 2. The restarts: recreated, EKS wires them (the template keeps billing's annotation).
    delete_pods(kube, ["billing/api-1", "reports/r-1"])
    run_pods(
        kube,
        [
            pod("billing", "api-2", role="billing-api", account="api", env=PI_ENV),
            pod("reports", "r-2", account="reports", env=PI_ENV),
        ],
    )
    code, found = kiam_usage(env, moving)
    billing = [
        billing[0],
        pod_json("billing/api-2", "api", "kiam+pod-identity", "billing-api", True),
    ]
    reports = [reports[0], pod_json("reports/r-2", "reports", "pod-identity")]
    assert code == 0
    assert found["ready"] is True
    assert found["applications"]["billing"] == application(
        "billing", MOVING["billing"], ["podIdentity"], True, billing
    )
    assert found["applications"]["reports"] == application(
        "reports", MOVING["reports"], [], True, reports
    )
    assert found["retirement"] == {
        "blessed": False,
        "refusals": [
            *served_by_kiam,
            carries("billing/api-0", "billing", "billing-api"),
            carries("billing/api-2", "billing", "billing-api"),
            carries("ledger/l-0", "ledger", "ledger-api"),
            carries("legacy/old-0", None, "legacy-role"),
            carries("search/web-0", "search", "search-api"),
        ],
    }
    assert kiam_usage(env, moving, "--check-retire")[0] == 1

    # 3. Every application moved in the stack file: only the annotated pods stand in the way.
    run_pods(kube, [pod("search", "web-1", account="web", env=irsa_env("search-api"))])
    code, found = kiam_usage(env, moved, "--check-retire")
    annotated = ["billing/api-0", "billing/api-2", "ledger/l-0", "legacy/old-0", "search/web-0"]
    assert code == 1
    assert found["retirement"] == {
        "blessed": False,
        "refusals": [
            carries("billing/api-0", "billing", "billing-api"),
            carries("billing/api-2", "billing", "billing-api"),
            carries("ledger/l-0", "ledger", "ledger-api"),
            carries("legacy/old-0", None, "legacy-role"),
            # search is served by IRSA now: its kiam pod lacks the wiring too.
            carries("search/web-0", "search", "search-api"),
            "pod search/web-0 (application search) lacks its application's Pod Identity or "
            "IRSA wiring (needs serviceAccount): once kiam is gone it would reach the node's "
            "own role",
        ],
    }
    # The templates lose the annotation: the pods are recreated without it.
    delete_pods(kube, annotated)
    run_pods(
        kube,
        [
            pod("billing", "api-3", account="api", env=PI_ENV),
            pod("ledger", "l-1", account="ledger", env=irsa_env("ledger-api")),
        ],
    )
    code, found = kiam_usage(env, moved, "--check-retire")
    assert code == 0
    assert found == {
        "stack": "moved",
        "ready": True,
        "applications": {
            "billing": application(
                "billing",
                MOVED["billing"],
                [],
                True,
                [pod_json("billing/api-3", "api", "pod-identity")],
            ),
            "ledger": application(
                "ledger",
                MOVED["ledger"],
                [],
                True,
                [pod_json("ledger/l-1", "ledger", "web-identity")],
            ),
            "reports": application("reports", MOVED["reports"], [], True, reports),
            "search": application(
                "search",
                MOVED["search"],
                [],
                True,
                [pod_json("search/web-1", "web", "web-identity")],
            ),
        },
        "otherKiamPods": [],
        "retirement": {"blessed": True, "refusals": []},
    }

"""An application's pods, created the way EKS admits them at that moment, and rolled as a
Deployment rolls them (new pods Ready first, then the old ones go).

EKS wires a pod at admission only, from what exists when the pod is created:
- Pod Identity: when an association names the pod's (namespace, service account), EKS adds
  `AWS_CONTAINER_CREDENTIALS_FULL_URI` (`http://169.254.170.23/v1/credentials`),
  `AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE` and the projected token volume
  `eks-pod-identity-token` (audience `pods.eks.amazonaws.com`, mounted at
  `/var/run/secrets/pods.eks.amazonaws.com/serviceaccount/`) to "a new pod that uses a service
  account with an EKS Pod Identity association" (the Amazon EKS User Guide, "Understand how EKS
  Pod Identity works", awsdocs/amazon-eks-user-guide pod-id-how-it-works.adoc at
  390223ef50785e42bd70f41d6d5216d8261b1627). The association is the stand-in's
  (`e2e/standins/pod_identity.py`).
- IRSA: when the pod's service account carries `eks.amazonaws.com/role-arn`, the pod identity
  webhook adds `AWS_ROLE_ARN` (that ARN), `AWS_WEB_IDENTITY_TOKEN_FILE`
  (`/var/run/secrets/eks.amazonaws.com/serviceaccount/token`) and the projected volume
  `aws-iam-token` (audience `sts.amazonaws.com`) (aws/amazon-eks-pod-identity-webhook, the patch
  `pkg/handler/testdata/rawPodWithoutVolumes.pod.yaml` expects at
  3eb38ece591ac0f94dbaf2b537e873d9cca5712c; the EKS User Guide, "Configure Pods to use a
  Kubernetes service account", pod-configuration.adoc at the commit above).
A pod already running keeps what it was given: nothing here changes a pod after it is created.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from e2e.harness.kube import Kube, is_ready
from e2e.harness.waiting import wait_for
from e2e.standins import pod_identity
from kiam_eks.contracts import credential_env
from kiam_eks.contracts.labels import IRSA_ANNOTATION, ROLE_ANNOTATION

POD_IDENTITY_TOKEN_VOLUME = "eks-pod-identity-token"
POD_IDENTITY_MOUNT = "/var/run/secrets/pods.eks.amazonaws.com/serviceaccount/"
POD_IDENTITY_AUDIENCE = "pods.eks.amazonaws.com"
IRSA_TOKEN_VOLUME = "aws-iam-token"
IRSA_MOUNT = "/var/run/secrets/eks.amazonaws.com/serviceaccount"
IRSA_AUDIENCE = "sts.amazonaws.com"
# The label that makes a pod one of an application's.
APP_LABEL = "kiam.e2e/app"
READY_DEADLINE_SECONDS = 120


@dataclass(frozen=True)
class Workload:
    """What an application's pod template says: its service account and, while kiam serves it,
    the kiam annotation (the stack output's pod annotation)."""

    app: str
    namespace: str
    service_account: str = "default"
    role_annotation: str | None = None


def wiring(kube: Kube, namespace: str, service_account: str) -> dict[str, Any]:
    """What EKS adds to a pod of this service account created now: env and volumes."""
    env: list[dict[str, str]] = []
    mounts: list[dict[str, Any]] = []
    volumes: list[dict[str, Any]] = []
    account = kube.get_or_none(f"/api/v1/namespaces/{namespace}/serviceaccounts/{service_account}")
    role_arn = ((account or {}).get("metadata", {}).get("annotations") or {}).get(IRSA_ANNOTATION)
    if role_arn:
        env += [
            {"name": credential_env.ROLE_ARN, "value": role_arn},
            {"name": credential_env.WEB_IDENTITY_TOKEN_FILE, "value": f"{IRSA_MOUNT}/token"},
        ]
        mounts.append({"name": IRSA_TOKEN_VOLUME, "mountPath": IRSA_MOUNT, "readOnly": True})
        volumes.append(_token_volume(IRSA_TOKEN_VOLUME, IRSA_AUDIENCE, "token"))
    if (namespace, service_account) in pod_identity.associations(kube):
        env += [
            {
                "name": credential_env.CONTAINER_CREDENTIALS_FULL_URI,
                "value": credential_env.POD_IDENTITY_AGENT_URIS[0],
            },
            {
                "name": credential_env.CONTAINER_AUTHORIZATION_TOKEN_FILE,
                "value": POD_IDENTITY_MOUNT + POD_IDENTITY_TOKEN_VOLUME,
            },
        ]
        mounts.append(
            {"name": POD_IDENTITY_TOKEN_VOLUME, "mountPath": POD_IDENTITY_MOUNT, "readOnly": True}
        )
        volumes.append(
            _token_volume(
                POD_IDENTITY_TOKEN_VOLUME, POD_IDENTITY_AUDIENCE, POD_IDENTITY_TOKEN_VOLUME
            )
        )
    return {"env": env, "volumeMounts": mounts, "volumes": volumes}


def _token_volume(name: str, audience: str, path: str) -> dict[str, Any]:
    return {
        "name": name,
        "projected": {
            "sources": [
                {
                    "serviceAccountToken": {
                        "audience": audience,
                        "expirationSeconds": 86400,
                        "path": path,
                    }
                }
            ]
        },
    }


def admitted_pod(kube: Kube, workload: Workload, name: str) -> dict[str, Any]:
    """The pod as EKS would store it if created now from `workload`'s template."""
    added = wiring(kube, workload.namespace, workload.service_account)
    container: dict[str, Any] = {"name": "app", "image": "app:1"}
    if added["env"]:
        container["env"] = added["env"]
        container["volumeMounts"] = added["volumeMounts"]
    spec: dict[str, Any] = {
        "serviceAccountName": workload.service_account,
        "containers": [container],
    }
    if added["volumes"]:
        spec["volumes"] = added["volumes"]
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": workload.namespace,
        "labels": {APP_LABEL: workload.app},
    }
    if workload.role_annotation:
        metadata["annotations"] = {ROLE_ANNOTATION: workload.role_annotation}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def pods_of(kube: Kube, workload: Workload) -> list[dict[str, Any]]:
    return kube.items(
        f"/api/v1/namespaces/{workload.namespace}/pods?labelSelector={APP_LABEL}={workload.app}"
    )


def create(kube: Kube, workload: Workload, generation: int, replicas: int) -> list[str]:
    """`replicas` new pods of the workload, admitted now, waited for until Ready."""
    names = [f"{workload.app}-{generation}-{i}" for i in range(replicas)]
    for name in names:
        pod = admitted_pod(kube, workload, name)
        kube.request("POST", f"/api/v1/namespaces/{workload.namespace}/pods", pod)
    _wait(
        lambda: (
            all(is_ready(p) for p in pods_of(kube, workload) if p["metadata"]["name"] in names)
            and len([p for p in pods_of(kube, workload) if p["metadata"]["name"] in names])
            == len(names)
        ),
        f"pods {names} Ready",
    )
    return names


def roll(kube: Kube, workload: Workload, generation: int, replicas: int) -> list[str]:
    """Recreate the workload's pods as a Deployment's rollout does with surge: the new pods
    (admitted now) Ready first, then every older pod deleted and gone."""
    old = [p["metadata"]["name"] for p in pods_of(kube, workload)]
    names = create(kube, workload, generation, replicas)
    _delete(kube, workload, old)
    return names


def delete(kube: Kube, workload: Workload) -> None:
    """Every pod of the workload deleted, and gone."""
    _delete(kube, workload, [p["metadata"]["name"] for p in pods_of(kube, workload)])


def _delete(kube: Kube, workload: Workload, names: list[str]) -> None:
    """These pods of the workload deleted, waited for until none of them is left."""
    for name in names:
        kube.request(
            "DELETE",
            f"/api/v1/namespaces/{workload.namespace}/pods/{name}",
            {"gracePeriodSeconds": 0},
        )
    _wait(
        lambda: not {p["metadata"]["name"] for p in pods_of(kube, workload)} & set(names),
        f"pods {names} gone",
    )


def _wait(condition: Any, what: str) -> None:
    wait_for(what, condition, READY_DEADLINE_SECONDS)


def service_account(
    kube: Kube, namespace: str, name: str, annotations: dict[str, str] | None = None
) -> None:
    """The application team's service account, with exactly these annotations (the stack
    output's, for IRSA): `kubectl apply` drops an annotation an earlier apply set and this one
    does not."""
    kube.apply(
        [
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {
                    "name": name,
                    "namespace": namespace,
                    "annotations": annotations or {},
                },
            }
        ]
    )

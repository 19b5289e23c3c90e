"""EKS Pod Identity without AWS: the association and the agent add-on, as objects of the control
plane that the engine creates, replaces and deletes as it would the AWS resources, and that the
harness's admission (`e2e/harness/app_pods.py`) and watcher read as EKS would.

The association (`aws.eks.PodIdentityAssociation`) is a ConfigMap in kube-system named after its
(namespace, service account) pair, its data the association's inputs under their pulumi-aws names
(`clusterName`, `namespace`, `serviceAccount`, `roleArn`, and `targetRoleArn` where EKS chains
to a role of another account: pods then get the target's credentials, the Amazon EKS User Guide,
pod-id-assign-target-role). It models the paths AWS documents:

- One association per service account per cluster: CreatePodIdentityAssociation answers
  `ResourceInUseException` for a pair that has one (its errors, as the EKS API model lists them:
  aws-sdk-rust `sdk/eks/src/protocol_serde/shape_create_pod_identity_association.rs` at
  2d60699a0291414cff5085fa2854da623915e1f1). Here the pair is the object's name, so a second one
  for the same pair is the same object: a provider that creates strictly (pulumi-kubernetes 4.29+,
  `upsertExistingObjects` off, as `program/kubernetes.py` sets it outside an adoption) fails with
  `AlreadyExists`; 4.25, the suite's provider, applies server-side and fails on a field another
  owner set to another value (measured: `conflict with "kubectl-client-side-apply" using v1:
  .data.roleArn` for an association made outside the stack for another role). More lenient than
  AWS there: one made outside for the very same role is shared instead of refused.
- A change of namespace or service account replaces it, the role ARN does not
  (terraform-provider-aws `internal/service/eks/pod_identity_association.go` at
  00a35305dc1b297a6fcdecdfbba33f1e63c3da39: `cluster_name`, `namespace`, `service_account` are
  `RequiresReplace`, `role_arn` goes through UpdatePodIdentityAssociation;
  `contracts.pod_identity.ASSOCIATION_REPLACE_FIELDS`). A new pair is a new name, so the engine
  replaces it in the order the composition's options ask for. Where the stand-in is stricter:
  pulumi-kubernetes replaces a ConfigMap on any data change (pulumi-kubernetes#1567) and, keeping
  the name, deletes it first, so a role ARN change leaves a moment without the association that
  AWS's in-place update does not.
- Pods: EKS wires only pods created after the association exists, and reads it when a pod is
  admitted; the harness's admission does the same with these objects.

The add-on (`aws.eks.Addon`, `eks-pod-identity-agent`) is what it puts in the cluster: a
DaemonSet of that name in kube-system, on the host network, tolerating every taint, on Linux
amd64/arm64 nodes that are not Fargate (the Amazon EKS User Guide, "Set up the Amazon EKS Pod
Identity Agent", awsdocs/amazon-eks-user-guide pod-id-agent-setup.adoc at
390223ef50785e42bd70f41d6d5216d8261b1627: `kubectl get pods -n kube-system | grep
eks-pod-identity-agent`, the agent on 169.254.170.23; the agent's chart, aws/eks-pod-identity-agent
`charts/eks-pod-identity-agent/templates/daemonset.yaml` at 2f35e382a61c36cfd31e467ea7fa45708db02d0b
and `values.yaml` at 00bc058131a7f1ee0291375e9b2c6cdd2d980829: `hostNetwork: true`, tolerations
`operator: Exists`, args `--port 80 --cluster-name <cluster> --probe-port 2703`). When the stack
does not manage it, `agent_in_cluster` is the check that the cluster has it. The add-on is
created with `preserve` (its DaemonSet stays when the stack stops managing it): so is this one.
"""

from __future__ import annotations

from typing import Any

import pulumi

from kiam_eks.components import kubernetes_objects as kube
from kiam_eks.contracts.pod_identity import AGENT_ADDON
from kiam_eks.program.kube_api import KubeApi

# Where the stand-ins live: a namespace every control plane has (as the node group's).
NAMESPACE = "kube-system"
# What marks an object as the association stand-in, for the harness to list them.
ASSOCIATION_LABEL = {"kiam.e2e/stand-in": "pod-identity-association"}
ASSOCIATION_SELECTOR = "kiam.e2e/stand-in=pod-identity-association"
AGENT_LABELS = {"app.kubernetes.io/name": AGENT_ADDON, "app.kubernetes.io/instance": AGENT_ADDON}
# The agent's port and probe port (the chart's args and values).
AGENT_PORT = 80
AGENT_PROBE_PORT = 2703
# The Linux nodes the add-on runs on (the chart's affinity).
AGENT_AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
                        {
                            "key": "kubernetes.io/arch",
                            "operator": "In",
                            "values": ["amd64", "arm64"],
                        },
                        {
                            "key": "eks.amazonaws.com/compute-type",
                            "operator": "NotIn",
                            "values": ["fargate"],
                        },
                    ]
                }
            ]
        }
    }
}


def association_name(namespace: str, service_account: str) -> str:
    """The stand-in's object name: one per (namespace, service account), as AWS allows one
    association per pair. Both are DNS labels, so the dot cannot make two pairs one name."""
    return f"pod-identity.{namespace}.{service_account}"


def association_data(
    cluster_name: str,
    namespace: str,
    service_account: str,
    role_arn: str,
    target_role_arn: str | None = None,
) -> dict[str, str]:
    """The association's inputs, under the names pulumi-aws gives them; `targetRoleArn` only
    where it chains (EKS then hands pods the target's credentials: pod-id-assign-target-role)."""
    data = {
        "clusterName": cluster_name,
        "namespace": namespace,
        "serviceAccount": service_account,
        "roleArn": role_arn,
    }
    if target_role_arn is not None:
        data["targetRoleArn"] = target_role_arn
    return data


def association(
    name: str,
    cluster_name: str,
    namespace: str,
    service_account: str,
    role_arn: pulumi.Input[str],
    opts: pulumi.ResourceOptions,
    target_role_arn: str | None = None,
) -> pulumi.Resource:
    """The association of `namespace/service_account` to the role (or through it to
    `target_role_arn`), under the composition's name and options (its parent, its replacement
    order)."""
    config_map: pulumi.Resource = kube.ConfigMap(
        name,
        metadata={
            "name": association_name(namespace, service_account),
            "namespace": NAMESPACE,
            "labels": ASSOCIATION_LABEL,
        },
        data=pulumi.Output.from_input(role_arn).apply(
            lambda arn: association_data(
                cluster_name, namespace, service_account, arn, target_role_arn
            )
        ),
        opts=opts,
    )
    return config_map


def agent_daemon_set(
    name: str, cluster_name: str, addon_version: str | None, opts: pulumi.ResourceOptions
) -> pulumi.Resource:
    """What the `eks-pod-identity-agent` add-on installs, under the composition's name."""
    # kwok runs no container: the image only says which version the add-on would run.
    image = f"eks/{AGENT_ADDON}:{addon_version or 'default'}"
    daemon_set: pulumi.Resource = kube.DaemonSet(
        name,
        metadata={"name": AGENT_ADDON, "namespace": NAMESPACE, "labels": AGENT_LABELS},
        spec={
            "selector": {"matchLabels": AGENT_LABELS},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "10%"}},
            "template": {
                "metadata": {"labels": AGENT_LABELS},
                "spec": {
                    "hostNetwork": True,
                    "priorityClassName": "system-node-critical",
                    "tolerations": [{"operator": "Exists"}],
                    "affinity": AGENT_AFFINITY,
                    "containers": [
                        {
                            "name": AGENT_ADDON,
                            "image": image,
                            "args": [
                                "--port",
                                str(AGENT_PORT),
                                "--cluster-name",
                                cluster_name,
                                "--probe-port",
                                str(AGENT_PROBE_PORT),
                            ],
                            "ports": [{"containerPort": AGENT_PROBE_PORT, "name": "probes-port"}],
                        }
                    ],
                },
            },
        },
        # The program creates the add-on with `preserve` (components/aws_cloud.py): EKS then leaves
        # the agent running when the stack stops managing it, as this DaemonSet stays.
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(retain_on_delete=True)),
    )
    return daemon_set


def agent_path() -> str:
    """The add-on's DaemonSet in the cluster's API."""
    return f"/apis/apps/v1/namespaces/{NAMESPACE}/daemonsets/{AGENT_ADDON}"


def agent_in_cluster(cluster: KubeApi) -> bool:
    """The cluster runs the add-on (what DescribeAddon answers for a cluster that has it)."""
    return cluster.get_or_none(agent_path()) is not None


def associations(cluster: KubeApi) -> dict[tuple[str, str], dict[str, Any]]:
    """Every association stand-in in the cluster: (namespace, service account) -> its data."""
    found = cluster.items(
        f"/api/v1/namespaces/{NAMESPACE}/configmaps?labelSelector={ASSOCIATION_SELECTOR}"
    )
    return {
        (c["data"]["namespace"], c["data"]["serviceAccount"]): dict(c["data"])
        for c in found
        if c.get("data")
    }

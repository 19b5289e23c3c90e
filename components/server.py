"""kiam-server as a Deployment on the dedicated nodes, with its RBAC, headless Service and PDB."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi

from kiam_eks.components import kubernetes_objects as kube
from kiam_eks.components.containers import container_resources, locked_down
from kiam_eks.contracts import labels, names, tokens
from kiam_eks.contracts.rollout_wait import WAIT_FOR_ANNOTATION, rolled_out_wait_for
from kiam_eks.settings.adoption import Adoption
from kiam_eks.settings.node_group import TaintSettings
from kiam_eks.settings.server import ServerSettings
from kiam_eks.specs import kiam_flags
from kiam_eks.specs.takeover import taking_over_options

NOBODY = 65534  # The server needs no root: an unprivileged port, no capabilities, read-only files.


@dataclass(frozen=True, kw_only=True)
class ServerArgs:
    """Inputs of `Server`."""

    settings: ServerSettings
    """Server settings."""
    namespace: pulumi.Input[str]
    """Namespace of every namespaced object."""
    region: str
    """AWS region, for kiam's regional STS endpoint."""
    node_group_name: pulumi.Input[str]
    """Name of the dedicated node group. Pinning pods to it by name is what makes a node group
    replacement roll the Deployment onto the new nodes (and wait) before the old ones go."""
    node_taint: TaintSettings
    """The taint dedicating the node group; the servers tolerate exactly it."""
    spare_nodes: int
    """Nodes of the group beyond one per server (`desiredSize - replicas`); decides whether a
    rollout can start a new server before stopping an old one."""
    server_role_arn: pulumi.Input[str]
    """`--assume-role-arn`."""
    role_base_arn: str
    """`--role-base-arn`."""
    tls_secret: kube.Secret
    """Server certificate Secret."""
    adoption: Adoption
    """Where the stack stands towards a running install: whether it owns the Service, how the
    `kiam-server` ServiceAccount and the Service are taken over, the labels the running
    install's Service selects (the server pods carry them too)."""
    pod_annotations: dict[str, str] | None = None
    """Annotations of the server pods (the `prometheus.io/*` scrape annotations, when asked for)."""
    restart_for_names: Sequence[str] = ()
    """DNS names the server certificate names only for this update (those of the address the
    running agents still dial): the servers restart onto it before the agents move, rather than
    waiting for the kubelet to refresh the mounted Secret (transitions/)."""


def rolling_update(spare_nodes: int) -> dict[str, int]:
    """How the Deployment replaces servers (image bumps, node group replacements).

    With a spare node a new server starts first (on the spare, or on the new group's nodes) and
    an old one stops only once the new one is Ready: every server slot stays Ready throughout,
    and if the new pod can never start, no old one is stopped. Without a spare, hard anti-affinity
    leaves a surge pod of an in-place rollout nowhere to go, wedging the rollout: then one server
    at a time stops first, and Ready servers dip to `replicas - 1` while it is replaced.
    """
    if spare_nodes > 0:
        return {"maxSurge": 1, "maxUnavailable": 0}
    return {"maxSurge": 0, "maxUnavailable": 1}


class Server(pulumi.ComponentResource):
    """The kiam-server Deployment and everything it needs to be reachable and safe to disrupt."""

    deployment: kube.Deployment
    """The server Deployment; agents are created only once it is Ready."""
    service: kube.Service | None
    """The headless Service agents dial (None while a running install's Service does that)."""

    def __init__(
        self, name: str, args: ServerArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(tokens.SERVER, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        s = args.settings
        meta_labels = labels.object_labels("server")
        workload_labels = labels.workload_labels("server", s.image)
        selector = labels.selector_labels("server")

        def metadata(object_name: str, namespaced: bool = True) -> dict[str, Any]:
            return {
                "name": object_name,
                "labels": meta_labels,
                **({"namespace": args.namespace} if namespaced else {}),
            }

        # What a running install may have under the same names (docs/migration.md).
        adoption = args.adoption
        account_taken_over = taking_over_options(adoption.server_account)
        account = kube.ServiceAccount(
            name,
            metadata={**metadata(names.SERVER_NAME), **account_taken_over.metadata},
            opts=pulumi.ResourceOptions(parent=self, retain_on_delete=account_taken_over.retain),
        )
        role = kube.ClusterRole(
            name,
            metadata=metadata(names.SERVER_NAME, namespaced=False),
            rules=[
                # Pod and namespace informers: which role a pod asks for, which a namespace permits.
                {
                    "apiGroups": [""],
                    "resources": ["pods", "namespaces"],
                    "verbs": ["get", "list", "watch"],
                },
                {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},
            ],
            opts=child,
        )
        binding = kube.ClusterRoleBinding(
            name,
            metadata=metadata(names.SERVER_NAME, namespaced=False),
            role_ref={
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": role.metadata["name"],
            },
            subjects=[
                {
                    "kind": "ServiceAccount",
                    "name": account.metadata["name"],
                    "namespace": args.namespace,
                }
            ],
            opts=child,
        )
        self.service = None
        if adoption.stack_owns_service:
            service_taken_over = taking_over_options(adoption.service)
            self.service = kube.Service(
                name,
                metadata={**metadata(s.service_name), **service_taken_over.metadata},
                spec={
                    # Headless: DNS returns every server pod, and gRPC balances over all of them.
                    "clusterIP": "None",
                    "selector": selector,
                    "ports": [
                        {
                            "name": "grpc",
                            "port": s.grpc_port,
                            "targetPort": "grpc",
                            "protocol": "TCP",
                        },
                        {
                            "name": "metrics",
                            "port": s.metrics_port,
                            "targetPort": "metrics",
                            "protocol": "TCP",
                        },
                    ],
                },
                opts=pulumi.ResourceOptions(
                    parent=self, retain_on_delete=service_taken_over.retain
                ),
            )
        kube.PodDisruptionBudget(
            name,
            metadata=metadata(names.SERVER_NAME),
            spec={"maxUnavailable": 1, "selector": {"matchLabels": selector}},
            opts=child,
        )
        rollout_seconds = s.rollout_timeout_minutes * 60
        timeout = f"{s.rollout_timeout_minutes}m"
        pod_annotations = {
            **(args.pod_annotations or {}),
            **(
                {labels.PREVIOUS_NAMES_ANNOTATION: ",".join(args.restart_for_names)}
                if args.restart_for_names
                else {}
            ),
        }
        self.deployment = kube.Deployment(
            name,
            metadata={
                **metadata(names.SERVER_NAME),
                "labels": workload_labels,
                # `pulumi up` waits for the whole rollout, as `kubectl rollout status` judges it,
                # not the provider's own Deployment wait, which can return with one new server
                # Ready (contracts/rollout_wait.py): the engine deletes a replaced node group once
                # this update returns, so that wait is what keeps the old nodes until every
                # server is Ready on the new ones.
                "annotations": {WAIT_FOR_ANNOTATION: rolled_out_wait_for(s.replicas)},
            },
            spec={
                "replicas": s.replicas,
                "selector": {"matchLabels": selector},
                "strategy": {
                    "type": "RollingUpdate",
                    "rollingUpdate": rolling_update(args.spare_nodes),
                },
                "minReadySeconds": 10,
                # Kubernetes must not give up on a rollout before `pulumi up` does (nodes booting).
                "progressDeadlineSeconds": rollout_seconds,
                "template": {
                    "metadata": {
                        "labels": {**workload_labels, **adoption.server_pod_extra_labels},
                        **({"annotations": pod_annotations} if pod_annotations else {}),
                    },
                    "spec": self._pod_spec(args, account.metadata["name"]),
                },
            },
            opts=pulumi.ResourceOptions(
                parent=self,
                # RBAC and the Service must exist before servers start, or the first rollout
                # waits on pods that cannot sync their informers or be found by agents.
                depends_on=[binding, *([self.service] if self.service else [])],
                # Long enough for a replacement node group's nodes to boot and join.
                custom_timeouts=pulumi.CustomTimeouts(create=timeout, update=timeout),
            ),
        )
        self.register_outputs({"deployment": self.deployment, "service": self.service})

    @staticmethod
    def _pod_spec(args: ServerArgs, service_account: pulumi.Input[str]) -> dict[str, Any]:
        s = args.settings
        taint = args.node_taint
        probe = {
            "exec": {"command": kiam_flags.health_command(s)},
            "periodSeconds": 10,
            "timeoutSeconds": 10,
            "failureThreshold": 3,
        }
        selector = labels.selector_labels("server")
        return {
            "serviceAccountName": service_account,
            "priorityClassName": s.priority_class_name,
            "terminationGracePeriodSeconds": 30,
            "nodeSelector": {labels.NODE_GROUP_LABEL: args.node_group_name},
            "tolerations": [
                {
                    "key": taint.key,
                    "operator": "Equal",
                    "value": taint.value,
                    "effect": taint.kubernetes_effect,
                },
                # Leave a dead node quickly; never `unschedulable` (drains must move the servers)
                # and never a blanket toleration (EKS node updates would fail to evict).
                *(
                    {
                        "key": key,
                        "operator": "Exists",
                        "effect": "NoExecute",
                        "tolerationSeconds": s.unhealthy_node_toleration_seconds,
                    }
                    for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
                ),
            ],
            "affinity": {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "labelSelector": {"matchLabels": selector},
                            "topologyKey": labels.HOSTNAME_TOPOLOGY,
                        }
                    ]
                }
            },
            # Prefer, not require, zone balance: anti-affinity already separates hosts, and a
            # missing node in one zone must not leave a server Pending.
            "topologySpreadConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": labels.ZONE_TOPOLOGY,
                    "whenUnsatisfiable": "ScheduleAnyway",
                    "labelSelector": {"matchLabels": selector},
                }
            ],
            "securityContext": {
                "runAsNonRoot": True,
                "runAsUser": NOBODY,
                "runAsGroup": NOBODY,
                "fsGroup": NOBODY,
                "seccompProfile": {"type": "RuntimeDefault"},
                # A port below 1024 (the one a running install's agents dial) is opened to the
                # non-root server by this namespaced, safe sysctl instead of a capability.
                **(
                    {
                        "sysctls": [
                            {
                                "name": "net.ipv4.ip_unprivileged_port_start",
                                "value": str(s.grpc_port),
                            }
                        ]
                    }
                    if s.grpc_port < 1024
                    else {}
                ),
            },
            "containers": [
                {
                    "name": names.SERVER_CONTAINER,
                    "image": s.image,
                    "command": ["/kiam"],
                    "args": pulumi.Output.from_input(args.server_role_arn).apply(
                        lambda arn: kiam_flags.server_flags(
                            s,
                            region=args.region,
                            role_base_arn=args.role_base_arn,
                            assume_role_arn=arn,
                        )
                    ),
                    "ports": [
                        {"name": "grpc", "containerPort": s.grpc_port, "protocol": "TCP"},
                        {"name": "metrics", "containerPort": s.metrics_port, "protocol": "TCP"},
                    ],
                    "readinessProbe": {**probe, "initialDelaySeconds": 5},
                    "livenessProbe": {**probe, "initialDelaySeconds": 30},
                    "resources": container_resources(s.resources),
                    "securityContext": locked_down(),
                    "volumeMounts": [
                        {"name": "tls", "mountPath": names.TLS_MOUNT, "readOnly": True}
                    ],
                }
            ],
            "volumes": [
                {
                    "name": "tls",
                    "secret": {
                        "secretName": args.tls_secret.metadata["name"],
                        "defaultMode": 0o440,
                    },
                }
            ],
        }

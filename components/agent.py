"""kiam-agent: a DaemonSet on every node except the server nodes, intercepting the metadata API."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi

from kiam_eks.components import kubernetes_objects as kube
from kiam_eks.components.containers import container_resources, locked_down
from kiam_eks.contracts import labels, names, tokens
from kiam_eks.contracts.labels import PATCH_FORCE_ANNOTATION
from kiam_eks.settings.adoption import Adoption
from kiam_eks.settings.agent import READINESS_PROBE_TIMEOUT_SECONDS, AgentSettings
from kiam_eks.settings.agent_rollout import AgentRolloutSettings
from kiam_eks.settings.node_group import TaintSettings
from kiam_eks.specs import kiam_flags
from kiam_eks.specs.takeover import taking_over_options


def update_strategy(rollout: AgentRolloutSettings) -> dict[str, Any]:
    """The DaemonSet's rolling update: `rollout.maxUnavailable` agents at a time, no surge (the
    agent holds a host port: two on one node cannot both start)."""
    return {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": rollout.max_unavailable}}


def rollout_wait(rollout: AgentRolloutSettings) -> pulumi.CustomTimeouts:
    """How long `pulumi up` waits for the agents to roll (settings/agent_rollout.py): the
    provider's DaemonSet wait returns only once every node runs an updated, available agent, so
    it neither returns early nor, with this timeout, fails on a large cluster."""
    wait = f"{rollout.wait_minutes}m"
    return pulumi.CustomTimeouts(create=wait, update=wait)


@dataclass(frozen=True, kw_only=True)
class AgentArgs:
    """Inputs of `Agent`."""

    settings: AgentSettings
    """Agent settings."""
    namespace: pulumi.Input[str]
    """Namespace of the DaemonSet."""
    server_address: str
    """`host:port` of the headless server Service; the host is a SAN of the server certificate."""
    server_node_taint: TaintSettings
    """The server nodes' taint and label: agents must never run there."""
    tls_secret: kube.Secret
    """Agent certificate Secret."""
    wait_for: Sequence[pulumi.Resource]
    """Resources that must be Ready first: the server Deployment. An agent that starts with no
    server to dial exits and crash-loops (kiam #168, #358)."""
    adoption: Adoption
    """Where the stack stands towards a running install: the DaemonSet's name and (immutable)
    selector, the labels kept from the running agents, and how the ServiceAccount and the
    DaemonSet are taken over (docs/migration.md)."""
    pod_annotations: dict[str, str] | None = None
    """Annotations of the agent pods (the `prometheus.io/*` scrape annotations, when asked for)."""
    force_apply: bool = False
    """Apply the DaemonSet with force: a retirement that stopped half way left a patch owning the
    agents' arguments (`--iptables-remove`), and the stack takes them back, rolling every agent to
    its own command line (components/agent_retirement.py)."""


class Agent(pulumi.ComponentResource):
    """The agent DaemonSet and its ServiceAccount."""

    daemon_set: kube.DaemonSet
    """The agent DaemonSet."""

    def __init__(
        self, name: str, args: AgentArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(tokens.AGENT, name, None, opts)
        s, adoption = args.settings, args.adoption
        account_labels = {**labels.object_labels("agent"), **adoption.agent_extra_labels}
        meta_labels = {**labels.workload_labels("agent", s.image), **adoption.agent_extra_labels}
        account_taken_over = taking_over_options(adoption.agent_account)
        daemon_set_taken_over = taking_over_options(adoption.agent_daemon_set)
        forced = {"annotations": {PATCH_FORCE_ANNOTATION: "true"}} if args.force_apply else {}
        account = kube.ServiceAccount(
            name,
            metadata={
                "name": names.AGENT_NAME,
                "namespace": args.namespace,
                "labels": account_labels,
                **account_taken_over.metadata,
            },
            # The agent never calls the Kubernetes API; give its pods no token.
            automount_service_account_token=False,
            opts=pulumi.ResourceOptions(parent=self, retain_on_delete=account_taken_over.retain),
        )
        self.daemon_set = kube.DaemonSet(
            name,
            metadata={
                "name": adoption.agent_daemon_set_name,
                "namespace": args.namespace,
                "labels": meta_labels,
                **daemon_set_taken_over.metadata,
                **forced,
            },
            spec={
                "selector": {"matchLabels": dict(adoption.agent_selector)},
                "updateStrategy": update_strategy(s.rollout),
                "template": {
                    "metadata": {
                        "labels": meta_labels,
                        **({"annotations": args.pod_annotations} if args.pod_annotations else {}),
                    },
                    "spec": _pod_spec(args, account.metadata["name"]),
                },
            },
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=list(args.wait_for),
                retain_on_delete=daemon_set_taken_over.retain,
                custom_timeouts=rollout_wait(s.rollout),
            ),
        )
        self.register_outputs({"daemon_set": self.daemon_set})


def _pod_spec(args: AgentArgs, service_account: pulumi.Input[str]) -> dict[str, Any]:
    s = args.settings
    taint = args.server_node_taint
    return {
        "serviceAccountName": service_account,
        "automountServiceAccountToken": False,
        "priorityClassName": s.priority_class_name,
        "hostNetwork": True,
        "dnsPolicy": "ClusterFirstWithHostNet",
        "terminationGracePeriodSeconds": 30,
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    # NotIn also matches nodes without the label, i.e. every workload node.
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": taint.key, "operator": "NotIn", "values": [taint.value]}
                            ]
                        }
                    ]
                }
            }
        },
        "tolerations": [t.model_dump(exclude_none=True) for t in s.tolerations],
        "containers": [
            {
                "name": names.AGENT_CONTAINER,
                "image": s.image,
                "command": ["/kiam"],
                "args": kiam_flags.agent_flags(s, server_address=args.server_address),
                "env": [
                    {"name": "HOST_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}
                ],
                "ports": [
                    {"name": "http", "containerPort": s.port, "protocol": "TCP"},
                    {"name": "metrics", "containerPort": s.metrics_port, "protocol": "TCP"},
                ],
                "livenessProbe": {
                    "httpGet": {"path": "/ping", "port": s.port},
                    "initialDelaySeconds": 5,
                    "periodSeconds": 10,
                    "timeoutSeconds": 5,
                },
                # Ready only once it can reach a server, so a rollout stops on agents that cannot.
                # The settings keep a failover between servers shorter than its timeout.
                "readinessProbe": {
                    "httpGet": {"path": "/health?deep=1", "port": s.port},
                    "initialDelaySeconds": 5,
                    "periodSeconds": 10,
                    "timeoutSeconds": READINESS_PROBE_TIMEOUT_SECONDS,
                },
                "resources": container_resources(s.resources),
                # iptables must run as root; it needs NET_ADMIN for the rule and NET_RAW for the
                # raw socket iptables-legacy opens. Nothing else.
                "securityContext": {"runAsUser": 0, **locked_down(add=["NET_ADMIN", "NET_RAW"])},
                "volumeMounts": [
                    {"name": "tls", "mountPath": names.TLS_MOUNT, "readOnly": True},
                    # Shared with kube-proxy and the CNI so iptables writers take turns.
                    {"name": "xtables-lock", "mountPath": "/run/xtables.lock"},
                ],
            }
        ],
        "volumes": [
            {
                "name": "tls",
                "secret": {"secretName": args.tls_secret.metadata["name"], "defaultMode": 0o400},
            },
            {
                "name": "xtables-lock",
                "hostPath": {"path": "/run/xtables.lock", "type": "FileOrCreate"},
            },
        ],
    }

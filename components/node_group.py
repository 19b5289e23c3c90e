"""The dedicated, tainted EKS managed node group that only kiam servers run on."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from kiam_eks.components.known import when_known
from kiam_eks.components.node_group_options import replacement_options
from kiam_eks.contracts import names, tokens
from kiam_eks.contracts.credential_env import IMDS_HOP_LIMIT_CONTAINERS, IMDS_TOKENS_REQUIRED
from kiam_eks.contracts.eks_node_group import root_device
from kiam_eks.settings.node_group import NodeGroupSettings


@dataclass(frozen=True, kw_only=True)
class NodeGroupArgs:
    """Inputs of `ServerNodeGroup`."""

    cluster_name: pulumi.Input[str]
    """The EKS cluster the group joins (another resource's output, or `kiam:cluster.name`)."""
    kubernetes_version: str
    """Kubernetes minor version of the nodes; bump it after a control-plane upgrade."""
    subnet_ids: pulumi.Input[Sequence[pulumi.Input[str]]]
    """The nodes' subnets (another resource's outputs, or `kiam:nodeGroup.subnets`' ids)."""
    settings: NodeGroupSettings
    """Sizes, instance types, taint."""
    node_role_arn: pulumi.Input[str]
    """Instance role of the nodes."""
    node_role_policies: Sequence[pulumi.Resource]
    """Policy attachments the nodes need before they can join the cluster."""


class ServerNodeGroup(pulumi.ComponentResource):
    """An EKS managed node group, tainted and labelled for kiam servers, spread over zones."""

    node_group: aws.eks.NodeGroup
    """The managed node group."""
    node_group_name: pulumi.Output[str]
    """Its generated name, which EKS also puts on each node as `eks.amazonaws.com/nodegroup`."""

    def __init__(
        self, name: str, args: NodeGroupArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(tokens.SERVER_NODE_GROUP, name, None, opts)
        s = args.settings
        launch_template = aws.ec2.LaunchTemplate(
            f"{name}-launch-template",
            name_prefix=when_known(args.cluster_name, names.launch_template_name_prefix),
            description="kiam server nodes: IMDSv2 only, encrypted root volume",
            update_default_version=True,
            metadata_options={
                "http_endpoint": "enabled",
                "http_tokens": IMDS_TOKENS_REQUIRED,
                # Server pods are not host-networked, so their IMDS calls (for the node role's
                # credentials) cross one extra hop; with IMDSv2 a limit of 1 would drop the answer.
                "http_put_response_hop_limit": IMDS_HOP_LIMIT_CONTAINERS,
            },
            block_device_mappings=[
                {
                    "device_name": root_device(s.ami_type),
                    "ebs": {
                        "volume_size": s.disk_size_gib,
                        "volume_type": "gp3",
                        "encrypted": "true",
                        "delete_on_termination": "true",
                    },
                }
            ],
            opts=pulumi.ResourceOptions(parent=self),
        )
        taint = s.taint
        self.node_group = aws.eks.NodeGroup(
            name,
            cluster_name=args.cluster_name,
            # A prefix, never a fixed name: a replacement group must coexist with the old one.
            node_group_name_prefix="kiam-server-",
            node_role_arn=args.node_role_arn,
            subnet_ids=args.subnet_ids,
            instance_types=list(s.instance_types),
            capacity_type=s.capacity_type,
            ami_type=s.ami_type,
            version=args.kubernetes_version,
            scaling_config={
                "min_size": s.min_size,
                "desired_size": s.desired_size,
                "max_size": s.max_size,
            },
            update_config={"max_unavailable": s.max_unavailable},
            labels={**s.labels, taint.key: taint.value},
            taints=[{"key": taint.key, "value": taint.value, "effect": taint.effect}],
            # What ties a group to its stack when an interrupted update created it but never
            # recorded it (tools/interrupted/eks_node_groups.py); tags change in place.
            tags={names.STACK_TAG: names.stack_tag_value(pulumi.get_project(), pulumi.get_stack())},
            launch_template={
                "id": launch_template.id,
                "version": launch_template.latest_version.apply(str),
            },
            opts=pulumi.ResourceOptions.merge(
                # Replaced create-before-delete, and on what EKS would otherwise roll into the
                # running group (components/node_group_options.py).
                replacement_options(),
                pulumi.ResourceOptions(
                    parent=self,
                    # Nodes without the worker and CNI policies never join; EKS then fails it.
                    depends_on=list(args.node_role_policies),
                    custom_timeouts=pulumi.CustomTimeouts(create="40m", update="60m", delete="40m"),
                ),
            ),
        )
        self.node_group_name = self.node_group.node_group_name
        self.register_outputs({"node_group_name": self.node_group_name})

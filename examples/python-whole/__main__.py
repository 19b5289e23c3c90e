"""The whole of kiam from Python, on a cluster your program already has: `pip install` the package
(requirements.txt), then pass the cluster's outputs. `Kiam` creates kiam's IAM chain, the
dedicated node group, the certificates (pulumi-tls), the servers and the agents, and the role
each application's pods get; the sections are the stack settings (docs/configuration.md)."""

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from kiam_eks import Kiam

config = pulumi.Config()
# Here a look-up; an `aws.eks.Cluster` (or pulumi-eks' `eks.Cluster`) your program creates works
# the same way: its outputs are inputs of `Kiam`.
cluster = aws.eks.get_cluster_output(name=config.require("clusterName"))
kubernetes = k8s.Provider("cluster", kubeconfig=config.require_secret("kubeconfig"))

installed = Kiam(
    "kiam",
    {
        "cluster_name": cluster.name,
        "oidc_issuer": cluster.identities.apply(lambda ids: ids[0].oidcs[0].issuer),
        "account_id": config.require("accountId"),
        "region": config.require("region"),
        "kubernetes_version": "1.33",
        "node_group": {
            "subnets": [
                {"id": "subnet-0a1b2c3d4e5f60001", "zone": "eu-west-1a"},
                {"id": "subnet-0a1b2c3d4e5f60002", "zone": "eu-west-1b"},
            ]
        },
        "applications": {"billing": {"namespace": "billing", "role_name": "billing-api"}},
    },
    pulumi.ResourceOptions(providers=[kubernetes]),
)

pulumi.export("serverRoleArn", installed.server_role_arn)
pulumi.export("billing", installed.applications.apply(lambda apps: apps["billing"]))

"""kiam's Kubernetes side from Python: `pip install` the package (requirements.txt), then use it as
any component. The roles, node group and certificates come from elsewhere, here through stack
config; pass another resource's outputs just the same."""

import pulumi

from kiam_eks import KiamKubernetes

config = pulumi.Config()
installed = KiamKubernetes(
    "kiam",
    {
        "node_group_name": config.require("nodeGroupName"),
        "server_role_arn": config.require("serverRoleArn"),
        "role_base_arn": config.require("roleBaseArn"),
        "region": config.require("region"),
        "ca_certificate_pem": config.require("caCertificate"),
        "server_certificate_pem": config.require("serverCertificate"),
        "server_private_key_pem": config.require_secret("serverKey"),
        "agent_certificate_pem": config.require("agentCertificate"),
        "agent_private_key_pem": config.require_secret("agentKey"),
        "server": {"replicas": 2},
        "node_group": {"min_size": 2},
    },
)

pulumi.export("serverAddress", installed.server_address)
pulumi.export("namespace", installed.namespace)

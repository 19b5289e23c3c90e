// kiam's Kubernetes side from TypeScript: `pulumi package add <this repository>/provider` first
// (it generates the SDK `@pulumi/kiam`). The roles, node group and certificates come from
// elsewhere, here through stack config; pass another resource's outputs just the same.
import * as pulumi from "@pulumi/pulumi";
import * as kiam from "@pulumi/kiam";

const config = new pulumi.Config();
const installed = new kiam.KiamKubernetes("kiam", {
    nodeGroupName: config.require("nodeGroupName"),
    serverRoleArn: config.require("serverRoleArn"),
    roleBaseArn: config.require("roleBaseArn"),
    region: config.require("region"),
    caCertificatePem: config.require("caCertificate"),
    serverCertificatePem: config.require("serverCertificate"),
    serverPrivateKeyPem: config.requireSecret("serverKey"),
    agentCertificatePem: config.require("agentCertificate"),
    agentPrivateKeyPem: config.requireSecret("agentKey"),
    server: { replicas: 2 },
    nodeGroup: { minSize: 2 },
});

export const serverAddress = installed.serverAddress;
export const namespace = installed.namespace;

"""The engine's floor for the performance comparison (`python -m e2e.bench`): a bare program that
registers `KIAM_E2E_FLOOR_RESOURCES` plain ConfigMaps through the same provider and cluster, with
no settings, no components and nothing to await."""

import os

import pulumi
import pulumi_kubernetes as k8s

provider = k8s.Provider("kubernetes", kubeconfig=os.environ["KIAM_E2E_KUBECONFIG"])
for index in range(int(os.environ["KIAM_E2E_FLOOR_RESOURCES"])):
    k8s.core.v1.ConfigMap(
        f"floor-{index}",
        metadata={"name": f"floor-{index}", "namespace": "default"},
        data={"index": str(index)},
        opts=pulumi.ResourceOptions(provider=provider),
    )

"""The engine's floor for the performance comparison (`python -m e2e.bench`): a bare program that
registers as many resources as the benched stack has, of the same two kinds, with no settings and
nothing to await: `KIAM_E2E_FLOOR_RESOURCES` plain ConfigMaps through the same provider and
cluster (the stack's Kubernetes objects) and `KIAM_E2E_FLOOR_COMPONENTS` empty component
resources (the stack's components, which the engine registers and records too, with no provider
call); with `KIAM_E2E_FLOOR_OUTPUTS`, the benched stack's outputs as well."""

import json
import os

import pulumi
import pulumi_kubernetes as k8s


class Part(pulumi.ComponentResource):
    def __init__(self, name: str) -> None:
        super().__init__("floor:index:Part", name)
        self.register_outputs({})


provider = k8s.Provider("kubernetes", kubeconfig=os.environ["KIAM_E2E_KUBECONFIG"])
for index in range(int(os.environ["KIAM_E2E_FLOOR_RESOURCES"])):
    k8s.core.v1.ConfigMap(
        f"floor-{index}",
        metadata={"name": f"floor-{index}", "namespace": "default"},
        data={"index": str(index)},
        opts=pulumi.ResourceOptions(provider=provider),
    )
for index in range(int(os.environ.get("KIAM_E2E_FLOOR_COMPONENTS", "0"))):
    Part(f"part-{index}")
# With `KIAM_E2E_FLOOR_OUTPUTS` (a JSON file of the benched stack's outputs), the same stack
# outputs: what the engine costs to receive, compare and store them, with no program work.
if "KIAM_E2E_FLOOR_OUTPUTS" in os.environ:
    with open(os.environ["KIAM_E2E_FLOOR_OUTPUTS"]) as file:
        for key, value in json.load(file).items():
            pulumi.export(key, value)

"""The engine's floor for the performance comparison (`python -m e2e.bench`): a bare program that
registers as many resources as the benched stack has, of the same two kinds, with no settings and
nothing to await: `KIAM_E2E_FLOOR_RESOURCES` plain ConfigMaps through the same provider and
cluster (the stack's Kubernetes objects) and `KIAM_E2E_FLOOR_COMPONENTS` empty component
resources (the stack's components, which the engine registers and records too, with no provider
call); with `KIAM_E2E_FLOOR_OUTPUTS`, the benched stack's outputs as well, and with
`KIAM_E2E_FLOOR_COMPONENT_OUTPUTS` its components' recorded outputs, one per component. With
`KIAM_E2E_FLOOR_BY_TOKEN`, the ConfigMaps are registered by their type token, as the program
registers its objects (components/kubernetes_objects.py), not through pulumi_kubernetes'
generated class, whose import is then not timed: the engine's floor with no SDK classes."""

import json
import os

import pulumi
import pulumi_kubernetes as k8s


class Part(pulumi.ComponentResource):
    def __init__(self, name: str, outputs: dict[str, object]) -> None:
        super().__init__("floor:index:Part", name)
        self.register_outputs(outputs)


provider = k8s.Provider("kubernetes", kubeconfig=os.environ["KIAM_E2E_KUBECONFIG"])
by_token = "KIAM_E2E_FLOOR_BY_TOKEN" in os.environ
for index in range(int(os.environ["KIAM_E2E_FLOOR_RESOURCES"])):
    metadata = {"name": f"floor-{index}", "namespace": "default"}
    data = {"index": str(index)}
    options = pulumi.ResourceOptions(provider=provider)
    if by_token:
        fields = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data}
        pulumi.CustomResource("kubernetes:core/v1:ConfigMap", f"floor-{index}", fields, options)
    else:
        k8s.core.v1.ConfigMap(f"floor-{index}", metadata=metadata, data=data, opts=options)
# With `KIAM_E2E_FLOOR_COMPONENT_OUTPUTS` (a JSON list, one entry per component), each component
# records what the benched stack's component in its place records (the `Kiam` component's record
# of what it installed among them): the engine stores and compares those as it does stack outputs.
recorded: list[dict[str, object]] = []
if "KIAM_E2E_FLOOR_COMPONENT_OUTPUTS" in os.environ:
    with open(os.environ["KIAM_E2E_FLOOR_COMPONENT_OUTPUTS"]) as file:
        recorded = json.load(file)
for index in range(int(os.environ.get("KIAM_E2E_FLOOR_COMPONENTS", "0"))):
    Part(f"part-{index}", recorded[index] if index < len(recorded) else {})
# With `KIAM_E2E_FLOOR_OUTPUTS` (a JSON file of the benched stack's outputs), the same stack
# outputs: what the engine costs to receive, compare and store them, with no program work.
if "KIAM_E2E_FLOOR_OUTPUTS" in os.environ:
    with open(os.environ["KIAM_E2E_FLOOR_OUTPUTS"]) as file:
        for key, value in json.load(file).items():
            pulumi.export(key, value)

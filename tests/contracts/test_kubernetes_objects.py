"""components/kubernetes_objects.py against pulumi_kubernetes' generated classes (the installed
SDK, requirements.txt): for each kind the program registers, the same type token, the same
properties under the same names (apiVersion and kind set, output-only fields declared), the same
aliases and secret outputs. And the program, composed, imports none of the generated packages it
no longer needs (the reason the module exists)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest
from pulumi._types import input_type_py_to_pulumi_names

from kiam_eks.components import kubernetes_objects as kube
from tools.mock_engine import PROJECT_DIR

# Each kind with a sample of its fields, as the program passes them (snake_case keywords).
FIELDS: dict[str, dict[str, Any]] = {
    "Namespace": {"metadata": {"name": "kiam"}},
    "NamespacePatch": {"metadata": {"name": "team", "annotations": {"a": "b"}}},
    "ConfigMap": {"metadata": {"name": "c"}, "data": {"k": "v"}},
    "Secret": {"metadata": {"name": "s"}, "type": "kubernetes.io/tls", "string_data": {"k": "v"}},
    "Service": {"metadata": {"name": "svc"}, "spec": {"clusterIP": "None"}},
    "ServiceAccount": {"metadata": {"name": "a"}, "automount_service_account_token": False},
    "Node": {"metadata": {"name": "n"}, "spec": {"taints": []}},
    "Deployment": {"metadata": {"name": "d"}, "spec": {"replicas": 2}},
    "DaemonSet": {"metadata": {"name": "ds"}, "spec": {"minReadySeconds": 1}},
    "DaemonSetPatch": {"metadata": {"name": "ds"}, "spec": {"minReadySeconds": 1}},
    "ClusterRole": {"metadata": {"name": "r"}, "rules": [{"verbs": ["get"]}]},
    "ClusterRoleBinding": {
        "metadata": {"name": "b"},
        "role_ref": {"kind": "ClusterRole", "name": "r"},
        "subjects": [{"kind": "ServiceAccount", "name": "a"}],
    },
    "PodDisruptionBudget": {"metadata": {"name": "p"}, "spec": {"minAvailable": 1}},
}
GENERATED = {
    "Namespace": k8s.core.v1.Namespace,
    "NamespacePatch": k8s.core.v1.NamespacePatch,
    "ConfigMap": k8s.core.v1.ConfigMap,
    "Secret": k8s.core.v1.Secret,
    "Service": k8s.core.v1.Service,
    "ServiceAccount": k8s.core.v1.ServiceAccount,
    "Node": k8s.core.v1.Node,
    "Deployment": k8s.apps.v1.Deployment,
    "DaemonSet": k8s.apps.v1.DaemonSet,
    "DaemonSetPatch": k8s.apps.v1.DaemonSetPatch,
    "ClusterRole": k8s.rbac.v1.ClusterRole,
    "ClusterRoleBinding": k8s.rbac.v1.ClusterRoleBinding,
    "PodDisruptionBudget": k8s.policy.v1.PodDisruptionBudget,
}


def registration(
    cls: type, fields: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> dict[str, Any]:
    """What `cls(name, **fields)` hands the SDK's CustomResource: the token, the properties under
    the names the provider receives (None ones dropped, as the SDK drops them; a secret as
    `secret:<value>`), the aliases' types and the secret outputs."""
    seen: dict[str, Any] = {}

    def record(self: Any, t: str, name: str, props: Any, opts: Any, *_: Any, **__: Any) -> None:
        raw = props if isinstance(props, dict) else vars(props)
        # A generated class hands its Args object, whose getters carry the Kubernetes names.
        names = {} if isinstance(props, dict) else input_type_py_to_pulumi_names(type(props))

        def translate(key: str) -> str:
            return names.get(key, key)

        seen.update(
            token=t,
            props={translate(k): _plain(v) for k, v in raw.items() if v is not None},
            outputs=sorted(translate(k) for k, v in raw.items() if v is None),
            aliases=sorted(a.type_ for a in (opts.aliases or [])),
            secret_outputs=sorted(opts.additional_secret_outputs or []),
        )

    monkeypatch.setattr(pulumi.CustomResource, "__init__", record)
    cls("x", **fields)
    return seen


def _plain(value: Any) -> Any:
    if isinstance(value, pulumi.Output):
        # Output.secret(v): its value is known synchronously only to the SDK; what matters here
        # is that it is a secret, which the generated class and ours both make it.
        return "secret"
    return value


@pytest.mark.parametrize("kind", sorted(FIELDS))
def test_each_kind_registers_as_the_generated_class_does(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ours = registration(getattr(kube, kind), FIELDS[kind], monkeypatch)
    generated = registration(GENERATED[kind], FIELDS[kind], monkeypatch)
    # The generated class's None fields also include the inputs it was not given; ours declares
    # only the output-only ones, which must be among them.
    assert set(ours.pop("outputs")) <= set(generated.pop("outputs"))
    assert ours == generated
    assert ours["token"] == getattr(kube, kind).KIND.token


def test_output_only_fields_are_declared() -> None:
    """Each kind's output-only fields (those the generated class sets to None whatever it is
    given) are declared, so that `obj.status` exists on ours as on the generated one."""
    for kind, cls in GENERATED.items():
        given = {k for k in FIELDS[kind]}
        declared = {k for k in cls.__dict__ if isinstance(cls.__dict__[k], property)}
        output_only = {"status"} & declared - given
        assert set(getattr(kube, kind).KIND.outputs) == output_only, kind


def test_the_program_imports_no_generated_kubernetes_package() -> None:
    """The dev stack composed under the mock engine, in a process of its own: pulumi_kubernetes'
    generated core/v1 (0.5 s to import) and apps, rbac and policy v1 never load."""
    script = (
        "import json, sys\n"
        "from tests.conftest import example_config, run_program\n"
        "run_program(example_config('dev'), stack='dev')\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('pulumi_kubernetes.'))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=PROJECT_DIR, capture_output=True, text=True, check=True
    )
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    generated = [m for m in loaded if m.count(".") >= 2 and m.split(".")[2] in ("v1", "v2")]
    assert generated == [], generated
    # What it does load: the provider and the package's lazy modules.
    assert "pulumi_kubernetes.provider" in loaded

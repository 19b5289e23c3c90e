"""Turn a recorded program run into what a reviewer reads: resources, manifests and IAM documents."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tools.mock_engine import Recording, Registration

REDACTED = "[redacted]"
KUBERNETES_PREFIX = "kubernetes:"
ROLE = "aws:iam/role:Role"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"


@dataclass(frozen=True)
class Plan:
    """A rendered plan: everything a pull request reviewer should see, secrets removed."""

    resources: list[dict[str, Any]]
    manifests: dict[str, dict[str, Any]]
    """File name -> Kubernetes object."""
    iam: dict[str, dict[str, Any]]
    """File name -> a role's trust policy, inline policies and managed policy ARNs."""


def redacted_inputs(reg: Registration) -> dict[str, Any]:
    """Inputs with every secret value replaced, and Secret payloads removed whatever their marking."""
    inputs: dict[str, Any] = json.loads(json.dumps(reg.inputs, default=str))
    payload_keys: tuple[str, ...] = ()
    if reg.type == "kubernetes:core/v1:Secret":
        payload_keys = ("data", "stringData")
        for key in payload_keys:
            if isinstance(inputs.get(key), dict):
                inputs[key] = dict.fromkeys(inputs[key], REDACTED)
    for path in reg.secret_paths:
        if path.split(".")[0].split("[")[0] not in payload_keys:
            _replace(inputs, path, REDACTED)
    return inputs


def _replace(tree: dict[str, Any], path: str, value: Any) -> None:
    if path == ".":
        tree.clear()
        tree["value"] = value
        return
    parts = path.replace("[", ".[").split(".")
    node: Any = tree
    for part in parts[:-1]:
        node = node[int(part[1:-1])] if part.startswith("[") else node[part]
    last = parts[-1]
    if last.startswith("["):
        node[int(last[1:-1])] = value
    else:
        node[last] = value


def manifest_file_name(obj: dict[str, Any]) -> str:
    """`<kind>-<namespace>-<name>.yaml`, lower case; cluster-scoped objects have no namespace part."""
    meta = obj.get("metadata", {})
    parts = [obj.get("kind", "object"), meta.get("namespace"), meta.get("name", "unnamed")]
    return "-".join(str(p) for p in parts if p).lower() + ".yaml"


def render(recording: Recording) -> Plan:
    """Everything the program would create, in registration order."""
    resources = [
        {
            "urn": r.urn,
            "type": r.type,
            "name": r.name,
            "parent": r.parent,
            "dependencies": list(r.dependencies),
            "inputs": redacted_inputs(r),
        }
        for r in recording.registrations
    ]
    manifests = {}
    for r in recording.registrations:
        if r.custom and r.type.startswith(KUBERNETES_PREFIX) and not r.type.startswith("pulumi:"):
            obj = redacted_inputs(r)
            manifests[manifest_file_name(obj)] = obj
    return Plan(resources=resources, manifests=manifests, iam=iam_documents(recording))


def iam_documents(recording: Recording) -> dict[str, dict[str, Any]]:
    """For each role: its trust policy, its inline policies by resource name, its managed policies."""
    documents: dict[str, dict[str, Any]] = {}
    for role in recording.by_type(ROLE):
        role_name = role.outputs.get("name")
        inline = {
            p.name: json.loads(p.inputs["policy"])
            for p in recording.by_type(ROLE_POLICY)
            if p.inputs.get("role") == role_name
        }
        managed = [
            a.inputs["policyArn"]
            for a in recording.by_type(ATTACHMENT)
            if a.inputs.get("role") == role_name
        ]
        documents[f"{role.name}.json"] = {
            "role": role.name,
            "path": role.inputs.get("path", "/"),
            "trustPolicy": json.loads(role.inputs["assumeRolePolicy"]),
            "inlinePolicies": inline,
            "managedPolicyArns": managed,
        }
    return documents

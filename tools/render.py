"""Turn a recorded program run into what a reviewer reads: resources, manifests and IAM documents."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import yaml

from kiam_eks.contracts.tokens import POLICY, ROLE, ROLE_POLICY, SECRET
from kiam_eks.contracts.tokens import ROLE_POLICY_ATTACHMENT as ATTACHMENT
from tools.mock_engine import Recording, Registration

REDACTED = "[redacted]"
KUBERNETES_PREFIX = "kubernetes:"
# pulumi-kubernetes names each kind's server-side-apply patch resource `<Kind>Patch`
# (`kubernetes:core/v1:NamespacePatch`, `kubernetes:apps/v1:DaemonSetPatch`: contracts/tokens.py).
PATCH_SUFFIX = "Patch"


@dataclass(frozen=True)
class Plan:
    """A rendered plan: everything a pull request reviewer should see, secrets removed."""

    resources: list[dict[str, Any]]
    manifests: dict[str, dict[str, Any]]
    """File name -> Kubernetes object."""
    iam: dict[str, dict[str, Any]]
    """File name -> a role's trust policy, inline policies and managed policy ARNs."""
    aws: dict[str, dict[str, Any]]
    """File name -> inputs of every other AWS resource (the node group, its launch template)."""
    tls: dict[str, dict[str, Any]] = field(default_factory=dict)
    """File name -> inputs of every pulumi-tls resource, keys redacted: what each certificate
    asks for (names, addresses, uses, lifetime), so a re-issue shows in review even though the
    Secret payloads are redacted."""
    outputs: dict[str, Any] = field(default_factory=dict)
    """The stack outputs (`installed` among them): what a later `--diff` judges its change from."""
    patches: frozenset[str] = frozenset()
    """Manifests (file names) that are patches: some fields of an object the stack does not own
    whole (pulumi-kubernetes `<Kind>Patch`), partial by design."""

    def files(self) -> dict[str, str]:
        """The plan as reviewable files: one per object, keyed by their path under the plan folder."""
        out = {f"manifests/{name}": manifest_yaml(obj) for name, obj in self.manifests.items()}
        out |= {f"iam/{name}": _json(doc) for name, doc in self.iam.items()}
        out |= {f"aws/{name}": _json(doc) for name, doc in self.aws.items()}
        out |= {f"tls/{name}": _json(doc) for name, doc in self.tls.items()}
        out["resources.json"] = _json(self.resources)
        out["outputs.json"] = _json(self.outputs)
        return out


# Folders of per-object files that `--diff` compares; resources.json repeats them in one file.
OBJECT_FOLDERS = ("manifests", "iam", "aws", "tls")
TLS_PREFIX = "tls:"


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True) + "\n"


def manifest_yaml(obj: dict[str, Any]) -> str:
    """A manifest as people write them: apiVersion, kind, metadata first, then the rest sorted."""
    head = ("apiVersion", "kind", "metadata")
    ordered = {k: obj[k] for k in head if k in obj} | {
        k: obj[k] for k in sorted(obj) if k not in head
    }
    return yaml.safe_dump(ordered, sort_keys=False, width=120)


def redacted_inputs(reg: Registration) -> dict[str, Any]:
    """Inputs with every secret value replaced, and Secret payloads removed whatever their marking."""
    inputs: dict[str, Any] = _whole_numbers(json.loads(json.dumps(reg.inputs, default=str)))
    payload_keys: tuple[str, ...] = ()
    if reg.type == SECRET:
        payload_keys = ("data", "stringData")
        for key in payload_keys:
            if isinstance(inputs.get(key), dict):
                inputs[key] = dict.fromkeys(inputs[key], REDACTED)
    for path in reg.secret_paths:
        if path.split(".")[0].split("[")[0] not in payload_keys:
            _replace(inputs, path, REDACTED)
    return inputs


def _whole_numbers(value: Any) -> Any:
    """The engine sends every number as a float; show 3, not 3.0, as the user wrote it."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _whole_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_whole_numbers(v) for v in value]
    return value


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
    """Everything the program would create; resources sorted by URN, so renderings are stable."""
    resources = [
        {
            "urn": r.urn,
            "type": r.type,
            "name": r.name,
            "parent": r.parent,
            # A set to the engine; its order is the order the dependencies resolved in.
            "dependencies": sorted(r.dependencies),
            "inputs": redacted_inputs(r),
        }
        # Registration order varies from run to run (registrations are asynchronous).
        for r in sorted(recording.registrations, key=lambda r: r.urn)
    ]
    kubernetes = [
        r for r in recording.registrations if r.custom and r.type.startswith(KUBERNETES_PREFIX)
    ]
    objects = [(r.name, redacted_inputs(r)) for r in kubernetes]
    names = [manifest_file_name(obj) for _, obj in objects]
    manifests, patches = {}, set()
    for reg, (resource, obj), file_name in zip(kubernetes, objects, names, strict=True):
        # Several patches of one object (a namespace annotation taken over) would share a file
        # name: each gets its resource's name too, so no rendering depends on registration order.
        if names.count(file_name) > 1:
            file_name = f"{file_name.removesuffix('.yaml')}-{resource}.yaml"
        manifests[file_name] = obj
        if reg.type.endswith(PATCH_SUFFIX):
            patches.add(file_name)
    aws = {
        f"{r.type.rsplit(':', 1)[-1].lower()}-{r.name}.json": redacted_inputs(r)
        for r in recording.registrations
        if r.custom and r.type.startswith("aws:") and r.type not in (ROLE, ROLE_POLICY, ATTACHMENT)
    }
    tls = {
        f"{r.type.rsplit(':', 1)[-1].lower()}-{r.name}.json": _without_pems(redacted_inputs(r))
        for r in recording.registrations
        if r.custom and r.type.startswith(TLS_PREFIX)
    }
    return Plan(
        resources=resources,
        manifests=manifests,
        iam=iam_documents(recording),
        aws=aws,
        tls=tls,
        outputs=_whole_numbers(json.loads(json.dumps(recording.stack_outputs, default=str))),
        patches=frozenset(patches),
    )


def _without_pems(inputs: dict[str, Any]) -> dict[str, Any]:
    """PEMs another resource computes say nothing offline (the mock engine's are placeholders):
    what a certificate asks for is the rest."""
    return {k: v for k, v in inputs.items() if not k.endswith("Pem")}


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
        managed = sorted(
            a.inputs["policyArn"]
            for a in recording.by_type(ATTACHMENT)
            if a.inputs.get("role") == role_name
        )
        documents[f"{role.name}.json"] = {
            "role": role.name,
            "path": role.inputs.get("path", "/"),
            "trustPolicy": json.loads(role.inputs["assumeRolePolicy"]),
            "inlinePolicies": inline,
            "managedPolicyArns": managed,
        }
        # The documents of the customer managed policies the stack writes and attaches to it
        # (the kiam-server role's permission past its inline policy), by resource name.
        written = {
            p.name: json.loads(p.inputs["policy"])
            for p in recording.by_type(POLICY)
            if p.outputs.get("arn") in managed
        }
        if written:
            documents[f"{role.name}.json"]["managedPolicies"] = written
    return documents

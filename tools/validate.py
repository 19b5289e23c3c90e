"""Independent validators of a rendered plan: the Kubernetes OpenAPI schemas, the Prometheus
Operator's CRD schemas, and an IAM linter.

The first and last ship their data in their packages; the CRDs are vendored in `tools/crds/`
(their source is in its README). Validation is offline and repeatable.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kiam_eks.contracts.iam_quotas import (
    MANAGED_POLICY_CHARACTERS,
    ROLE_INLINE_POLICY_CHARACTERS,
    TRUST_POLICY_CHARACTERS,
)
from kiam_eks.settings.cluster import ClusterSettings
from kiam_eks.settings.policy_document import policy_characters

CRD_DIR = Path(__file__).resolve().parent / "crds"

# A trust policy has no Resource by definition; parliament lints identity policies only and says so.
TRUST_POLICY_FINDING = ("MALFORMED", "Statement contains neither Resource nor NotResource")
# parliament knows only the federation sources of its time (Cognito, Amazon, Facebook, Google and
# SAML providers) and reports every OIDC provider as unknown, the EKS cluster's included. The
# finding is ignored only for a trust statement that is exactly IRSA's for this stack's cluster
# (`irsa_problem`); any other federated statement keeps it, with the reason it was not ignored.
IRSA_FINDING = "UNKNOWN_FEDERATION_SOURCE"
IRSA_AUDIENCE = "sts.amazonaws.com"
_SERVICE_ACCOUNT = re.compile(
    r"system:serviceaccount:[a-z0-9]([-a-z0-9]*[a-z0-9])?:[a-z0-9]([-.a-z0-9]*[a-z0-9])?"
)


@dataclass(frozen=True, order=True)
class Finding:
    """One validator complaint about one rendered document."""

    document: str
    validator: str
    message: str

    def __str__(self) -> str:
        return f"{self.document}: {self.validator}: {self.message}"


def nearest_schema_version(kubernetes_version: str, available: Sequence[str]) -> str:
    """Of the schema versions a validator ships (`1.25.0`...), the one for a cluster of
    `kubernetes_version` (a minor such as `1.33`): its own, else the nearest, the older on a tie.

    EKS releases a minor before kubernetes-validate ships its schemas, so the settings accept any
    minor and the plan validates against the nearest it has (and says so): the API of one minor
    differs from the next by a few fields, where refusing the stack would validate nothing.
    """
    minor = int(kubernetes_version.split(".")[1])
    by_minor = {int(v.split(".")[1]): v for v in available}
    return by_minor[min(by_minor, key=lambda m: (abs(m - minor), m))]


def kubernetes_schema_version(kubernetes_version: str) -> str:
    """The schema version of the installed kubernetes-validate that `kubernetes_findings` uses."""
    from kubernetes_validate.utils import all_versions

    return nearest_schema_version(kubernetes_version, all_versions())


def kubernetes_findings(
    manifests: dict[str, dict[str, Any]],
    kubernetes_version: str,
    patches: Collection[str] = (),
) -> list[Finding]:
    """Strict validation (unknown fields rejected) against the schemas of the cluster's version,
    or the nearest the validator ships (`kubernetes_schema_version`); the manifests named in
    `patches` without the schema's required fields (`patch_findings`)."""
    import kubernetes_validate

    cache_schemas()
    version = kubernetes_schema_version(kubernetes_version)
    custom = set(custom_resource_manifests(manifests))
    findings = []
    for file_name, obj in sorted(manifests.items()):
        if file_name in custom:
            findings += custom_resource_findings(file_name, obj)
            continue
        if file_name in patches:
            findings += patch_findings(file_name, obj, version)
            continue
        try:
            kubernetes_validate.validate(obj, version, strict=True)
        except kubernetes_validate.SchemaNotFoundError:
            findings.append(
                Finding(
                    file_name,
                    f"kubernetes-validate {version} strict",
                    f"no schema for {obj.get('apiVersion')} {obj.get('kind')}",
                )
            )
        except kubernetes_validate.ValidationError as error:
            where = ".".join(str(p) for p in error.path) or "(root)"
            findings.append(
                Finding(
                    file_name, f"kubernetes-validate {version} strict", f"{where}: {error.message}"
                )
            )
    return findings


def patch_findings(file_name: str, obj: dict[str, Any], version: str) -> list[Finding]:
    """A patch against its kind's strict schema, every rule but `required` applied: a patch
    holds only the fields it sets, and the object it patches holds the rest (a DaemonSet patch
    has no `selector`), so an unknown field, a wrong type or a bad value is still caught.

    The schemas are kubernetes-validate's own strict ones, read as its `validate` reads them
    (kubernetes-validate 1.37.0 kubernetes_validate/utils.py `validate`: `v<version>-local-strict/
    <kind>-<group>-<version>.json` and `_definitions.json`, resolved through `referencing`)."""
    import jsonschema
    import referencing
    from kubernetes_validate.utils import schema_contents

    validator_name = f"kubernetes-validate {version} strict (a patch: required fields not checked)"
    folder = f"kubernetes-json-schema/v{version}-local-strict"
    api = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", str(obj.get("apiVersion")))
    try:
        schema = schema_contents(f"{folder}/{str(obj.get('kind')).lower()}-{api}.json", version)
    except FileNotFoundError:
        message = f"no schema for {obj.get('apiVersion')} {obj.get('kind')}"
        return [Finding(file_name, validator_name, message)]
    definitions = schema_contents(f"{folder}/_definitions.json", version)
    registry = referencing.Resource.from_contents(schema) @ referencing.Registry()
    registry = referencing.Resource.from_contents(definitions) @ registry
    without_required = jsonschema.validators.extend(
        jsonschema.Draft202012Validator, {"required": lambda *_: iter(())}
    )
    errors = without_required(schema, registry=registry).iter_errors(obj)
    return sorted(
        Finding(
            file_name,
            validator_name,
            f"{'.'.join(str(p) for p in e.path) or '(root)'}: {e.message}",
        )
        for e in errors
    )


@functools.cache
def custom_resource_schemas() -> dict[tuple[str, str], tuple[str, dict[str, Any]]]:
    """(apiVersion, kind) -> (the CRD's file, its `openAPIV3Schema` made strict) of every served
    version of every vendored CRD."""
    schemas = {}
    for path in sorted(CRD_DIR.glob("*.yaml")):
        # libyaml's loader where PyYAML has it: 5 ms for the two CRDs where the pure-Python one
        # takes 75 ms, in the process that loads the validators beside the plan.
        crd = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            if version.get("served"):
                schema = strict_schema(version["schema"]["openAPIV3Schema"])
                schemas[(f"{group}/{version['name']}", kind)] = (path.name, schema)
    return schemas


def custom_resource_manifests(manifests: dict[str, dict[str, Any]]) -> list[str]:
    """The manifests of a vendored CRD's kinds, validated against its schema instead of
    Kubernetes' (`custom_resource_findings`)."""
    custom = custom_resource_schemas()
    return sorted(
        file_name
        for file_name, obj in manifests.items()
        if (obj.get("apiVersion"), obj.get("kind")) in custom
    )


def strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with unknown fields refused wherever the API server would prune them.

    A structural CRD schema does not refuse unknown fields: the API server silently drops them
    (pruning), so a misspelt field would vanish from the applied object. Every object schema that
    lists its properties and neither preserves unknown fields nor describes extra ones gets
    `additionalProperties: false`, as kubernetes-validate's strict mode does for built-in kinds.
    """
    strict = copy.deepcopy(schema)

    def walk(node: Any) -> None:
        if not isinstance(node, dict):
            return
        if (
            "properties" in node
            and "additionalProperties" not in node
            and not node.get("x-kubernetes-preserve-unknown-fields")
        ):
            node["additionalProperties"] = False
        for key in ("properties", "patternProperties"):
            for child in (node.get(key) or {}).values():
                walk(child)
        for key in ("items", "additionalProperties", "not"):
            walk(node.get(key))
        for key in ("allOf", "anyOf", "oneOf"):
            for child in node.get(key) or []:
                walk(child)

    walk(strict)
    return strict


def custom_resource_findings(file_name: str, obj: dict[str, Any]) -> list[Finding]:
    """An object of a vendored CRD against that CRD's schema, strictly. The CRD's CEL rules
    (`x-kubernetes-validations`) are not evaluated here: the e2e suite applies the objects to a
    real API server, which does."""
    from jsonschema import Draft4Validator

    crd_file, schema = custom_resource_schemas()[(obj["apiVersion"], obj["kind"])]
    errors = sorted(Draft4Validator(schema).iter_errors(obj), key=lambda e: list(e.path))
    return [
        Finding(
            file_name,
            f"CRD schema {crd_file} strict",
            f"{'.'.join(str(p) for p in e.path) or '(root)'}: {e.message}",
        )
        for e in errors
    ]


def cluster_oidc_provider(cluster: ClusterSettings) -> re.Pattern[str]:
    """ARNs of the cluster's IAM OIDC provider: its account and partition, and EKS's issuer host
    for its region (`oidc.eks.<region>.<dns suffix>/id/<id>`; the mock engine answers with
    amazonaws.com in every partition)."""
    suffixes = "|".join(re.escape(s) for s in sorted({cluster.dns_suffix, "amazonaws.com"}))
    return re.compile(
        rf"arn:{re.escape(cluster.partition)}:iam::{cluster.account_id}:oidc-provider/"
        rf"oidc\.eks\.{re.escape(cluster.region)}\.({suffixes})/id/[0-9A-Za-z]+"
    )


def irsa_problem(statement: dict[str, Any], provider: re.Pattern[str]) -> str | None:
    """Why a federated trust statement is not the IRSA trust of one service account of the
    cluster, or None when it is."""
    federated = _federated(statement)
    if not isinstance(federated, str) or not provider.fullmatch(federated):
        return "the federated principal is not this cluster's OIDC provider"
    if statement.get("Effect") != "Allow" or statement.get("Action") != (
        "sts:AssumeRoleWithWebIdentity"
    ):
        return "the statement must Allow exactly sts:AssumeRoleWithWebIdentity"
    host = federated.split(":oidc-provider/", 1)[1]
    condition = statement.get("Condition")
    if not isinstance(condition, dict) or set(condition) != {"StringEquals"}:
        return "its only condition must be StringEquals"
    equals = condition["StringEquals"] if isinstance(condition["StringEquals"], dict) else {}
    subject = equals.get(f"{host}:sub")
    if not isinstance(subject, str) or not _SERVICE_ACCOUNT.fullmatch(subject):
        return f"no StringEquals {host}:sub naming one service account"
    if equals.get(f"{host}:aud") != IRSA_AUDIENCE:
        return f"no StringEquals {host}:aud {IRSA_AUDIENCE}"
    return None


def iam_findings(
    iam: dict[str, dict[str, Any]], cluster: ClusterSettings | None = None
) -> list[Finding]:
    """parliament on every trust and permission document; with the stack's cluster, IRSA trust
    statements for its OIDC provider are recognised."""
    from parliament import analyze_policy_string

    provider = cluster_oidc_provider(cluster) if cluster is not None else None
    findings = []
    for file_name, role in sorted(iam.items()):
        findings += quota_findings(file_name, role)
        documents = [("trustPolicy", role["trustPolicy"], True)]
        documents += [
            (f"inlinePolicies.{n}", d, False) for n, d in sorted(role["inlinePolicies"].items())
        ]
        documents += [
            (f"managedPolicies.{n}", d, False)
            for n, d in sorted(role.get("managedPolicies", {}).items())
        ]
        for where, document, is_trust in documents:
            reasons = _federation_reasons(document, provider) if is_trust else {}
            for finding in analyze_policy_string(json.dumps(document)).findings:
                if is_trust and (finding.issue, finding.detail) == TRUST_POLICY_FINDING:
                    continue
                message = f"{finding.issue}: {finding.detail}"
                if is_trust and finding.issue == IRSA_FINDING:
                    reason = reasons.get(finding.detail, "no cluster to compare it with")
                    if reason is None:
                        continue
                    message += f" (not this cluster's IRSA trust: {reason})"
                findings.append(Finding(f"{file_name} {where}", "parliament", message))
    return findings


def quota_findings(file_name: str, role: dict[str, Any]) -> list[Finding]:
    """IAM's quotas on one role's documents (contracts/iam_quotas.py): its trust policy, its
    inline policies together, each customer managed policy the stack writes for it."""
    sized = [("trustPolicy", policy_characters(role["trustPolicy"]), TRUST_POLICY_CHARACTERS)]
    sized.append(
        (
            "inlinePolicies together",
            sum(policy_characters(d) for d in role["inlinePolicies"].values()),
            ROLE_INLINE_POLICY_CHARACTERS,
        )
    )
    sized += [
        (f"managedPolicies.{n}", policy_characters(d), MANAGED_POLICY_CHARACTERS)
        for n, d in sorted(role.get("managedPolicies", {}).items())
    ]
    return [
        Finding(
            f"{file_name} {where}",
            "iam-quotas",
            f"{size:,} characters without white space: IAM allows {limit:,} (IAM and AWS STS quotas)",
        )
        for where, size, limit in sized
        if size > limit
    ]


def _federation_reasons(
    document: dict[str, Any], provider: re.Pattern[str] | None
) -> dict[str, str | None]:
    """For each federated principal of a trust policy: None if every statement naming it is the
    cluster's IRSA trust, else why one is not."""
    statements = document.get("Statement", [])
    reasons: dict[str, str | None] = {}
    for statement in statements if isinstance(statements, list) else [statements]:
        federated = _federated(statement)
        for name in federated if isinstance(federated, list) else [federated]:
            if not isinstance(name, str):
                continue
            reason = (
                "no cluster to compare it with"
                if provider is None
                else "IRSA trusts one provider per statement"
                if isinstance(federated, list)
                else irsa_problem(statement, provider)
            )
            # One statement that is not IRSA's keeps the finding for that principal.
            reasons[name] = reasons.get(name) or reason
    return reasons


def _federated(statement: Any) -> Any:
    principal = statement.get("Principal") if isinstance(statement, dict) else None
    return principal.get("Federated") if isinstance(principal, dict) else None


def cache_schemas() -> None:
    """Parse each schema file once per process. kubernetes-validate 1.37.0 reads and parses the
    file on every `validate` call (kubernetes_validate/utils.py: `validate` calls the module's
    `schema_contents` for the kind's schema and again for `_definitions.json`, which `json.load`s
    a file each time): for a dozen manifests, 0.2 s of parsing `_definitions.json` over and over.
    The parsed schemas are only read (`referencing.Resource.from_contents`), so one copy serves."""
    import kubernetes_validate.utils as utils

    if not hasattr(utils.schema_contents, "cache_info"):
        utils.schema_contents = functools.cache(utils.schema_contents)


def preload(kubernetes_version: str | None = None) -> None:
    """Import both validators and their data (parliament parses ~10 MB of IAM definitions), and,
    for the cluster's version, parse the Kubernetes schemas every plan reads
    (`_definitions.json` with a Namespace's schema), while the plan is still being rendered."""
    import jsonschema  # noqa: F401
    import kubernetes_validate
    import parliament  # noqa: F401

    custom_resource_schemas()
    cache_schemas()
    if kubernetes_version is not None:
        warm = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "warm"}}
        kubernetes_validate.validate(
            warm, kubernetes_schema_version(kubernetes_version), strict=True
        )


def validate_plan(
    manifests: dict[str, dict[str, Any]],
    iam: dict[str, dict[str, Any]],
    cluster: ClusterSettings,
    patches: Collection[str] = (),
) -> list[Finding]:
    """Every finding of both validators on one rendered plan of a stack of this cluster
    (`patches`: which manifests are patches)."""
    return kubernetes_findings(manifests, cluster.kubernetes_version, patches) + iam_findings(
        iam, cluster
    )

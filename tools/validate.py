"""Independent validators of a rendered plan: the Kubernetes OpenAPI schemas and an IAM linter.

Both ship their data in their packages, so validation is offline and repeatable.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

# A trust policy has no Resource by definition; parliament lints identity policies only and says so.
TRUST_POLICY_FINDING = ("MALFORMED", "Statement contains neither Resource nor NotResource")


@dataclass(frozen=True, order=True)
class Finding:
    """One validator complaint about one rendered document."""

    document: str
    validator: str
    message: str

    def __str__(self) -> str:
        return f"{self.document}: {self.validator}: {self.message}"


def kubernetes_findings(
    manifests: dict[str, dict[str, Any]], kubernetes_version: str
) -> list[Finding]:
    """Strict validation (unknown fields rejected) against the schemas of the cluster's version."""
    import kubernetes_validate

    version = f"{kubernetes_version}.0"
    findings = []
    for file_name, obj in sorted(manifests.items()):
        try:
            kubernetes_validate.validate(obj, version, strict=True)
        except kubernetes_validate.ValidationError as error:
            where = ".".join(str(p) for p in error.path) or "(root)"
            findings.append(
                Finding(
                    file_name, f"kubernetes-validate {version} strict", f"{where}: {error.message}"
                )
            )
    return findings


def iam_findings(iam: dict[str, dict[str, Any]]) -> list[Finding]:
    """parliament on every trust and permission document."""
    from parliament import analyze_policy_string

    findings = []
    for file_name, role in sorted(iam.items()):
        documents = [("trustPolicy", role["trustPolicy"], True)]
        documents += [
            (f"inlinePolicies.{n}", d, False) for n, d in sorted(role["inlinePolicies"].items())
        ]
        for where, document, is_trust in documents:
            for finding in analyze_policy_string(json.dumps(document)).findings:
                if is_trust and (finding.issue, finding.detail) == TRUST_POLICY_FINDING:
                    continue
                findings.append(
                    Finding(
                        f"{file_name} {where}", "parliament", f"{finding.issue}: {finding.detail}"
                    )
                )
    return findings


def preload() -> None:
    """Import both validators and their data (parliament parses ~10 MB of IAM definitions)."""
    import kubernetes_validate  # noqa: F401
    import parliament  # noqa: F401


def validate_plan(
    manifests: dict[str, dict[str, Any]], iam: dict[str, dict[str, Any]], kubernetes_version: str
) -> list[Finding]:
    """Every finding of both validators on one rendered plan."""
    return kubernetes_findings(manifests, kubernetes_version) + iam_findings(iam)

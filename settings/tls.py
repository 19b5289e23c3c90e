"""Lifetimes of the certificates that secure agent-to-server gRPC."""

from __future__ import annotations

from pydantic import Field, model_validator

from kiam_eks.settings.base import Model

# The TLS provider computes a certificate's end as now + hours in Go's time.Duration, which holds
# about 292 years: more hours overflow into a certificate that expired before it was issued
# (terraform-provider-tls, createCertificate).
MAX_VALIDITY_HOURS = 2_562_047


class TlsSettings(Model):
    """`kiam:tls`: validity and early renewal of the CA and the server and agent certificates."""

    ca_validity_hours: int = Field(
        default=87600,
        ge=24,
        le=MAX_VALIDITY_HOURS,
        description="CA lifetime (default ten years; at most about 292 years, Go's limit).",
    )
    cert_validity_hours: int = Field(
        default=8760,
        ge=24,
        le=MAX_VALIDITY_HOURS,
        description="Server and agent certificate lifetime (default a year).",
    )
    early_renewal_hours: int = Field(
        default=720,
        ge=1,
        description="A `pulumi up` this close to expiry re-issues the certificates; kiam reloads "
        "them from the mounted Secret without a restart.",
    )

    @model_validator(mode="after")
    def _check(self) -> TlsSettings:
        if self.cert_validity_hours > self.ca_validity_hours:
            raise ValueError(
                f"certValidityHours ({self.cert_validity_hours}) must not exceed "
                f"caValidityHours ({self.ca_validity_hours})"
            )
        if self.early_renewal_hours >= self.cert_validity_hours:
            raise ValueError(
                f"earlyRenewalHours ({self.early_renewal_hours}) must be below "
                f"certValidityHours ({self.cert_validity_hours})"
            )
        return self

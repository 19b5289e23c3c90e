"""Taking over a running kiam (upstream manifests or the Helm chart) without a credential outage."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr, model_validator

from contracts import kiam
from settings.base import UNDECRYPTED_SECRET, DnsLabel, LabelKey, LabelValue, Model

Phase = Literal["servers", "takeover", "complete"]


class AdoptionSettings(Model):
    """`kiam:adoption`: the running install to move onto this program, and how far the move is.

    Phases (docs/migration.md): `servers` adds the dedicated nodes and server Deployment next to
    the old servers, reachable through the old Service and trusted by the old agents; `takeover`
    adopts the old Service and agent DaemonSet in place; `complete` keeps the adopted names.
    """

    phase: Phase = Field(description="How far the move is: servers, takeover or complete.")
    agent_daemon_set_name: DnsLabel = Field(
        default=kiam.UPSTREAM_AGENT_DAEMON_SET,
        description="Name of the running agent DaemonSet; taken over in place, one node at a time.",
    )
    agent_pod_labels: dict[LabelKey, LabelValue] = Field(
        min_length=1,
        description="The running agent DaemonSet's `spec.selector.matchLabels` (immutable, so kept).",
    )
    server_pod_labels: dict[LabelKey, LabelValue] = Field(
        min_length=1,
        description="The labels the running Service selects; the new server pods carry them too.",
    )
    ca_certificate: SecretStr = Field(
        description="The running install's CA certificate (PEM; set with --secret), so old agents "
        "trust the new servers and the new servers trust old agents."
    )
    ca_private_key: SecretStr = Field(
        description="The running install's CA private key (PEM; set with --secret)."
    )

    @property
    def taking_over(self) -> bool:
        """Until the move is complete, what the running install has under this program's names
        is adopted (upsert), applied with force and kept on delete, so going back a phase gives
        it back (docs/migration.md)."""
        return self.phase in ("servers", "takeover")

    @model_validator(mode="after")
    def _check(self) -> AdoptionSettings:
        # The offline plan cannot decrypt `secure:` values; only the CLI sees the real PEMs.
        certificate = self.ca_certificate.get_secret_value()
        if certificate != UNDECRYPTED_SECRET and "-----BEGIN CERTIFICATE-----" not in certificate:
            raise ValueError("caCertificate is not a PEM certificate (-----BEGIN CERTIFICATE-----)")
        key = self.ca_private_key.get_secret_value()
        if key != UNDECRYPTED_SECRET and "PRIVATE KEY-----" not in key:
            raise ValueError(
                "caPrivateKey is not a PEM private key (-----BEGIN ... PRIVATE KEY-----)"
            )
        return self

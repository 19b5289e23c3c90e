"""Taking over a running kiam (upstream manifests or the Helm chart) without a credential outage."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from pydantic import Field, SecretStr, model_validator

from kiam_eks.contracts import kiam, labels, names
from kiam_eks.settings.base import UNDECRYPTED_SECRET, DnsLabel, LabelKey, LabelValue, Model

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
        description="Name of the running agent DaemonSet; taken over in place, rolling as `rollout` says.",
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


@dataclass(frozen=True, kw_only=True)
class ObjectTakeover:
    """How the stack applies one object that a running install may already have under the name
    this program gives it (docs/migration.md, "How the stack takes over what the install has")."""

    forced: bool
    """Applied with force (`pulumi.com/patchForce`): without it the API server refuses every
    field whose value the old installer's field manager set (the Service's selector, Helm's
    `app.kubernetes.io/managed-by` label)."""
    kept_on_delete: bool
    """Kept on delete (`retainOnDelete`): a rollback (going back a phase, `pulumi destroy`) leaves
    the object to the running install instead of deleting what it still uses."""


NOT_TAKEN_OVER = ObjectTakeover(forced=False, kept_on_delete=False)
"""A clash with an object of the same name fails loudly, and a destroy removes what the stack made."""


@dataclass(frozen=True, kw_only=True)
class Adoption:
    """Where the stack stands towards a running kiam install: every answer the components, the
    program, the alert rules, the guarantees and the tools need, derived once from `kiam:adoption`
    (`StackSettings.adoption_state`). Without `kiam:adoption` there is no running install: the
    stack owns everything, takes nothing over and uses the program's own names and labels."""

    phase: Phase | None
    """How far the move is; None without `kiam:adoption`."""
    stack_owns_agents: bool
    """Whether this stack deploys the agents (DaemonSet and ServiceAccount). Not in phase
    `servers`: the running install's agents stay in service."""
    stack_owns_service: bool
    """Whether this stack deploys the Service the agents dial. Not in phase `servers`: the
    running install's Service serves its agents, and the new server pods join it through
    `server_pod_extra_labels`."""
    adopts_existing_objects: bool
    """The Kubernetes provider's `upsertExistingObjects`: an object the running install has under
    a name this program uses is adopted in place instead of failing with AlreadyExists. Only while
    taking over (phases `servers` and `takeover`), so an accidental clash is never absorbed."""
    server_account: ObjectTakeover
    """The `kiam-server` ServiceAccount (both installs have one)."""
    service: ObjectTakeover
    """The Service the agents dial (both installs have one)."""
    agent_account: ObjectTakeover
    """The `kiam-agent` ServiceAccount (the Helm chart has one)."""
    agent_daemon_set: ObjectTakeover
    """The agent DaemonSet: kept while taking over, but never forced. A forced apply would keep
    every field of the old template the program does not set (the upstream container `kiam`
    beside `kiam-agent`, its volumes and nodeSelector); the runbook replaces it instead
    (`--cascade=orphan`), and a skipped step stops `pulumi up` on the field conflict."""
    agent_daemon_set_name: str
    """The agent DaemonSet's name: the running install's, taken over in place; otherwise the
    program's."""
    agent_selector: Mapping[str, str]
    """The agent DaemonSet's `spec.selector.matchLabels`: the running one's, since selectors are
    immutable and taking the DaemonSet over in place (a rolling update, never two agents on a
    node) means keeping it; otherwise the program's."""
    agent_extra_labels: Mapping[str, str]
    """Labels the agent ServiceAccount, DaemonSet and pods carry besides the program's: the
    running agents' selector labels, so the kept selector still selects the new pods."""
    server_pod_extra_labels: Mapping[str, str]
    """Labels the server pods carry besides the program's: the ones the running install's
    Service selects, so it lists old and new servers alike and is never empty."""
    running_install_ca: tuple[SecretStr, SecretStr] | None
    """The running install's CA (certificate, private key), which signs this stack's certificates
    so old and new agents and servers trust each other; None: the stack issues its own CA."""

    @classmethod
    def of(cls, settings: AdoptionSettings | None) -> Adoption:
        """The state `kiam:adoption` describes (None: no running install)."""
        if settings is None:
            return cls(
                phase=None,
                stack_owns_agents=True,
                stack_owns_service=True,
                adopts_existing_objects=False,
                server_account=NOT_TAKEN_OVER,
                service=NOT_TAKEN_OVER,
                agent_account=NOT_TAKEN_OVER,
                agent_daemon_set=NOT_TAKEN_OVER,
                agent_daemon_set_name=names.AGENT_NAME,
                agent_selector=labels.selector_labels("agent"),
                agent_extra_labels={},
                server_pod_extra_labels={},
                running_install_ca=None,
            )
        # Until the move is complete, what the running install has under this program's names is
        # adopted, forced and kept, so going back a phase gives it back (docs/migration.md).
        taking_over = settings.phase in ("servers", "takeover")
        forced_and_kept = ObjectTakeover(forced=taking_over, kept_on_delete=taking_over)
        # During the first phase the running install's Service and agents stay in charge.
        stack_in_charge = settings.phase != "servers"
        return cls(
            phase=settings.phase,
            stack_owns_agents=stack_in_charge,
            stack_owns_service=stack_in_charge,
            adopts_existing_objects=taking_over,
            server_account=forced_and_kept,
            service=forced_and_kept,
            agent_account=forced_and_kept,
            agent_daemon_set=ObjectTakeover(forced=False, kept_on_delete=taking_over),
            agent_daemon_set_name=settings.agent_daemon_set_name,
            agent_selector=dict(settings.agent_pod_labels),
            agent_extra_labels=dict(settings.agent_pod_labels),
            server_pod_extra_labels=dict(settings.server_pod_labels),
            running_install_ca=(settings.ca_certificate, settings.ca_private_key),
        )

"""What the stack's last update installed: the facts a change is judged from.

Every `pulumi up` exports them as the stack output `installed` (program/stack.py), computed here
from the settings it applied, and every later run reads them back before anything is registered
(components/last_update.py): the engine hands a program its own stack's stored outputs, in a preview
as in an update, from the checkpoint the previous update left (pulumi/pulumi
pkg/resource/deploy/builtins.go, `readStackResourceOutputs`; pkg/backend/backend.go
`GetStackResourceOutputs`). A stack with no update yet has none: its first `up` changes from
nothing. The output is recorded only once the update's servers, agents and retirement roll are
done, so an update that fails half way leaves the facts of the one before it, and the next run
judges the same change again.

A stack last updated by a version of this program older than the `installed` output is read from
the outputs that version exported (`serverAddress`, `namespace`, `applications`, `roleBaseArn`):
what they do not say (the agents' port and placement, the adoption, the namespace's owner) is
unknown for that one update, and the transition rules that need it do not judge it
(docs/transitions.md).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
)
from pydantic.alias_generators import to_camel

from kiam_eks.contracts import names
from kiam_eks.contracts.iam import role_arn
from kiam_eks.contracts.tokens import KIAM, KIAM_KUBERNETES, NAMESPACE, STACK
from kiam_eks.settings.agent import TolerationSettings
from kiam_eks.settings.applications import ServedBy, chain_role_needed
from kiam_eks.settings.kubernetes_side import KubernetesSide, KubernetesSideSettings
from kiam_eks.settings.stack import StackSettings

OUTPUT = "installed"
"""The stack output holding these facts."""
VERSION = 1
NamespaceOwner = Literal["stack", "released", "existing"]


class Fact(BaseModel):
    """A fact as the stack output spells it: camelCase, frozen; keys a later version adds are
    ignored, so a rollback of the program can still read what a newer one wrote."""

    model_config = ConfigDict(
        frozen=True, extra="ignore", alias_generator=to_camel, populate_by_name=True
    )


class InstalledCluster(Fact):
    name: str
    account_id: str
    region: str


class InstalledNamespace(Fact):
    name: str
    owner: NamespaceOwner
    """`stack`: created by the stack; `released`: created by it, then `kiam:namespace.create`
    false: still in the stack's state, kept on delete, forgotten by the next update; `existing`:
    not the stack's."""


class InstalledServer(Fact):
    service_name: str
    cluster_domain: str
    grpc_port: int

    def address(self, namespace: str) -> str:
        """What the agents of that update dial."""
        return names.agent_server_address(
            self.service_name, namespace, self.cluster_domain, self.grpc_port
        )


class InstalledAgents(Fact):
    """The agents the stack runs (absent while a running install's agents are in service)."""

    daemon_set: str
    port: int
    """What every node's DNAT rule sends metadata requests to (contracts/agent_rule.py)."""
    removes_rule_on_exit: bool
    """Started with `--iptables-remove`: an agent stopping for good takes its rule with it."""
    host_interface: str
    tolerations: tuple[TolerationSettings, ...]
    """Where they run besides untainted nodes."""


class InstalledAdoption(Fact):
    phase: Literal["servers", "takeover", "complete"]
    agent_daemon_set_name: str
    agent_pod_labels: dict[str, str]
    server_pod_labels: dict[str, str]
    ca_fingerprint: str
    """SHA-256 of the running install's CA certificate, which signs every certificate."""
    ca_pair_fingerprint: str
    """SHA-256 of the CA certificate and its private key together: another key for the same
    certificate would sign certificates no agent or server could verify. A one-way digest of
    the pair, so the key itself is nowhere in the outputs."""


class InstalledApplication(Fact):
    namespace: str | None
    """None only when read from an older version's outputs, which name it only with a service
    account."""
    role_arn: str
    served_by: ServedBy
    service_account: str | None = None
    existing: bool = False
    """The role existed before the stack (`roleArn`): the stack never created it, so never
    deletes it. Written only when true, so the facts of every other application read as they
    always have."""

    @model_serializer(mode="wrap")
    def _without_default_existing(self, handler: SerializerFunctionWrapHandler) -> Any:
        dumped = handler(self)
        if isinstance(dumped, dict) and not self.existing:
            dumped.pop("existing", None)
        return dumped


class InstalledPermitted(Fact):
    value: str
    """The value found on the namespace (`kiam:existingPermitted`)."""
    holding: bool
    """The stack holds the annotation (its union with the stack's roles), rather than having
    given the value back."""


class Installed(Fact):
    """The facts one update left."""

    version: int = VERSION
    cluster: InstalledCluster | None = None
    retired: bool = False
    namespace: InstalledNamespace | None = None
    server: InstalledServer | None = None
    agents: InstalledAgents | None = None
    adoption: InstalledAdoption | None = None
    role_base_arn: str | None = None
    kiam_role_path: str | None = None
    """Where kiam's roles and the Pod Identity chain roles live; recorded once retired too (the
    chain roles stay), so a retired stack's record from before that reads None: unknown."""
    applications: dict[str, InstalledApplication] = Field(default_factory=dict)
    existing_permitted: dict[str, InstalledPermitted] = Field(default_factory=dict)
    server_permission: tuple[tuple[str, ...], ...] | None = None
    """How the kiam-server role's permission was laid over its documents, inline policy first
    (settings/server_permission.py); written only where it spans more than one, so the facts of
    every smaller stack read as they always have."""
    legacy: bool = False
    """Read from the outputs of a version of the program that did not export `installed`: the
    facts above that those outputs do not hold are None, i.e. unknown."""

    def chain_roles(self) -> list[str]:
        """The applications reached through a chain role the stack created under
        `kiam_role_path`, whose ARN the role's owner in another account trusts."""
        if self.cluster is None:
            return []
        return [
            app
            for app, a in sorted(self.applications.items())
            if a.existing and chain_role_needed(a.role_arn, self.cluster.account_id, a.served_by)
        ]

    @property
    def kiam_installed(self) -> bool:
        """The update left kiam running (servers, and agents unless a running install's)."""
        return self.server is not None and not self.retired

    def to_output(self) -> dict[str, Any]:
        """As the stack output `installed` holds it."""
        unwritten = {"legacy"} | (
            {"server_permission"} if self.server_permission is None else set()
        )
        return self.model_dump(mode="json", by_alias=True, exclude=unwritten)


def fingerprint(pem: str) -> str:
    """A certificate's identity without its content: SHA-256 of its PEM text."""
    return "sha256:" + hashlib.sha256(pem.strip().encode()).hexdigest()


def installed_by(settings: StackSettings, previous: Installed | None) -> Installed:
    """The facts the update applying `settings` leaves, having changed from `previous`."""
    s = settings
    cluster = InstalledCluster(
        name=s.cluster.name, account_id=s.cluster.account_id, region=s.cluster.region
    )
    partition = s.cluster.partition
    applications = {
        app: InstalledApplication(
            namespace=a.namespace,
            role_arn=a.arn(partition, s.cluster.account_id, s.iam),
            existing=not a.owned,
            served_by=a.served_by,
            service_account=a.service_account,
        )
        for app, a in sorted(s.applications.items())
    }
    if s.retire:
        # kiam's roles are gone, but the Pod Identity chain roles stay under kiamRolePath, and
        # another account trusts each one's ARN (settings/applications.py `chain_role_needed`).
        return Installed(
            cluster=cluster,
            retired=True,
            applications=applications,
            kiam_role_path=s.iam.kiam_role_path,
        )
    adoption = s.adoption
    kiam_namespaces = {a.namespace for a in s.applications.values() if a.served_by.kiam}
    placement = s.server_permission_layout(
        previous.server_permission if previous is not None else None
    )
    return Installed(
        server_permission=tuple(map(tuple, placement)) if len(placement) > 1 else None,
        cluster=cluster,
        **kubernetes_side_facts(s, previous),
        adoption=None
        if adoption is None
        else InstalledAdoption(
            phase=adoption.phase,
            agent_daemon_set_name=adoption.agent_daemon_set_name,
            agent_pod_labels=dict(adoption.agent_pod_labels),
            server_pod_labels=dict(adoption.server_pod_labels),
            ca_fingerprint=fingerprint(adoption.ca_certificate.get_secret_value()),
            ca_pair_fingerprint=fingerprint(
                adoption.ca_certificate.get_secret_value()
                + adoption.ca_private_key.get_secret_value()
            ),
        ),
        role_base_arn=role_arn(partition, s.cluster.account_id, s.iam.application_role_path, ""),
        kiam_role_path=s.iam.kiam_role_path,
        applications=applications,
        existing_permitted={
            ns: InstalledPermitted(value=value, holding=ns in kiam_namespaces)
            for ns, value in sorted(s.existing_permitted.items())
        },
    )


def kubernetes_side_facts(s: KubernetesSide, previous: Installed | None) -> dict[str, Any]:
    """The facts of kiam's Kubernetes side the update applying `s` leaves: its namespace, the
    address agents dial, the agents' rule and placement (`Installed`'s fields of those names)."""
    agents = None
    if s.adoption_state.stack_owns_agents:
        agents = InstalledAgents(
            daemon_set=s.adoption_state.agent_daemon_set_name,
            port=s.agent.port,
            removes_rule_on_exit=s.agent.remove_iptables_rule_on_exit,
            host_interface=s.agent.host_interface,
            tolerations=tuple(s.agent.tolerations),
        )
    return {
        "namespace": InstalledNamespace(name=s.namespace.name, owner=namespace_owner(s, previous)),
        "server": InstalledServer(
            service_name=s.server.service_name,
            cluster_domain=s.cluster.cluster_domain,
            grpc_port=s.server.grpc_port,
        ),
        "agents": agents,
    }


def kubernetes_side_installed(s: KubernetesSideSettings, previous: Installed | None) -> Installed:
    """The facts a `KiamKubernetes` update applying `s` leaves (its output `installed`): its
    Kubernetes side alone, as the roles, node group and certificates are made elsewhere."""
    return Installed(**kubernetes_side_facts(s, previous))


def namespace_owner(settings: KubernetesSide, previous: Installed | None) -> NamespaceOwner:
    """Who owns kiam's namespace once this update is done: `kiam:namespace.create` true makes it
    the stack's; switched off for a namespace the stack created, the namespace is released (kept,
    and forgotten by the next update) instead of deleted."""
    if settings.namespace.create:
        return "stack"
    before = previous.namespace if previous is not None else None
    if before is not None and before.name == settings.namespace.name and before.owner == "stack":
        return "released"
    return "existing"


# The components that record what their update installed (their output `installed`).
RECORDING_COMPONENTS = (KIAM, KIAM_KUBERNETES)


@dataclass(frozen=True)
class LastUpdate:
    """What the stack's last update left, as the engine reads it back for the program."""

    outputs: Mapping[str, Any] = field(default_factory=dict)
    """The stack outputs."""
    resources: Mapping[str, str] = field(default_factory=dict)
    """URN -> type of every resource in the stack's state (the root stack included)."""
    components: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """URN -> outputs of each `RECORDING_COMPONENTS` resource in the state."""

    @classmethod
    def of_stack_resources(cls, answer: Mapping[str, Any]) -> LastUpdate:
        """From `pulumi:pulumi:readStackResourceOutputs`' answer: `outputs` maps each URN to its
        `type` and `outputs` (pulumi/pulumi pkg/backend/backend.go `GetStackResourceOutputs`,
        resources marked for deletion left out); the root stack's outputs are the stack's."""
        resources: dict[str, str] = {}
        components: dict[str, Mapping[str, Any]] = {}
        stack_outputs: Mapping[str, Any] = {}
        for urn, resource in (answer.get("outputs") or {}).items():
            if not isinstance(resource, Mapping):
                continue
            kind = str(resource.get("type", ""))
            resources[str(urn)] = kind
            if kind == STACK:
                # Kept as given (not copied, nor tested for truth): the program's reader converts
                # them only when read (components/last_update.py).
                outputs = resource.get("outputs")
                stack_outputs = outputs if outputs is not None else {}
            elif kind in RECORDING_COMPONENTS:
                components[str(urn)] = resource.get("outputs") or {}
        return cls(outputs=stack_outputs, resources=resources, components=components)

    def installed(self) -> Installed | None:
        """The facts of that update as this repository's program exported them (the stack output
        `installed`, or an older version's outputs); None for a stack with no update yet."""
        return read_installed(self.outputs, self.resources)

    def component(self, kind: str, name: str) -> str | None:
        """The URN of the component of type `kind` named `name` in the state, if any (matched by
        type and name: its parents' types are the program's)."""
        found = sorted(
            urn for urn, t in self.resources.items() if t == kind and urn.endswith(f"::{name}")
        )
        if len(found) > 1:
            raise ValueError(
                f"the stack holds {len(found)} {kind} components named {name!r} ({', '.join(found)}): "
                "each needs a name of its own for its record of what it installed to be found"
            )
        return found[0] if found else None

    def recorded(self, kind: str, name: str) -> Installed | None:
        """What the component recorded with its last update (its output `installed`), or None:
        not in the state (a first install), or recorded nothing (an update by a version before
        the record, or one that stopped before its rollouts were done on a first install)."""
        urn = self.component(kind, name)
        record = self.components.get(urn, {}).get(OUTPUT) if urn is not None else None
        if not isinstance(record, Mapping):
            return None
        try:
            return Installed.model_validate(dict(record))
        except ValidationError as error:
            raise ValueError(
                f"the output {OUTPUT!r} of {kind} {name!r} cannot be read: {error}"
            ) from None


def read_installed(
    outputs: Mapping[str, Any], resources: Mapping[str, str] | None = None
) -> Installed | None:
    """The facts a stack's last outputs hold: None for a stack with no update yet (no outputs)."""
    if not outputs:
        return None
    document = outputs.get(OUTPUT)
    if isinstance(document, Mapping):
        try:
            return Installed.model_validate(dict(document))
        except ValidationError as error:
            raise ValueError(f"the stack output {OUTPUT!r} cannot be read: {error}") from None
    return _legacy(outputs, resources or {})


def _legacy(outputs: Mapping[str, Any], resources: Mapping[str, str]) -> Installed:
    """What the outputs of an older version of the program say (program/stack.py exported
    `serverAddress` and `namespace` exactly while kiam was installed, and `applications`)."""
    applications = {}
    for app, value in (outputs.get("applications") or {}).items():
        if isinstance(value, Mapping) and value.get("roleArn") and value.get("servedBy"):
            account = value.get("serviceAccount") or {}
            applications[app] = InstalledApplication(
                namespace=account.get("namespace"),
                role_arn=str(value["roleArn"]),
                served_by=ServedBy(str(value["servedBy"])),
                service_account=account.get("name"),
            )
    address = outputs.get(names.SERVER_ADDRESS_OUTPUT)
    namespace = outputs.get("namespace")
    server = installed_namespace = None
    if isinstance(address, str) and isinstance(namespace, str):
        server = _server_of(address, namespace)
        # Whether the stack created the namespace is in its state: a Namespace of its own.
        created = any(kind == NAMESPACE for kind in resources.values())
        installed_namespace = InstalledNamespace(
            name=namespace, owner="stack" if created else "existing"
        )
    return Installed(
        retired=server is None,
        namespace=installed_namespace,
        server=server,
        role_base_arn=outputs.get("roleBaseArn"),
        applications=applications,
        legacy=True,
    )


def _server_of(address: str, namespace: str) -> InstalledServer | None:
    """`<service>.<namespace>.svc.<domain>:<port>` (contracts/names.py) taken apart."""
    host, _, port = address.rpartition(":")
    service, _, rest = host.partition(".")
    middle = f"{namespace}.svc."
    if not port.isdigit() or not rest.startswith(middle):
        return None
    return InstalledServer(
        service_name=service, cluster_domain=rest[len(middle) :], grpc_port=int(port)
    )

"""Finds kiam's parts among rendered resources, by what they are rather than by what they are called."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from kiam_eks.contracts.labels import (
    EXISTING_PERMITTED_ANNOTATION,
    NAME,
    NAME_LABEL,
    PERMITTED_ANNOTATION,
)
from kiam_eks.contracts.names import SERVER_NODES
from kiam_eks.contracts.tokens import (
    CERT_REQUEST,
    DAEMON_SET,
    DEPLOYMENT,
    LOCALLY_SIGNED_CERT,
    NAMESPACE,
    NAMESPACE_PATCH,
    NODE_GROUP,
    POLICY,
    POLICY_ATTACHMENT,
    ROLE,
    ROLE_POLICY,
    ROLE_POLICY_ATTACHMENT,
    SECRET,
    SERVICE,
    STACK,
)
from kiam_eks.invariants import x509
from kiam_eks.invariants.expected import Expected, ExpectedApplication, MissingExpectationsError
from kiam_eks.invariants.model import UNKNOWN, Resource, dig, is_unknown

SERVER_CONTAINER, AGENT_CONTAINER = "kiam-server", "kiam-agent"


def _component(resource: Resource) -> str | None:
    labels = dig(resource.inputs, "metadata", "labels", default={}) or {}
    if is_unknown(labels) or labels.get(NAME_LABEL) != NAME:
        return None
    component = labels.get("app.kubernetes.io/component")
    return component if isinstance(component, str) else None


@dataclass(frozen=True)
class InlinePolicy:
    """One inline policy of a role: a `RolePolicy`, or an entry of the role's `inlinePolicies`."""

    source: Resource
    """The resource that writes it (the `RolePolicy`, or the role itself)."""
    name: Any
    document: Any
    """The policy text as registered (a JSON string, or `UNKNOWN` during a preview)."""


@dataclass(frozen=True)
class ManagedPolicy:
    """One managed policy a role gets: through a `RolePolicyAttachment`, a `PolicyAttachment`
    naming the role, or the role's own `managedPolicyArns`."""

    source: Resource
    arn: Any


class KiamView:
    """The kiam objects of one stack, located once for every check."""

    def __init__(self, resources: Sequence[Resource], expected: Expected | None = None) -> None:
        self.resources = list(resources)
        self._expected = expected
        self._role_indexes: dict[tuple[str, str], dict[str, list[int]]] = {}
        self._permitted: dict[str, list[Any]] = {}

    @property
    def knows_settings(self) -> bool:
        """Whether the stack's settings came with the resources (whole-stack gates); a resource
        judged alone (`invariants.per_resource`) has none."""
        return self._expected is not None

    @property
    def expected(self) -> Expected:
        """What the stack asked for. Only whole-stack checks read it: what one resource decides
        alone (`invariants.per_resource`) never depends on the settings."""
        if self._expected is None:
            raise MissingExpectationsError("judged without the stack's settings")
        return self._expected

    def of_type(self, type_: str) -> list[Resource]:
        return list(self._by_type.get(type_, ()))

    @cached_property
    def _by_type(self) -> dict[str, list[Resource]]:
        """The resources of each type, in order, found in one pass: the checks ask for a type
        thousands of times in a stack of 1,000 applications (issue 39)."""
        found: dict[str, list[Resource]] = {}
        for r in self.resources:
            found.setdefault(r.type, []).append(r)
        return found

    @cached_property
    def servers(self) -> list[Resource]:
        return [r for r in self.of_type(DEPLOYMENT) if _component(r) == "server"]

    @cached_property
    def agents(self) -> list[Resource]:
        return [r for r in self.of_type(DAEMON_SET) if _component(r) == "agent"]

    @cached_property
    def node_groups(self) -> list[Resource]:
        """What the cloud side created for the server nodes, whatever it is (an EKS managed node
        group and its launch template, or the e2e's Nodes): the resources registered under the
        component named `contracts.names.SERVER_NODES`."""
        return [r for r in self.resources if r.parent.endswith(f"::{SERVER_NODES}")]

    def roles_feeding(self, resources: Sequence[Resource], prop: str) -> list[Resource]:
        """The roles of this stack that the `prop` input of any of `resources` is built from."""
        sources = {u for r in resources for u in r.property_dependencies.get(prop, frozenset())}
        return [r for r in self.of_type(ROLE) if r.urn in sources]

    @cached_property
    def node_roles(self) -> list[Resource]:
        """The server nodes' role: the one each EKS node group runs its nodes as (`nodeRoleArn`)."""
        return self.roles_feeding(self.of_type(NODE_GROUP), "nodeRoleArn")

    @cached_property
    def server_roles(self) -> list[Resource]:
        """The kiam-server role: the one the server Deployment's spec is built from (its
        `--assume-role-arn`, the only role ARN the servers are given)."""
        return [r for r in self.roles_feeding(self.servers, "spec") if r not in self.node_roles]

    def application_role(self, app: ExpectedApplication) -> Resource | None:
        """The role of this stack with the name and path the application's settings give: its
        name is fixed, being the interface pods and namespaces refer to. None for a role that
        exists already (`roleArn`): the stack does not hold it."""
        if not app.owned:
            return None
        return next(
            (
                r
                for r in self.of_type(ROLE)
                if r.inputs.get("name") == app.role_name and r.inputs.get("path") == app.path
            ),
            None,
        )

    def _naming(self, type_: str, prop: str, role: Resource) -> list[Resource]:
        """The resources of `type_` whose `prop` names `role` (`_of_role`), in order; looked up
        by the role's URN and names in an index built once, not by reading every resource of
        the type for each role (a stack of 1,000 applications has hundreds of each)."""
        index = self._role_index(type_, prop)
        keys = [role.urn, *(n for n in (role.inputs.get("name"), role.outputs.get("name")) if n)]
        positions = sorted({i for key in keys if isinstance(key, str) for i in index.get(key, ())})
        resources = self._by_type.get(type_, [])
        return [resources[i] for i in positions if self._of_role(resources[i], prop, role)]

    def _role_index(self, type_: str, prop: str) -> dict[str, list[int]]:
        cache = self._role_indexes
        if (type_, prop) not in cache:
            index: dict[str, list[int]] = {}
            for i, r in enumerate(self._by_type.get(type_, [])):
                value = r.inputs.get(prop)
                values = value if isinstance(value, list) else [value]
                keys = {*r.property_dependencies.get(prop, frozenset())}
                keys.update(v for v in values if isinstance(v, str))
                for key in keys:
                    index.setdefault(key, []).append(i)
            cache[(type_, prop)] = index
        return cache[(type_, prop)]

    def _of_role(self, resource: Resource, prop: str, role: Resource) -> bool:
        """Whether `resource`'s `prop` names `role`: built from it, or by its literal name."""
        if role.urn in resource.property_dependencies.get(prop, frozenset()):
            return True
        names = {n for n in (role.inputs.get("name"), role.outputs.get("name")) if n}
        value = resource.inputs.get(prop)
        values = value if isinstance(value, list) else [value]
        return any(isinstance(v, str) and v in names for v in values)

    def inline_policies_of(self, role: Resource) -> list[InlinePolicy]:
        """Every inline policy of a role: `RolePolicy` resources naming it, and its own
        `inlinePolicies` argument."""
        found = [
            InlinePolicy(p, p.inputs.get("name"), p.inputs.get("policy"))
            for p in self._naming(ROLE_POLICY, "role", role)
        ]
        own = role.inputs.get("inlinePolicies") or []
        if is_unknown(own):
            return [*found, InlinePolicy(role, UNKNOWN, UNKNOWN)]
        return [
            *found,
            *(InlinePolicy(role, p.get("name"), p.get("policy")) for p in own if p.get("policy")),
        ]

    def managed_policies_of(self, role: Resource) -> list[ManagedPolicy]:
        """Every managed policy a role gets: attached to it alone, attached to it among others,
        and listed in its own `managedPolicyArns` argument."""
        own = role.inputs.get("managedPolicyArns") or []
        return [
            *(
                ManagedPolicy(a, a.inputs.get("policyArn"))
                for a in self._naming(ROLE_POLICY_ATTACHMENT, "role", role)
            ),
            *(
                ManagedPolicy(a, a.inputs.get("policyArn"))
                for a in self._naming(POLICY_ATTACHMENT, "roles", role)
            ),
            *(
                [ManagedPolicy(role, UNKNOWN)]
                if is_unknown(own)
                else [ManagedPolicy(role, arn) for arn in own]
            ),
        ]

    def own_managed_policies_of(self, role: Resource) -> list[tuple[ManagedPolicy, Resource]]:
        """The managed policies of `role` that this stack writes (customer managed `Policy`
        resources), each with its `Policy`: found through the attachment's `policyArn`, built
        from the policy (during a preview its ARN is not known yet) or equal to its ARN."""
        policies = self.of_type(POLICY)
        found = []
        for managed in self.managed_policies_of(role):
            built_from = managed.source.property_dependencies.get("policyArn", frozenset())
            for policy in policies:
                arn = policy.outputs.get("arn")
                if policy.urn in built_from or (
                    isinstance(arn, str) and not is_unknown(arn) and arn == managed.arn
                ):
                    found.append((managed, policy))
                    break
        return found

    def server_certificate_names(self) -> list[Any]:
        """The DNS names of each certificate the servers mount (`UNKNOWN` where not known yet):
        those of the certificate request it is signed from, where the stack issues it with
        pulumi-tls (the Secret's data comes from a signed certificate whose request is one of
        the stack's), else those the certificate in the Secret carries."""
        found: list[Any] = []
        for dep in self.servers:
            for volume in pod_spec(dep).get("volumes") or []:
                secret = self.by_name(SECRET, dig(volume, "secret", "secretName"))
                if secret is None:
                    continue
                signed = secret.property_dependencies.get("stringData", frozenset())
                behind = {
                    u
                    for c in self.of_type(LOCALLY_SIGNED_CERT)
                    if c.urn in signed
                    for u in c.property_dependencies.get("certRequestPem", frozenset())
                }
                requests = [r for r in self.of_type(CERT_REQUEST) if r.urn in behind]
                if requests:
                    found += [dig(r.inputs, "dnsNames", default=[]) or [] for r in requests]
                    continue
                pem = _certificate_in(secret)
                if is_unknown(pem) or pem is None:
                    found.append(UNKNOWN)
                else:
                    found.append(x509.dns_names(pem) or [])
        return found

    @cached_property
    def stack_outputs(self) -> Any:
        """The stack outputs (`pulumi.export`), where the gate hands over the root stack: what
        the stack tells its users, such as the pod annotation of each application."""
        stacks = self.of_type(STACK)
        return stacks[0].inputs if len(stacks) == 1 else {}

    def permitted(self, namespace: str) -> list[Any]:
        """The `iam.amazonaws.com/permitted` values this stack gives a namespace (created or
        patched); an element may be `UNKNOWN` during a preview.

        Where the stack took over a value someone else set, the patch recording that value
        (`kiam.pulumi.io/existing-permitted`) is the one that decides: it is applied with force
        after the patch that only re-asserts the value found, and before the one that shares the
        found value once it is given back (components/namespace_permissions.py)."""
        if namespace not in self._permitted:
            self._permitted[namespace] = self._permitted_values(namespace)
        return list(self._permitted[namespace])

    def _permitted_values(self, namespace: str) -> list[Any]:
        found: list[tuple[bool, Any]] = []
        for r in [*self.of_type(NAMESPACE), *self.of_type(NAMESPACE_PATCH)]:
            name = dig(r.inputs, "metadata", "name")
            value = dig(r.inputs, "metadata", "annotations", PERMITTED_ANNOTATION)
            if is_unknown(name) or (name == namespace and value is not None):
                annotations = dig(r.inputs, "metadata", "annotations", default={}) or {}
                taking_over = (
                    isinstance(annotations, dict) and EXISTING_PERMITTED_ANNOTATION in annotations
                )
                found.append((taking_over, UNKNOWN if is_unknown(name) else value))
        if any(taking_over for taking_over, _ in found):
            return [value for taking_over, value in found if taking_over]
        return [value for _, value in found]

    def by_name(self, type_: str, name: Any, namespace: Any = None) -> Resource | None:
        for r in self.of_type(type_):
            meta = r.inputs.get("metadata") or {}
            if meta.get("name") == name and (
                namespace is None or meta.get("namespace") == namespace
            ):
                return r
        return None

    def dialed_service(self, agent: Resource) -> tuple[str | None, Resource | None]:
        """The host an agent dials and the Service of this stack with that name, if any."""
        addresses = flag_values(dig(container(agent, AGENT_CONTAINER), "args"), "--server-address")
        if len(addresses) != 1:
            return None, None
        host = addresses[0].rsplit(":", 1)[0]
        parts = host.split(".")
        namespace = parts[1] if len(parts) > 1 else dig(agent.inputs, "metadata", "namespace")
        return host, self.by_name(SERVICE, parts[0], namespace)

    def server_taints(self) -> list[dict[str, str]]:
        """The taint that dedicates the server nodes, as the stack asked for it (Kubernetes
        spelling); `node-group-replacement` judges that an EKS group carries exactly it."""
        # A resource judged alone cannot know the taint: the whole-stack gate judges it.
        return [dict(self.expected.server_taint)] if self.knows_settings else []


def pod_spec(workload: Resource) -> Any:
    return dig(workload.inputs, "spec", "template", "spec", default={})


def pod_labels(workload: Resource) -> Any:
    return dig(workload.inputs, "spec", "template", "metadata", "labels", default={}) or {}


def container(workload: Resource, name: str) -> Any:
    containers = dig(pod_spec(workload), "containers", default=[]) or []
    if is_unknown(containers):
        return containers
    return next(
        (c for c in containers if c.get("name") == name), containers[0] if containers else {}
    )


def flag_values(args: Any, flag: str) -> list[str]:
    """Values of `--flag=value` in a container's args (all of them: a repeated flag is suspect)."""
    if is_unknown(args) or not isinstance(args, list):
        return []
    prefix = f"{flag}="
    return [a[len(prefix) :] for a in args if isinstance(a, str) and a.startswith(prefix)]


def _certificate_in(secret: Resource) -> Any:
    """The PEM certificate a kubernetes.io/tls Secret holds: in `stringData` as the program
    registers it, in base64 `data` as the provider returns it once created (what a policy pack
    sees of it after `up`); None where neither can be read (`UNKNOWN` while not known)."""
    pem = dig(secret.inputs, "stringData", "tls.crt")
    if isinstance(pem, str) or is_unknown(pem):
        return pem
    encoded = dig(secret.inputs, "data", "tls.crt")
    if is_unknown(encoded):
        return UNKNOWN
    if isinstance(encoded, str):
        try:
            return base64.b64decode(encoded, validate=True).decode()
        except (ValueError, UnicodeDecodeError):
            return None
    return None


def tolerates(toleration: Any, taint: dict[str, str]) -> bool:
    """Kubernetes' matching of one toleration against one taint."""
    effect = toleration.get("effect")
    if effect and effect != taint["effect"]:
        return False
    key = toleration.get("key")
    operator = toleration.get("operator", "Equal")
    if not key:
        return bool(operator == "Exists")
    if key != taint["key"]:
        return False
    return bool(operator == "Exists" or (toleration.get("value") or "") == taint["value"])

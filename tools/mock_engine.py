"""The Pulumi mock engine that the tests and the offline plan share.

It answers resource registrations and provider look-ups the way AWS and Kubernetes would in the
ways this program depends on (generated names, ARNs, the cluster's endpoint), and records every
registration with what the real engine would act on: parent, dependencies, options and inputs.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import runpy
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import resource as runtime_resource
from pulumi.runtime import rpc
from pulumi.runtime import settings as runtime_settings
from pulumi.runtime.proto import source_pb2
from pulumi.runtime.sync_await import _sync_await
from pydantic import ValidationError

from kiam_eks.components.last_update import plain_struct
from kiam_eks.components.stack_state import READ_STACK_RESOURCES
from kiam_eks.contracts import pod_identity, tokens
from kiam_eks.contracts.eks_node_group import FORCE_NEW
from kiam_eks.program import live_cluster
from kiam_eks.program.kube_api import ApiError
from kiam_eks.settings.cluster import partition_of
from kiam_eks.settings.pod_identity import PodIdentityAgentSettings
from kiam_eks.transitions.installed import RECORDING_COMPONENTS

PROJECT = "kiam"
# The self-managed backend's one organization name (pulumi/pulumi 1b594989,
# pkg/backend/diy/state.go: "diy has no organizations really, but we just always say it's
# organization"), which the program reads back in `pulumi.get_organization()`.
ORGANIZATION = "organization"
PROJECT_DIR = Path(__file__).resolve().parent.parent
MAIN = PROJECT_DIR / "__main__.py"


@dataclass(frozen=True)
class Registration:
    """One resource as the engine saw it register."""

    urn: str
    id: str
    type: str
    name: str
    parent: str
    custom: bool
    provider: str
    dependencies: tuple[str, ...]
    property_dependencies: dict[str, tuple[str, ...]]
    delete_before_replace: bool
    custom_timeouts: dict[str, str]
    ignore_changes: tuple[str, ...]
    replace_on_changes: tuple[str, ...]
    inputs: dict[str, Any]
    """Inputs with secrets unwrapped; `secret_paths` says which were secret."""
    secret_paths: tuple[str, ...]
    outputs: dict[str, Any] = field(default_factory=dict)
    retain_on_delete: bool = False


@dataclass(frozen=True)
class Invoke:
    """One function the program invoked, and what it was answered."""

    token: str
    args: dict[str, Any]
    answer: Any
    registered_before: int
    """How many resources the program had registered when it invoked it."""


@dataclass
class Recording:
    """Everything one program run registered, in order, and the stack outputs."""

    registrations: list[Registration]
    stack_outputs: dict[str, Any]
    reads: list[Registration] = field(default_factory=list)
    """Resources the program read rather than registered (`pulumi.StackReference`)."""
    invokes: list[Invoke] = field(default_factory=list)
    """Every function the program invoked, in order."""
    component_outputs: dict[str, dict[str, Any]] = field(default_factory=dict)
    """URN -> the outputs each component registered (`register_outputs`), as the engine stores
    them in the state."""

    def by_type(self, type_: str) -> list[Registration]:
        return [r for r in self.registrations if r.type == type_]

    def one(self, type_: str, name: str | None = None) -> Registration:
        found = [r for r in self.by_type(type_) if name is None or r.name == name]
        if len(found) != 1:
            raise LookupError(f"expected one {type_} {name or ''}, found {len(found)}")
        return found[0]

    def by_urn(self, urn: str) -> Registration:
        return next(r for r in self.registrations if r.urn == urn)

    def children_of(self, urn: str) -> list[Registration]:
        return [r for r in self.registrations if r.parent == urn]


def _short_hash(value: Any, length: int = 8) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:length]


class KiamMocks(pulumi.runtime.Mocks):
    """Synthesises what providers would compute: names, ARNs, ids, PEMs, the cluster look-up."""

    def __init__(
        self,
        *,
        account_id: str,
        region: str,
        partition: str = "aws",
        cluster_addons: Iterable[str] = (pod_identity.AGENT_ADDON,),
        refused_lookups: Mapping[str, str] | None = None,
        stack_name: str = "",
        last_outputs: Mapping[str, Any] | None = None,
        last_resources: Mapping[str, str] | None = None,
        last_component_outputs: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        self.account_id = account_id
        self.region = region
        self.partition = partition
        self.cluster_addons = frozenset(cluster_addons)
        """The EKS add-ons the cluster runs outside the stack, as `aws.eks.get_addon` finds them."""
        self.refused_lookups = dict(refused_lookups or {})
        """Invoke token -> why every such look-up fails instead (EKS refusing DescribeAddon or
        DescribeCluster to these credentials, say)."""
        self.stack_name = stack_name
        """This stack's fully qualified name (`organization/<project>/<stack>`)."""
        self.last_outputs = dict(last_outputs or {})
        """The outputs the stack's last update left."""
        self.last_resources = dict(last_resources or {})
        """URN -> type of every resource the stack's last update left in its state."""
        self.last_component_outputs = {
            k: dict(v) for k, v in (last_component_outputs or {}).items()
        }
        """URN -> outputs of the components among them."""
        self.replace_on_changes: tuple[str, ...] = ()
        """The `replaceOnChanges` of the registration being answered."""

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        inputs = dict(args.inputs)
        typ, name = args.typ, args.name
        if typ == tokens.ROLE:
            role_name = inputs.get("name") or f"{name}-{_short_hash(name, 7)}"
            path = inputs.get("path", "/")
            arn = f"arn:{self.partition}:iam::{self.account_id}:role{path}{role_name}"
            return role_name, {
                **inputs,
                "name": role_name,
                "arn": arn,
                "uniqueId": f"AROA{_short_hash(arn, 16).upper()}",
            }
        if typ == tokens.POLICY:
            # Auto-named as the provider names it (the resource's name and a random suffix);
            # IAM's ARN carries the path ("IAM identifiers": `policy/<path><name>`), and the
            # provider's id is that ARN (`aws.iam.Policy`: "import IAM Policies using the
            # `arn`", pulumi-aws iam/policy.d.ts).
            policy_name = inputs.get("name") or f"{name}-{_short_hash(name, 7)}"
            path = inputs.get("path", "/")
            arn = f"arn:{self.partition}:iam::{self.account_id}:policy{path}{policy_name}"
            return arn, {**inputs, "name": policy_name, "arn": arn, "policyId": _short_hash(arn)}
        if typ == tokens.LAUNCH_TEMPLATE:
            # One template per resource, as AWS keeps it: its id and name stay, and a change of
            # its content is a new version of it (`updateDefaultVersion`), not a new template.
            lt_id = f"lt-{_short_hash(name, 17)}"
            return lt_id, {
                **inputs,
                "name": f"{inputs.get('namePrefix', '')}{_short_hash(name)}",
                "latestVersion": int(_short_hash(inputs, 6), 16),
            }
        if typ == tokens.POD_IDENTITY_ASSOCIATION:
            # EKS gives an association an id `a-` and 17 characters, and an ARN naming the cluster.
            association = f"a-{_short_hash(inputs, 17)}"
            arn = f"arn:{self.partition}:eks:{self.region}:{self.account_id}:podidentityassociation/{inputs.get('clusterName')}/{association}"
            return association, {
                **inputs,
                "associationId": association,
                "associationArn": arn,
            }
        if typ == tokens.ADDON:
            cluster, addon = inputs.get("clusterName"), inputs.get("addonName")
            return f"{cluster}:{addon}", {
                **inputs,
                "arn": f"arn:{self.partition}:eks:{self.region}:{self.account_id}:addon/{cluster}/{addon}/mock",
            }
        if typ == tokens.NODE_GROUP:
            # Like EKS, a replacement gets a fresh suffix: here derived from what forces one, the
            # arguments EKS replaces a group for and those the program registered the group to be
            # replaced on (`replaceOnChanges`), never from what the program is meant to ask.
            forcing = {path: _at(inputs, path) for path in (*FORCE_NEW, *self.replace_on_changes)}
            group = (
                inputs.get("nodeGroupName")
                or f"{inputs.get('nodeGroupNamePrefix', '')}{_short_hash(forcing, 26)}"
            )
            arn = f"arn:{self.partition}:eks:{self.region}:{self.account_id}:nodegroup/{inputs.get('clusterName')}/{group}/mock"
            return f"{inputs.get('clusterName')}:{group}", {
                **inputs,
                "nodeGroupName": group,
                "arn": arn,
                "status": "ACTIVE",
            }
        metadata = inputs.get("metadata")
        if (
            typ.startswith("kubernetes:")
            and isinstance(metadata, dict)
            and not metadata.get("name")
        ):
            # pulumi-kubernetes auto-names an object without metadata.name: `<name>-<suffix>`,
            # a new suffix for each replacement (here derived from the inputs).
            named = {**metadata, "name": f"{name}-{_short_hash(inputs)}"}
            return f"{name}-id", {**inputs, "metadata": named}
        if typ == tokens.PRIVATE_KEY:
            return name, {
                **inputs,
                "privateKeyPem": _pem("PRIVATE KEY", name),
                "publicKeyPem": _pem("PUBLIC KEY", name),
            }
        if typ == tokens.CERT_REQUEST:
            return name, {**inputs, "certRequestPem": _pem("CERTIFICATE REQUEST", name)}
        if typ in (tokens.SELF_SIGNED_CERT, tokens.LOCALLY_SIGNED_CERT):
            return name, {**inputs, "certPem": _pem("CERTIFICATE", name)}
        return f"{name}-id", inputs

    def _stack_resources(self, target: str) -> dict[str, Any]:
        """What the engine's builtin provider answers `pulumi:pulumi:readStackResourceOutputs`
        with: every resource of the stack's state by URN, its type and outputs, the root stack's
        outputs being the stack outputs (pulumi/pulumi pkg/resource/deploy/builtins.go,
        pkg/backend/backend.go `GetStackResourceOutputs`); a stack with no update yet has none.
        Only this stack is known here: any other is refused, as the engine refuses an unknown
        stack."""
        if target != self.stack_name:
            raise ValueError(f"the mock engine knows no stack {target!r}, only {self.stack_name!r}")
        resources: dict[str, Any] = {
            urn: {"type": kind, "outputs": self.last_component_outputs.get(urn, {})}
            for urn, kind in self.last_resources.items()
        }
        if self.last_outputs or resources:
            project_stack = target.split("/", 1)[1]
            project, stack = project_stack.split("/")
            root = f"urn:pulumi:{stack}::{project}::{tokens.STACK}::{project}-{stack}"
            resources[root] = {"type": tokens.STACK, "outputs": self.last_outputs}
        return {"name": target, "outputs": resources}

    # A plain dict: the SDK's annotation says tuple, but its mock monitor fails on (dict, None).
    def call(self, args: pulumi.runtime.MockCallArgs) -> dict[str, Any]:  # type: ignore[override]
        if args.token == READ_STACK_RESOURCES:
            return self._stack_resources(str(args.args.get("stackName", "")))
        if args.token in self.refused_lookups:
            return {}, [("", self.refused_lookups[args.token])]  # type: ignore[return-value]
        cluster = args.args.get("name", "")
        if args.token == "aws:eks/getCluster:getCluster":
            return {
                "name": cluster,
                "arn": f"arn:{self.partition}:eks:{self.region}:{self.account_id}:cluster/{cluster}",
                "endpoint": mock_cluster_endpoint(cluster, self.region),
                # Each cluster its own authority, as on EKS (program/cluster_identity.py).
                "certificateAuthorities": [{"data": mock_cluster_authority(cluster)}],
                "identities": [
                    {
                        "oidcs": [
                            {
                                "issuer": f"https://oidc.eks.{self.region}.amazonaws.com/id/{_short_hash(cluster, 32).upper()}"
                            }
                        ]
                    }
                ],
                "status": "ACTIVE",
            }
        if args.token == "aws:eks/getClusterAuth:getClusterAuth":
            return {"name": cluster, "token": "k8s-aws-v1.mock-token"}
        if args.token == "aws:eks/getAddon:getAddon":
            addon, cluster = args.args.get("addonName", ""), args.args.get("clusterName", "")
            if addon not in self.cluster_addons:
                # The provider's answer to DescribeAddon's ResourceNotFoundException
                # (contracts/pod_identity.py): a failed invoke the program sees as an exception
                # (not an RPC error, which would end it).
                failure = (
                    "",
                    f"reading EKS Add-On ({pod_identity.addon_id(cluster, addon)}): "
                    f"{pod_identity.ADDON_NOT_FOUND}",
                )
                return {}, [failure]  # type: ignore[return-value]
            return {
                "addonName": addon,
                "clusterName": cluster,
                "addonVersion": "v1.3.4-eksbuild.1",
                "arn": f"arn:{self.partition}:eks:{self.region}:{self.account_id}:addon/{cluster}/{addon}/mock",
                "id": f"{cluster}:{addon}",
            }
        raise NotImplementedError(f"the mock engine has no answer for {args.token}")


def mock_cluster_authority(cluster: str) -> str:
    """The certificate authority the mock EKS answers for `cluster` (`certificateAuthority.data`,
    the base64 of a PEM), as a kubeconfig for it carries it."""
    return base64.b64encode(_pem("CERTIFICATE", f"{cluster} cluster CA").encode()).decode()


def mock_cluster_endpoint(cluster: str, region: str) -> str:
    """The API server endpoint the mock EKS answers for `cluster`."""
    return f"https://{_short_hash(cluster, 32).upper()}.gr7.{region}.eks.amazonaws.com"


def _at(inputs: Mapping[str, Any], path: str) -> Any:
    """The value at a dotted input path (`launchTemplate.id`), None where absent."""
    node: Any = inputs
    for part in path.split("."):
        node = node.get(part) if isinstance(node, Mapping) else None
    return node


def _pem(kind: str, name: str) -> str:
    return f"-----BEGIN {kind}-----\nmock {name}\n-----END {kind}-----\n"


class RecordingMonitor(pulumi_mocks.MockMonitor):
    """A mock monitor that records each registration request before answering it."""

    def __init__(self, mocks: KiamMocks) -> None:
        super().__init__(mocks)
        self.kiam_mocks = mocks
        self.registering = threading.Lock()
        self.registrations: list[Registration] = []
        self.reads: list[Registration] = []
        self.invokes: list[Invoke] = []
        self.component_outputs: dict[str, dict[str, Any]] = {}

    def Invoke(self, request: Any) -> Any:  # noqa: N802 (the gRPC method name)
        response = super().Invoke(request)  # type: ignore[no-untyped-call]
        self.invokes.append(
            Invoke(
                token=request.tok,
                args=rpc.deserialize_properties(request.args),
                answer=_unwrap(rpc.deserialize_properties(getattr(response, "return")), "", []),
                registered_before=len(self.registrations),
            )
        )
        return response

    def RegisterResourceOutputs(self, request: Any) -> Any:  # noqa: N802 (the gRPC method name)
        # The SDK's mock monitor drops them; the engine stores a component's in the state, where
        # the next run reads them back (`readStackResourceOutputs`).
        # Only kiam's recording components: others' outputs hold references to their resources,
        # which the engine hands back as URNs (components/last_update.py reads them so too).
        if request.urn.split("::")[2].rsplit("$", 1)[-1] in RECORDING_COMPONENTS:
            self.component_outputs[request.urn] = plain_struct(request.outputs)
        return super().RegisterResourceOutputs(request)  # type: ignore[no-untyped-call]

    def ReadResource(self, request: Any) -> Any:  # noqa: N802 (the gRPC method name)
        response = super().ReadResource(request)  # type: ignore[no-untyped-call]
        self.reads.append(
            Registration(
                urn=response.urn,
                id=request.id,
                type=request.type,
                name=request.name,
                parent=request.parent,
                custom=True,
                provider=request.provider,
                dependencies=tuple(request.dependencies),
                property_dependencies={},
                delete_before_replace=False,
                custom_timeouts={},
                ignore_changes=(),
                replace_on_changes=(),
                inputs=_unwrap(rpc.deserialize_properties(request.properties), "", []),
                secret_paths=(),
                outputs=_unwrap(self.resources[response.urn].state, "", []),
            )
        )
        return response

    def RegisterResource(self, request: Any) -> Any:  # noqa: N802 (the gRPC method name)
        # What the registration asks to be replaced on reaches the answer (`new_resource`), through
        # the mocks: one registration at a time, as the SDK may send them from several threads
        # (an answer computed with another's `replaceOnChanges` named a node group at random).
        with self.registering:
            self.kiam_mocks.replace_on_changes = tuple(request.replaceOnChanges)
            response = super().RegisterResource(request)  # type: ignore[no-untyped-call]
        if request.type == "pulumi:pulumi:Stack":
            return response
        secret_paths: list[str] = []
        inputs = _unwrap(rpc.deserialize_properties(request.object), "", secret_paths)
        timeouts = request.customTimeouts
        self.registrations.append(
            Registration(
                urn=response.urn,
                id=self.resources[response.urn].id,
                type=request.type,
                name=request.name,
                parent=request.parent,
                custom=request.custom,
                provider=request.provider,
                dependencies=tuple(request.dependencies),
                property_dependencies={
                    k: tuple(v.urns) for k, v in request.propertyDependencies.items()
                },
                delete_before_replace=request.deleteBeforeReplace,
                custom_timeouts={
                    k: v
                    for k, v in (
                        ("create", timeouts.create),
                        ("update", timeouts.update),
                        ("delete", timeouts.delete),
                    )
                    if v
                },
                ignore_changes=tuple(request.ignoreChanges),
                replace_on_changes=tuple(request.replaceOnChanges),
                inputs=inputs,
                secret_paths=tuple(secret_paths),
                outputs=_unwrap(self.resources[response.urn].state, "", []),
                retain_on_delete=bool(request.retainOnDelete),
            )
        )
        return response


@contextlib.contextmanager
def _no_source_positions() -> Iterator[None]:
    """The SDK walks the Python stack at every registration to tell the engine where in the
    program the resource was declared (`_get_stack_trace`, pulumi/runtime/resource.py), for its
    display only; the mock engine shows none. At 1,000 applications that walk was a tenth of the
    plan. An empty trace gives the registration no source position, as the SDK does for a
    resource declared outside any user frame."""
    walk = runtime_resource._get_stack_trace
    runtime_resource._get_stack_trace = source_pb2.StackTrace
    try:
        yield
    finally:
        runtime_resource._get_stack_trace = walk


def _stack_outputs() -> dict[str, Any]:
    """The values `pulumi.export` gave; under mocks the root stack never registers them itself."""
    root = runtime_settings.get_root_resource()
    exported = getattr(root, "outputs", {}) or {}
    return {key: _resolved(value) for key, value in exported.items()}


def _resolved(value: Any) -> Any:
    """`value` with every Output in it replaced by what it resolves to (unknowns as the SDK's
    UNKNOWN), as `Output.from_input(value).future()` gives it, but awaiting every Output of the
    structure at once: lifting a nested dict builds an Output per level, which at 1,000
    applications cost a third of the plan (docs/performance.md)."""
    outputs: dict[int, pulumi.Output[Any]] = {}

    def collect(v: Any) -> None:
        if isinstance(v, pulumi.Output):
            outputs[id(v)] = v
        elif isinstance(v, dict):
            for item in v.values():
                collect(item)
        elif isinstance(v, list | tuple):
            for item in v:
                collect(item)

    collect(value)
    if not outputs:
        return value

    async def gather() -> list[Any]:
        return list(await asyncio.gather(*(o.future(with_unknowns=True) for o in outputs.values())))

    found = dict(zip(outputs, _sync_await(gather()), strict=True))

    def substitute(v: Any) -> Any:
        if isinstance(v, pulumi.Output):
            return found[id(v)]
        if isinstance(v, dict):
            return {k: substitute(item) for k, item in v.items()}
        if isinstance(v, list | tuple):
            return [substitute(item) for item in v]
        return v

    # An Output may resolve to a structure holding Outputs of its own.
    return _resolved(substitute(value))


def _unwrap(value: Any, path: str, secret_paths: list[str]) -> Any:
    """Replace the wire form of secrets by their value, noting where each was."""
    if isinstance(value, dict):
        if value.get(rpc._special_sig_key) == rpc._special_secret_sig:
            secret_paths.append(path or ".")
            return _unwrap(value["value"], path, [])
        return {k: _unwrap(v, f"{path}.{k}" if path else k, secret_paths) for k, v in value.items()}
    if isinstance(value, list):
        return [_unwrap(v, f"{path}[{i}]", secret_paths) for i, v in enumerate(value)]
    return value


def addons_the_stack_expects(config: Mapping[str, Any]) -> tuple[str, ...]:
    """The EKS add-ons of the cluster a stack's `config:` describes, before its first update:
    Pod Identity's agent, unless the stack installs it itself (`kiam:podIdentityAgent.manageAddon`,
    which EKS refuses on a cluster that has it)."""
    try:
        # Read as the settings read it (a stack the settings refuse stops before any look-up).
        agent = PodIdentityAgentSettings.model_validate(config.get("kiam:podIdentityAgent") or {})
    except ValidationError:
        return (pod_identity.AGENT_ADDON,)
    return () if agent.manage_addon else (pod_identity.AGENT_ADDON,)


@dataclass(frozen=True)
class MockCluster:
    """The cluster a program reads at preview (program/live_cluster.py), offline: the pods,
    namespaces and nodes given (the API server's JSON objects), none by default. The offline plan
    cannot see the cluster; a preview on the cluster reads it."""

    pods: tuple[dict[str, Any], ...] = ()
    namespaces: tuple[dict[str, Any], ...] = ()
    nodes: tuple[dict[str, Any], ...] = ()
    server: str = "https://mock-cluster.invalid"
    unreadable: str | None = None
    """Set: every read fails with this, as an API server that refuses would."""

    def items(self, path: str) -> list[dict[str, Any]]:
        if self.unreadable is not None:
            raise ApiError(403, self.unreadable)
        collections = {
            "/api/v1/pods": self.pods,
            "/api/v1/namespaces": self.namespaces,
            "/api/v1/nodes": self.nodes,
        }
        return [dict(item) for item in collections[path]]


class MockEngine:
    """Runs a Pulumi program to completion under the mocks and returns what it registered: on
    the cluster the stack describes (`addons_the_stack_expects`) unless told its add-ons, whose
    pods are `cluster`'s."""

    def __init__(
        self,
        *,
        account_id: str = "111122223333",
        region: str = "eu-west-1",
        stack: str = "test",
        config: Mapping[str, Any] | None = None,
        secret_keys: Iterable[str] = (),
        cluster_addons: Iterable[str] | None = None,
        refused_lookups: Mapping[str, str] | None = None,
        last_outputs: Mapping[str, Any] | None = None,
        last_run: Recording | None = None,
        last_resources: Mapping[str, str] | None = None,
        cluster: MockCluster | None = None,
    ) -> None:
        partition = partition_of(region)
        self.cluster = cluster or MockCluster()
        if cluster_addons is None:
            cluster_addons = addons_the_stack_expects(config or {})
        last_component_outputs = None
        if last_run is not None:
            last_outputs = last_run.stack_outputs
            last_resources = {r.urn: r.type for r in last_run.registrations}
            last_component_outputs = last_run.component_outputs
        self.mocks = KiamMocks(
            account_id=account_id,
            region=region,
            partition=partition,
            cluster_addons=cluster_addons,
            refused_lookups=refused_lookups,
            stack_name=f"{ORGANIZATION}/{PROJECT}/{stack}",
            last_outputs=last_outputs,
            last_resources=last_resources,
            last_component_outputs=last_component_outputs,
        )
        self.stack = stack
        self.config = dict(config or {})
        self.secret_keys = list(secret_keys)

    def run(self, program: Callable[[], Any]) -> Recording:
        monitor = RecordingMonitor(self.mocks)
        # A fresh root stack resource per run: runs in one process must not share parents.
        runtime_settings.ROOT.set(None)
        pulumi.runtime.set_mocks(
            self.mocks,
            project=PROJECT,
            stack=self.stack,
            preview=False,
            monitor=monitor,
            organization=ORGANIZATION,
        )
        pulumi.runtime.set_all_config(
            {k: v if isinstance(v, str) else json.dumps(v) for k, v in self.config.items()},
            self.secret_keys,
        )
        live_cluster.offline_cluster = self.cluster
        try:
            with _no_source_positions():
                pulumi.runtime.test(program)()  # type: ignore[no-untyped-call]
        finally:
            live_cluster.offline_cluster = None
        return Recording(
            registrations=list(monitor.registrations),
            stack_outputs=_stack_outputs(),
            reads=list(monitor.reads),
            invokes=list(monitor.invokes),
            component_outputs=dict(monitor.component_outputs),
        )


def run_main(
    config: Mapping[str, Any],
    *,
    stack: str,
    secret_keys: Iterable[str] = (),
    cluster_addons: Iterable[str] | None = None,
    refused_lookups: Mapping[str, str] | None = None,
    last_outputs: Mapping[str, Any] | None = None,
    last_run: Recording | None = None,
    last_resources: Mapping[str, str] | None = None,
    cluster: MockCluster | None = None,
) -> Recording:
    """Run the real `__main__.py` with a stack's `config:` map, exactly as `pulumi up` would start
    it, against a cluster running `cluster_addons` (by default those the stack expects:
    `addons_the_stack_expects`) and `cluster`'s pods (by default none), failing the look-ups `refused_lookups` names (token -> why), for
    a stack whose last update left `last_outputs`, or everything `last_run` registered and
    exported (by default nothing: a new stack)."""
    section = config.get("kiam:cluster")
    section = section if isinstance(section, dict) else {}
    engine = MockEngine(
        account_id=str(section.get("accountId", "111122223333")),
        region=str(section.get("region", "eu-west-1")),
        stack=stack,
        config=config,
        secret_keys=secret_keys,
        cluster_addons=cluster_addons,
        refused_lookups=refused_lookups,
        last_outputs=last_outputs,
        last_run=last_run,
        last_resources=last_resources,
        cluster=cluster,
    )
    return engine.run(lambda: runpy.run_path(str(MAIN), run_name="__main__"))

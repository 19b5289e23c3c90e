"""The plain arguments of the public components (`KiamKubernetes`), judged by the stack settings'
own rules: each argument is one stack setting (`ARGUMENT_SETTINGS`), so its default, what it
allows and the message that refuses it are that setting's, named by the argument instead of the
stack file's key path.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic.alias_generators import to_camel
from pydantic.fields import FieldInfo

from kiam_eks.settings.agent import AgentSettings
from kiam_eks.settings.base import model_class
from kiam_eks.settings.loader import problems_message
from kiam_eks.settings.node_group import TaintSettings
from kiam_eks.settings.server import ServerSettings
from kiam_eks.settings.stack import INITIAL_NAMESPACES, NamespaceSettings, StackSettings
from kiam_eks.settings.tls import TlsSettings

# Each plain argument of `KiamKubernetes` and the stack setting (its key path under `kiam:`)
# whose type, rule and default it has.
ARGUMENT_SETTINGS: dict[str, str] = {
    "region": "cluster.region",
    "namespace": "namespace.name",
    "create_namespace": "namespace.create",
    "server_replicas": "server.replicas",
    "server_nodes": "nodeGroup.desiredSize",
    "server_image": "server.image",
    "agent_image": "agent.image",
    "agent_host_interface": "agent.hostInterface",
    "node_taint_key": "nodeGroup.taint.key",
    "node_taint_value": "nodeGroup.taint.value",
    "node_taint_effect": "nodeGroup.taint.effect",
    "cluster_domain": "cluster.clusterDomain",
}

# kiam appends a pod's annotation to `--role-base-arn` as plain text (contracts/kiam.py
# `resolve`), so the base must be a role ARN prefix ending in `/`: `arn:<partition>:iam::
# <account>:role/` and an optional path (IAM User Guide, "IAM identifiers": a path is `/`-
# delimited printable ASCII).
ROLE_BASE_ARN = re.compile(r"arn:aws[a-z-]*:iam::\d{12}:role/([!-~]+/)?")
ROLE_ARN = re.compile(r"arn:aws[a-z-]*:iam::\d{12}:role/([!-~]+/)?[\w+=,.@-]{1,64}")


def setting_field(key_path: str) -> FieldInfo:
    """The settings field at a key path under `kiam:` (`nodeGroup.taint.key`)."""
    model: type[BaseModel] | None = StackSettings
    found: FieldInfo | None = None
    for part in key_path.split("."):
        if model is None:
            raise KeyError(key_path)
        found = next(f for n, f in model.model_fields.items() if (f.alias or n) == part)
        model = model_class(found.annotation)
    assert found is not None
    return found


def setting_default(key_path: str) -> Any:
    """The default of the setting at `key_path` (as the stack file would spell it)."""
    field = setting_field(key_path)
    default = field.get_default(call_default_factory=True)
    return default.model_dump(by_alias=True) if isinstance(default, BaseModel) else default


def argument_name(python_name: str) -> str:
    """`server_replicas (serverReplicas)`: the Python key, and the name the other languages use."""
    camel = to_camel(python_name)
    return python_name if camel == python_name else f"{python_name} ({camel})"


@dataclass(frozen=True)
class KubernetesSide:
    """The validated plain arguments of `KiamKubernetes`, as the settings models the components
    take."""

    region: str
    cluster_domain: str
    role_base_arn: str
    namespace: NamespaceSettings
    server: ServerSettings
    agent: AgentSettings
    taint: TaintSettings
    server_nodes: int
    tls: TlsSettings


class ArgumentsError(ValueError):
    """Arguments a component cannot use; the message is meant for the user as it is."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.problems = problems
        super().__init__(problems_message(source, "arguments", problems))


def _check(key_path: str, value: Any) -> tuple[Any, str | None]:
    """The value as the setting reads it (a number the engine sends as 3.0 is 3), or why not."""
    field = setting_field(key_path)
    # The field's type with its rules (`matching(...)`, bounds), as the model validates it.
    annotated: Any = (
        Annotated[field.annotation, *field.metadata] if field.metadata else field.annotation
    )
    adapter: TypeAdapter[Any] = TypeAdapter(annotated)
    try:
        return adapter.validate_python(value), None
    except ValidationError as error:
        message = str(error.errors()[0]["msg"]).removeprefix("Value error, ")
        got = "" if repr(value) in message else f"got {value!r}; "
        return value, f"{message} ({got}as kiam:{key_path})"


def kubernetes_side(source: str, args: Mapping[str, Any]) -> KubernetesSide:
    """Every plain argument checked, every problem named at once; raises `ArgumentsError`."""
    problems: list[str] = []
    values: dict[str, Any] = {}
    for argument, key_path in ARGUMENT_SETTINGS.items():
        value = args.get(argument)
        if value is None:
            if setting_field(key_path).is_required():
                problems.append(f"{argument_name(argument)}: is required")
            else:
                values[argument] = setting_default(key_path)
            continue
        values[argument], problem = _check(key_path, value)
        if problem is not None:
            problems.append(f"{argument_name(argument)}: {problem}")
    base = args.get("role_base_arn")
    if not isinstance(base, str) or not ROLE_BASE_ARN.fullmatch(base):
        problems.append(
            f"{argument_name('role_base_arn')}: must be an IAM role ARN prefix ending in `/`, "
            f"such as arn:aws:iam::111122223333:role/ (got {base!r})"
        )
    for namespace, arns in (args.get("permitted_roles") or {}).items():
        where = f"{argument_name('permitted_roles')}[{namespace!r}]"
        _, problem = _check("namespace.name", namespace)
        if problem is not None:
            problems.append(f"{where}: {problem.replace('as kiam:namespace.name', 'a namespace')}")
        for arn in arns:
            if isinstance(arn, str) and (problem := role_arn_problem(arn)) is not None:
                problems.append(f"{where}: {problem}")
    role = args.get("server_role_arn")
    # Another resource's output is checked once known (`checked_role_arn`); a string now.
    if isinstance(role, str) and (problem := role_arn_problem(role)) is not None:
        problems.append(f"{argument_name('server_role_arn')}: {problem}")
    if not problems and values["create_namespace"] and values["namespace"] in INITIAL_NAMESPACES:
        problems.append(
            f"{argument_name('create_namespace')}: must be false for namespace "
            f"{values['namespace']!r}: every cluster has it, so creating it would fail with "
            "AlreadyExists"
        )
    if not problems and values["server_nodes"] < values["server_replicas"]:
        problems.append(
            f"{argument_name('server_nodes')}: {values['server_nodes']} nodes cannot run "
            f"{argument_name('server_replicas')} {values['server_replicas']} servers: hard "
            "anti-affinity puts one server per node"
        )
    if problems:
        raise ArgumentsError(source, problems)
    return KubernetesSide(
        region=values["region"],
        cluster_domain=values["cluster_domain"],
        role_base_arn=str(base),
        namespace=NamespaceSettings(name=values["namespace"], create=values["create_namespace"]),
        server=ServerSettings(replicas=values["server_replicas"], image=values["server_image"]),
        agent=AgentSettings(
            image=values["agent_image"], host_interface=values["agent_host_interface"]
        ),
        taint=TaintSettings(
            key=values["node_taint_key"],
            value=values["node_taint_value"],
            effect=values["node_taint_effect"],
        ),
        server_nodes=values["server_nodes"],
        tls=TlsSettings(),
    )


def role_arn_problem(value: str) -> str | None:
    """Why `value` is not an IAM role ARN, or None."""
    if ROLE_ARN.fullmatch(value):
        return None
    return f"must be an IAM role ARN, such as arn:aws:iam::111122223333:role/kiam-server (got {value!r})"


def checked_role_arn(value: str, argument: str) -> str:
    """`value` if it is an IAM role ARN; otherwise raises, naming the argument (for a value known
    only once another resource is created)."""
    problem = role_arn_problem(value)
    if problem is not None:
        raise ArgumentsError("KiamKubernetes", [f"{argument_name(argument)}: {problem}"])
    return value

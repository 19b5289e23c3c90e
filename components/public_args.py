"""The arguments of the public components, judged by the stack settings' own rules: each argument
is one stack setting (`KIAM_ARGUMENTS`; `KiamKubernetes` takes the part of them its Kubernetes
side reads, `KUBERNETES_SIDE_ARGUMENTS`, under the same names), so its default, what it allows
and the message that refuses it are that setting's, named by the argument instead of the stack
file's key path.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic.alias_generators import to_camel
from pydantic.fields import FieldInfo

from kiam_eks.settings.base import model_class
from kiam_eks.settings.kubernetes_side import KubernetesSideSettings
from kiam_eks.settings.loader import describe, problems_message
from kiam_eks.settings.stack import StackSettings

# kiam appends a pod's annotation to `--role-base-arn` as plain text (contracts/kiam.py
# `resolve`), so the base must be a role ARN prefix ending in `/`: `arn:<partition>:iam::
# <account>:role/` and an optional path (IAM User Guide, "IAM identifiers": a path is `/`-
# delimited printable ASCII).
ROLE_BASE_ARN = re.compile(r"arn:aws[a-z-]*:iam::\d{12}:role/([!-~]+/)?")
ROLE_ARN = re.compile(r"arn:aws[a-z-]*:iam::\d{12}:role/([!-~]+/)?[\w+=,.@-]{1,64}")


# Each argument of `Kiam` and the stack setting it is: one key of `kiam:cluster`, or a whole
# section, a mapping spelled as in the stack file (docs/configuration.md). This table is the
# adapter both ways: `Kiam` turns its arguments into settings (`kiam_settings`), and
# `arguments_of` gives the arguments of given settings (the tests' proof that the two agree; this
# repository's program hands its validated settings to `Kiam.of_settings` as they are).
KIAM_ARGUMENTS: dict[str, str] = {
    "cluster_name": "cluster.name",
    "account_id": "cluster.accountId",
    "region": "cluster.region",
    "kubernetes_version": "cluster.kubernetesVersion",
    "cluster_domain": "cluster.clusterDomain",
    "node_group": "nodeGroup",
    "server": "server",
    "agent": "agent",
    "iam": "iam",
    "tls": "tls",
    "namespace": "namespace",
    "monitoring": "monitoring",
    "adoption": "adoption",
    "applications": "applications",
    "existing_permitted": "existingPermitted",
    "pod_identity_agent": "podIdentityAgent",
    "retire": "retire",
}
# Settings that are not arguments of `Kiam`: how this repository's program makes its own
# Kubernetes provider (a program using `Kiam` passes its provider in the resource options), and
# where its stack file lists more applications (they reach `Kiam` as `applications`).
PROGRAM_SETTINGS = ("kubeconfig", "cluster.kubernetesAuth", "applicationsFile")
# The arguments of `Kiam` that are no setting: another resource's outputs, used as they are
# (`subnet_ids` stands for `node_group.subnets`, whose ids it gives).
KIAM_INPUTS = ("oidc_issuer", "subnet_ids")
# The arguments of `KiamKubernetes` that are settings: `Kiam`'s arguments of the same names, the
# settings kiam's Kubernetes side reads (`KubernetesSideSettings`; its `node_group` holds only
# `minSize` and `taint`, as the group is made elsewhere).
KUBERNETES_SIDE_ARGUMENTS = (
    "region",
    "cluster_domain",
    "node_group",
    "server",
    "agent",
    "namespace",
)
# Its other arguments: what was made elsewhere, checked here by their own rules.
KUBERNETES_SIDE_INPUTS = (
    "node_group_name",
    "server_role_arn",
    "role_base_arn",
    "ca_certificate_pem",
    "server_certificate_pem",
    "server_private_key_pem",
    "agent_certificate_pem",
    "agent_private_key_pem",
    "permitted_roles",
)
# What the settings hold for a cluster name, or subnet ids, given as another resource's outputs:
# values the settings' rules accept, read by nothing (the cloud side uses the outputs, checked
# once known: `checked_cluster_name`, `checked_subnet_ids`); tests/test_kiam_args.py proves no
# resource receives them.
CLUSTER_NAME_FROM_OUTPUT = "cluster-name-from-an-output"
SUBNETS_FROM_OUTPUTS = ({"id": "subnet-00000000"}, {"id": "subnet-00000001"})
_ARGUMENT_OF = {key_path: argument for argument, key_path in KIAM_ARGUMENTS.items()}
_SETTING_MENTION = re.compile(r"kiam:(\w+)(?:\.(\w+))?")


def kiam_settings(source: str, args: Mapping[str, Any]) -> StackSettings:
    """`Kiam`'s arguments as the stack settings they are, every problem named at once by the
    argument; raises `ArgumentsError`. A cluster name that is not a string (another resource's
    output) stands as `CLUSTER_NAME_FROM_OUTPUT`."""
    problems = _unknown_arguments("Kiam", args, (*KIAM_ARGUMENTS, *KIAM_INPUTS))
    values = _settings_values(args, KIAM_ARGUMENTS)
    if not isinstance(values["cluster"].get("name", ""), str):
        values["cluster"]["name"] = CLUSTER_NAME_FROM_OUTPUT
    subnet_ids = args.get("subnet_ids")
    if subnet_ids is not None:
        node_group = values.get("nodeGroup")
        if isinstance(node_group, Mapping) and "subnets" in node_group:
            problems.append("subnet_ids: give the subnets here or as node_group.subnets, not both")
        elif isinstance(node_group, Mapping) or node_group is None:
            known = subnet_ids_known(subnet_ids)
            subnets = [{"id": i} for i in subnet_ids] if known else list(SUBNETS_FROM_OUTPUTS)
            values["nodeGroup"] = {**(node_group or {}), "subnets": subnets}
    try:
        settings = StackSettings.model_validate(values)
    except ValidationError as error:
        problems += [_in_argument_terms(describe(e)) for e in error.errors()]
    if problems:
        raise ArgumentsError(source, problems)
    return settings


def _unknown_arguments(component: str, args: Mapping[str, Any], known: Sequence[str]) -> list[str]:
    allowed = sorted(known)
    return [
        f"{argument}: is not an argument of {component} (allowed: {', '.join(allowed)})"
        for argument in sorted(set(args) - set(allowed))
    ]


def _settings_values(args: Mapping[str, Any], arguments: Iterable[str]) -> dict[str, Any]:
    """The given `arguments` as the stack file would hold them (each under its key path)."""
    values: dict[str, Any] = {"cluster": {}}
    for argument in arguments:
        value = args.get(argument)
        if value is None:
            continue
        section, _, key = KIAM_ARGUMENTS[argument].partition(".")
        if key:
            values[section][key] = value
        else:
            values[section] = value
    return values


def arguments_of(settings: StackSettings) -> dict[str, Any]:
    """The arguments of `Kiam` that are `settings` (all but `PROGRAM_SETTINGS`)."""
    dumped = settings.model_dump(by_alias=True)
    arguments: dict[str, Any] = {}
    for argument, key_path in KIAM_ARGUMENTS.items():
        value: Any = dumped
        for part in key_path.split("."):
            value = value[part]
        arguments[argument] = value
    return arguments


def subnet_ids_known(subnet_ids: Any) -> bool:
    """Whether `subnet_ids` (the argument) holds plain strings, checked with the other settings,
    rather than another resource's outputs, checked once known (`checked_subnet_ids`)."""
    return isinstance(subnet_ids, list) and all(isinstance(i, str) for i in subnet_ids)


def checked_cluster_name(value: str) -> str:
    """A cluster name known only once another resource is created: `value` if the setting's rule
    accepts it; otherwise raises, naming the argument."""
    _, problem = _check("cluster.name", value)
    if problem is not None:
        raise ArgumentsError("Kiam", [f"cluster_name: {_in_argument_terms(problem)}"])
    return value


def checked_subnet_ids(values: list[str]) -> list[str]:
    """Subnet ids known only once another resource is created: `values` if the setting's rule
    accepts them (two at least, each an id, none twice); otherwise raises, naming the argument.
    Their zones are not known here, so that the servers span two is not checked."""
    _, problem = _check("nodeGroup.subnets", [{"id": value} for value in values])
    problems = [] if problem is None else [f"subnet_ids: {_in_argument_terms(problem)}"]
    duplicates = sorted({value for value in values if values.count(value) > 1})
    if duplicates:
        problems.append(f"subnet_ids: lists {', '.join(duplicates)} more than once")
    if problems:
        raise ArgumentsError("Kiam", problems)
    return values


def _in_argument_terms(problem: str) -> str:
    """A settings problem with each `kiam:<key path>` it names spelled as `Kiam`'s argument
    (`kiam:nodeGroup.minSize` -> `node_group.minSize`, `kiam:cluster.name` -> `cluster_name`);
    not inside a command it quotes (`pulumi config set ... kiam:cluster.accountId`)."""

    def spelled(mention: re.Match[str]) -> str:
        section, key = mention.group(1), mention.group(2)
        if key is not None and f"{section}.{key}" in _ARGUMENT_OF:
            return _ARGUMENT_OF[f"{section}.{key}"]
        if section in _ARGUMENT_OF:
            return _ARGUMENT_OF[section] + (f".{key}" if key is not None else "")
        return mention.group(0)

    parts = problem.split("`")
    # Even parts are prose, odd ones quoted between backticks.
    return "`".join(
        _SETTING_MENTION.sub(spelled, p) if i % 2 == 0 else p for i, p in enumerate(parts)
    )


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
class KubernetesSideArguments:
    """The validated plain arguments of `KiamKubernetes`."""

    settings: KubernetesSideSettings
    """Its settings, as the stack settings hold them."""
    role_base_arn: str


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


def kubernetes_side(source: str, args: Mapping[str, Any]) -> KubernetesSideArguments:
    """Every plain argument of `KiamKubernetes` checked, every problem named at once; raises
    `ArgumentsError`."""
    problems = _unknown_arguments(
        "KiamKubernetes", args, (*KUBERNETES_SIDE_ARGUMENTS, *KUBERNETES_SIDE_INPUTS)
    )
    settings = None
    try:
        settings = KubernetesSideSettings.model_validate(
            _settings_values(args, KUBERNETES_SIDE_ARGUMENTS)
        )
    except ValidationError as error:
        problems += [
            _in_argument_terms(describe(e, root=KubernetesSideSettings)) for e in error.errors()
        ]
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
    if problems or settings is None:
        raise ArgumentsError(source, problems)
    return KubernetesSideArguments(settings=settings, role_base_arn=str(base))


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

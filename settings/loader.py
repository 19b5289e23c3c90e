"""Reading the `kiam:` namespace (from the Pulumi engine or a stack file) into validated settings.

Every failure becomes one `SettingsError` that names the stack file, each key path and what is
allowed, so a user mistake never reaches a component, and never shows a traceback.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from kiam_eks.contracts.pulumi_config import (
    CONFIG_VARIABLE,
    MAX_ARG_STRLEN,
    config_environment_bytes,
    value_text,
)
from kiam_eks.settings.base import UNDECRYPTED_SECRET, model_class
from kiam_eks.settings.stack import StackSettings

NAMESPACE = "kiam"
STACK_CONFIG_DIR = "stacks"
# Values Pulumi hands over as plain strings even when they look like JSON.
_RAW_STRING_KEYS = frozenset({"kubeconfig"})


# libyaml's parser (PyYAML's C binding, in its wheels) reads a 1,000-application file about ten
# times faster than the pure-Python one; both build the value with the same SafeConstructor and
# Resolver (PyYAML yaml/cyaml.py `CSafeLoader(CParser, SafeConstructor, Resolver)`, yaml/loader.py
# `SafeLoader(..., SafeConstructor, Resolver)`), so a document means the same either way
# (tests/test_settings.py reads every YAML file of the repository both ways). Their errors are worded differently: a document libyaml
# refuses is parsed again by the pure-Python parser, whose message the bad-stack cases pin.
_FAST_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(text: str) -> Any:
    """`yaml.safe_load(text)`, fast; raises the pure-Python parser's `YAMLError` on bad YAML."""
    try:
        return yaml.load(text, Loader=_FAST_LOADER)  # CSafeLoader or SafeLoader
    except yaml.YAMLError:
        return yaml.safe_load(text)


def problems_message(source: str, what: str, problems: list[str]) -> str:
    """`<file>: invalid <what> (N problems):` and one line per problem, as users read it."""
    noun = "problem" if len(problems) == 1 else "problems"
    lines = "\n".join(f"  - {p}" for p in problems)
    return f"{source}: invalid {what} ({len(problems)} {noun}):\n{lines}"


class SettingsError(Exception):
    """Stack settings that cannot be used; the message is meant for the user as it is."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = problems
        super().__init__(problems_message(source, "kiam settings", problems))


def stack_file_for(stack: str) -> str:
    """Where `stackConfigDir` puts a stack's settings."""
    return f"{STACK_CONFIG_DIR}/Pulumi.{stack}.yaml"


def stack_name_of(path: Path) -> str:
    """The stack a `Pulumi.<stack>.yaml` file configures (any other file: its name without suffix)."""
    name = path.name
    if name.startswith("Pulumi.") and name.endswith(".yaml"):
        return name[len("Pulumi.") : -len(".yaml")]
    return path.stem


def example_stacks(project_dir: Path) -> list[str]:
    """Every stack with a file in the project's `stackConfigDir`, sorted."""
    return sorted(stack_name_of(p) for p in (project_dir / STACK_CONFIG_DIR).glob("Pulumi.*.yaml"))


def settings_from_values(values: Mapping[str, Any], source: str) -> StackSettings:
    """Validate the `kiam:` keys (without their namespace) of one stack."""
    try:
        return StackSettings.model_validate(dict(values))
    except ValidationError as error:
        raise SettingsError(source, [describe(e) for e in error.errors()]) from None


def load_settings() -> StackSettings:
    """The running stack's settings, as the Pulumi engine (or a test's mock config) hands them
    over; an applications file is read relative to the program's working directory, which the
    language host makes the project directory."""
    import pulumi
    from pulumi.runtime import config as runtime_config

    prefix = f"{NAMESPACE}:"
    merged = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
    values = {
        key[len(prefix) :]: _parse(key[len(prefix) :], value)
        for key, value in merged.items()
        if key.startswith(prefix)
    }
    source = stack_file_for(pulumi.get_stack())
    return settings_from_values(with_applications_file(values, Path.cwd(), source), source)


APPLICATIONS_FILE = "applicationsFile"


def project_dir_of(stack_file: Path) -> Path:
    """The project a stack file belongs to: the nearest folder above it holding `Pulumi.yaml`
    (its own folder when none does)."""
    for folder in stack_file.resolve().parents:
        if (folder / "Pulumi.yaml").exists():
            return folder
    return stack_file.resolve().parent


def with_applications_file(
    values: Mapping[str, Any], project_dir: Path, source: str
) -> dict[str, Any]:
    """`values` with the applications of `kiam:applicationsFile` (relative to `project_dir`)
    joined to `kiam:applications`; the file's path, reading and shape are checked here, its
    applications with the rest."""
    merged = dict(values)
    name = merged.get(APPLICATIONS_FILE)
    if name is None:
        return merged
    key = f"{NAMESPACE}:{APPLICATIONS_FILE}"
    if not isinstance(name, str) or not name:
        raise SettingsError(source, [f"{key}: must be a file's path (got {name!r})"])
    path = project_dir / name
    try:
        document = load_yaml(path.read_text())
    except OSError as error:
        raise SettingsError(source, [f"{key}: cannot read {path}: {error.strerror}"]) from None
    except yaml.YAMLError as error:
        raise SettingsError(
            source, [f"{key}: {path} is not valid YAML: {_yaml_problem(error)}"]
        ) from None
    listed = document.get("applications") if isinstance(document, dict) else None
    if not isinstance(listed, dict) or set(document) != {"applications"}:
        raise SettingsError(
            source,
            [
                f"{key}: {path} must be a mapping with one key, `applications:`, a mapping of applications"
            ],
        )
    inline = merged.get("applications") or {}
    if not isinstance(inline, dict):
        return merged  # the model names what is wrong with kiam:applications
    both = sorted(set(inline) & set(listed))
    if both:
        raise SettingsError(
            source,
            [
                f"{key}: {path} and kiam:applications both name {', '.join(str(b) for b in both)}: "
                "each application in one place"
            ],
        )
    merged["applications"] = {**inline, **listed}
    return merged


def read_stack_file(path: Path) -> dict[str, Any]:
    """The `config:` map of a stack file; `secure:` values become a visible placeholder."""
    source = str(path)
    try:
        document = load_yaml(path.read_text())
    except FileNotFoundError:
        raise SettingsError(source, ["the stack file does not exist"]) from None
    except yaml.YAMLError as error:
        raise SettingsError(source, [f"not valid YAML: {_yaml_problem(error)}"]) from None
    if document is None:
        raise SettingsError(source, ["the stack file is empty: it needs a `config:` mapping"])
    if not isinstance(document, dict):
        raise SettingsError(source, ["a stack file must be a mapping with a `config:` key"])
    config = document.get("config")
    if not isinstance(config, dict):
        raise SettingsError(source, ["`config:` must be a mapping of settings"])
    return {str(k): _placeholder_secrets(v) for k, v in config.items()}


def settings_from_stack_file(path: Path) -> tuple[StackSettings, dict[str, Any]]:
    """Validated settings of a stack file, and its whole `config:` map (for the mock engine)."""
    config = read_stack_file(path)
    _check_config_size(config, str(path))
    prefix = f"{NAMESPACE}:"
    values = {k[len(prefix) :]: v for k, v in config.items() if k.startswith(prefix)}
    values = with_applications_file(values, project_dir_of(path), str(path))
    return settings_from_values(values, str(path)), config


def _check_config_size(config: Mapping[str, Any], source: str) -> None:
    """Refuse a configuration Pulumi could not hand to the program (contracts/pulumi_config.py):
    the `up` would fail before the program starts, with nothing of this stack's to say why."""
    size = config_environment_bytes(config)
    if size <= MAX_ARG_STRLEN:
        return
    largest = max(config, key=lambda k: len(value_text(config[k])))
    raise SettingsError(
        source,
        [
            f"the configuration is {size:,} bytes as Pulumi hands it to the program (the "
            f"environment variable {CONFIG_VARIABLE}), {largest} {len(value_text(config[largest])):,} "
            f"of them; Linux refuses one environment string over {MAX_ARG_STRLEN:,} bytes, so "
            '`pulumi preview` and `pulumi up` would fail before the program starts ("argument '
            'list too long"): make it smaller by '
            f"{size - MAX_ARG_STRLEN:,} bytes, for example by giving roles the stack creates "
            "managedPolicyArns instead of inlinePolicies"
        ],
    )


def _parse(key: str, value: Any) -> Any:
    if key in _RAW_STRING_KEYS or not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


def _placeholder_secrets(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"secure"}:
            return UNDECRYPTED_SECRET
        return {k: _placeholder_secrets(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_placeholder_secrets(v) for v in value]
    return value


def describe(
    error: Any,
    key_path: Callable[[tuple[Any, ...]], str] | None = None,
    root: type[BaseModel] | None = None,
) -> str:
    """One validation error as a problem line: where (`kiam:nodeGroup.subnets[0].id`, or what
    `key_path` makes of the location) and what is allowed (the keys of `root`, by default the
    stack settings, at that place)."""
    loc = tuple(error["loc"])
    path = (key_path or _key_path)(loc)
    kind = error["type"]
    if kind == "missing":
        return f"{path}: is required"
    if kind == "extra_forbidden":
        allowed = ", ".join(_allowed_keys(loc[:-1], root or StackSettings))
        return f"{path}: is not a known setting (allowed here: {allowed})"
    message = str(error["msg"]).removeprefix("Value error, ")
    if kind.startswith(
        ("greater", "less", "literal", "enum", "int_", "bool_", "string_type", "list_type")
    ):
        message = f"{message} (got {json.dumps(error.get('input'), default=str)})"
    if kind in ("model_type", "dict_type") or (kind.endswith("_type") and "got" not in message):
        message = f"{message} (got {type(error.get('input')).__name__})"
    return f"{path}: {message}" if loc else message


def _key_path(loc: tuple[Any, ...]) -> str:
    if loc and loc[-1] == "[key]":
        loc = loc[:-2]  # a map key that is itself invalid: name the map; the message quotes the key
    if not loc:
        return f"{NAMESPACE}:"
    text = f"{NAMESPACE}:{loc[0]}"
    for part in loc[1:]:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text


def _allowed_keys(loc: tuple[Any, ...], root: type[BaseModel]) -> list[str]:
    model: type[BaseModel] | None = root
    for part in loc:
        if model is None or isinstance(part, int):
            continue
        field = next(
            (f for n, f in model.model_fields.items() if f.alias == part or n == part), None
        )
        model = model_class(field.annotation) if field else None
    if model is None:
        return []
    return sorted(f.alias or n for n, f in model.model_fields.items())


def _yaml_problem(error: yaml.YAMLError) -> str:
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or " ".join(str(error).split())
    if mark is None:
        return str(problem)
    return f"{problem} at line {mark.line + 1}, column {mark.column + 1}"

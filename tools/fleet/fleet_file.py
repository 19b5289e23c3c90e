"""`fleet.yaml`: the waves a change rolls out in, and where each stack runs. Validated by pydantic;
every mistake becomes one `FleetFileError` naming the file, the key path and what is allowed."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.alias_generators import to_camel

from kiam_eks.settings.base import duration_seconds, is_duration, matching
from kiam_eks.settings.loader import problems_message

DEFAULT_FLEET_FILE = Path("fleet.yaml")
DEFAULT_STATE_FILE = Path(".fleet/rollout-state.json")


class FleetFileError(Exception):
    """A fleet file that cannot be used; the message is meant for the user as it is."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = problems
        super().__init__(problems_message(source, "fleet file", problems))


def seconds_of(value: str) -> int:
    """Seconds in a duration such as `90s`, `5m`, `1h30m` (`0s`: none)."""
    if not is_duration(value):
        raise ValueError(f"{value!r} is not a duration: use whole numbers with h, m and s, e.g. 5m")
    return duration_seconds(value)


def _check_duration(value: str) -> str:
    seconds_of(value)
    return value


Duration = Annotated[str, AfterValidator(_check_duration)]
_NAME = r"[a-z0-9]([a-z0-9-]*[a-z0-9])?"
# Pulumi stack names: letters, digits, `-`, `_`, `.`; a pattern adds fnmatch's `*`, `?`, `[...]`.
_STACK_PATTERN = r"[A-Za-z0-9_.*?\[\]!-]+"


class _Model(BaseModel):
    model_config = ConfigDict(
        frozen=True, extra="forbid", alias_generator=to_camel, populate_by_name=True
    )


class Wave(_Model):
    """One step of a rollout: its stacks, how many at once, and how long each soaks."""

    name: Annotated[str, matching(_NAME, "a lower-case name of letters, digits and dashes")]
    stacks: list[Annotated[str, matching(_STACK_PATTERN, "a stack name or an fnmatch pattern")]] = (
        Field(min_length=1)
    )
    parallel: int = Field(default=1, ge=1, le=16)
    soak: Duration = "0s"

    @property
    def soak_seconds(self) -> int:
        return seconds_of(self.soak)


class StackTarget(_Model):
    """Where one stack runs, when not the project's own defaults (tests, other program dirs)."""

    work_dir: Path | None = None
    """The Pulumi project directory holding this stack (default: the fleet file's `project`)."""
    env: dict[str, str] = Field(default_factory=dict)
    """Environment for the Pulumi CLI and the program (backend URL, passphrase...)."""
    kubeconfig: Path | None = None
    """The kubeconfig the health gate reads the cluster with (default: the stack's own)."""
    stack_file: Path | None = None
    """The stack's settings file (default: `<workDir>/<stackConfigDir>/Pulumi.<stack>.yaml`)."""


class GateSettings(_Model):
    """How long a health gate waits for a cluster to become healthy after `up`."""

    timeout: Duration = "10m"
    poll: Duration = "2s"

    @property
    def timeout_seconds(self) -> int:
        return seconds_of(self.timeout)

    @property
    def poll_seconds(self) -> int:
        return max(1, seconds_of(self.poll))


class AdoptionRollout(_Model):
    """How `up --adoption-phase` rolls a phase across the fleet: `fleet` refuses to start unless
    every stack is at the previous phase (or this one); `wave` checks each wave when it comes."""

    gate: Literal["fleet", "wave"] = "fleet"


class FleetFile(_Model):
    project: Path = Path()
    """The Pulumi project directory (Pulumi.yaml), relative to the fleet file."""
    policy_pack: Path | None = Path("policy")
    """The policy pack every preview and up runs with (relative to the fleet file); null: none."""
    pulumi_root: Path | None = None
    """A Pulumi CLI installation to use (its `bin/pulumi`); default: `pulumi` on PATH."""
    state_file: Path = DEFAULT_STATE_FILE
    stacks: dict[str, StackTarget] = Field(default_factory=dict)
    waves: list[Wave] = Field(min_length=1)
    gate: GateSettings = GateSettings()
    adoption: AdoptionRollout = AdoptionRollout()

    @model_validator(mode="after")
    def _unique_wave_names(self) -> FleetFile:
        names = [w.name for w in self.waves]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"waves: names must be unique ({', '.join(repeated)} repeated)")
        return self


def load_fleet_file(path: Path) -> FleetFile:
    """The fleet file at `path`, with its relative paths resolved against its folder."""
    source = str(path)
    try:
        document = yaml.safe_load(path.read_text())
    except OSError as error:
        raise FleetFileError(source, [f"cannot be read ({error.strerror})"]) from None
    except yaml.YAMLError as error:
        raise FleetFileError(source, [f"is not YAML: {' '.join(str(error).split())}"]) from None
    if not isinstance(document, dict):
        raise FleetFileError(source, [f"must be a mapping (got {type(document).__name__})"])
    try:
        fleet = FleetFile.model_validate(document)
    except ValidationError as error:
        raise FleetFileError(source, [_describe(e) for e in error.errors()]) from None
    return _resolved(fleet, path.parent)


def _resolved(fleet: FleetFile, base: Path) -> FleetFile:
    def at(p: Path | None) -> Path | None:
        return None if p is None else (p if p.is_absolute() else base / p)

    return fleet.model_copy(
        update={
            "project": at(fleet.project),
            "policy_pack": at(fleet.policy_pack),
            "pulumi_root": at(fleet.pulumi_root),
            "state_file": at(fleet.state_file),
            "stacks": {
                name: t.model_copy(
                    update={
                        "work_dir": at(t.work_dir),
                        "kubeconfig": at(t.kubeconfig),
                        "stack_file": at(t.stack_file),
                    }
                )
                for name, t in fleet.stacks.items()
            },
        }
    )


def _describe(error: Any) -> str:
    loc = tuple(error["loc"])
    path = _key_path(loc)
    kind = error["type"]
    if kind == "missing":
        return f"{path}: is required"
    if kind == "extra_forbidden":
        allowed = ", ".join(_allowed_keys(loc[:-1]))
        return f"{path}: is not a known key (allowed here: {allowed})"
    message = str(error["msg"]).removeprefix("Value error, ")
    if kind.startswith(("greater", "less", "too_short", "int_", "literal")):
        message = f"{message} (got {error.get('input')!r})"
    return f"{path}: {message}" if loc else message


def _key_path(loc: tuple[Any, ...]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"


def _allowed_keys(loc: tuple[Any, ...]) -> list[str]:
    model: type[BaseModel] = FleetFile
    for part in loc:
        field = next((f for n, f in model.model_fields.items() if part in (f.alias, n)), None)
        if field is None:
            continue  # a list index or a map key (a stack name): the same model goes on
        model = _model_in(field.annotation) or model
    return sorted(f.alias or n for n, f in model.model_fields.items())


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _model_in(arg)
        if found is not None:
            return found
    return None

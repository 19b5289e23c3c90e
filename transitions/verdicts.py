"""The words of the change judge: what a change of a setting is (`Kind`), one change judged
(`Verdict`), a row of the table (`Row`) and the refusal that stops a plan (`RefusedChangeError`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from kiam_eks.settings.loader import SettingsError
from kiam_eks.settings.stack import StackSettings
from kiam_eks.transitions.installed import Installed


class Kind(StrEnum):
    """What a change of a setting is on a running cluster."""

    SAFE = "safe"
    SEQUENCED = "sequenced"
    REFUSED = "refused"


@dataclass(frozen=True)
class Verdict:
    """One change judged: the exact key path, its class, and what happens (for a refusal: the
    running value, why, and the safe sequence)."""

    setting: str
    kind: Kind
    message: str

    def __str__(self) -> str:
        return f"{self.setting}: {self.message}"


Judge = Callable[[Installed, StackSettings], list[Verdict]]


@dataclass(frozen=True)
class Row:
    """One setting (or every key below a prefix ending in `.*`) and what changing it does."""

    setting: str
    kinds: tuple[Kind, ...]
    what: str
    """What a change does on a running cluster, for docs/transitions.md."""
    judge: Judge | None = None

    def covers(self, key: str) -> bool:
        if self.setting.endswith(".*"):
            return key.startswith(self.setting[:-1])
        return key == self.setting or key.startswith((self.setting + ".", self.setting + "["))


class RefusedChangeError(SettingsError):
    """A change no order of steps can apply without taking credentials away."""

    def __init__(self, source: str, problems: list[str]) -> None:
        super().__init__(source, problems)
        noun = "problem" if len(problems) == 1 else "problems"
        lines = "\n".join(f"  - {p}" for p in problems)
        self.args = (
            f"{source}: refused: this change from what the stack's last update installed would "
            f"take credentials away ({len(problems)} {noun}):\n{lines}",
        )

    def __str__(self) -> str:
        return str(self.args[0])


def refused(setting: str, message: str) -> Verdict:
    return Verdict(setting, Kind.REFUSED, message)


def sequenced(setting: str, message: str) -> Verdict:
    return Verdict(setting, Kind.SEQUENCED, message)


def safe(setting: str, message: str) -> Verdict:
    return Verdict(setting, Kind.SAFE, message)


def changed_settings(verdicts: Sequence[Verdict], kind: Kind) -> list[str]:
    """The settings whose change is of `kind`, in order."""
    return [v.setting for v in verdicts if v.kind is kind]

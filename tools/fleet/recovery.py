"""The recovery of interrupted updates (tools/interrupted/) on the fleet's engine: before each
stack's `up`, its pending operations are resolved, and an `up` refused by a dead lock removes the
lock and runs once more."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kiam_eks.program.kube_api import KubeApi
from tools.fleet.engine import Engine, OnEvent
from tools.interrupted.eks_node_groups import EksNodeGroups, tracked_node_groups
from tools.interrupted.kubernetes_objects import KubernetesObjects
from tools.interrupted.locks import Lock
from tools.interrupted.lookup import lookup_for
from tools.interrupted.recover import recover, unlocked

RESUME = "`python -m tools.fleet up --resume`"


@dataclass(frozen=True)
class OneStack:
    """The recovery's commands (tools.interrupted.recover.StackCommands) on one fleet stack."""

    engine: Engine
    stack: str

    def export(self) -> dict[str, Any]:
        return self.engine.export(self.stack)

    def import_state(self, document: dict[str, Any]) -> None:
        self.engine.import_state(self.stack, document)

    def refresh(self) -> None:
        self.engine.refresh(self.stack)

    def release_locks(self) -> None:
        self.engine.release_locks(self.stack)

    def locks(self) -> list[Lock] | None:
        return self.engine.locks(self.stack)


def recover_stack(
    engine: Engine,
    api: Callable[[str], KubeApi],
    stack: str,
    region: str,
    adopted: dict[str, str],
    progress: Callable[[str], None],
) -> None:
    """Resolve what an interrupted update of `stack` left, reading its cluster through `api` and
    its node groups in `region`; `adopted` are a person's `--adopt URN=ID`."""
    node_groups = EksNodeGroups(region, lambda: tracked_node_groups(engine.export(stack)))
    recover(
        stack,
        OneStack(engine, stack),
        lookup_for(lambda op: KubernetesObjects(api(stack)).find(op), node_groups.find, adopted),
        progress,
        then=RESUME,
    )


def up_unlocked(
    engine: Engine, stack: str, on_event: OnEvent, progress: Callable[[str], None]
) -> None:
    """`engine.up`, once more after removing the stack's locks when every one is dead."""
    unlocked(
        stack,
        lambda: engine.up(stack, on_event),
        OneStack(engine, stack),
        progress,
        then=RESUME,
    )

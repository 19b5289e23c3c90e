"""Objects a running kiam install may already have under this program's names, while the stack
takes it over (migration phases `servers` and `takeover`, docs/migration.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from contracts.labels import PATCH_FORCE_ANNOTATION


@dataclass(frozen=True)
class TakenOver:
    """How an object a running install may already have under this program's name is handled."""

    metadata: dict[str, Any]
    """Metadata to merge: the force annotation while taking over, nothing otherwise."""
    retain: bool
    """Kept on delete while taking over."""


def taking_over_options(taking_over: bool) -> TakenOver:
    """While taking over: applied with force (without it the API server refuses every field whose
    value differs from the one the old installer's field manager set, e.g. the Service's
    selector, or Helm's `app.kubernetes.io/managed-by` label) and kept on delete (a rollback
    leaves the running install what it had). Otherwise neither: a clash with an object of the
    same name fails loudly and a destroy removes what the stack made."""
    if not taking_over:
        return TakenOver(metadata={}, retain=False)
    return TakenOver(metadata={"annotations": {PATCH_FORCE_ANNOTATION: "true"}}, retain=True)

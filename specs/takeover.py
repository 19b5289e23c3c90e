"""How an object a running kiam install may already have under this program's name is rendered,
as `StackSettings.adoption_state` decides it for that object (docs/migration.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kiam_eks.contracts.labels import PATCH_FORCE_ANNOTATION
from kiam_eks.settings.adoption import ObjectTakeover


@dataclass(frozen=True)
class TakenOver:
    """What the components write for one such object."""

    metadata: dict[str, Any]
    """Metadata to merge: the force annotation when the object is forced, nothing otherwise."""
    retain: bool
    """`retainOnDelete`."""


def taking_over_options(takeover: ObjectTakeover) -> TakenOver:
    """The force annotation (pulumi-kubernetes applies an object carrying it with force) and the
    resource option that keep what `takeover` says."""
    metadata = {"annotations": {PATCH_FORCE_ANNOTATION: "true"}} if takeover.forced else {}
    return TakenOver(metadata=metadata, retain=takeover.kept_on_delete)

"""kiam on EKS as Pulumi components: kiam-server as a Deployment on a dedicated, tainted managed
node group, the agents on every other node, and the way out of kiam.

The subpackages are the repository's top-level folders (pyproject.toml, `package-dir`):
`kiam_eks.components` (the components), `kiam_eks.settings` (the stack settings' models),
`kiam_eks.contracts` (the facts of AWS, EKS, Kubernetes and kiam they rely on, each with its
source), `kiam_eks.specs`, `kiam_eks.transitions` (the change judge: every change from what the
last update installed, safe, sequenced or refused), `kiam_eks.invariants` (the guarantees) and
`kiam_eks.program` (this repository's program, the package's first user).

The names below load on first use: the policy pack imports `kiam_eks.invariants` in an
environment without the cloud SDKs the components need.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kiam_eks.components.kiam import Kiam, KiamArgs
    from kiam_eks.components.kiam_kubernetes import KiamKubernetes, KiamKubernetesArgs
    from kiam_eks.components.public_args import ArgumentsError

__all__ = ["ArgumentsError", "Kiam", "KiamArgs", "KiamKubernetes", "KiamKubernetesArgs"]

# Each public name and the module that defines it.
_PUBLIC = {
    "ArgumentsError": "kiam_eks.components.public_args",
    "Kiam": "kiam_eks.components.kiam",
    "KiamArgs": "kiam_eks.components.kiam",
    "KiamKubernetes": "kiam_eks.components.kiam_kubernetes",
    "KiamKubernetesArgs": "kiam_eks.components.kiam_kubernetes",
}


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'kiam_eks' has no attribute {name!r}")

"""The harness's client of a control plane: the API client the tools use (`program/kube_api.py`),
plus `kubectl` for everything a user would type."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kiam_eks.program.kube_api import ApiError, KubeApi, is_ready, selector

__all__ = ["ApiError", "Kube", "is_ready", "selector"]


@dataclass
class Kube(KubeApi):
    """One control plane's API, and `kubectl` against it."""

    kubectl_binary: Path

    def kubectl(
        self, *args: str, check: bool = True, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """`kubectl` as a user runs it against this cluster."""
        done = subprocess.run(
            [str(self.kubectl_binary), "--kubeconfig", str(self.kubeconfig), *args],
            capture_output=True,
            text=True,
            input=stdin,
            timeout=300,
        )
        if check and done.returncode != 0:
            raise RuntimeError(
                f"kubectl {' '.join(args)} failed ({done.returncode}): {done.stderr}"
            )
        return done

    def apply(self, objects: list[dict[str, Any]]) -> None:
        """Create or update objects as `kubectl apply` does (the way a running install was made)."""
        self.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(objects))

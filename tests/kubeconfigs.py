"""Kubeconfig documents for the tests: one cluster, one user, one current context."""

from __future__ import annotations

from typing import Any

SERVER = "https://127.0.0.1:6443"


def kubeconfig_document(user: dict[str, Any], **cluster: Any) -> dict[str, Any]:
    """A kubeconfig whose current context reaches `SERVER` (or `cluster`'s `server`, with its
    other fields) as `user`."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "c",
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
        "clusters": [{"name": "k", "cluster": {"server": SERVER, **cluster}}],
        "users": [{"name": "u", "user": user}],
    }

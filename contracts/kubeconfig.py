"""A kubeconfig's current context, as Kubernetes' clients read it (client-go
`tools/clientcmd/api/v1` `Config`: `current-context` names an entry of `contexts`, whose
`context` names an entry of `clusters` (`server`, `certificate-authority-data` or
`certificate-authority`) and one of `users`). One reading for the program's cluster check and the
tools that talk to a cluster."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast


class KubeconfigError(ValueError):
    """A kubeconfig without a usable current context; the message says what is missing."""


@dataclass(frozen=True)
class CurrentContext:
    """The entries the current context uses, as they stand in the document (an entry's `cluster`
    or `user` mapping may be replaced in place)."""

    name: str
    cluster_entry: dict[str, Any]
    user_entry: dict[str, Any] | None
    """None where the context names no user (the cluster check needs none)."""

    @property
    def cluster(self) -> dict[str, Any]:
        value: dict[str, Any] = self.cluster_entry["cluster"]
        return value

    @property
    def user(self) -> dict[str, Any]:
        if self.user_entry is None:
            raise KubeconfigError(f"its context {self.name} names no user")
        value: dict[str, Any] = self.user_entry.get("user") or {}
        return value


def current_context(document: Any) -> CurrentContext:
    """The current context of a parsed kubeconfig; raises `KubeconfigError` naming what is missing."""
    if not isinstance(document, Mapping):
        raise KubeconfigError("it is not a kubeconfig mapping")
    name = document.get("current-context")
    if not isinstance(name, str) or not name:
        raise KubeconfigError("it sets no current-context")
    context = _entry(document, "contexts", name, "context")["context"]
    cluster_name = context.get("cluster")
    if not isinstance(cluster_name, str):
        raise KubeconfigError(f"its context {name} names no cluster")
    user_name = context.get("user")
    return CurrentContext(
        name=name,
        cluster_entry=_entry(document, "clusters", cluster_name, "cluster"),
        user_entry=_entry(document, "users", user_name, "user")
        if isinstance(user_name, str)
        else None,
    )


def _entry(document: Mapping[str, Any], section: str, name: str, field: str) -> dict[str, Any]:
    for entry in document.get(section) or []:
        named = isinstance(entry, dict) and entry.get("name") == name
        # A user may carry no credentials (`user: {}` or none): the others must say something.
        if named and (field == "user" or isinstance(entry.get(field), dict)):
            return cast(dict[str, Any], entry)
    raise KubeconfigError(f"its {section} have no {name}")

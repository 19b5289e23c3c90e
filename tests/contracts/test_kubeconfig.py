"""A kubeconfig's current context as client-go's clientcmd reads it (contracts/kubeconfig.py)."""

from __future__ import annotations

from typing import Any

import pytest

from kiam_eks.contracts.kubeconfig import KubeconfigError, current_context


def document(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "current-context": "ops",
        "contexts": [
            {"name": "dev", "context": {"cluster": "dev", "user": "dev"}},
            {"name": "ops", "context": {"cluster": "eks", "user": "admin"}},
        ],
        "clusters": [
            {"name": "dev", "cluster": {"server": "https://dev"}},
            {
                "name": "eks",
                "cluster": {"server": "https://eks", "certificate-authority-data": "Q0E="},
            },
        ],
        "users": [
            {"name": "dev", "user": {"token": "d"}},
            {"name": "admin", "user": {"token": "a"}},
        ],
    }
    return base | changes


def test_the_current_context_names_its_cluster_and_user() -> None:
    config = document()
    current = current_context(config)
    assert current.name == "ops"
    assert current.cluster == {"server": "https://eks", "certificate-authority-data": "Q0E="}
    assert current.user == {"token": "a"}
    # The entries themselves: a tool replacing the user's credentials writes into the document.
    assert current.user_entry is config["users"][1]
    assert current.cluster_entry is config["clusters"][1]


def test_a_user_without_credentials_reads_as_none_given() -> None:
    current = current_context(document(users=[{"name": "admin"}]))
    assert current.user == {}


@pytest.mark.parametrize(
    ("changes", "why"),
    [
        ({"current-context": ""}, "it sets no current-context"),
        ({"current-context": "prod"}, "its contexts have no prod"),
        ({"clusters": []}, "its clusters have no eks"),
        (
            {"contexts": [{"name": "ops", "context": {"user": "admin"}}]},
            "its context ops names no cluster",
        ),
    ],
)
def test_what_a_kubeconfig_lacks_is_named(changes: dict[str, Any], why: str) -> None:
    with pytest.raises(KubeconfigError) as caught:
        current_context(document(**changes))
    assert str(caught.value) == why


def test_a_context_without_a_user_has_no_user_to_read() -> None:
    current = current_context(document(contexts=[{"name": "ops", "context": {"cluster": "eks"}}]))
    assert current.cluster["server"] == "https://eks"
    with pytest.raises(KubeconfigError, match="its context ops names no user"):
        _ = current.user


def test_not_a_mapping() -> None:
    with pytest.raises(KubeconfigError, match="it is not a kubeconfig mapping"):
        current_context("apiVersion")

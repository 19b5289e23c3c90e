"""`kiam:kubeconfig` must reach the EKS cluster the stack names (program/cluster_identity.py):
checked against EKS's certificate authority before anything but the AWS provider is registered."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from kiam_eks.program.cluster_identity import same_authority
from tests.conftest import base_config, run_program
from tools.mock_engine import mock_cluster_authority, mock_cluster_endpoint, run_main

ENDPOINT = mock_cluster_endpoint("test", "eu-west-1")


def kubeconfig(
    *, server: str = ENDPOINT, ca_data: str | None = None, current: str | None = "ops"
) -> str:
    """A kubeconfig whose context `ops` uses cluster `eks` at `server`, trusting `ca_data`."""
    cluster: dict[str, Any] = {"server": server}
    if ca_data is not None:
        cluster["certificate-authority-data"] = ca_data
    document: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "eks", "cluster": cluster}],
        "contexts": [{"name": "ops", "context": {"cluster": "eks", "user": "admin"}}],
        "users": [{"name": "admin", "user": {"token": "t"}}],
    }
    if current is not None:
        document["current-context"] = current
    return yaml.safe_dump(document)


def refusal(text: str, registered_types: list[str]) -> str:
    with pytest.raises(pulumi.RunError) as caught:
        run_program(base_config() | {"kiam:kubeconfig": text})
    # Nothing but the AWS provider the look-up went through.
    assert registered_types == ["pulumi:pulumi:Stack", "pulumi:providers:aws"]
    return str(caught.value)


def test_a_kubeconfig_of_the_named_cluster_is_used() -> None:
    text = kubeconfig(ca_data=mock_cluster_authority("test"))
    k8s = run_program(base_config() | {"kiam:kubeconfig": text}).one("pulumi:providers:kubernetes")
    assert k8s.inputs["kubeconfig"] == text
    assert k8s.secret_paths == ("kubeconfig",)


def test_a_kubeconfig_file_is_read_as_the_provider_reads_it(tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_text(kubeconfig(ca_data=mock_cluster_authority("test")))
    run = run_program(base_config() | {"kiam:kubeconfig": str(path)})
    assert run.one("pulumi:providers:kubernetes").inputs["kubeconfig"] == str(path)


def test_a_kubeconfig_of_another_cluster_stops_the_plan(registered_types: list[str]) -> None:
    text = kubeconfig(server="https://other.example", ca_data=mock_cluster_authority("staging"))
    assert refusal(text, registered_types) == (
        "kiam:kubeconfig: its current context ops reaches https://other.example, whose "
        "certificate authority is not EKS cluster test's (at "
        f"{ENDPOINT}): this update's changes and deletions would run against another cluster. "
        "Point its current context at EKS cluster test (aws eks update-kubeconfig --name test "
        "--region eu-west-1), or leave kiam:kubeconfig unset to have the program build it from EKS"
    )


def test_without_authority_data_the_server_must_be_the_clusters_endpoint(
    registered_types: list[str],
) -> None:
    run_program(base_config() | {"kiam:kubeconfig": kubeconfig()})
    registered_types.clear()
    message = refusal(kubeconfig(server="https://127.0.0.1:6443"), registered_types)
    assert message.startswith(
        "kiam:kubeconfig: its current context ops reaches https://127.0.0.1:6443 with no "
        "certificate-authority-data, so which cluster answers cannot be told from EKS cluster "
        f"test's certificate authority, and it is not that cluster's endpoint ({ENDPOINT})."
    )


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (kubeconfig(current=None), "it sets no current-context"),
        (kubeconfig(current="prod"), "its contexts have no prod"),
        ("/nonexistent/kubeconfig", "it is neither a kubeconfig nor a readable file"),
    ],
)
def test_a_kubeconfig_that_cannot_be_read_stops_the_plan(
    text: str, why: str, registered_types: list[str]
) -> None:
    message = refusal(text, registered_types)
    assert message.startswith(f"kiam:kubeconfig: cannot tell which cluster it reaches: {why}")
    assert message.endswith(
        "Give a kubeconfig whose current context is EKS cluster test, or leave kiam:kubeconfig unset"
    )


def test_authorities_are_compared_as_certificates_not_as_text() -> None:
    data = mock_cluster_authority("test")
    wrapped = "\n".join(data[i : i + 20] for i in range(0, len(data), 20))
    assert same_authority(wrapped, data)
    assert not same_authority(mock_cluster_authority("staging"), data)
    assert not same_authority("not base64!", data)


def test_a_cluster_lookup_that_fails_stops_the_plan(registered_types: list[str]) -> None:
    refusal = (
        "reading EKS Cluster (test): operation error EKS: DescribeCluster, "
        "AccessDeniedException: not authorized to perform: eks:DescribeCluster"
    )
    config = base_config() | {"kiam:kubeconfig": kubeconfig(ca_data=mock_cluster_authority("test"))}
    with pytest.raises(pulumi.RunError) as caught:
        run_main(config, stack="test", refused_lookups={"aws:eks/getCluster:getCluster": refusal})
    assert str(caught.value) == (
        "kiam:kubeconfig: cannot check that it reaches EKS cluster test, whose look-up failed: "
        f"invoke of aws:eks/getCluster:getCluster failed: {refusal} ()"
    )
    assert registered_types == ["pulumi:pulumi:Stack", "pulumi:providers:aws"]

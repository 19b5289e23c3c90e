"""The e2e toolchain's pins agree with each other: every wrapper module requires exactly the
version `versions.env` names, and the e2e's Kubernetes SDK is the provider release it builds."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

TOOLCHAIN = Path(__file__).resolve().parent.parent / "e2e" / "toolchain"


def _versions() -> dict[str, str]:
    pairs = (line.split("=", 1) for line in (TOOLCHAIN / "versions.env").read_text().splitlines())
    return {k.strip(): v.strip() for k, *rest in pairs for v in rest if not k.startswith("#")}


@pytest.mark.parametrize(
    ("component", "module", "key"),
    [
        ("pulumi", "github.com/pulumi/pulumi/pkg/v3", "PULUMI_VERSION"),
        ("pulumi", "github.com/pulumi/pulumi/sdk/v3", "PULUMI_VERSION"),
        ("language-python", "github.com/pulumi/pulumi/sdk/v3", "PULUMI_LANGUAGE_HOST_SDK_VERSION"),
        (
            "kubernetes-provider",
            "github.com/pulumi/pulumi-kubernetes/provider/v4",
            "KUBERNETES_PROVIDER_MODULE_VERSION",
        ),
        ("kubernetes", "k8s.io/kubernetes", "KUBERNETES_VERSION"),
        ("etcd", "go.etcd.io/etcd/server/v3", "ETCD_VERSION"),
        ("kwok", "sigs.k8s.io/kwok", "KWOK_VERSION"),
        ("promtool", "github.com/prometheus/prometheus", "PROMETHEUS_MODULE_VERSION"),
    ],
)
def test_each_wrapper_requires_the_pinned_version(component: str, module: str, key: str) -> None:
    go_mod = (TOOLCHAIN / component / "go.mod").read_text()
    required = re.findall(rf"^\s*(?:require\s+)?{re.escape(module)} (\S+)", go_mod, re.MULTILINE)
    assert required == [_versions()[key]]
    assert (TOOLCHAIN / component / "go.sum").stat().st_size > 0


def test_kubernetes_staging_modules_are_pinned_to_the_matching_release() -> None:
    go_mod = (TOOLCHAIN / "kubernetes" / "go.mod").read_text()
    staging = "v0" + _versions()["KUBERNETES_VERSION"].removeprefix("v1")
    replaces = re.findall(r"^replace (k8s\.io/\S+) => (\S+) (\S+)$", go_mod, re.MULTILINE)
    assert len(replaces) >= 30
    assert {(new, version) for old, new, version in replaces if old == new} == {
        (old, staging) for old, _, _ in replaces
    }


def test_the_e2e_sdk_is_the_provider_release_the_toolchain_builds() -> None:
    requirements = (TOOLCHAIN.parent / "requirements.txt").read_text()
    pinned = re.findall(r"^pulumi-kubernetes==(\S+)$", requirements, re.MULTILINE)
    assert pinned == [_versions()["KUBERNETES_PROVIDER_RELEASE"]]

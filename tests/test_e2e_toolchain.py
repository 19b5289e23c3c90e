"""The e2e toolchain's pins agree with each other: every wrapper module requires exactly the
version `versions.env` names, and the e2e's Kubernetes SDK is the provider release it builds."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from e2e.harness import toolchain

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
        ("language-nodejs", "github.com/pulumi/pulumi/sdk/v3", "PULUMI_LANGUAGE_HOST_SDK_VERSION"),
        ("language-yaml", "github.com/pulumi/pulumi-yaml", "PULUMI_YAML_VERSION"),
        ("language-adapter", "github.com/pulumi/pulumi/pkg/v3", "PULUMI_VERSION"),
        ("language-adapter", "github.com/pulumi/pulumi/sdk/v3", "PULUMI_VERSION"),
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


def test_build_sh_builds_and_installs_the_e2e_language_hosts() -> None:
    script = (TOOLCHAIN / "build.sh").read_text()
    components = re.search(r"^components=\(([^)]*)\)", script, re.MULTILINE)
    assert components is not None
    assert components[1].split() == [
        "kubernetes",
        "kubernetes-provider",
        "pulumi",
        "kwok",
        "etcd",
        "promtool",
        "language-python",
        "language-yaml",
        "language-adapter",
        "language-nodejs",
    ]
    # The adapter goes in front of both sdk hosts, each renamed with the suffix the adapter and
    # the harness derive from the same pin.
    assert toolchain.wrapped_suffix() == "-v3.68"
    assert 'wrapped_suffix="-$(cut -d. -f1,2 <<<"$PULUMI_LANGUAGE_HOST_SDK_VERSION")"' in script
    assert 'language-adapter) echo "-X main.wrappedSuffix=$wrapped_suffix" ;;' in script
    assert (
        "language-adapter/pulumi-language-adapter) printf '%s\\n' pulumi-language-python "
        "pulumi-language-nodejs ;;"
    ) in script
    main_go = (TOOLCHAIN / "language-adapter" / "main.go").read_text()
    assert 'var wrappedSuffix = "-v3.68"' in main_go
    # pulumi-yaml's GetPluginInfo reports its stamp; its own Makefile stamps the bare version.
    assert (
        'language-yaml) echo "-X github.com/pulumi/pulumi-yaml/pkg/version.Version='
        '${PULUMI_YAML_VERSION#v}" ;;'
    ) in script


def test_the_e2e_sdk_is_the_provider_release_the_toolchain_builds() -> None:
    requirements = (TOOLCHAIN.parent / "requirements.txt").read_text()
    pinned = re.findall(r"^pulumi-kubernetes==(\S+)$", requirements, re.MULTILINE)
    assert pinned == [_versions()["KUBERNETES_PROVIDER_RELEASE"]]


# --- which path each tool takes (e2e/harness/toolchain.py), with fake binaries on a temporary PATH

# What each real tool prints, exactly (the sources of each format are cited in toolchain.tools()):
# `pulumi version` (pkg/v3 v3.276.0 cmd/pulumi/version/version.go), `kubectl version --client`
# (k8s.io/kubectl v0.36.3 pkg/cmd/version/version.go), `<server> --version` (k8s.io/component-base
# v0.36.3 version/verflag/verflag.go), `etcd --version` (etcd server/v3 v3.6.16 etcdmain/config.go),
# `kwok[ctl] --version` (cobra's default template with kwok v0.8.0's DisplayVersion),
# `promtool --version` (prometheus/common version/info.go). Each fake answers only to the
# arguments the real tool needs, so the plan must ask the right way.
REAL_OUTPUTS = {
    "pulumi": ("version", "v3.276.0\n"),
    "kubectl": ("version --client", "Client Version: v1.36.3\nKustomize Version: v5.8.1\n"),
    "kube-apiserver": ("--version", "Kubernetes v1.36.3\n"),
    "kube-controller-manager": ("--version", "Kubernetes v1.36.3\n"),
    "kube-scheduler": ("--version", "Kubernetes v1.36.3\n"),
    "etcd": (
        "--version",
        "etcd Version: 3.6.16\nGit SHA: Not provided (use ./build instead of go build)\n"
        "Go Version: go1.26.8\nGo OS/Arch: linux/amd64\n",
    ),
    "kwok": ("--version", "kwok version v0.8.0 go1.26.8 (linux/amd64)\n"),
    "kwokctl": ("--version", "kwokctl version v0.8.0 go1.26.8 (linux/amd64)\n"),
    "promtool": (
        "--version",
        "promtool, version 3.5.0 (branch: HEAD, revision: 8be3a9560fbdd18a94dedec4b747c35178177202)\n"
        "  build user:       root@4451b64cb451\n  go version:       go1.24.5\n",
    ),
}


# What `go version -m` prints of pulumi-language-yaml as build.sh builds it (from the wrapper
# module, -trimpath: no link flags recorded), its first lines; and of a build that records its
# link flags, as a release build without -trimpath does.
YAML_BUILD_INFO = [
    "path\tgithub.com/pulumi/pulumi-yaml/cmd/pulumi-language-yaml",
    "mod\tgithub.com/pulumi/pulumi-yaml\tv1.38.1\th1:FquTa8vjvKXreiBHDmuUD9jaZc5y0WXYvRYey+Wrzd4=",
    "dep\tgithub.com/BurntSushi/toml\tv1.6.0\th1:dRaEfpa2VI55EwlIW72hMRHdWouJeRF7TPYhI+AUQjk=",
    "build\t-buildmode=exe",
    "build\t-trimpath=true",
]
STAMPED_YAML_BUILD_INFO = [
    "path\tgithub.com/pulumi/pulumi-yaml/cmd/pulumi-language-yaml",
    "mod\tgithub.com/pulumi/pulumi-yaml\t(devel)\t",
    'build\t-ldflags="-X github.com/pulumi/pulumi-yaml/pkg/version.Version=1.40.0"',
]


def _go_binary(folder: Path, name: str, build_info: list[str]) -> Path:
    """An executable carrying Go's build information as the Go 1.26 linker lays it out (see
    `toolchain.go_build_info`): magic, 32-byte header with inline strings, Go version, then the
    module lines framed by cmd/go's 16-byte start and end markers."""

    def counted(data: bytes) -> bytes:
        length, out = len(data), b""
        while length >= 0x80:
            out += bytes([length & 0x7F | 0x80])
            length >>= 7
        return out + bytes([length]) + data

    info = (
        bytes.fromhex("3077af0c9274080241e1c107e6d618e6")
        + "".join(f"{line}\n" for line in build_info).encode()
        + bytes.fromhex("f932433186182072008242104116d8f2")
    )
    header = toolchain.GO_BUILDINFO_MAGIC + bytes([8, 0x2]) + bytes(16)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(b"#!/bin/sh\nexit 0\n" + header + counted(b"go1.26.8") + counted(info))
    path.chmod(0o755)
    return path


def _fake(folder: Path, name: str, args: str, output: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    text = output.replace("'", "'\\''")
    path.write_text(
        f"#!/bin/sh\nif [ \"$*\" = '{args}' ]; then printf '%s' '{text}'; exit 0; fi\n"
        'echo "unexpected arguments: $*" >&2; exit 2\n'
    )
    path.chmod(0o755)
    return path


@pytest.fixture
def machine(tmp_path: Path) -> dict[str, str]:
    """A machine with every tool installed in a compatible version: the CLI with its bundled
    language hosts beside it (as Pulumi's release archive has them), the provider in the plugin
    cache."""
    bin_dir = tmp_path / "bin"
    for name, (args, output) in REAL_OUTPUTS.items():
        _fake(bin_dir, name, args, output)
    for host in (*toolchain.LANGUAGE_HOST, "pulumi-language-nodejs"):
        _fake(bin_dir, host, "", "")
    _go_binary(bin_dir, "pulumi-language-yaml", YAML_BUILD_INFO)
    _fake(tmp_path / "home/.pulumi/plugins/resource-kubernetes-v4.25.0", toolchain.PROVIDER, "", "")
    return {"PATH": str(bin_dir), "HOME": str(tmp_path / "home")}


def _origins(choices: list[toolchain.Choice]) -> dict[str, str]:
    return {c.name: c.origin for c in choices}


EVERY_TOOL = [
    "pulumi",
    "pulumi-language-python",
    "pulumi-language-python-exec",
    "pulumi-language-nodejs",
    "pulumi-language-yaml",
    "pulumi-resource-kubernetes",
    "kubectl",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "etcd",
    "kwok",
    "kwokctl",
    "promtool",
]
# The sandbox needs neither promtool nor the hosts `pulumi package add` uses.
SANDBOX_TOOLS = [
    n for n in EVERY_TOOL if n not in ("promtool", "pulumi-language-nodejs", "pulumi-language-yaml")
]
# Everything from source for e2e: the adapter stands in for the sdk v3.68 hosts, installed beside
# it under suffixed names.
SOURCE_E2E_TOOLS = [
    "pulumi",
    "pulumi-language-python",
    "pulumi-language-python-v3.68",
    "pulumi-language-python-exec",
    "pulumi-language-nodejs",
    "pulumi-language-nodejs-v3.68",
    "pulumi-language-yaml",
    *EVERY_TOOL[5:],
]


def test_every_tool_installed_and_compatible_is_taken_from_the_machine(
    machine: dict[str, str], tmp_path: Path
) -> None:
    choices = toolchain.plan(machine, "e2e")
    assert [c.name for c in choices] == EVERY_TOOL
    assert set(_origins(choices).values()) == {"preinstalled"}
    bin_dir = tmp_path / "bin"
    assert {c.name: c.path for c in choices} == {
        **{name: bin_dir / name for name in EVERY_TOOL},
        "pulumi-resource-kubernetes": tmp_path
        / "home/.pulumi/plugins/resource-kubernetes-v4.25.0/pulumi-resource-kubernetes",
    }
    reasons = {c.name: c.reason for c in choices}
    assert reasons["kubectl"] == f"{bin_dir}/kubectl v1.36.3 (needs v1.35.x to v1.37.x)"
    assert reasons["etcd"] == f"{bin_dir}/etcd 3.6.16 (needs v3.6.x)"
    assert reasons["pulumi"] == f"{bin_dir}/pulumi v3.276.0 (needs v3.276.0 or newer v3.x)"
    assert reasons["promtool"] == f"{bin_dir}/promtool 3.5.0 (needs v3.x)"
    # The YAML host has no version flag: its version is read from its Go build information.
    assert reasons["pulumi-language-yaml"] == (
        f"beside the CLI: {bin_dir}/pulumi-language-yaml pulumi-yaml v1.38.1 (needs v1.38.1 or "
        "newer v1.x)"
    )
    assert reasons["pulumi-language-nodejs"] == f"beside the CLI: {bin_dir}/pulumi-language-nodejs"
    assert toolchain.explain(choices, {}, "e2e", "auto", go=False).splitlines()[-1] == (
        "Expected: no build; the sandbox (a control plane and the dev stack's preview and up) "
        "about 70 s (measured, docs/performance.md)."
    )


def test_the_sandbox_needs_neither_promtool_nor_the_package_add_hosts(
    machine: dict[str, str], tmp_path: Path
) -> None:
    assert [c.name for c in toolchain.plan(machine, "sandbox")] == SANDBOX_TOOLS
    # Nor does it refuse a CLI for lacking them.
    (tmp_path / "bin" / "pulumi-language-yaml").unlink()
    assert _origins(toolchain.plan(machine, "sandbox"))["pulumi"] == "preinstalled"


def test_a_tool_too_old_is_built_from_source_with_a_message_naming_both_versions(
    machine: dict[str, str], tmp_path: Path
) -> None:
    # The Debian image's kubectl on the project's machine (`kubectl version --client`).
    _fake(tmp_path / "bin", "kubectl", "version --client", "Client Version: v1.32.4\n")
    choices = toolchain.plan(machine, "sandbox")
    assert [n for n, o in _origins(choices).items() if o == "source"] == ["kubectl"]
    kubectl = next(c for c in choices if c.name == "kubectl")
    assert kubectl.reason == (
        f"{tmp_path}/bin/kubectl is v1.32.4, too old: needs v1.35.x to v1.37.x (kubectl is "
        "supported within one minor version of kube-apiserver, Kubernetes' version skew policy); "
        "built from source instead"
    )
    text = toolchain.explain(choices, {}, "sandbox", "auto", go=True)
    assert f"  kubectl                      source, to build  {kubectl.reason}" in text.splitlines()
    assert text.splitlines()[-1] == (
        "Expected: 1 of 11 built from source, once (then cached): kubectl (never timed alone); "
        "then the sandbox about 70 s."
    )


def test_a_control_plane_of_another_minor_is_refused(
    machine: dict[str, str], tmp_path: Path
) -> None:
    _fake(tmp_path / "bin", "kube-apiserver", "--version", "Kubernetes v1.37.0\n")
    choice = next(c for c in toolchain.plan(machine, "sandbox") if c.name == "kube-apiserver")
    assert (choice.origin, choice.reason) == (
        "source",
        f"{tmp_path}/bin/kube-apiserver is v1.37.0, too new: needs v1.36.x (kwokctl starts it as "
        "the pinned v1.36.3 (KWOK_KUBE_VERSION) and chooses its flags by minor version); built "
        "from source instead",
    )


def test_a_newer_pulumi_cli_is_taken_an_older_one_is_not(
    machine: dict[str, str], tmp_path: Path
) -> None:
    _fake(tmp_path / "bin", "pulumi", "version", "v3.280.1\n")
    assert _origins(toolchain.plan(machine, "sandbox"))["pulumi"] == "preinstalled"
    _fake(tmp_path / "bin", "pulumi", "version", "v3.200.0\n")
    choices = toolchain.plan(machine, "sandbox")
    # The language host goes with the CLI it sits beside: an older CLI takes its host along.
    assert {n: o for n, o in _origins(choices).items() if o == "source"} == {
        "pulumi": "source",
        "pulumi-language-python": "source",
        "pulumi-language-python-exec": "source",
    }
    assert choices[0].reason == (
        f"{tmp_path}/bin/pulumi is v3.200.0, too old: needs v3.276.0 or newer v3.x (the suite is "
        "proven with v3.276.0 (its golden previews were recorded with it); v3 keeps the commands "
        "and variables the harness uses); built from source instead"
    )


def test_a_missing_tool_is_built_and_its_measured_time_is_shown(
    machine: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "bin" / "etcd").unlink()
    choices = toolchain.plan(machine, "sandbox")
    assert [(c.name, c.reason) for c in choices if c.origin == "source"] == [
        ("etcd", "not on PATH: built from source")
    ]
    assert toolchain.explain(choices, {}, "sandbox", "auto", go=False).splitlines()[-1] == (
        "Expected: 1 of 11 built from source, once (then cached): at most 5.3 min for etcd built "
        "one after another (measured, docs/performance.md; build.sh runs two at a time); "
        "needs Go 1.26 on PATH (`go` is not there); then the sandbox about 70 s."
    )
    # Already built once: nothing to build, the cached binary is used.
    built = {"etcd": tmp_path / "cache/etcd"}
    assert "  etcd                         source, built     not on PATH: built from source" in (
        toolchain.explain(choices, built, "sandbox", "auto", go=True).splitlines()
    )


def test_a_cli_without_its_language_host_beside_it_is_not_used(
    machine: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "bin" / "pulumi-language-python-exec").unlink()
    choices = toolchain.plan(machine, "sandbox")
    assert choices[0].reason == (
        f"{tmp_path}/bin/pulumi has no pulumi-language-python-exec beside it ({tmp_path}/bin), "
        "where the CLI looks for its bundled language hosts: built from source instead"
    )
    assert [c.origin for c in choices[:3]] == ["source", "source", "source"]


def test_for_e2e_a_cli_without_a_node_js_host_beside_it_is_not_used(
    machine: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "bin" / "pulumi-language-nodejs").unlink()
    choices = toolchain.plan(machine, "e2e")
    assert choices[0].reason == (
        f"{tmp_path}/bin/pulumi has no pulumi-language-nodejs beside it ({tmp_path}/bin), "
        "where the CLI looks for its bundled language hosts: built from source instead"
    )
    assert [c.name for c in choices] == SOURCE_E2E_TOOLS


def test_a_yaml_host_older_than_link_takes_the_cli_to_source(
    machine: dict[str, str], tmp_path: Path
) -> None:
    _go_binary(
        tmp_path / "bin",
        "pulumi-language-yaml",
        [line.replace("v1.38.1", "v1.25.0") for line in YAML_BUILD_INFO],
    )
    choices = toolchain.plan(machine, "e2e")
    assert (choices[0].origin, choices[0].reason) == (
        "source",
        f"the YAML language host beside {tmp_path}/bin/pulumi: {tmp_path}/bin/pulumi-language-yaml "
        "is pulumi-yaml v1.25.0, too old: needs v1.38.1 or newer v1.x (`pulumi package add` needs "
        "the host's Link call, which v1.25.0 lacks; proven with v1.38.1); the CLI is built from "
        "source instead, with its hosts",
    )
    # The hosts go with the CLI: all from source, the adapter in front of the sdk hosts.
    hosts = [(c.name, c.origin, c.build_name) for c in choices[1:7]]
    assert hosts == [
        ("pulumi-language-python", "source", "pulumi-language-adapter"),
        ("pulumi-language-python-v3.68", "source", "pulumi-language-python"),
        ("pulumi-language-python-exec", "source", "pulumi-language-python-exec"),
        ("pulumi-language-nodejs", "source", "pulumi-language-adapter"),
        ("pulumi-language-nodejs-v3.68", "source", "pulumi-language-nodejs"),
        ("pulumi-language-yaml", "source", "pulumi-language-yaml"),
    ]


def test_a_yaml_host_with_no_readable_version_is_not_trusted(
    machine: dict[str, str], tmp_path: Path
) -> None:
    _fake(tmp_path / "bin", "pulumi-language-yaml", "", "")  # a script: no Go build information
    choice = toolchain.plan(machine, "e2e")[0]
    assert choice.reason == (
        f"the YAML language host beside {tmp_path}/bin/pulumi: {tmp_path}/bin/pulumi-language-yaml "
        "records no pulumi-yaml version in its Go build information; needs v1.38.1 or newer v1.x; "
        "the CLI is built from source instead, with its hosts"
    )


def test_a_yaml_host_is_known_by_its_link_stamp_before_its_module_version(tmp_path: Path) -> None:
    stamped = _go_binary(tmp_path, "stamped", STAMPED_YAML_BUILD_INFO)
    assert toolchain.check_yaml_host(stamped) == (
        True,
        f"{stamped} pulumi-yaml 1.40.0 (needs v1.38.1 or newer v1.x)",
    )
    info = toolchain.go_build_info(_go_binary(tmp_path, "trimmed", YAML_BUILD_INFO))
    assert info.splitlines() == YAML_BUILD_INFO
    # A replaced module is known by its replacement's version; a local one has none.
    replaced = "dep\tgithub.com/pulumi/pulumi-yaml\tv1.38.1\th1:x=\n=>\tgithub.com/fork/yaml\tv1.39.0\th1:y="
    assert (
        toolchain.built_version(replaced, toolchain.YAML_MODULE, toolchain.YAML_STAMP) == "v1.39.0"
    )
    assert (
        toolchain.built_version(
            "mod\tgithub.com/pulumi/pulumi-yaml\t(devel)\t",
            toolchain.YAML_MODULE,
            toolchain.YAML_STAMP,
        )
        == ""
    )


def test_the_sandbox_keeps_the_sdk_python_host_unwrapped(machine: dict[str, str]) -> None:
    choices = toolchain.plan({**machine, "KIAM_E2E_TOOLCHAIN": "source"}, "sandbox")
    assert [c.name for c in choices] == SANDBOX_TOOLS
    assert {c.name: c.build_name for c in choices}["pulumi-language-python"] == (
        "pulumi-language-python"
    )


def test_the_language_host_is_found_beside_the_cli_it_resolves_to(
    machine: dict[str, str], tmp_path: Path
) -> None:
    # A symlinked CLI (Homebrew's bin/pulumi -> Cellar/...): the host is beside the real file.
    real = tmp_path / "cellar"
    real.mkdir()
    for name in ("pulumi", *toolchain.LANGUAGE_HOST):
        (tmp_path / "bin" / name).rename(real / name)
    (tmp_path / "bin" / "pulumi").symlink_to(real / "pulumi")
    choices = toolchain.plan(machine, "sandbox")
    assert [(c.name, c.origin, c.path) for c in choices[:3]] == [
        ("pulumi", "preinstalled", tmp_path / "bin" / "pulumi"),
        ("pulumi-language-python", "preinstalled", real / "pulumi-language-python"),
        ("pulumi-language-python-exec", "preinstalled", real / "pulumi-language-python-exec"),
    ]


def test_a_provider_of_another_release_is_refused(machine: dict[str, str], tmp_path: Path) -> None:
    plugins = tmp_path / "home/.pulumi/plugins"
    (plugins / "resource-kubernetes-v4.25.0").rename(plugins / "resource-kubernetes-v4.18.0")
    choice = next(c for c in toolchain.plan(machine, "sandbox") if c.name == toolchain.PROVIDER)
    assert (choice.origin, choice.reason) == (
        "source",
        f"{plugins} has 4.18.0, not 4.25.0: needs exactly 4.25.0 (e2e/requirements.txt pins the "
        "SDK pulumi-kubernetes==4.25.0, which asks the engine for that release); built from "
        "source instead",
    )


def test_pulumi_home_is_where_the_provider_is_looked_for(
    machine: dict[str, str], tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    choice = next(
        c
        for c in toolchain.plan({**machine, "PULUMI_HOME": str(elsewhere)}, "sandbox")
        if c.name == toolchain.PROVIDER
    )
    assert (choice.origin, choice.reason) == (
        "source",
        f"not in {elsewhere}/plugins: built from source",
    )


def test_an_unreadable_version_is_not_trusted(machine: dict[str, str], tmp_path: Path) -> None:
    # The source build's own promtool carries no version stamp: `promtool, version  (branch: ...`.
    _fake(
        tmp_path / "bin",
        "promtool",
        "--version",
        "promtool, version  (branch: , revision: unknown)\n",
    )
    choice = next(c for c in toolchain.plan(machine, "e2e") if c.name == "promtool")
    assert (choice.origin, choice.reason) == (
        "source",
        f"{tmp_path}/bin/promtool printed no version we can read ('promtool, version  (branch: , "
        "revision: unknown)' to `--version`); needs v3.x: built from source instead",
    )


def test_ci_takes_everything_from_source_whatever_the_machine_has(
    machine: dict[str, str],
) -> None:
    choices = toolchain.plan({**machine, "KIAM_E2E_TOOLCHAIN": "source"}, "e2e")
    assert [c.name for c in choices] == SOURCE_E2E_TOOLS
    assert set(_origins(choices).values()) == {"source"}
    with pytest.raises(ValueError, match="KIAM_E2E_TOOLCHAIN='fast': expected one of auto, source"):
        toolchain.plan({**machine, "KIAM_E2E_TOOLCHAIN": "fast"}, "e2e")


def test_ci_sets_the_source_path() -> None:
    ci_run = (TOOLCHAIN.parent.parent / ".ci" / "run").read_text()
    assert "export KIAM_E2E_TOOLCHAIN=source\n" in ci_run
    workflow = (TOOLCHAIN.parent.parent / ".github" / "workflows" / "ci.yml").read_text()
    assert "KIAM_E2E_TOOLCHAIN: source\n" in workflow


def test_the_bin_directory_links_the_machines_tools_and_the_built_ones(
    machine: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "bin" / "etcd").unlink()
    choices = toolchain.plan(machine, "sandbox")
    built_etcd = tmp_path / "cache" / "etcd-key" / "bin" / "etcd"
    built_etcd.parent.mkdir(parents=True)
    built_etcd.write_text("built")
    bin_dir = toolchain.assemble(choices, {"etcd": built_etcd}, tmp_path / "cache")
    assert sorted(p.name for p in bin_dir.iterdir()) == sorted(SANDBOX_TOOLS)
    assert (bin_dir / "kubectl").readlink() == tmp_path / "bin" / "kubectl"
    # Source-built binaries are hard links (the source CLI must find its host beside itself).
    assert not (bin_dir / "etcd").is_symlink()
    assert (bin_dir / "etcd").stat().st_ino == built_etcd.stat().st_ino
    # Another choice of sources is another directory; the same choice, the same one.
    assert toolchain.assemble(choices, {"etcd": built_etcd}, tmp_path / "cache") == bin_dir
    assert bin_dir.parent.name.startswith("mixed-")


def test_a_source_built_cli_gets_the_adapter_in_front_of_the_sdk_hosts(
    machine: dict[str, str], tmp_path: Path
) -> None:
    _fake(tmp_path / "bin", "pulumi", "version", "v3.200.0\n")
    choices = toolchain.plan(machine, "e2e")
    cache = tmp_path / "cache"
    built = {}
    for name in (
        "pulumi",
        "pulumi-language-adapter",
        "pulumi-language-python",
        "pulumi-language-python-exec",
        "pulumi-language-nodejs",
        "pulumi-language-yaml",
    ):
        path = cache / "some-component-key" / "bin" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(name)
        built[name] = path
    by_choice = {c.name: built[c.build_name] for c in choices if c.origin == "source"}
    bin_dir = toolchain.assemble(choices, by_choice, cache)
    # One adapter file under both host names; the real hosts beside it as the adapter looks
    # for them (its own name plus the suffix).
    adapter = built["pulumi-language-adapter"].stat().st_ino
    assert (bin_dir / "pulumi-language-python").stat().st_ino == adapter
    assert (bin_dir / "pulumi-language-nodejs").stat().st_ino == adapter
    assert (bin_dir / "pulumi-language-python-v3.68").read_text() == "pulumi-language-python"
    assert (bin_dir / "pulumi-language-nodejs-v3.68").read_text() == "pulumi-language-nodejs"
    assert (bin_dir / "pulumi-language-yaml").read_text() == "pulumi-language-yaml"
    # Its measured cost: each of the builds once, the adapter once for both names.
    assert toolchain.explain(choices, {}, "e2e", "auto", go=True).splitlines()[-1] == (
        "Expected: 7 of 16 built from source, once (then cached): at most 68.8 min for pulumi, "
        "pulumi-language-adapter, pulumi-language-nodejs, pulumi-language-python, "
        "pulumi-language-yaml built one after another (measured, docs/performance.md; "
        "build.sh runs two at a time); then the sandbox about 70 s."
    )


def test_everything_from_source_for_e2e_counts_what_the_language_hosts_add(
    machine: dict[str, str],
) -> None:
    choices = toolchain.plan({**machine, "KIAM_E2E_TOOLCHAIN": "source"}, "e2e")
    assert (
        toolchain.explain(choices, {}, "e2e", "source", go=True)
        .splitlines()[-1]
        .endswith(
            "; the whole toolchain took 32.4 min alone on 2 cores (docs/performance.md), and the e2e "
            "language hosts add about 1.4 min to it (docs/performance.md); then the sandbox "
            "about 70 s."
        )
    )


def test_the_expected_build_times_are_the_measured_ones_in_docs() -> None:
    """The plan's expected times are docs/performance.md's table, where every measured number
    lives: each component's seconds appear there as the wall time it was measured at."""
    text = (Path(__file__).resolve().parent.parent / "docs" / "performance.md").read_text()
    section = text.split("## The toolchain's components, cold and warm", 1)[1].split("\n## ", 1)[0]
    walls = set(re.findall(r"\b\d+:\d\d\b", section))
    assert {
        name: f"{seconds // 60}:{seconds % 60:02d}" in walls
        for name, seconds in toolchain.MEASURED_SECONDS.items()
    } == {name: True for name in toolchain.MEASURED_SECONDS}

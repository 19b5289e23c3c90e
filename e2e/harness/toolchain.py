"""Where the toolchain's binaries come from: the machine's own where they are compatible, the ones
`e2e/toolchain/build.sh` builds from the Go module proxy for the rest.

    python -m e2e.harness.toolchain --explain [--for sandbox|e2e]   # which path each tool takes
    python -m e2e.harness.toolchain build [--for sandbox|e2e]       # build what is missing
    python -m e2e.harness.toolchain bin [--for sandbox|e2e]         # the bin directory, no build

`KIAM_E2E_TOOLCHAIN=source` (what CI sets: `.ci/run`, `.github/workflows/ci.yml`) ignores the
machine's binaries and takes everything from the source build, as before; `auto` (the default)
takes each tool from the machine when its version is compatible (the rules below, each with why),
and builds only the others. Only the Python standard library is imported here: `make
e2e-toolchain` runs this before the e2e virtualenv exists.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = REPO / "e2e" / "toolchain" / "build.sh"
PROVIDER_VERSION_KEY = "KUBERNETES_PROVIDER_RELEASE"
MODE_VARIABLE = "KIAM_E2E_TOOLCHAIN"
MODES = ("auto", "source")
PURPOSES = ("sandbox", "e2e")


class ToolchainMissingError(RuntimeError):
    """The binaries are not built (yet): `make e2e-toolchain` builds them."""


def pinned(key: str) -> str:
    """One pinned version from `e2e/toolchain/versions.env`."""
    for line in (BUILD_SCRIPT.parent / "versions.env").read_text().splitlines():
        name, _, value = line.partition("=")
        if name.strip() == key:
            return value.strip()
    raise KeyError(key)


# --- versions and the rules they are held to -----------------------------------------------------

Version = tuple[int, int, int]
VERSION = re.compile(r"v?(\d+)\.(\d+)\.(\d+)")


def parse_version(text: str) -> Version | None:
    found = VERSION.search(text)
    return (int(found[1]), int(found[2]), int(found[3])) if found else None


def show(version: Version) -> str:
    return "v" + ".".join(map(str, version))


@dataclass(frozen=True)
class Rule:
    """What versions the harness accepts for one tool, and why (shown in every refusal)."""

    kind: str  # "same-minor", "minor-skew", "at-least", "same-major"
    pinned: Version
    why: str

    def accepts(self, found: Version) -> bool:
        major, minor, _ = self.pinned
        if self.kind == "same-minor":
            return found[:2] == (major, minor)
        if self.kind == "minor-skew":
            return found[0] == major and abs(found[1] - minor) <= 1
        if self.kind == "at-least":
            return found[0] == major and found >= self.pinned
        return found[0] == major  # same-major

    def needed(self) -> str:
        major, minor, _ = self.pinned
        if self.kind == "same-minor":
            return f"v{major}.{minor}.x"
        if self.kind == "minor-skew":
            return f"v{major}.{minor - 1}.x to v{major}.{minor + 1}.x"
        if self.kind == "at-least":
            return f"{show(self.pinned)} or newer v{major}.x"
        return f"v{major}.x"

    def verdict(self, found: Version) -> str:
        """`too old` or `too new`, for a version this rule refuses."""
        return "too old" if found < self.pinned else "too new"


def _v(key: str) -> Version:
    version = parse_version(pinned(key))
    assert version is not None, key
    return version


def kubernetes_rule() -> Rule:
    return Rule(
        "same-minor",
        _v("KUBERNETES_VERSION"),
        # kwokctl is told KWOK_KUBE_VERSION = the pinned release (e2e/harness/cluster.py) and picks
        # the components' flags by minor version; patch releases carry fixes only
        # (https://kubernetes.io/releases/patch-releases/). Controller-manager and scheduler must not
        # be newer than the API server (https://kubernetes.io/releases/version-skew-policy/).
        "kwokctl starts it as the pinned "
        f"{pinned('KUBERNETES_VERSION')} (KWOK_KUBE_VERSION) and chooses its flags by minor version",
    )


@dataclass(frozen=True)
class Tool:
    """One binary the harness runs, how the machine's copy is found and what it must be."""

    name: str
    rule: Rule
    # The arguments that make it print its version, and the line that carries it, exactly as the
    # real tool prints it (the source of each format is cited in `TOOLS`).
    version_args: tuple[str, ...]
    version_line: re.Pattern[str]
    purposes: tuple[str, ...] = PURPOSES


def tools() -> list[Tool]:
    """Every tool, in the order the plan prints them. The plugins that have no version flag
    (the language host and the Kubernetes provider) are handled in `plan` itself."""
    kube = kubernetes_rule()
    # `<program> --version` of every Kubernetes server binary: `fmt.Fprintf(output, "%s %s\n",
    # programName, version.Get())` with programName "Kubernetes" (k8s.io/component-base v0.36.3,
    # version/verflag/verflag.go), e.g. `Kubernetes v1.36.3`.
    server_line = re.compile(r"^Kubernetes (v\d+\.\d+\.\d+\S*)$", re.MULTILINE)
    # kwok and kwokctl are cobra commands with `Version: version.DisplayVersion()`
    # (sigs.k8s.io/kwok v0.8.0, pkg/kwokctl/cmd/root.go, pkg/kwok/cmd/root.go): cobra's default
    # template `{{.DisplayName}} version {{.Version}}` (spf13/cobra v1.10.1, command.go) with
    # DisplayVersion's `v0.8.0 go1.26.8 (linux/amd64)` (pkg/utils/version/vars.go).
    kwok_rule = Rule(
        "same-minor",
        _v("KWOK_VERSION"),
        # kwok is before 1.0: any minor release may change the flags and configuration the harness
        # passes (`create cluster --runtime binary --kube-apiserver-binary=...`).
        "kwok is before v1.0, so a minor release may change the kwokctl flags the harness passes",
    )
    return [
        Tool(
            "pulumi",
            Rule(
                "at-least",
                _v("PULUMI_VERSION"),
                # The harness relies on `plugin install --file`, `--event-log` behind
                # PULUMI_DEBUG_COMMANDS and PULUMI_IGNORE_AMBIENT_PLUGINS, as proven with the pinned
                # CLI; e2e/requirements.txt's SDK (pulumi==3.272.0) is older than it. The golden
                # previews (e2e/golden) were recorded with the pinned CLI: a newer one's preview text
                # may differ there, which the golden tests then show as a diff.
                f"the suite is proven with {pinned('PULUMI_VERSION')} (its golden previews were "
                "recorded with it); v3 keeps the commands and variables the harness uses",
            ),
            # `pulumi version`: `fmt.Fprintf(cmd.OutOrStdout(), "%v\n", version.Version)`
            # (pulumi/pulumi pkg/v3 v3.276.0, cmd/pulumi/version/version.go), e.g. `v3.276.0`.
            ("version",),
            re.compile(r"^(v\d+\.\d+\.\d+\S*)$", re.MULTILINE),
        ),
        Tool(
            "kubectl",
            Rule(
                "minor-skew",
                _v("KUBERNETES_VERSION"),
                # https://kubernetes.io/releases/version-skew-policy/#kubectl: "kubectl is supported
                # within one minor version (older or newer) of kube-apiserver".
                "kubectl is supported within one minor version of kube-apiserver, "
                "Kubernetes' version skew policy",
            ),
            # `kubectl version --client`: `fmt.Fprintf(o.Out, "Client Version: %s\n",
            # versionInfo.ClientVersion.GitVersion)` (k8s.io/kubectl v0.36.3,
            # pkg/cmd/version/version.go), then `Kustomize Version: v5.8.1`.
            ("version", "--client"),
            re.compile(r"^Client Version: (v\d+\.\d+\.\d+\S*)$", re.MULTILINE),
        ),
        Tool("kube-apiserver", kube, ("--version",), server_line),
        Tool("kube-controller-manager", kube, ("--version",), server_line),
        Tool("kube-scheduler", kube, ("--version",), server_line),
        Tool(
            "etcd",
            Rule(
                "same-minor",
                _v("ETCD_VERSION"),
                "kwokctl starts it as the pinned "
                f"{pinned('ETCD_VERSION')} (KWOK_ETCD_VERSION) and chooses its flags by version",
            ),
            # `etcd --version`: `fmt.Printf("etcd Version: %s\n", version.Version)`
            # (go.etcd.io/etcd/server/v3 v3.6.16, etcdmain/config.go), e.g. `etcd Version: 3.6.16`.
            ("--version",),
            re.compile(r"^etcd Version: (\d+\.\d+\.\d+\S*)$", re.MULTILINE),
        ),
        Tool(
            "kwok",
            kwok_rule,
            ("--version",),
            re.compile(r"^kwok version (v\d+\.\d+\.\d+\S*) ", re.MULTILINE),
        ),
        Tool(
            "kwokctl",
            kwok_rule,
            ("--version",),
            re.compile(r"^kwokctl version (v\d+\.\d+\.\d+\S*) ", re.MULTILINE),
        ),
        Tool(
            "promtool",
            Rule(
                "same-major",
                (3, 0, 0),
                # versions.env: Prometheus 3.x; tests/monitoring holds promtool 3 rule unit tests.
                "the alert rules' unit tests (tests/monitoring) are written for Prometheus 3's "
                "promtool (versions.env)",
            ),
            # `promtool --version`: prometheus/common's version.Print, template
            # `{{.program}}, version {{.version}} (branch: ..., revision: ...)` (prometheus/common
            # v0.72.1, version/info.go), e.g. `promtool, version 3.5.0 (branch: HEAD, ...)`.
            ("--version",),
            re.compile(r"^promtool, version (\d+\.\d+\.\d+\S*) ", re.MULTILINE),
            purposes=("e2e",),
        ),
    ]


# The language hosts are plugins the CLI bundles and looks for next to its own resolved executable
# (`IsPluginBundled`, `getPluginInfoAndPath` in pulumi/pulumi sdk/v3 v3.276.0,
# go/common/workspace/plugins.go); with PULUMI_IGNORE_AMBIENT_PLUGINS, which the harness sets, they
# are found nowhere else. So they come with the CLI they sit beside, and never alone.
LANGUAGE_HOST = ("pulumi-language-python", "pulumi-language-python-exec")
# The e2e suite also adds the project's component package to TypeScript and YAML programs
# (`pulumi package add`): those two hosts must be beside the CLI as well, for e2e only.
PACKAGE_HOSTS = ("pulumi-language-nodejs", "pulumi-language-yaml")
YAML_HOST = "pulumi-language-yaml"
# A source-built toolchain for e2e puts e2e/toolchain/language-adapter in front of the sdk v3.68
# Python and Node.js hosts: the adapter is installed under their names and finds each real host
# beside it as that name plus `wrapped_suffix()` (build.sh `installed_as`).
ADAPTER = "pulumi-language-adapter"
PROVIDER = "pulumi-resource-kubernetes"


def wrapped_suffix() -> str:
    """`-v3.68`: the name suffix of the real hosts behind the adapter, from the pinned sdk version
    (build.sh derives the same and stamps it into the adapter)."""
    major, minor, _ = _v("PULUMI_LANGUAGE_HOST_SDK_VERSION")
    return f"-v{major}.{minor}"


def yaml_rule() -> Rule:
    return Rule(
        "at-least",
        _v("PULUMI_YAML_VERSION"),
        # `pulumi package add` links the package into a YAML program through the host's Link call
        # (LinkPackages in pkg/v3 v3.276.0, cmd/pulumi/packages/packages.go); pulumi-yaml v1.25.0,
        # the version the proxy lists, has no Link (pkg/server/server.go). Proven with the pin.
        "`pulumi package add` needs the host's Link call, which v1.25.0 lacks; proven with "
        f"{pinned('PULUMI_YAML_VERSION')}",
    )


# --- reading a Go binary's own record of what it was built from ----------------------------------

# The language hosts have no version flag (they answer GetPluginInfo over gRPC only), but every Go
# binary carries the build information `go version -m` prints. Its layout, from Go 1.18 on (Go 1.26
# src/debug/buildinfo/buildinfo.go): this magic, a 32-byte header whose flags byte (offset 15) has
# 0x2 when the strings follow inline, then the Go version and the module information, each a
# uvarint length and its bytes; the module information is framed by 16 bytes on either side.
GO_BUILDINFO_MAGIC = b"\xff Go buildinf:"


def go_build_info(path: Path) -> str:
    """The module lines of a Go binary (`path`, `mod`, `dep`, `=>`, `build`), or "" if `path` is
    no Go binary of Go 1.18 or later."""
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    start = data.find(GO_BUILDINFO_MAGIC)
    if start < 0 or len(data) < start + 32 or not data[start + 15] & 0x2:
        return ""
    position, strings = start + 32, []
    for _ in range(2):
        length = shift = 0
        while position < len(data):
            byte = data[position]
            position += 1
            length |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        strings.append(data[position : position + length])
        position += length
    info = strings[1]
    return info[16:-16].decode(errors="replace") if len(info) >= 32 else ""


def built_version(info: str, module: str, stamp: str) -> str:
    """The version a Go binary says it was built as: its `-X <stamp>=` link flag where the build
    recorded its flags (a release build does; a -trimpath build, like build.sh's, does not), else
    the version of `module` it was built from (its replacement's, if replaced)."""
    flag = re.search(re.escape(stamp) + r"=([^\s\"']+)", info)
    if flag:
        return flag[1]
    lines = info.splitlines()
    for index, line in enumerate(lines):
        fields = line.split("\t")
        if fields[0] in ("mod", "dep") and len(fields) > 2 and fields[1] == module:
            after = lines[index + 1].split("\t") if index + 1 < len(lines) else []
            version = after[2] if after[:1] == ["=>"] and len(after) > 2 else fields[2]
            return "" if version == "(devel)" else version
    return ""


YAML_MODULE = "github.com/pulumi/pulumi-yaml"
YAML_STAMP = "github.com/pulumi/pulumi-yaml/pkg/version.Version"


def check_yaml_host(path: Path) -> tuple[bool, str]:
    """Whether a machine's YAML language host can link packages, and what was read."""
    rule = yaml_rule()
    printed = built_version(go_build_info(path), YAML_MODULE, YAML_STAMP)
    version = parse_version(printed) if printed else None
    if version is None:
        return False, (
            f"{path} records no pulumi-yaml version in its Go build information; needs "
            f"{rule.needed()}"
        )
    if not rule.accepts(version):
        return False, (
            f"{path} is pulumi-yaml {printed}, {rule.verdict(version)}: needs {rule.needed()} "
            f"({rule.why})"
        )
    return True, f"{path} pulumi-yaml {printed} (needs {rule.needed()})"


# --- the plan ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Choice:
    """Where one binary comes from: `preinstalled` (then `path`) or `source`, and why."""

    name: str
    origin: str
    reason: str
    path: Path | None = None
    # The binary build.sh builds for it, where that has another name (the adapter stands in for
    # two hosts; the real hosts behind it are installed under a suffixed name).
    built_as: str | None = None

    @property
    def build_name(self) -> str:
        return self.built_as or self.name


Runner = Callable[[list[str]], str]


def run_version(command: list[str]) -> str:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"<{error}>"
    return done.stdout + done.stderr


def mode_of(environ: Mapping[str, str]) -> str:
    mode = environ.get(MODE_VARIABLE, "auto") or "auto"
    if mode not in MODES:
        raise ValueError(f"{MODE_VARIABLE}={mode!r}: expected one of {', '.join(MODES)}")
    return mode


def _check(tool: Tool, path: Path, run: Runner) -> Choice:
    output = run([str(path), *tool.version_args])
    line = tool.version_line.search(output)
    printed = line[1] if line else ""
    version = parse_version(printed)
    if version is None:
        first = output.strip().splitlines()[0] if output.strip() else "nothing"
        return Choice(
            tool.name,
            "source",
            f"{path} printed no version we can read ({first!r} to `{' '.join(tool.version_args)}`); "
            f"needs {tool.rule.needed()}: built from source instead",
        )
    if not tool.rule.accepts(version):
        return Choice(
            tool.name,
            "source",
            f"{path} is {printed}, {tool.rule.verdict(version)}: needs "
            f"{tool.rule.needed()} ({tool.rule.why}); built from source instead",
        )
    return Choice(tool.name, "preinstalled", f"{path} {printed} (needs {tool.rule.needed()})", path)


def _provider(environ: Mapping[str, str]) -> Choice:
    """The Kubernetes provider from Pulumi's plugin cache, where `pulumi plugin install` puts it:
    `<PULUMI_HOME or ~/.pulumi>/plugins/resource-kubernetes-v<version>/` (its version is the
    folder's name; the provider has no version flag). Exactly the pinned release: the harness
    registers it under that version (`install_provider`) and e2e/requirements.txt pins the SDK
    that asks the engine for exactly it."""
    release = pinned(PROVIDER_VERSION_KEY)
    home = Path(environ.get("PULUMI_HOME") or Path(environ.get("HOME", "~")) / ".pulumi")
    plugins = home / "plugins"
    wanted = plugins / f"resource-kubernetes-v{release}" / PROVIDER
    if os.access(wanted, os.X_OK):
        return Choice(PROVIDER, "preinstalled", f"{wanted} (needs exactly {release})", wanted)
    others = sorted(plugins.glob("resource-kubernetes-v*")) if plugins.is_dir() else []
    if others:
        found = ", ".join(p.name.removeprefix("resource-kubernetes-v") for p in others)
        return Choice(
            PROVIDER,
            "source",
            f"{plugins} has {found}, not {release}: needs exactly {release} (e2e/requirements.txt "
            f"pins the SDK pulumi-kubernetes=={release}, which asks the engine for that release); "
            "built from source instead",
        )
    return Choice(PROVIDER, "source", f"not in {plugins}: built from source")


def _hosts(purpose: str) -> tuple[str, ...]:
    return (*LANGUAGE_HOST, *(PACKAGE_HOSTS if purpose == "e2e" else ()))


def _cli_with_its_hosts(cli: Choice, purpose: str) -> Choice:
    """A machine's CLI is used only with usable language hosts beside it (it finds them nowhere
    else): without its Python host it cannot run the program, and for e2e without Node.js and YAML
    hosts, or with a YAML host older than Link, `pulumi package add` fails."""
    assert cli.path is not None
    beside = cli.path.resolve().parent
    missing = [n for n in _hosts(purpose) if not os.access(beside / n, os.X_OK)]
    if missing:
        return Choice(
            "pulumi",
            "source",
            f"{cli.path} has no {' or '.join(missing)} beside it ({beside}), where the CLI looks "
            "for its bundled language hosts: built from source instead",
        )
    if purpose == "e2e":
        usable, why = check_yaml_host(beside / YAML_HOST)
        if not usable:
            return Choice(
                "pulumi",
                "source",
                f"the YAML language host beside {cli.path}: {why}; the CLI is built from source "
                "instead, with its hosts",
            )
    return cli


def _language_hosts(cli: Choice, purpose: str) -> list[Choice]:
    """The language hosts, from wherever the CLI comes from."""
    if cli.origin == "preinstalled":
        beside = (cli.path or Path()).resolve().parent
        return [
            Choice(
                name,
                "preinstalled",
                "beside the CLI: "
                + (check_yaml_host(beside / name)[1] if name == YAML_HOST else str(beside / name)),
                beside / name,
            )
            for name in _hosts(purpose)
        ]
    if purpose != "e2e":
        return [Choice(name, "source", "comes with the source-built CLI") for name in LANGUAGE_HOST]
    # The source-built CLI has only sdk v3.68.0's Python and Node.js hosts (the newest the proxy
    # serves): for e2e the adapter stands in for both (README, "The language adapter").
    suffix, sdk = wrapped_suffix(), pinned("PULUMI_LANGUAGE_HOST_SDK_VERSION")
    python, nodejs = "pulumi-language-python", "pulumi-language-nodejs"
    return [
        Choice(
            python,
            "source",
            f"the adapter (e2e/toolchain/language-adapter) in front of {python}{suffix}: starts "
            "the plugins and policy packs the sdk host cannot start for this CLI",
            built_as=ADAPTER,
        ),
        Choice(
            python + suffix,
            "source",
            f"sdk {sdk}'s Python host, which runs the programs, behind the adapter",
            built_as=python,
        ),
        Choice("pulumi-language-python-exec", "source", "comes with the source-built CLI"),
        Choice(
            nodejs,
            "source",
            f"the adapter in front of {nodejs}{suffix}: adds GeneratePackage and Link, which "
            "`pulumi package add` needs",
            built_as=ADAPTER,
        ),
        Choice(
            nodejs + suffix,
            "source",
            f"sdk {sdk}'s Node.js host, which runs the programs, behind the adapter",
            built_as=nodejs,
        ),
        Choice(
            YAML_HOST,
            "source",
            f"comes with the source-built CLI (pulumi-yaml {pinned('PULUMI_YAML_VERSION')})",
        ),
    ]


def plan(
    environ: Mapping[str, str] | None = None, purpose: str = "e2e", run: Runner = run_version
) -> list[Choice]:
    """Where each binary the purpose needs comes from, looking at `PATH` and Pulumi's plugins."""
    environ = os.environ if environ is None else environ
    mode = mode_of(environ)
    choices: list[Choice] = []
    for tool in tools():
        if purpose not in tool.purposes:
            continue
        found = shutil.which(tool.name, path=environ.get("PATH", ""))
        if mode == "source":
            choice = Choice(tool.name, "source", f"{MODE_VARIABLE}=source: built from source")
        elif found is None:
            choice = Choice(tool.name, "source", "not on PATH: built from source")
        else:
            choice = _check(tool, Path(found), run)
        choices.append(choice)
        if tool.name != "pulumi":
            continue
        if choice.origin == "preinstalled":
            choices[-1] = _cli_with_its_hosts(choice, purpose)
        choices += _language_hosts(choices[-1], purpose)
        choices.append(
            _provider(environ)
            if mode == "auto"
            else Choice(PROVIDER, "source", f"{MODE_VARIABLE}=source: built from source")
        )
    return choices


# --- what building costs (measured, never guessed) -----------------------------------------------

# Cold build of each component, from the Go module proxy, two components at a time on 2 cores,
# 2026-11-29, sharing the cores with other work (so pessimistic): the cost table of
# docs/performance.md ("The toolchain's components, cold and warm"). kubectl and promtool were
# never timed alone.
MEASURED_SECONDS: dict[str, int] = {
    "pulumi": 757,  # 12:37
    "pulumi-language-python": 75,  # 1:15, with its script
    PROVIDER: 924,  # 15:24
    "kube-apiserver": 1023,  # 17:03
    "kube-controller-manager": 242,  # 4:02
    "kube-scheduler": 21,  # 0:21
    "etcd": 318,  # 5:18
    "kwok": 437,  # 7:17, kwok and kwokctl together
    # The e2e-only language hosts, each with empty Go module and build caches of its own (so with
    # its downloads), two at a time with nice 19 on 2 cores shared with e2e runs and mutation
    # tests (load 8 to 18), 2026-12-01: pessimistic (docs/performance.md, the same section).
    "pulumi-language-yaml": 1541,  # 25:41 (219 s user CPU)
    ADAPTER: 1457,  # 24:17 (202 s user CPU); one build for both names it is installed under
    "pulumi-language-nodejs": 298,  # 4:58, the sdk v3.68 host (101 s user CPU)
}
# The whole toolchain cold, alone on the machine, in CI's cold run (docs/performance.md), before
# the e2e language hosts were added.
WHOLE_COLD_SECONDS = 1941
# What those hosts added to a build whose caches already held the other components (as a cold run
# has them by the time build.sh reaches the hosts, its last three): the three compiled in 68 s
# wall, plus 16 s for the adapter's own first compile, on 2 cores at load 3, 2026-12-01; their
# only new downloads are pulumi-yaml's (44 modules, 95 MB).
E2E_HOSTS_SHARED_SECONDS = 84
# What the sandbox itself takes once the binaries are there: measured by `make sandbox STACK=dev`
# with every tool preinstalled, on 2026-12-01 (docs/performance.md).
SANDBOX_SECONDS = 70  # 69.3 s and 74.2 s, two runs on 2 cores shared with others (load 5 to 9)


def _timed_as(choice: Choice) -> str | None:
    """The measured build that includes `choice`'s binary (kwokctl is built with kwok, the host's
    script with the host; both hosts the adapter stands in for are the one adapter build)."""
    name = {"kwokctl": "kwok", "pulumi-language-python-exec": "pulumi-language-python"}.get(
        choice.build_name, choice.build_name
    )
    return name if name in MEASURED_SECONDS else None


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min"


def explain(
    choices: list[Choice],
    built: Mapping[str, Path],
    purpose: str,
    mode: str,
    go: bool | None = None,
) -> str:
    """The plan as a person reads it: each tool's path and why, and the time to expect."""
    go = shutil.which("go") is not None if go is None else go
    width = max(len(c.name) for c in choices)
    lines = [f"e2e toolchain for {purpose} ({MODE_VARIABLE}={mode}):"]
    to_build: list[Choice] = []
    for choice in choices:
        if choice.origin == "preinstalled":
            origin = "preinstalled"
        elif choice.name in built:
            origin = "source, built"
        else:
            origin = "source, to build"
            to_build.append(choice)
        lines.append(f"  {choice.name:<{width}}  {origin:<16}  {choice.reason}")
    if not to_build:
        lines.append(
            f"Expected: no build; the sandbox (a control plane and the dev stack's preview and up) "
            f"about {SANDBOX_SECONDS} s (measured, docs/performance.md)."
        )
        return "\n".join(lines)
    timed = sorted({t for c in to_build if (t := _timed_as(c)) is not None})
    untimed = [c.name for c in to_build if _timed_as(c) is None]
    serial = sum(MEASURED_SECONDS[n] for n in timed)
    text = f"Expected: {len(to_build)} of {len(choices)} built from source, once (then cached)"
    if timed:
        text += (
            f": at most {_minutes(serial)} for {', '.join(timed)} built one after another "
            "(measured, docs/performance.md; build.sh runs two at a time)"
        )
    if untimed:
        text += f"{', plus' if timed else ':'} {', '.join(untimed)} (never timed alone)"
    if len(to_build) == len(choices):
        text += (
            f"; the whole toolchain took {_minutes(WHOLE_COLD_SECONDS)} alone on 2 cores "
            "(docs/performance.md)"
        )
        if purpose == "e2e":
            text += (
                f", and the e2e language hosts add about {_minutes(E2E_HOSTS_SHARED_SECONDS)} "
                "to it (docs/performance.md)"
            )
    if not go:
        text += "; needs Go 1.26 on PATH (`go` is not there)"
    lines.append(text + f"; then the sandbox about {SANDBOX_SECONDS} s.")
    return "\n".join(lines)


# --- the bin directory ---------------------------------------------------------------------------


def cache_root(environ: Mapping[str, str] | None = None) -> Path:
    environ = os.environ if environ is None else environ
    if environ.get("KIAM_E2E_CACHE"):
        return Path(environ["KIAM_E2E_CACHE"])
    cache = environ.get("XDG_CACHE_HOME") or str(Path(environ.get("HOME", "~")) / ".cache")
    return Path(cache) / "kiam-eks" / "e2e"


def _build_script(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BUILD_SCRIPT), *args], capture_output=True, text=True)


def source_built(choices: list[Choice]) -> dict[str, Path]:
    """The source-built binaries of `choices` that the cache already holds, by choice name."""
    wanted = [c for c in choices if c.origin == "source"]
    if not wanted or shutil.which("go") is None:
        return {}
    # `path` prints the built ones even when it exits 1 for the others.
    done = _build_script("path", *sorted({c.build_name for c in wanted}))
    paths = {}
    for line in done.stdout.splitlines():
        name, _, path = line.partition(" ")
        if path:
            paths[name] = Path(path)
    return {c.name: paths[c.build_name] for c in wanted if c.build_name in paths}


def assemble(choices: list[Choice], built: Mapping[str, Path], root: Path) -> Path:
    """One directory with every binary the harness runs: the machine's as symlinks (so the CLI
    still resolves to its own folder and its language host), the source-built as hard links (so
    the source-built CLI finds the source-built host beside it), keyed by where each comes from."""
    sources = {c.name: (c.path if c.origin == "preinstalled" else built[c.name]) for c in choices}
    key = hashlib.sha256(
        "\n".join(f"{n} {p}" for n, p in sorted(sources.items())).encode()
    ).hexdigest()[:16]
    bin_dir = root / f"mixed-{key}" / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    for choice in choices:
        target, source = bin_dir / choice.name, sources[choice.name]
        assert source is not None
        if target.is_symlink() or target.exists():
            continue
        if choice.origin == "preinstalled":
            target.symlink_to(source)
        else:
            try:
                os.link(source, target)
            except OSError:
                shutil.copy2(source, target)
    return bin_dir


def _whole_source_build(build: bool) -> Path:
    done = _build_script() if build else _build_script("bin")
    if done.returncode != 0 or not done.stdout.strip():
        if build:
            raise ToolchainMissingError(f"e2e/toolchain/build.sh failed:\n{done.stderr}")
        raise ToolchainMissingError(
            "the e2e toolchain is not built: run `make e2e-toolchain` (about 40 minutes cold, "
            "seconds when cached)"
        )
    sys.stderr.write(done.stderr)
    return Path(done.stdout.strip().splitlines()[-1])


def bin_dir(purpose: str = "e2e", build: bool = False, choices: list[Choice] | None = None) -> Path:
    """The directory of every binary the purpose needs; builds only when asked
    (`make e2e-toolchain` / `make sandbox` do)."""
    mode = mode_of(os.environ)
    choices = plan(purpose=purpose) if choices is None else choices
    wanted = [c for c in choices if c.origin == "source"]
    if mode == "source" or (purpose == "e2e" and len(wanted) == len(choices)):
        # What CI runs, unchanged: the whole toolchain from source, in build.sh's own directory.
        return _whole_source_build(build)
    built = source_built(choices)
    missing = [c for c in wanted if c.name not in built]
    if missing and build:
        binaries = sorted({c.build_name for c in missing})
        done = subprocess.run(
            [str(BUILD_SCRIPT), "build", *binaries], text=True, stdout=subprocess.PIPE
        )
        if done.returncode != 0:
            raise ToolchainMissingError(f"e2e/toolchain/build.sh build {' '.join(binaries)} failed")
        built = source_built(choices)
        missing = [c for c in wanted if c.name not in built]
    if missing:
        raise ToolchainMissingError(
            "not on this machine in a usable version and not built yet: "
            f"{', '.join(c.name for c in missing)}; "
            f"run `make e2e-toolchain` (`python -m e2e.harness.toolchain --explain` says why and "
            "how long)"
        )
    return assemble(choices, built, cache_root())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m e2e.harness.toolchain", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("command", nargs="?", choices=("build", "bin"), default=None)
    parser.add_argument("--explain", action="store_true", help="print which path each tool takes")
    parser.add_argument("--for", dest="purpose", choices=PURPOSES, default="e2e")
    args = parser.parse_args(argv)
    try:
        mode = mode_of(os.environ)
    except ValueError as error:
        print(error, file=sys.stderr)
        return 2
    choices = plan(purpose=args.purpose)
    if args.explain or args.command == "build":
        built = source_built(choices)
        text = explain(choices, built, args.purpose, mode)
        print(text, file=sys.stderr if args.command else sys.stdout, flush=True)
    if args.command is None:
        return 0
    try:
        print(bin_dir(args.purpose, build=args.command == "build", choices=choices))
    except ToolchainMissingError as error:
        print(error, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env bash
# Builds the real-engine toolchain (Pulumi CLI, Python language host, Kubernetes provider, the
# Kubernetes control plane, etcd, kwok, promtool) from the Go module proxy, into a cache outside the
# work tree. Nothing is downloaded from anywhere else and no binary is committed.
#
#   build.sh                  build what is missing, then print the bin directory (the only stdout line)
#   build.sh build BINARY...  build only these binaries (e.g. kubectl etcd), then print `name path`
#                             per binary: what e2e/harness/toolchain.py asks for when the machine
#                             already has the rest (`python -m e2e.harness.toolchain --explain`)
#   build.sh path BINARY...   print `name path` per binary without building (exit 1 if one is not built)
#   build.sh lock [COMPONENT...]  re-render the wrappers' go.mod/go.sum from versions.env (after a bump)
#   build.sh bin              print the bin directory without building (exit 1 if incomplete)
#   build.sh prune            drop the Go module and build caches (the binaries stay)
#
# Each component is one wrapper module (e2e/toolchain/<component>/go.mod) with a `tool` directive
# naming the main package(s): `go install pkg@version` refuses modules whose go.mod has `replace`
# lines, and one wrapper per component keeps minimum version selection from mixing their
# dependency graphs. Each component is cached under a key of its go.mod, go.sum, ldflags and Go
# version, so a bump rebuilds only that component and an interrupted build resumes where it stopped.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"

cache_root="${KIAM_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kiam-eks/e2e}"
jobs="${KIAM_E2E_BUILD_JOBS:-2}"
# In build order, two at a time: the longest first; language-adapter after pulumi and
# language-nodejs after language-python, whose compiled packages they share (same GOCACHE).
components=(kubernetes kubernetes-provider pulumi kwok etcd promtool language-python language-yaml
  language-adapter language-nodejs)
# The e2e bin directory puts the adapter in front of the sdk v3.68 hosts: they are installed as
# pulumi-language-<lang>$wrapped_suffix, the adapter as pulumi-language-<lang> (link_bin).
wrapped_suffix="-$(cut -d. -f1,2 <<<"$PULUMI_LANGUAGE_HOST_SDK_VERSION")"

# A private Go environment: pruning it never touches the user's own caches, and a toolchain
# directive in a dependency's go.mod fails loudly instead of downloading another Go.
export GOMODCACHE="$cache_root/go/mod" GOCACHE="$cache_root/go/build"
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-buildvcs=false -trimpath"

log() { printf '[toolchain] %s\n' "$*" >&2; }

# --- what each wrapper requires, and how each is built -------------------------------------------

kube_ldflags() {
  local pkg flags=""
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X $pkg.gitVersion=$KUBERNETES_VERSION -X $pkg.gitMajor=1"
    flags+=" -X $pkg.gitMinor=$(cut -d. -f2 <<<"$KUBERNETES_VERSION")"
    flags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=2026-01-01T00:00:00Z"
    flags+=" -X $pkg.gitCommit=0000000000000000000000000000000000000000"
  done
  echo "$flags"
}

ldflags() {
  case "$1" in
    pulumi) echo "-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$PULUMI_VERSION" ;;
    kubernetes-provider)
      echo "-X github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version=$KUBERNETES_PROVIDER_RELEASE" ;;
    kubernetes) kube_ldflags ;;
    language-nodejs) echo "-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$PULUMI_LANGUAGE_HOST_SDK_VERSION" ;;
    # pulumi-yaml's own Makefile stamps the bare version (no v); GetPluginInfo reports it.
    language-yaml) echo "-X github.com/pulumi/pulumi-yaml/pkg/version.Version=${PULUMI_YAML_VERSION#v}" ;;
    language-adapter) echo "-X main.wrappedSuffix=$wrapped_suffix" ;;
    *) echo "" ;;
  esac
}

# Go build tags per component. promtool: only `promtool test rules` runs here, which needs no
# service discovery; Prometheus's README (v0.316.0, "Service discovery plugins") documents
# `remove_all_sd` as "Exclude all optional service discoveries (keeps file_sd, static_sd, and
# http_sd)": it drops the cloud SDKs, most of promtool's compile time.
build_tags() {
  case "$1" in
    promtool) echo "remove_all_sd" ;;
    *) echo "" ;;
  esac
}

# The main packages of each component (also its go.mod `tool` lines) and the binary names.
tools() {
  case "$1" in
    pulumi) echo "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi" ;;
    language-python) echo "github.com/pulumi/pulumi/sdk/v3/python/cmd/pulumi-language-python" ;;
    language-nodejs) echo "github.com/pulumi/pulumi/sdk/v3/nodejs/cmd/pulumi-language-nodejs" ;;
    language-yaml) echo "github.com/pulumi/pulumi-yaml/cmd/pulumi-language-yaml" ;;
    # Our own program (language-adapter/main.go), the wrapper module's root package.
    language-adapter) echo "kiam-eks/e2e/toolchain/language-adapter" ;;
    kubernetes-provider) echo "github.com/pulumi/pulumi-kubernetes/provider/v4/cmd/pulumi-resource-kubernetes" ;;
    kubernetes) printf '%s\n' k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
      k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl ;;
    etcd) echo "go.etcd.io/etcd/server/v3" ;;
    kwok) printf '%s\n' sigs.k8s.io/kwok/cmd/kwok sigs.k8s.io/kwok/cmd/kwokctl ;;
    promtool) echo "github.com/prometheus/prometheus/cmd/promtool" ;;
  esac
}

binary_name() {
  case "$1" in
    go.etcd.io/etcd/server/v3) echo etcd ;;
    kiam-eks/e2e/toolchain/language-adapter) echo pulumi-language-adapter ;;
    *) basename "$1" ;;
  esac
}

# Renders a wrapper's go.mod (before `go mod tidy` fills in the indirect requirements).
render_go_mod() {
  local component="$1" tool
  echo "// Generated by e2e/toolchain/build.sh lock from versions.env; do not edit by hand."
  echo "module kiam-eks/e2e/toolchain/$component"
  echo
  echo "go 1.26"
  echo
  case "$component" in
    pulumi)
      echo "require github.com/pulumi/pulumi/pkg/v3 $PULUMI_VERSION"
      echo "require github.com/pulumi/pulumi/sdk/v3 $PULUMI_VERSION"
      # pkg/v3's own go.mod carries this fork; its other replace (../sdk) is for its monorepo.
      echo "replace github.com/atotto/clipboard => github.com/tgummerer/clipboard v0.0.0-20241001131231-d02d263e614e" ;;
    language-python | language-nodejs)
      echo "require github.com/pulumi/pulumi/sdk/v3 $PULUMI_LANGUAGE_HOST_SDK_VERSION" ;;
    language-yaml) echo "require github.com/pulumi/pulumi-yaml $PULUMI_YAML_VERSION" ;;
    language-adapter)
      # The code generator and npm/pip helpers of the CLI's own release.
      echo "require github.com/pulumi/pulumi/pkg/v3 $PULUMI_VERSION"
      echo "require github.com/pulumi/pulumi/sdk/v3 $PULUMI_VERSION"
      echo "replace github.com/atotto/clipboard => github.com/tgummerer/clipboard v0.0.0-20241001131231-d02d263e614e" ;;
    kubernetes-provider)
      echo "require github.com/pulumi/pulumi-kubernetes/provider/v4 $KUBERNETES_PROVIDER_MODULE_VERSION"
      # The module zip lacks two go:embed files; build.sh completes a copy of it here.
      echo "replace github.com/pulumi/pulumi-kubernetes/provider/v4 => ./provider-src" ;;
    kubernetes)
      echo "require k8s.io/kubernetes $KUBERNETES_VERSION"
      # kubernetes requires its staging modules at v0.0.0 and replaces them with ./staging paths;
      # outside its repository they are the published k8s.io/X v0.<minor>.<patch> modules.
      local staging="v0${KUBERNETES_VERSION#v1}"
      go mod download -json "k8s.io/kubernetes@$KUBERNETES_VERSION" \
        | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p' | xargs cat \
        | awk '$1 ~ /^k8s\.io\// && $2 == "v0.0.0" {print $1}' | sort -u \
        | while read -r module; do echo "replace $module => $module $staging"; done ;;
    etcd) echo "require go.etcd.io/etcd/server/v3 $ETCD_VERSION" ;;
    kwok) echo "require sigs.k8s.io/kwok $KWOK_VERSION" ;;
    promtool) echo "require github.com/prometheus/prometheus $PROMETHEUS_MODULE_VERSION" ;;
  esac
  echo
  for tool in $(tools "$component"); do
    [[ "$tool" == "kiam-eks/e2e/toolchain/$component" ]] || echo "tool $tool"
  done
}

# --- work directories (every go command runs in a copy, never in the work tree) ------------------

work_dir() { echo "$cache_root/work/$1"; }

prepare_provider_source() {
  local dest="$1" src
  [[ -f "$dest/.complete" ]] && return 0
  rm -rf "$dest"
  src="$(go mod download -json "github.com/pulumi/pulumi-kubernetes/provider/v4@$KUBERNETES_PROVIDER_MODULE_VERSION" \
    | sed -n 's/.*"Dir": "\(.*\)",*/\1/p')"
  cp -r "$src" "$dest"
  chmod -R u+w "$dest"
  # What cmd/pulumi-resource-kubernetes/generate.go writes before a release build: the schema with
  # its version stamped, and the terraform mapping, both as compact JSON.
  python3 - "$dest/cmd/pulumi-resource-kubernetes" "$KUBERNETES_PROVIDER_RELEASE" <<'PY'
import json, pathlib, sys
folder, version = pathlib.Path(sys.argv[1]), sys.argv[2]
schema = json.loads((folder / "schema.json").read_text())
schema["version"] = version
(folder / "schema-embed.json").write_text(json.dumps(schema, separators=(",", ":")))
mapping = json.loads((folder / "terraform-mapping.json").read_text())
(folder / "terraform-mapping-embed.json").write_text(json.dumps(mapping, separators=(",", ":")))
PY
  touch "$dest/.complete"
}

# The adapter is our own source: the copy builds (and `go mod tidy` reads) its main.go.
own_source() {
  if [[ "$1" == language-adapter ]]; then cp "$here/$1/main.go" "$2/"; fi
}

prepare_work() {
  local component="$1" dir
  dir="$(work_dir "$component")"
  mkdir -p "$dir"
  cp "$here/$component/go.mod" "$here/$component/go.sum" "$dir/" 2>/dev/null || true
  own_source "$component" "$dir"
  if [[ "$component" == kubernetes-provider ]]; then prepare_provider_source "$dir/provider-src"; fi
  echo "$dir"
}

# --- lock ------------------------------------------------------------------------------------------

lock() {
  local component dir
  local -a which=("$@")
  ((${#which[@]})) || which=("${components[@]}")
  for component in "${which[@]}"; do
    printf '%s\n' "${components[@]}" | grep -x "$component" >/dev/null \
      || { echo "build.sh: no component $component" >&2; return 2; }
    log "lock $component"
    dir="$(work_dir "$component")"
    mkdir -p "$dir" "$here/$component"
    rm -f "$dir/go.mod" "$dir/go.sum"
    render_go_mod "$component" >"$dir/go.mod"
    own_source "$component" "$dir"
    if [[ "$component" == kubernetes-provider ]]; then prepare_provider_source "$dir/provider-src"; fi
    (cd "$dir" && go mod tidy)
    cp "$dir/go.mod" "$dir/go.sum" "$here/$component/"
  done
}

# --- build -----------------------------------------------------------------------------------------

component_key() {
  local component="$1"
  {
    cat "$here/$component/go.mod" "$here/$component/go.sum"
    ldflags "$component"
    echo "tags $(build_tags "$component")"
    echo "$go_version"
    [[ "$component" == language-python ]] && echo "exec from sdk $PULUMI_VERSION"
    [[ "$component" == language-adapter ]] && cat "$here/$component/main.go"
    [[ "$component" == kubernetes-provider ]] && echo "embed $KUBERNETES_PROVIDER_RELEASE"
  } | sha256sum | cut -c1-16
}

component_dir() { echo "$cache_root/$1-$(component_key "$1")"; }

# Builds a component, or only some of its binaries (then each gets its own stamp, `.built-<name>`;
# `.complete` still means every binary of the component is there).
build_component() {
  local component="$1" out dir tool started name
  shift
  local wanted=("$@")
  out="$(component_dir "$component")"
  [[ -f "$out/.complete" ]] && return 0
  started=$SECONDS
  dir="$(prepare_work "$component")"
  mkdir -p "$out/bin"
  for tool in $(tools "$component"); do
    name="$(binary_name "$tool")"
    if ((${#wanted[@]})) && ! printf '%s\n' "${wanted[@]}" | grep -x "$name" >/dev/null; then continue; fi
    [[ -f "$out/.built-$name" ]] && continue
    (cd "$dir" && go build -tags "$(build_tags "$component")" -ldflags "-s -w $(ldflags "$component")" -o "$out/bin/$name" "$tool")
    touch "$out/.built-$name"
  done
  if [[ "$component" == language-python ]]; then
    # The host runs this Python script to start a program; it must match the CLI's SDK generation.
    local sdk
    sdk="$(go mod download -json "github.com/pulumi/pulumi/sdk/v3@$PULUMI_VERSION" | sed -n 's/.*"Dir": "\(.*\)",*/\1/p')"
    install -m 0755 "$sdk/python/cmd/pulumi-language-python-exec" "$out/bin/"
  fi
  if ((${#wanted[@]} == 0)); then
    echo "$((SECONDS - started))" >"$out/build-seconds"
    touch "$out/.complete"
  else
    echo "$((SECONDS - started))" >"$out/build-seconds-$(IFS=-; echo "${wanted[*]}")"
  fi
}

# The binaries of a component (what `tools` builds, plus the language host's script).
binaries() {
  local tool
  for tool in $(tools "$1"); do binary_name "$tool"; done
  [[ "$1" == language-python ]] && echo pulumi-language-python-exec
  return 0
}

component_of() {
  local component
  for component in "${components[@]}"; do
    binaries "$component" | grep -x "$1" >/dev/null && { echo "$component"; return 0; }
  done
  echo "build.sh: no component builds $1" >&2
  return 2
}

is_built() {
  local out
  out="$(component_dir "$(component_of "$1")")"
  [[ -f "$out/.complete" || (-f "$out/.built-$1" && -x "$out/bin/$1") ]]
}

# `name path` per binary, exit 1 if one is not built.
paths() {
  local name missing=0
  for name in "$@"; do component_of "$name" >/dev/null || return 2; done
  for name in "$@"; do
    if is_built "$name"; then
      echo "$name $(component_dir "$(component_of "$name")")/bin/$name"
    else
      log "not built: $name"
      missing=1
    fi
  done
  return "$missing"
}

# Builds only the named binaries (a component whose every binary is named is built whole).
build_some() {
  mkdir -p "$cache_root/logs"
  local component name started=$SECONDS
  local -a wanted
  for name in "$@"; do component_of "$name" >/dev/null || return 2; done
  for component in "${components[@]}"; do
    wanted=()
    for name in $(binaries "$component"); do
      printf '%s\n' "$@" | grep -x "$name" >/dev/null && ! is_built "$name" && wanted+=("$name")
    done
    ((${#wanted[@]})) || continue
    [[ "$component" == language-python ]] && wanted=()  # the host and its script go together
    (($(binaries "$component" | wc -l) == ${#wanted[@]})) && wanted=()
    while (($(jobs -rp | wc -l) >= jobs)); do wait -n || true; done
    log "building $component${wanted[*]:+ (only ${wanted[*]})} (log: $cache_root/logs/$component.log)"
    build_component "$component" "${wanted[@]}" >"$cache_root/logs/$component.log" 2>&1 &
  done
  wait
  if ! paths "$@" >/dev/null; then
    for name in "$@"; do
      is_built "$name" && continue
      component="$(component_of "$name")"
      log "FAILED: $name ($component); the end of its log:"
      tail -n 30 "$cache_root/logs/$component.log" >&2
    done
    return 1
  fi
  ((SECONDS - started > 1)) && log "built in $((SECONDS - started)) s"
  paths "$@"
}

toolchain_key() {
  local component
  for component in "${components[@]}"; do component_key "$component"; done | sha256sum | cut -c1-16
}

bin_dir() { echo "$cache_root/toolchain-$(toolchain_key)/bin"; }

# The names a built binary gets in the bin directory: the adapter stands in for the two sdk v3.68
# hosts (it finds each as its own name plus the suffix, beside its own file).
installed_as() {
  case "$1/$2" in
    language-python/pulumi-language-python) echo "pulumi-language-python$wrapped_suffix" ;;
    language-nodejs/pulumi-language-nodejs) echo "pulumi-language-nodejs$wrapped_suffix" ;;
    language-adapter/pulumi-language-adapter) printf '%s\n' pulumi-language-python pulumi-language-nodejs ;;
    *) echo "$2" ;;
  esac
}

# Hard links, not symlinks: the CLI looks for its language host next to its own resolved path,
# and the adapter for the host it wraps next to the name it was started by.
link_bin() {
  local bin component file name
  bin="$(bin_dir)"
  mkdir -p "$bin"
  for component in "${components[@]}"; do
    for file in "$(component_dir "$component")"/bin/*; do
      for name in $(installed_as "$component" "$(basename "$file")"); do
        ln -f "$file" "$bin/$name" 2>/dev/null || cp -f "$file" "$bin/$name"
      done
    done
  done
}

complete() {
  local component
  for component in "${components[@]}"; do
    [[ -f "$(component_dir "$component")/.complete" ]] || return 1
  done
}

build_all() {
  mkdir -p "$cache_root/logs"
  local component started=$SECONDS
  for component in "${components[@]}"; do
    [[ -f "$(component_dir "$component")/.complete" ]] && continue
    while (($(jobs -rp | wc -l) >= jobs)); do wait -n || true; done
    log "building $component (log: $cache_root/logs/$component.log)"
    build_component "$component" >"$cache_root/logs/$component.log" 2>&1 &
  done
  wait
  # The stamps, not exit codes, say what was built: a component is done only once its last step ran.
  if ! complete; then
    for component in "${components[@]}"; do
      [[ -f "$(component_dir "$component")/.complete" ]] && continue
      log "FAILED: $component; the end of its log:"
      tail -n 30 "$cache_root/logs/$component.log" >&2
    done
    return 1
  fi
  ((SECONDS - started > 1)) && log "built in $((SECONDS - started)) s"
  link_bin
  bin_dir
}

# Part of every component's key; asked once (`go env` takes a noticeable moment each time).
[[ "${1:-build}" == prune ]] || go_version="$(go env GOVERSION)"

case "${1:-build}" in
  build) if (($# > 1)); then build_some "${@:2}"; else build_all; fi ;;
  path) paths "${@:2}" ;;
  lock) lock "${@:2}" ;;
  bin) complete && { link_bin; bin_dir; } ;;
  prune) go clean -modcache && rm -rf "$GOCACHE" "$cache_root/work" ;;
  *) echo "usage: $0 [build [BINARY...]|path BINARY...|lock [COMPONENT...]|bin|prune]" >&2; exit 2 ;;
esac

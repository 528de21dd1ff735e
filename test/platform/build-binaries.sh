#!/usr/bin/env bash
# Builds the third-party servers the tests and the demo run against, from their
# published Go modules at pinned versions, and caches the binaries by version under
# ~/.cache/esi/bin. A second run finds them and does nothing.
#
#   test/platform/build-binaries.sh [kube-apiserver|etcd|kube-components|all]
#
# kube-components = kube-controller-manager, kube-scheduler and kubelet (the controllers
# tests opt into, and the node of test/platform/node/).
#
# Why wrapper modules: k8s.io/kubernetes and etcd's server module carry `replace`
# lines in their own go.mod, so `go install mod@version` refuses them. A tiny module
# that requires them (and maps Kubernetes' staging modules to their published
# versions) builds them like any dependency.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"

cache=${ESI_CACHE:-$HOME/.cache/esi}
bin="$cache/bin"
mkdir -p "$bin" "$cache/go/mod" "$cache/go/build" "$cache/go/work"
export GOMODCACHE="$cache/go/mod" GOCACHE="$cache/go/build" GOFLAGS=-mod=mod GOTOOLCHAIN=${GOTOOLCHAIN:-auto}
export CGO_ENABLED=0 GOPROXY=${GOPROXY:-https://proxy.golang.org,direct}

step() { printf '[build-binaries] %s\n' "$*" >&2; }
fail() { printf '[build-binaries] FAILED at step: %s\n' "$*" >&2; exit 1; }

# Writes the wrapper module for k8s.io/kubernetes commands into $1 and resolves its
# dependencies. Every Kubernetes command is built from a module with this same go.mod, so
# the packages they share compile once into the Go build cache.
kube_wrapper() {
  local w=$1; shift
  local staging="v0.${KUBERNETES_VERSION#v1.}"
  step "k8s.io/kubernetes $KUBERNETES_VERSION: downloading"
  local gomod
  gomod=$(cd "$w" && go mod download -json "k8s.io/kubernetes@$KUBERNETES_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p') \
    || fail "download k8s.io/kubernetes@$KUBERNETES_VERSION (is the Go module proxy reachable?)"
  [ -f "$gomod" ] || fail "locate go.mod of k8s.io/kubernetes@$KUBERNETES_VERSION"
  step "writing wrapper module in $w (staging modules -> $staging)"
  {
    echo "module esi.local/kubernetes-build"
    echo "go 1.24"
    echo "require k8s.io/kubernetes $KUBERNETES_VERSION"
    # every `k8s.io/x => ./staging/src/k8s.io/x` line becomes `k8s.io/x => k8s.io/x v0.N.M`
    grep -E '^\s*k8s\.io/[a-z0-9-]+ => \./staging/' "$gomod" \
      | awk -v v="$staging" '{print "replace " $1 " => " $1 " " v}'
  } >"$w/go.mod"
  { printf 'package tools\n\nimport (\n'; for cmd in "$@"; do printf '\t_ "k8s.io/kubernetes/cmd/%s"\n' "$cmd"; done; printf ')\n'; } >"$w/tools.go"
  step "resolving dependencies of $* (go mod tidy)"
  (cd "$w" && go mod tidy >"$w/tidy.log" 2>&1) || { tail -30 "$w/tidy.log" >&2; fail "go mod tidy for $*"; }
}

# -ldflags stamping the release so /version (and kubelet's node status) report it.
kube_ldflags() {
  local major=${KUBERNETES_VERSION#v}; major=${major%%.*}
  local minor=${KUBERNETES_VERSION#v*.}; minor=${minor%%.*}
  local pkg=k8s.io/component-base/version
  echo "-s -w -X $pkg.gitVersion=$KUBERNETES_VERSION -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
}

# Concurrent runs (test files, helpers) wait for each other instead of both building:
# every build starts with `rm -rf` of its work directory.
lock() { exec 9>"$bin/.$1.lock"; flock 9; }

build_kube_apiserver() {
  local out="$bin/kube-apiserver-$KUBERNETES_VERSION"
  lock "kube-apiserver-$KUBERNETES_VERSION"
  [ -x "$out" ] && { step "kube-apiserver $KUBERNETES_VERSION cached at $out"; return; }
  local w="$cache/go/work/kube-apiserver-$KUBERNETES_VERSION"
  rm -rf "$w" && mkdir -p "$w"
  kube_wrapper "$w" kube-apiserver
  step "kube-apiserver: compiling (several minutes on 2 cores, cached afterwards)"
  (cd "$w" && go build -trimpath -ldflags="$(kube_ldflags)" -o "$out.tmp" k8s.io/kubernetes/cmd/kube-apiserver) \
    || fail "go build k8s.io/kubernetes/cmd/kube-apiserver"
  mv "$out.tmp" "$out"
  step "kube-apiserver ready: $out"
}

# kube-controller-manager (garbage collector and the controllers a node needs),
# kube-scheduler and kubelet: one `go build` of the three, so their shared packages (and
# those shared with kube-apiserver, already in the build cache) compile once and the
# linker runs in parallel.
KUBE_COMPONENTS="kube-controller-manager kube-scheduler kubelet"
build_kube_components() {
  lock "kube-components-$KUBERNETES_VERSION"
  local missing=() c
  for c in $KUBE_COMPONENTS; do [ -x "$bin/$c-$KUBERNETES_VERSION" ] || missing+=("$c"); done
  [ ${#missing[@]} -eq 0 ] && { step "$KUBE_COMPONENTS $KUBERNETES_VERSION cached in $bin"; return; }
  local w="$cache/go/work/kube-components-$KUBERNETES_VERSION"
  rm -rf "$w" && mkdir -p "$w/out"
  kube_wrapper "$w" "${missing[@]}"
  step "${missing[*]}: compiling (minutes on 2 cores; packages shared with kube-apiserver come from the build cache)"
  local pkgs=() started=$SECONDS
  for c in "${missing[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
  (cd "$w" && go build -trimpath -ldflags="$(kube_ldflags)" -o "$w/out/" "${pkgs[@]}") \
    || fail "go build ${pkgs[*]}"
  for c in "${missing[@]}"; do mv "$w/out/$c" "$bin/$c-$KUBERNETES_VERSION"; done
  step "${missing[*]} ready in $bin ($((SECONDS - started))s)"
}

build_etcd() {
  local out="$bin/etcd-$ETCD_VERSION"
  lock "etcd-$ETCD_VERSION"
  [ -x "$out" ] && { step "etcd $ETCD_VERSION cached at $out"; return; }
  local w="$cache/go/work/etcd-$ETCD_VERSION"
  rm -rf "$w" && mkdir -p "$w"
  step "etcd $ETCD_VERSION: writing wrapper module"
  {
    echo "module esi.local/etcd-build"
    echo "go 1.24"
    echo "require go.etcd.io/etcd/server/v3 $ETCD_VERSION"
  } >"$w/go.mod"
  printf 'package tools\n\nimport _ "go.etcd.io/etcd/server/v3"\n' >"$w/tools.go"
  step "etcd: resolving dependencies (go mod tidy)"
  (cd "$w" && go mod tidy >"$w/tidy.log" 2>&1) || { tail -30 "$w/tidy.log" >&2; fail "go mod tidy for etcd"; }
  step "etcd: compiling"
  (cd "$w" && go build -trimpath -ldflags="-s -w" -o "$out.tmp" go.etcd.io/etcd/server/v3) \
    || fail "go build go.etcd.io/etcd/server/v3"
  mv "$out.tmp" "$out"
  step "etcd ready: $out"
}

case "${1:-all}" in
  kube-apiserver) build_kube_apiserver ;;
  etcd) build_etcd ;;
  kube-components) build_kube_components ;;
  all) build_etcd; build_kube_apiserver; build_kube_components ;;
  *) echo "usage: $0 [kube-apiserver|etcd|kube-components|all]" >&2; exit 2 ;;
esac

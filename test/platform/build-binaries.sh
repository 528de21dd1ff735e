#!/usr/bin/env bash
# Builds the third-party servers the tests and the demo run against, from their
# published Go modules at pinned versions, and caches the binaries by version under
# ~/.cache/esi/bin. A second run finds them and does nothing.
#
#   test/platform/build-binaries.sh [kube-apiserver|etcd|all]
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

build_kube_apiserver() {
  local out="$bin/kube-apiserver-$KUBERNETES_VERSION"
  [ -x "$out" ] && { step "kube-apiserver $KUBERNETES_VERSION cached at $out"; return; }
  local w="$cache/go/work/kube-apiserver-$KUBERNETES_VERSION" staging="v0.${KUBERNETES_VERSION#v1.}"
  rm -rf "$w" && mkdir -p "$w"
  step "kube-apiserver $KUBERNETES_VERSION: downloading k8s.io/kubernetes"
  local gomod
  gomod=$(cd "$w" && go mod download -json "k8s.io/kubernetes@$KUBERNETES_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p') \
    || fail "download k8s.io/kubernetes@$KUBERNETES_VERSION (is the Go module proxy reachable?)"
  [ -f "$gomod" ] || fail "locate go.mod of k8s.io/kubernetes@$KUBERNETES_VERSION"
  step "kube-apiserver: writing wrapper module (staging modules -> $staging)"
  {
    echo "module esi.local/kube-apiserver-build"
    echo "go 1.24"
    echo "require k8s.io/kubernetes $KUBERNETES_VERSION"
    # every `k8s.io/x => ./staging/src/k8s.io/x` line becomes `k8s.io/x => k8s.io/x v0.N.M`
    grep -E '^\s*k8s\.io/[a-z0-9-]+ => \./staging/' "$gomod" \
      | awk -v v="$staging" '{print "replace " $1 " => " $1 " " v}'
    echo 'import _ "k8s.io/kubernetes/cmd/kube-apiserver"' >/dev/null
  } >"$w/go.mod"
  printf 'package tools\n\nimport _ "k8s.io/kubernetes/cmd/kube-apiserver"\n' >"$w/tools.go"
  step "kube-apiserver: resolving dependencies (go mod tidy)"
  (cd "$w" && go mod tidy >"$w/tidy.log" 2>&1) || { tail -30 "$w/tidy.log" >&2; fail "go mod tidy for kube-apiserver"; }
  step "kube-apiserver: compiling (several minutes on 2 cores, cached afterwards)"
  # Stamp the version so /version reports the release (clients and tests read it).
  local major=${KUBERNETES_VERSION#v}; major=${major%%.*}
  local minor=${KUBERNETES_VERSION#v*.}; minor=${minor%%.*}
  local pkg=k8s.io/component-base/version
  local ldflags="-s -w -X $pkg.gitVersion=$KUBERNETES_VERSION -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
  (cd "$w" && go build -trimpath -ldflags="$ldflags" -o "$out.tmp" k8s.io/kubernetes/cmd/kube-apiserver) \
    || fail "go build k8s.io/kubernetes/cmd/kube-apiserver"
  mv "$out.tmp" "$out"
  step "kube-apiserver ready: $out"
}

build_etcd() {
  local out="$bin/etcd-$ETCD_VERSION"
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
  all) build_etcd; build_kube_apiserver ;;
  *) echo "usage: $0 [kube-apiserver|etcd|all]" >&2; exit 2 ;;
esac

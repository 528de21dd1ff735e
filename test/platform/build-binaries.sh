#!/usr/bin/env bash
# Builds the third-party servers the tests and the demo run against, from their
# published Go modules at pinned versions, and caches the binaries by version under
# ~/.cache/esi/bin. A second run finds them and does nothing.
#
#   test/platform/build-binaries.sh [kube-apiserver|etcd|kube-components|actionlint|all|full]
#
# all = etcd + kube-apiserver (the control plane; what the demo needs).
# kube-components = kube-controller-manager, kube-scheduler and kubelet (the controllers
# tests opt into, and the node of test/platform/node/).
# actionlint = the GitHub Actions workflow checker test/e2e/release/workflows.test.ts runs.
# full = all + kube-components + actionlint (what the tests need; cold, one go build for
# the four Kubernetes commands).
#
# Why wrapper modules: k8s.io/kubernetes and etcd's server module carry `replace`
# lines in their own go.mod, so `go install mod@version` refuses them. A tiny module
# that requires them (and maps Kubernetes' staging modules to their published
# versions) builds them like any dependency.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"

# shellcheck source=go-module.sh
source "$here/go-module.sh" build-binaries

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

# Builds the given k8s.io/kubernetes commands (those not cached yet) in ONE `go build`:
# packages they share compile once and their links run in parallel. Cold, all four
# (kube-apiserver, kube-controller-manager, kube-scheduler, kubelet) build together.
build_kube() {
  lock "kubernetes-$KUBERNETES_VERSION"
  local missing=() c
  for c in "$@"; do [ -x "$bin/$c-$KUBERNETES_VERSION" ] || missing+=("$c"); done
  [ ${#missing[@]} -eq 0 ] && { step "$* $KUBERNETES_VERSION cached in $bin"; return; }
  local w="$cache/go/work/kubernetes-$KUBERNETES_VERSION"
  rm -rf "$w" && mkdir -p "$w/out"
  kube_wrapper "$w" "${missing[@]}"
  step "${missing[*]}: compiling (minutes on 2 cores; cached afterwards)"
  local pkgs=() started=$SECONDS
  for c in "${missing[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
  (cd "$w" && go build -trimpath -ldflags="$(kube_ldflags)" -o "$w/out/" "${pkgs[@]}") \
    || fail "go build ${pkgs[*]}"
  for c in "${missing[@]}"; do mv "$w/out/$c" "$bin/$c-$KUBERNETES_VERSION"; done
  step "${missing[*]} ready in $bin ($((SECONDS - started))s)"
}

# kube-controller-manager (garbage collector and the controllers a node needs),
# kube-scheduler and kubelet (test/platform/node/).
KUBE_COMPONENTS="kube-controller-manager kube-scheduler kubelet"

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

# actionlint's go.mod has no `replace` lines: `go install module/cmd/actionlint@version`
# builds it directly, stamped with its version (`actionlint -version` reports it).
build_actionlint() {
  go_module_install actionlint "$ACTIONLINT_VERSION" github.com/rhysd/actionlint/cmd/actionlint \
    "-s -w -X github.com/rhysd/actionlint.version=$ACTIONLINT_VERSION"
}

case "${1:-all}" in
  kube-apiserver) build_kube kube-apiserver ;;
  etcd) build_etcd ;;
  # shellcheck disable=SC2086
  kube-components) build_kube $KUBE_COMPONENTS ;;
  actionlint) build_actionlint ;;
  # The control plane (what the demo needs).
  all) build_etcd; build_kube kube-apiserver ;;
  # Everything the tests need (npm run platform:build): cold, the four Kubernetes commands
  # compile in one go build.
  # shellcheck disable=SC2086
  full) build_etcd; build_kube kube-apiserver $KUBE_COMPONENTS; build_actionlint ;;
  *) echo "usage: $0 [kube-apiserver|etcd|kube-components|actionlint|all|full]" >&2; exit 2 ;;
esac

#!/usr/bin/env bash
# Builds the `helm` CLI the chart tests run (helm lint / helm template), from its
# published Go module at a pinned version, and caches it under ~/.cache/esi/bin like
# build-binaries.sh does for kube-apiserver and etcd. A second run finds it and does nothing.
#
#   test/platform/build-helm.sh            # builds (or finds) helm, prints nothing on stdout
#   test/platform/build-helm.sh --print    # same, then prints the binary's path on stdout
#
# helm.sh/helm/v3's go.mod has no `replace` lines, so `go install module/cmd/helm@version`
# works directly (no wrapper module needed). Same cache conventions as build-binaries.sh:
# ESI_CACHE (default ~/.cache/esi), GOMODCACHE/GOCACHE under it, GOFLAGS=-mod=mod.
set -euo pipefail

HELM_VERSION=${HELM_VERSION:-v3.22.0}

cache=${ESI_CACHE:-$HOME/.cache/esi}
bin="$cache/bin"
mkdir -p "$bin" "$cache/go/mod" "$cache/go/build" "$cache/go/work"
export GOMODCACHE="$cache/go/mod" GOCACHE="$cache/go/build" GOFLAGS=-mod=mod GOTOOLCHAIN=${GOTOOLCHAIN:-auto}
export CGO_ENABLED=0 GOPROXY=${GOPROXY:-https://proxy.golang.org,direct}

step() { printf '[build-helm] %s\n' "$*" >&2; }
fail() { printf '[build-helm] FAILED at step: %s\n' "$*" >&2; exit 1; }

out="$bin/helm-$HELM_VERSION"
# Test files run in parallel and may all ask for helm at once: one builds, the others wait.
exec 9>"$bin/.helm-$HELM_VERSION.lock"
flock 9
if [ -x "$out" ]; then
  step "helm $HELM_VERSION cached at $out"
else
  command -v go >/dev/null || fail "find the go toolchain (install Go to build helm)"
  w="$cache/go/work/helm-$HELM_VERSION"
  rm -rf "$w" && mkdir -p "$w"
  step "helm $HELM_VERSION: compiling helm.sh/helm/v3/cmd/helm (a few minutes the first time)"
  # Stamp the version so `helm version` reports the release instead of "v3.x-dev".
  pkg=helm.sh/helm/v3/internal/version
  ldflags="-s -w -X $pkg.version=$HELM_VERSION -X $pkg.gitTreeState=clean"
  (cd "$w" && GOBIN="$w" go install -trimpath -ldflags="$ldflags" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" >"$w/build.log" 2>&1) \
    || { tail -30 "$w/build.log" >&2; fail "go install helm.sh/helm/v3/cmd/helm@$HELM_VERSION"; }
  mv "$w/helm" "$out"
  step "helm ready: $out"
fi
"$out" version --short >&2 || fail "run $out version"
[ "${1:-}" = "--print" ] && echo "$out"
exit 0

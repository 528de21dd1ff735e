#!/usr/bin/env bash
# Builds the `helm` CLI the chart tests run (helm lint / helm template), from its
# published Go module at a pinned version, and caches it under ~/.cache/esi/bin like
# build-binaries.sh does for kube-apiserver and etcd. A second run finds it and does nothing.
#
#   test/platform/build-helm.sh            # builds (or finds) helm, prints nothing on stdout
#   test/platform/build-helm.sh --print    # same, then prints the binary's path on stdout
#
# helm.sh/helm/v3's go.mod has no `replace` lines, so `go install module/cmd/helm@version`
# works directly (go-module.sh, the cache conventions every platform build shares).
set -euo pipefail

HELM_VERSION=${HELM_VERSION:-v3.22.0}

# shellcheck source=go-module.sh
source "$(cd "$(dirname "$0")" && pwd)/go-module.sh" build-helm

# Stamp the version so `helm version` reports the release instead of "v3.x-dev".
pkg=helm.sh/helm/v3/internal/version
go_module_install helm "$HELM_VERSION" helm.sh/helm/v3/cmd/helm "-s -w -X $pkg.version=$HELM_VERSION -X $pkg.gitTreeState=clean"
out="$bin/helm-$HELM_VERSION"
"$out" version --short >&2 || fail "run $out version"
[ "${1:-}" = "--print" ] && echo "$out"
exit 0

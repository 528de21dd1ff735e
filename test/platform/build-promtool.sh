#!/usr/bin/env bash
# Builds Prometheus' `promtool` (the chart's alert rules are checked with `promtool check
# rules` and `promtool test rules`), from the published Go module at a pinned version, and
# caches it under ~/.cache/esi/bin as build-helm.sh does for helm. A second run finds it and
# does nothing.
#
#   test/platform/build-promtool.sh            # builds (or finds) promtool, prints nothing on stdout
#   test/platform/build-promtool.sh --print    # same, then prints the binary's path on stdout
#
# The Prometheus module v0.X.Y is Prometheus 3.X.Y (v0.316.0 = 3.16.0). Same cache
# conventions as build-helm.sh: ESI_CACHE (default ~/.cache/esi), GOMODCACHE/GOCACHE under
# it, GOFLAGS=-mod=mod.
set -euo pipefail

PROMTOOL_VERSION=${PROMTOOL_VERSION:-v0.316.0}

cache=${ESI_CACHE:-$HOME/.cache/esi}
bin="$cache/bin"
mkdir -p "$bin" "$cache/go/mod" "$cache/go/build" "$cache/go/work"
export GOMODCACHE="$cache/go/mod" GOCACHE="$cache/go/build" GOFLAGS=-mod=mod GOTOOLCHAIN=${GOTOOLCHAIN:-auto}
export CGO_ENABLED=0 GOPROXY=${GOPROXY:-https://proxy.golang.org,direct}

step() { printf '[build-promtool] %s\n' "$*" >&2; }
fail() { printf '[build-promtool] FAILED at step: %s\n' "$*" >&2; exit 1; }

out="$bin/promtool-$PROMTOOL_VERSION"
exec 9>"$bin/.promtool-$PROMTOOL_VERSION.lock"
flock 9
if [ -x "$out" ]; then
  step "promtool $PROMTOOL_VERSION cached at $out"
else
  command -v go >/dev/null || fail "find the go toolchain (install Go to build promtool)"
  w="$cache/go/work/promtool-$PROMTOOL_VERSION"
  rm -rf "$w" && mkdir -p "$w"
  step "promtool $PROMTOOL_VERSION: compiling github.com/prometheus/prometheus/cmd/promtool (several minutes the first time)"
  (cd "$w" && GOBIN="$w" go install -trimpath -ldflags="-s -w" "github.com/prometheus/prometheus/cmd/promtool@$PROMTOOL_VERSION" >"$w/build.log" 2>&1) \
    || { tail -30 "$w/build.log" >&2; fail "go install github.com/prometheus/prometheus/cmd/promtool@$PROMTOOL_VERSION"; }
  mv "$w/promtool" "$out"
  step "promtool ready: $out"
fi
"$out" --version >&2 || fail "run $out --version"
[ "${1:-}" = "--print" ] && echo "$out"
exit 0

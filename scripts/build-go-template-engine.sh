#!/usr/bin/env bash
# Builds the Go template oracle (test/support/templating/go-oracle: text/template + Sprig + ESO's
# helpers), the reference ESI's TypeScript engine is tested against; it is never shipped
# (docs/decisions/0087-templating-engines.md). Module versions are pinned by its
# go.mod/go.sum; the binary is cached under ~/.cache/esi/go-template/<source hash>/, the
# hash over the oracle's go.mod, go.sum and *.go files (test/support/templating/go-oracle/locate.ts
# computes the same hash to find it). A second run with unchanged sources does nothing.
#
#   scripts/build-go-template-engine.sh          # build if needed, print the directory
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
src="$root/test/support/templating/go-oracle"
cache=${ESI_CACHE:-$HOME/.cache/esi}
mkdir -p "$cache/go/mod" "$cache/go/build"
export GOMODCACHE="$cache/go/mod" GOCACHE="$cache/go/build" GOFLAGS=-mod=readonly GOTOOLCHAIN=${GOTOOLCHAIN:-auto}
export GOPROXY=${GOPROXY:-https://proxy.golang.org,direct}

step() { printf '[build-go-template-engine] %s\n' "$*" >&2; }

hash=$(cd "$src" && for f in $(ls go.mod go.sum ./*.go | sed 's#^\./##' | LC_ALL=C sort); do printf '%s\0' "$f"; cat "$f"; printf '\0'; done | sha256sum | cut -c1-16)
out="$cache/go-template/$hash"
if [ -x "$out/engine-native" ]; then
  step "cached at $out"
  echo "$out"
  exit 0
fi
command -v go >/dev/null || { step "FAILED: the Go toolchain (go) is not on PATH"; exit 1; }
tmp="$out.tmp.$$"
rm -rf "$tmp" && mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
step "building $hash (a minute or two cold on 2 cores)"
(cd "$src" && CGO_ENABLED=0 go build -trimpath -o "$tmp/engine-native" .)
rm -rf "$out" && mv "$tmp" "$out"
trap - EXIT
step "ready: $out"
echo "$out"

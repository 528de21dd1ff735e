#!/usr/bin/env bash
# Builds the Vault-API dev server the `vault` provider tests run against, from its Go
# module at a pinned version, cached at ~/.cache/esi/bin/<impl>-<version>. Idempotent:
# a second run finds the binary and returns at once.
#
# Which server: OpenBao is the first choice, but proxy.golang.org refuses its root module
# (`github.com/openbao/openbao/v2`: "403 This module version is not available" for every
# version and for @v/list; only its `api/v2` submodule is served), and this machine has no
# other route to GitHub. So the script builds HashiCorp Vault's module, which speaks the
# same HTTP API (KV v1/v2, token/approle/kubernetes/jwt auth, `server -dev`). Setting
# ESI_VAULT_IMPL=openbao (with OPENBAO_VERSION) builds OpenBao instead where the proxy
# serves it; test/platform/backends/openbao.ts starts whichever binary is present.
#
# Why a wrapper module: both go.mod files carry `replace` lines (./api, ./sdk, forks), so
# `go install module@version` refuses them. A tiny module that requires the server module
# and repeats its non-local replaces builds `main` like any dependency; each local one
# (`X => ./sdk`) becomes `X => X <the version the server's go.mod requires>`, pinned by a
# replace so a plugin that requires a newer X cannot pull in an incompatible tree.
# Why Vault v1.21.0 and not the newest patch: a release's in-tree ./sdk must equal a
# published sdk version. v1.21.0 requires sdk v0.20.0, which matches its tree; v1.21.4's
# tree carries release-branch backports no published sdk has (the build fails), and this
# proxy refuses commit-hash (pseudo-version) queries that could pin the exact tree.
set -euo pipefail

VAULT_VERSION=${VAULT_VERSION:-v1.21.0}
OPENBAO_VERSION=${OPENBAO_VERSION:-v2.4.4}
impl=${ESI_VAULT_IMPL:-vault}

cache=${ESI_CACHE:-$HOME/.cache/esi}
bin="$cache/bin"
mkdir -p "$bin" "$cache/go/mod" "$cache/go/build" "$cache/go/work"
export GOMODCACHE="$cache/go/mod" GOCACHE="$cache/go/build" GOFLAGS=-mod=mod GOTOOLCHAIN=${GOTOOLCHAIN:-auto}
export CGO_ENABLED=0 GOPROXY=${GOPROXY:-https://proxy.golang.org,direct}

step() { printf '[openbao-install] %s\n' "$*" >&2; }
fail() { printf '[openbao-install] FAILED at step: %s\n' "$*" >&2; exit 1; }

case "$impl" in
  vault) module=github.com/hashicorp/vault version=$VAULT_VERSION name=vault ;;
  openbao) module=github.com/openbao/openbao/v2 version=$OPENBAO_VERSION name=bao ;;
  *) fail "ESI_VAULT_IMPL must be vault or openbao, got '$impl'" ;;
esac

out="$bin/$name-$version"
if [ -x "$out" ]; then
  step "$name $version cached at $out"
  exit 0
fi
command -v go >/dev/null || fail "find the go toolchain (install Go >= 1.24)"

w="$cache/go/work/$name-$version"
rm -rf "$w" && mkdir -p "$w"
step "$name $version: downloading $module"
gomod=$(cd "$w" && go mod download -json "$module@$version" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p') \
  || fail "download $module@$version (is the Go module proxy reachable? does it serve this module?)"
[ -f "$gomod" ] || fail "locate go.mod of $module@$version"

step "$name: writing wrapper module"
{
  echo "module esi.local/$name-build"
  echo "go 1.25"
  echo "require $module $version"
  # Keep the replaces that point at other modules (forks, pinned versions).
  grep -E '^\s*replace\s+\S+(\s+v\S+)?\s+=>\s+[^.[:space:]]' "$gomod" || true
  # Pin each `X => ./dir` module to the version the server requires.
  grep -E '^\s*replace\s+\S+\s+=>\s+\./' "$gomod" | awk '{print $2}' | while read -r m; do
    v=$(grep -E "^\s+$m\s+v" "$gomod" | awk '{print $2}' | head -1)
    if [ -n "$v" ]; then echo "replace $m => $m $v"; fi
  done
} >"$w/go.mod"
printf 'package tools\n\nimport _ "%s"\n' "$module" >"$w/tools.go"

step "$name: resolving dependencies (go mod tidy)"
(cd "$w" && go mod tidy >"$w/tidy.log" 2>&1) || { tail -30 "$w/tidy.log" >&2; fail "go mod tidy for $module"; }

step "$name: compiling (10+ minutes on 2 cores the first time, cached afterwards)"
(cd "$w" && go build -trimpath -ldflags="-s -w" -o "$out.tmp" "$module") || fail "go build $module"
mv "$out.tmp" "$out"
step "$name ready: $out ($("$out" version 2>/dev/null | head -1))"

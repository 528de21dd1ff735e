#!/usr/bin/env bash
# Builds HashiCorp's vault-k8s injector (the peer of ESI's webhook in `npm run bench:peers`)
# from its published Go module at a pinned version, cached by version under
# ~/.cache/esi/bin. A second run finds the binary and does nothing.
#
# Why a wrapper module: the Go module proxy serves github.com/hashicorp/vault-k8s up to
# v1.6.2 (later versions answer 403), and `go install …@v1.6.2` fails while listing the
# module's versions. A tiny module that requires it builds its main package like any
# dependency. The Go module and build caches are the ones test/platform/build-binaries.sh
# uses, so a machine that built the test platform reuses most of client-go's packages.
set -euo pipefail

VAULT_K8S_VERSION=${VAULT_K8S_VERSION:-v1.6.2}

cache=${ESI_CACHE:-$HOME/.cache/esi}
bin="$cache/bin"
out="$bin/vault-k8s-$VAULT_K8S_VERSION"
mkdir -p "$bin" "$cache/go/mod" "$cache/go/build" "$cache/go/work"
export GOMODCACHE="$cache/go/mod" GOCACHE="$cache/go/build" GOFLAGS=-mod=mod GOTOOLCHAIN=${GOTOOLCHAIN:-auto}
export CGO_ENABLED=0 GOPROXY=${GOPROXY:-https://proxy.golang.org,direct}

step() { printf '[build-vault-k8s] %s\n' "$*" >&2; }
fail() { printf '[build-vault-k8s] FAILED at step: %s\n' "$*" >&2; exit 1; }

# Concurrent runs wait for each other instead of both building (the build starts with
# `rm -rf` of its own work directory).
exec 9>"$bin/.vault-k8s-$VAULT_K8S_VERSION.lock"
flock 9
if [ -x "$out" ]; then
  step "vault-k8s $VAULT_K8S_VERSION cached at $out"
  exit 0
fi
command -v go >/dev/null || fail "find go (needed once to build vault-k8s; the binary is cached afterwards)"

w="$cache/go/work/vault-k8s-$VAULT_K8S_VERSION"
rm -rf "$w" && mkdir -p "$w"
step "vault-k8s $VAULT_K8S_VERSION: writing wrapper module in $w"
{
  echo "module esi.local/vault-k8s-build"
  echo "go 1.24"
  echo "require github.com/hashicorp/vault-k8s $VAULT_K8S_VERSION"
} >"$w/go.mod"
printf 'package tools\n\nimport _ "github.com/hashicorp/vault-k8s"\n' >"$w/tools.go"
step "vault-k8s: resolving dependencies (go mod tidy)"
(cd "$w" && go mod tidy >"$w/tidy.log" 2>&1) || { tail -30 "$w/tidy.log" >&2; fail "go mod tidy for vault-k8s"; }
step "vault-k8s: compiling (a few minutes on 2 cores, cached afterwards)"
# The version is stamped like the project's own release builds do, so `vault-k8s version` reports it.
(cd "$w" && go build -trimpath \
  -ldflags="-s -w -X github.com/hashicorp/vault-k8s/version.Version=${VAULT_K8S_VERSION#v} -X github.com/hashicorp/vault-k8s/version.VersionPrerelease=" \
  -o "$out.tmp" github.com/hashicorp/vault-k8s) || fail "go build github.com/hashicorp/vault-k8s"
mv "$out.tmp" "$out"
step "vault-k8s ready: $out"

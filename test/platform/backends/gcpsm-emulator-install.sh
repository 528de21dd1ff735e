#!/usr/bin/env bash
# OPTIONAL (test/platform/install-backends.sh): without it the tests use ESI's own emulator.
# The GCP Secret Manager emulator of the gcpsm tests (test/support/platform/backends/gcpsm-emulator.ts).
#
# Preferred: the Go module github.com/blackwell-systems/gcp-secret-manager-emulator at a
# pinned version (a gRPC server of google.cloud.secretmanager.v1.SecretManagerService),
# built with the conventions of build-binaries.sh into
# ${ESI_CACHE:-~/.cache/esi}/bin/gcpsm-emulator-<version>. The module has no `replace`
# lines, so `go install <module>/cmd/server@<version>` builds it directly.
#
# The Go module proxy reachable from ESI's build machine answers 403 ("This module
# version is not available") for that module (and for the other Secret Manager
# emulators on the proxy; PyPI's gcplocal 0.1.0 serves no Secret Manager, see
# docs/providers/gcpsm.md, "Tests"). Then the tests use ESI's own emulator,
# which gcpsm-emulator.ts serves from the official protos shipped in the
# @google-cloud/secret-manager npm package; this script checks those are installed and
# says which one the tests will run. A second run is quick either way.
set -euo pipefail

EMULATOR_MODULE=github.com/blackwell-systems/gcp-secret-manager-emulator
EMULATOR_VERSION=v1.7.2

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
cache=${ESI_CACHE:-$HOME/.cache/esi}
bin="$cache/bin"
out="$bin/gcpsm-emulator-$EMULATOR_VERSION"
mkdir -p "$bin" "$cache/go/mod" "$cache/go/build"

step() { printf '[gcpsm-emulator-install] %s\n' "$*" >&2; }
fail() { printf '[gcpsm-emulator-install] FAILED at step: %s\n' "$*" >&2; exit 1; }

check_local_emulator() {
  (cd "$repo" && node -e '
    require.resolve("@grpc/grpc-js"); require.resolve("@grpc/proto-loader");
    const j = require("@google-cloud/secret-manager/build/protos/protos.json");
    if (!j.nested.google.nested.cloud.nested.secretmanager.nested.v1.nested.SecretManagerService) throw new Error("no SecretManagerService in protos.json");
  ') || fail "find @google-cloud/secret-manager protos and @grpc/* for ESI's emulator (run npm ci)"
}

if [ -x "$out" ]; then
  step "gcp-secret-manager-emulator $EMULATOR_VERSION cached at $out"
  exit 0
fi

export GOMODCACHE="$cache/go/mod" GOCACHE="$cache/go/build" GOFLAGS=-mod=mod GOTOOLCHAIN=${GOTOOLCHAIN:-auto}
export CGO_ENABLED=0 GOPROXY=${GOPROXY:-https://proxy.golang.org,direct}

if ! command -v go >/dev/null; then
  step "no Go toolchain: the tests will use ESI's emulator"
  check_local_emulator
  exit 0
fi

step "gcp-secret-manager-emulator $EMULATOR_VERSION: downloading $EMULATOR_MODULE from the module proxy"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! (cd "$tmp" && GOFLAGS=-mod=mod go mod download -json "$EMULATOR_MODULE@$EMULATOR_VERSION" >"$tmp/download.json" 2>"$tmp/download.err"); then
  reason=$(grep -ho 'server response: .*\|[0-9][0-9][0-9] [A-Z][a-zA-Z ]*' "$tmp/download.json" "$tmp/download.err" | head -1 || true)
  step "the module proxy does not serve $EMULATOR_MODULE@$EMULATOR_VERSION (${reason:-see go mod download}); the tests will use ESI's emulator"
  check_local_emulator
  step "ESI's emulator ready (served by test/support/platform/backends/gcpsm-emulator.ts)"
  exit 0
fi

step "gcp-secret-manager-emulator $EMULATOR_VERSION: compiling cmd/server"
GOBIN="$tmp/bin" go install -trimpath -ldflags="-s -w" "$EMULATOR_MODULE/cmd/server@$EMULATOR_VERSION" \
  || fail "go install $EMULATOR_MODULE/cmd/server@$EMULATOR_VERSION"
mv "$tmp/bin/server" "$out.tmp" && mv "$out.tmp" "$out"
step "gcp-secret-manager-emulator $EMULATOR_VERSION ready: $out"

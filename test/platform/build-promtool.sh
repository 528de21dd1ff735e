#!/usr/bin/env bash
# Installs Prometheus' `promtool` (test/charts/esi/templates/monitoring.test.ts checks the chart's
# alert rules with `promtool check rules` and evaluates them with `promtool test rules`),
# pinned, cached under ~/.cache/esi/bin/promtool-<version>. A second run finds it and does
# nothing.
#
#   test/platform/build-promtool.sh            # installs (or finds) promtool, prints nothing on stdout
#   test/platform/build-promtool.sh --print    # same, then prints the binary's path on stdout
#
# From Debian 12's `prometheus` package, not from the Go module: promtool imports every
# service discovery of Prometheus (the cloud SDKs among them), and compiling it cold took
# more than 30 minutes on the project's 2-core machine under load, where downloading the
# package and taking promtool out of it takes seconds (BENCHMARKS.md, "Fresh machine").
# Only the binary is extracted (dpkg-deb -x): nothing is installed, no Prometheus server
# or service lands on the machine. The binary links only glibc.
#
# Pinned as far as Debian's mirror allows (test/platform/apt-pinned.sh): the mirror serves
# only the current point release, so when a security update replaces the pinned version
# the served one is used and a warning names the drift (update the pin then).
set -euo pipefail

PROMTOOL_DEB_VERSION=${PROMTOOL_DEB_VERSION:-2.42.0+ds-5+deb12u1}

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=apt-pinned.sh
source "$here/apt-pinned.sh"
APT_PINNED_TAG=build-promtool
cache=${ESI_CACHE:-$HOME/.cache/esi}
bin="$cache/bin"
archives="$cache/apt/archives"
mkdir -p "$bin" "$archives"

step() { apt_pinned_step "$@"; }
fail() { apt_pinned_fail "$@"; }

# Test files may ask for promtool at once: one installs, the others wait and find it.
exec 9>"$bin/.promtool.lock"
flock 9

out="$bin/promtool-$PROMTOOL_DEB_VERSION"
if [ ! -x "$out" ]; then
  command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null \
    || fail "find apt-get and dpkg-deb (the test platform runs on Debian 12)"
  deb=$(ls "$archives/prometheus_${PROMTOOL_DEB_VERSION//:/%3a}_"*.deb 2>/dev/null | head -1 || true)
  version=$PROMTOOL_DEB_VERSION
  if [ -z "$deb" ]; then
    if ! apt_pinned_candidate prometheus | grep -q '^[0-9]'; then
      [ "$(id -u)" = 0 ] || fail "no apt package lists and not root: run apt-get update as root"
      step "no package lists: apt-get update"
      apt-get update -q >&2 || fail "apt-get update (is a Debian 12 apt source reachable?)"
    fi
    if ! apt_pinned_served prometheus "$version"; then
      version=$(apt_pinned_candidate prometheus)
      [ -n "$version" ] && [ "$version" != "(none)" ] || fail "find Debian package prometheus (is an apt source for Debian 12 configured?)"
      step "WARNING: prometheus $PROMTOOL_DEB_VERSION is not served by the mirror; using $version"
      out="$bin/promtool-$version"
    fi
    if [ ! -x "$out" ]; then
      step "downloading Debian package prometheus=$version"
      (cd "$archives" && apt-get download -q "prometheus=$version" >"$archives/.prometheus-download.log" 2>&1) \
        || { cat "$archives/.prometheus-download.log" >&2; fail "apt-get download prometheus=$version"; }
      deb=$(ls "$archives/prometheus_${version//:/%3a}_"*.deb | head -1)
    fi
  fi
  if [ ! -x "$out" ]; then
    w=$(mktemp -d)
    trap 'rm -rf "$w"' EXIT
    dpkg-deb -x "$deb" "$w" || fail "extract $deb"
    mv "$w/usr/bin/promtool" "$out.tmp" && mv "$out.tmp" "$out"
    step "promtool ready: $out"
  fi
else
  step "promtool $PROMTOOL_DEB_VERSION cached at $out"
fi
"$out" --version >&2 || fail "run $out --version"
[ "${1:-}" = "--print" ] && echo "$out"
exit 0

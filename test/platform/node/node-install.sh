#!/usr/bin/env bash
# Installs what the test node runs besides kubelet: containerd, runc and the CNI
# bridge/host-local/loopback plugins, from Debian packages at pinned versions. The .deb
# files are kept under ~/.cache/esi/apt, so a second machine run reinstalls without the
# network; a second run on the same machine finds them installed and does nothing.
#
#   test/platform/node/node-install.sh
#
# Pinned "as far as apt allows": Debian's mirror serves only the current point release, so
# when a security update replaces a pinned version the newest one is installed and a
# warning names the drift (update the pins below then).
set -euo pipefail

PACKAGES=(
  "containerd=1.6.20~ds1-1+deb12u3"
  "runc=1.1.5+ds1-1+deb12u1"
  "containernetworking-plugins=1.1.1+ds1-3+b5"
)

cache=${ESI_CACHE:-$HOME/.cache/esi}
archives="$cache/apt/archives"
mkdir -p "$archives/partial"
step() { printf '[node-install] %s\n' "$*" >&2; }
fail() { printf '[node-install] FAILED at step: %s\n' "$*" >&2; exit 1; }

# awk reads the whole listing (grep -q would close the pipe early: SIGPIPE under pipefail).
served() { apt-cache madison "$1" 2>/dev/null | awk -v v="$2" '$3 == v { f = 1 } END { exit !f }'; }
installed() { dpkg-query -W -f='${Status} ${Version}' "$1" 2>/dev/null | sed -n 's/^install ok installed //p' || true; }

exec 9>"$cache/apt/.lock"
flock 9
want=()
for spec in "${PACKAGES[@]}"; do
  name=${spec%%=*} version=${spec#*=}
  have=$(installed "$name")
  if [ "$have" = "$version" ]; then continue; fi
  if [ -n "$have" ] && ! served "$name" "$version"; then
    step "WARNING: $name $version is no longer served; keeping installed $have"
    continue
  fi
  want+=("$spec")
done
if [ ${#want[@]} -eq 0 ]; then
  step "containerd, runc, CNI plugins installed ($(installed containerd), $(installed runc), $(installed containernetworking-plugins))"
  exit 0
fi
[ "$(id -u)" = 0 ] || fail "install ${want[*]}: the node needs root (containers, network namespaces)"
apt_get() { DEBIAN_FRONTEND=noninteractive apt-get -o Dir::Cache::Archives="$archives" -y -q --no-install-recommends "$@"; }
resolved=()
for spec in "${want[@]}"; do
  name=${spec%%=*} version=${spec#*=}
  if served "$name" "$version"; then
    resolved+=("$spec")
  elif ls "$archives/${name}_"*.deb >/dev/null 2>&1; then
    resolved+=("$spec")   # the cached .deb satisfies the pin
  else
    candidate=$(apt-cache policy "$name" 2>/dev/null | sed -n 's/^ *Candidate: //p')
    [ -n "$candidate" ] && [ "$candidate" != "(none)" ] || { apt-get update -q >&2 || true; candidate=$(apt-cache policy "$name" | sed -n 's/^ *Candidate: //p'); }
    [ -n "$candidate" ] && [ "$candidate" != "(none)" ] || fail "find Debian package $name (is an apt source for Debian 12 configured?)"
    step "WARNING: $name $version is not served by the mirror; installing $candidate"
    resolved+=("$name=$candidate")
  fi
done
step "installing ${resolved[*]}"
started=$SECONDS
if ! apt_get install "${resolved[@]}" >"$cache/apt/install.log" 2>&1; then
  # The package lists may be missing or stale on a fresh machine.
  apt-get update -q >&2 || true
  apt_get install "${resolved[@]}" >"$cache/apt/install.log" 2>&1 || { tail -20 "$cache/apt/install.log" >&2; fail "apt-get install ${resolved[*]}"; }
fi
# The package's service is not used: the platform runs its own containerd per node.
for b in containerd runc /usr/lib/cni/bridge /usr/lib/cni/host-local /usr/lib/cni/loopback; do
  command -v "$b" >/dev/null || [ -x "$b" ] || fail "find $b after installing"
done
step "installed in $((SECONDS - started))s: containerd $(installed containerd), runc $(installed runc), CNI $(installed containernetworking-plugins)"

#!/usr/bin/env bash
# Installs what the test node runs besides kubelet: containerd, runc and the CNI
# bridge/host-local/loopback plugins, from Debian packages at pinned versions
# (test/platform/apt-pinned.sh: cached .deb files, pins as far as apt allows); a second run
# on the same machine finds them installed and does nothing.
#
#   test/platform/node/node-install.sh
#
set -euo pipefail

PACKAGES=(
  "containerd=1.6.20~ds1-1+deb12u3"
  "runc=1.1.5+ds1-1+deb12u1"
  "containernetworking-plugins=1.1.1+ds1-3+b5"
)

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../apt-pinned.sh
source "$here/../apt-pinned.sh"
apt_pinned_install node-install install.log "${PACKAGES[@]}"
# The package's service is not used: the platform runs its own containerd per node.
for b in containerd runc /usr/lib/cni/bridge /usr/lib/cni/host-local /usr/lib/cni/loopback; do
  command -v "$b" >/dev/null || [ -x "$b" ] || apt_pinned_fail "find $b after installing"
done
apt_pinned_step "containerd $(apt_pinned_installed containerd), runc $(apt_pinned_installed runc), CNI $(apt_pinned_installed containernetworking-plugins)"

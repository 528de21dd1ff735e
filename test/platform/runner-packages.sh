#!/usr/bin/env bash
# The Debian 12 packages a bare `debian:12` container lacks and the test platform runs
# (the release workflow's test job runs `.ci/run` in one, as root): Python for the OpenBao
# wheel and moto's virtualenv, iproute2 and iptables for the test node's network namespaces
# and CNI bridge, procps for the load figures, git for the checkout. Pinned like the other
# Debian packages (apt-pinned.sh). A developer's Debian 12 machine has them already; the
# script then does nothing.
#
#   test/platform/runner-packages.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=apt-pinned.sh
source "$here/apt-pinned.sh"

PACKAGES=(
  "ca-certificates=20230311+deb12u1"
  "git=1:2.39.5-0+deb12u3"
  "python3=3.11.2-1+b1"
  "python3-venv=3.11.2-1+b1"
  "iproute2=6.1.0-3"
  "iptables=1.8.9-2"
  "procps=2:4.0.2-3"
  "xz-utils=5.4.1-1"
)
apt_pinned_install runner-packages runner-packages.log "${PACKAGES[@]}"
apt_pinned_step "python3 $(apt_pinned_installed python3), git $(apt_pinned_installed git)"

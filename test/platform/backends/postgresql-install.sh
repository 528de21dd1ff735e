#!/usr/bin/env bash
# Installs PostgreSQL's server and client from Debian's packages at pinned versions: the
# database behind OpenBao's database secrets engine in the dynamic-secrets tests
# (test/support/platform/backends/postgresql.ts starts a private server per test file). Pinned and
# cached as test/platform/apt-pinned.sh does; a second run finds them installed and does nothing.
#
#   test/platform/backends/postgresql-install.sh
#
# The package's own cluster and service are not used; if the install started one, it is stopped.
set -euo pipefail

PACKAGES=(
  "postgresql=15+248+deb12u1"
  "postgresql-15=15.18-0+deb12u1"
  "postgresql-client-15=15.18-0+deb12u1"
)
PG_MAJOR=15

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../apt-pinned.sh
source "$here/../apt-pinned.sh"
ready() { [ -x "/usr/lib/postgresql/$PG_MAJOR/bin/postgres" ] && [ -x "/usr/lib/postgresql/$PG_MAJOR/bin/initdb" ] && command -v psql >/dev/null; }
apt_pinned_install postgresql-install postgresql-install.log "${PACKAGES[@]}"
# Debian's postinst may create and start a `main` cluster (with an init system): the tests
# run their own server on a free port, so a started package cluster is stopped.
if [ "$APT_PINNED_CHANGED" = 1 ] && command -v pg_ctlcluster >/dev/null && pg_lsclusters -h 2>/dev/null | awk '$4 == "online" { f = 1 } END { exit !f }'; then
  pg_lsclusters -h | awk '$4 == "online" { print $1, $2 }' | while read -r ver cluster; do pg_ctlcluster "$ver" "$cluster" stop || true; done
fi
ready || apt_pinned_fail "find /usr/lib/postgresql/$PG_MAJOR/bin/postgres, initdb and psql after installing"
apt_pinned_step "PostgreSQL $(apt_pinned_installed postgresql-$PG_MAJOR)"

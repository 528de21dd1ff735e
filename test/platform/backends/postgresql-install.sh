#!/usr/bin/env bash
# Installs PostgreSQL's server and client from Debian's packages at pinned versions: the
# database behind OpenBao's database secrets engine in the dynamic-secrets tests
# (test/platform/backends/postgresql.ts starts a private server per test file). The .deb
# files are kept under ~/.cache/esi/apt, so a second machine run reinstalls without the
# network; a second run on the same machine finds them installed and does nothing.
#
#   test/platform/backends/postgresql-install.sh
#
# Pinned "as far as apt allows", as test/platform/node/node-install.sh: Debian's mirror serves
# only the current point release, so when a security update replaces a pinned version the
# newest one is installed and a warning names the drift (update the pins below then).
# The package's own cluster and service are not used; if the install started one, it is stopped.
set -euo pipefail

PACKAGES=(
  "postgresql=15+248+deb12u1"
  "postgresql-15=15.18-0+deb12u1"
  "postgresql-client-15=15.18-0+deb12u1"
)
PG_MAJOR=15

cache=${ESI_CACHE:-$HOME/.cache/esi}
archives="$cache/apt/archives"
mkdir -p "$archives/partial"
step() { printf '[postgresql-install] %s\n' "$*" >&2; }
fail() { printf '[postgresql-install] FAILED at step: %s\n' "$*" >&2; exit 1; }

# awk reads the whole listing (grep -q would close the pipe early: SIGPIPE under pipefail).
served() { apt-cache madison "$1" 2>/dev/null | awk -v v="$2" '$3 == v { f = 1 } END { exit !f }'; }
installed() { dpkg-query -W -f='${Status} ${Version}' "$1" 2>/dev/null | sed -n 's/^install ok installed //p' || true; }
ready() { [ -x "/usr/lib/postgresql/$PG_MAJOR/bin/postgres" ] && [ -x "/usr/lib/postgresql/$PG_MAJOR/bin/initdb" ] && command -v psql >/dev/null; }

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
if [ ${#want[@]} -eq 0 ] && ready; then
  step "PostgreSQL installed ($(installed postgresql-$PG_MAJOR))"
  exit 0
fi
[ "$(id -u)" = 0 ] || fail "install ${want[*]}: apt needs root"
if ! apt-cache policy postgresql 2>/dev/null | grep -q 'Candidate: [0-9]'; then
  step "no package lists: apt-get update"
  apt-get update -q >&2 || fail "apt-get update (is a Debian 12 apt source reachable?)"
fi
apt_get() { DEBIAN_FRONTEND=noninteractive apt-get -o Dir::Cache::Archives="$archives" -y -q --no-install-recommends "$@"; }
resolved=()
for spec in "${want[@]}"; do
  name=${spec%%=*} version=${spec#*=}
  if served "$name" "$version" || ls "$archives/${name}_${version//:/%3a}_"*.deb >/dev/null 2>&1; then
    resolved+=("$spec")
  else
    candidate=$(apt-cache policy "$name" 2>/dev/null | sed -n 's/^ *Candidate: //p')
    [ -n "$candidate" ] && [ "$candidate" != "(none)" ] || fail "find Debian package $name (is an apt source for Debian 12 configured?)"
    step "WARNING: $name $version is not served by the mirror; installing $candidate"
    resolved+=("$name=$candidate")
  fi
done
step "installing ${resolved[*]}"
started=$SECONDS
if ! apt_get install "${resolved[@]}" >"$cache/apt/postgresql-install.log" 2>&1; then
  apt-get update -q >&2 || true
  apt_get install "${resolved[@]}" >"$cache/apt/postgresql-install.log" 2>&1 || { tail -20 "$cache/apt/postgresql-install.log" >&2; fail "apt-get install ${resolved[*]}"; }
fi
# Debian's postinst may create and start a `main` cluster (with an init system): the tests
# run their own server on a free port, so a started package cluster is stopped.
if command -v pg_ctlcluster >/dev/null && pg_lsclusters -h 2>/dev/null | awk '$4 == "online" { f = 1 } END { exit !f }'; then
  pg_lsclusters -h | awk '$4 == "online" { print $1, $2 }' | while read -r ver cluster; do pg_ctlcluster "$ver" "$cluster" stop || true; done
fi
ready || fail "find /usr/lib/postgresql/$PG_MAJOR/bin/postgres, initdb and psql after installing"
step "installed in $((SECONDS - started))s: PostgreSQL $(installed postgresql-$PG_MAJOR)"

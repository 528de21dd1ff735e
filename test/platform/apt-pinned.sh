# Sourced by the scripts that install Debian packages for the tests (node/node-install.sh,
# backends/postgresql-install.sh): one way to install packages at pinned versions.
#
#   apt_pinned_install TAG LOG PACKAGE=VERSION ...
#
# Installs every PACKAGE=VERSION not installed yet and sets APT_PINNED_CHANGED=1 when it did.
# The .deb files are kept under $ESI_CACHE/apt, so a second machine reinstalls without the
# network. Pinned "as far as apt allows": Debian's mirror serves only the current point
# release, so when a security update replaces a pinned version the newest one is installed
# (or an installed older one kept) and a warning names the drift (update the pins then).
# TAG prefixes the messages; LOG is the apt-get log's file name under $ESI_CACHE/apt.

apt_pinned_step() { printf '[%s] %s\n' "$APT_PINNED_TAG" "$*" >&2; }
apt_pinned_fail() { printf '[%s] FAILED at step: %s\n' "$APT_PINNED_TAG" "$*" >&2; exit 1; }
# awk reads the whole listing (grep -q would close the pipe early: SIGPIPE under pipefail).
apt_pinned_served() { apt-cache madison "$1" 2>/dev/null | awk -v v="$2" '$3 == v { f = 1 } END { exit !f }'; }
apt_pinned_installed() { dpkg-query -W -f='${Status} ${Version}' "$1" 2>/dev/null | sed -n 's/^install ok installed //p' || true; }
apt_pinned_candidate() { apt-cache policy "$1" 2>/dev/null | sed -n 's/^ *Candidate: //p'; }

apt_pinned_install() {
  APT_PINNED_TAG=$1
  local log=$2
  shift 2
  APT_PINNED_CHANGED=0
  local cache=${ESI_CACHE:-$HOME/.cache/esi}
  local archives="$cache/apt/archives"
  mkdir -p "$archives/partial"
  exec 9>"$cache/apt/.lock"
  flock 9
  local spec name version have candidate
  local want=() resolved=()
  for spec in "$@"; do
    name=${spec%%=*} version=${spec#*=}
    have=$(apt_pinned_installed "$name")
    if [ "$have" = "$version" ]; then continue; fi
    if [ -n "$have" ] && ! apt_pinned_served "$name" "$version"; then
      apt_pinned_step "WARNING: $name $version is no longer served; keeping installed $have"
      continue
    fi
    want+=("$spec")
  done
  [ ${#want[@]} -eq 0 ] && return 0
  [ "$(id -u)" = 0 ] || apt_pinned_fail "install ${want[*]}: apt needs root"
  # A fresh machine may have no package lists yet: fetch them once before resolving pins.
  if ! apt_pinned_candidate "${want[0]%%=*}" | grep -q '^[0-9]'; then
    apt_pinned_step "no package lists: apt-get update"
    apt-get update -q >&2 || apt_pinned_fail "apt-get update (is a Debian 12 apt source reachable?)"
  fi
  for spec in "${want[@]}"; do
    name=${spec%%=*} version=${spec#*=}
    if apt_pinned_served "$name" "$version" || ls "$archives/${name}_${version//:/%3a}_"*.deb >/dev/null 2>&1; then
      resolved+=("$spec")   # served, or the cached .deb satisfies the pin
    else
      candidate=$(apt_pinned_candidate "$name")
      [ -n "$candidate" ] && [ "$candidate" != "(none)" ] || apt_pinned_fail "find Debian package $name (is an apt source for Debian 12 configured?)"
      apt_pinned_step "WARNING: $name $version is not served by the mirror; installing $candidate"
      resolved+=("$name=$candidate")
    fi
  done
  apt_pinned_step "installing ${resolved[*]}"
  local started=$SECONDS
  local get=(env DEBIAN_FRONTEND=noninteractive apt-get -o Dir::Cache::Archives="$archives" -y -q --no-install-recommends)
  if ! "${get[@]}" install "${resolved[@]}" >"$cache/apt/$log" 2>&1; then
    # The package lists may be stale on a fresh machine.
    apt-get update -q >&2 || true
    "${get[@]}" install "${resolved[@]}" >"$cache/apt/$log" 2>&1 || { tail -20 "$cache/apt/$log" >&2; apt_pinned_fail "apt-get install ${resolved[*]}"; }
  fi
  apt_pinned_step "installed in $((SECONDS - started))s"
  APT_PINNED_CHANGED=1
}

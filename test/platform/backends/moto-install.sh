#!/usr/bin/env bash
# Installs moto's server (the AWS Secrets Manager / SSM Parameter Store / STS test backend)
# from PyPI at a pinned version into a virtualenv cached under
# ${ESI_CACHE:-~/.cache/esi}/venv/moto-<version>. Transitive dependencies are pinned by
# moto-constraints.txt (a `pip freeze` of a fresh install). A second run finds the venv
# and does nothing. test/support/platform/backends/moto.ts starts the server.
set -euo pipefail

MOTO_VERSION=5.2.5

here=$(cd "$(dirname "$0")" && pwd)
cache=${ESI_CACHE:-$HOME/.cache/esi}
venv="$cache/venv/moto-$MOTO_VERSION"
constraints="$here/moto-constraints.txt"
# The stamp records the constraints used, so editing them reinstalls.
stamp_value="$MOTO_VERSION $(sha256sum "$constraints" | cut -c1-16)"

step() { printf '[moto-install] %s\n' "$*" >&2; }
fail() { printf '[moto-install] FAILED at step: %s\n' "$*" >&2; exit 1; }

if [ -x "$venv/bin/moto_server" ] && [ "$(cat "$venv/.esi-stamp" 2>/dev/null)" = "$stamp_value" ]; then
  step "moto $MOTO_VERSION cached at $venv"
  exit 0
fi

python=${PYTHON:-python3}
command -v "$python" >/dev/null || fail "find $python (Python >= 3.9 with the venv module is required)"
# An interrupted install leaves no stamp: start over (a venv cannot be moved, so it is
# built in place and the stamp, written last, marks it complete).
rm -rf "$venv" && mkdir -p "$(dirname "$venv")"

step "moto $MOTO_VERSION: creating virtualenv ($($python --version 2>&1))"
"$python" -m venv "$venv" || fail "python3 -m venv (install the python3-venv package?)"

step "moto $MOTO_VERSION: installing moto[server] from PyPI (about 2 minutes the first time)"
PIP_CACHE_DIR="$cache/pip" "$venv/bin/pip" install --disable-pip-version-check --no-input -q \
  -c "$constraints" "moto[server]==$MOTO_VERSION" \
  || fail "pip install moto[server]==$MOTO_VERSION (is PyPI reachable?)"
"$venv/bin/python" -c "import moto, moto.server; assert moto.__version__ == '$MOTO_VERSION', moto.__version__" \
  || fail "import moto from $venv"
[ -x "$venv/bin/moto_server" ] || fail "locate $venv/bin/moto_server"
echo "$stamp_value" >"$venv/.esi-stamp"
step "moto $MOTO_VERSION ready: $venv/bin/moto_server"

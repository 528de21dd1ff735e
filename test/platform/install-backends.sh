#!/usr/bin/env bash
# Installs or builds every third-party test backend (OpenBao, moto, lowkey-vault, the GCP
# emulator, helm, …) by running each test/platform/backends/*-install.sh in turn. Each
# script pins its version and caches under ~/.cache/esi, so a second run is quick.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
shopt -s nullglob
for script in "$here"/backends/*-install.sh; do
  name=$(basename "$script" -install.sh)
  start=$(date +%s)
  if ! bash "$script"; then
    echo "[install-backends] FAILED: $name ($script)" >&2
    exit 1
  fi
  echo "[install-backends] $name ready ($(( $(date +%s) - start ))s)" >&2
done

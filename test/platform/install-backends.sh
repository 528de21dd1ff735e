#!/usr/bin/env bash
# Installs or builds every third-party test backend (OpenBao, PostgreSQL, moto, lowkey-vault, the GCP
# emulator, helm, …) by running each test/platform/backends/*-install.sh in turn. Each
# script pins its version and caches under ~/.cache/esi, so a second run is quick.
#
# OPTIONAL backends: the tests run without them, against ESI's own stand-ins, and say so.
# Their registries do not serve them to ESI's build machine (each script's header says
# which answer it got), so on such a machine these install paths never run to the end:
#   gcpsm-emulator  the Go module proxy refuses the emulator module; ESI's emulator
#                   (test/support/platform/backends/gcpsm-emulator.ts) serves the tests
#   lowkey-vault    Maven Central does not carry the app jar; the local Key Vault API
#                   stand-in (test/support/platform/backends/keyvault-standin.ts) serves the tests
#   pubsub-emulator Google's Pub/Sub emulator, from the machine image (no registry serves it);
#                   without it the GCP change-notification test is skipped
# A failure of an optional backend is reported and does not fail the install.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
OPTIONAL=" gcpsm-emulator lowkey-vault pubsub-emulator "
shopt -s nullglob
for script in "$here"/backends/*-install.sh; do
  name=$(basename "$script" -install.sh)
  start=$(date +%s)
  if ! bash "$script"; then
    if [[ $OPTIONAL == *" $name "* ]]; then
      echo "[install-backends] optional $name not installed ($script); its tests use ESI's stand-in" >&2
      continue
    fi
    echo "[install-backends] FAILED: $name ($script)" >&2
    exit 1
  fi
  echo "[install-backends] $name ready ($(( $(date +%s) - start ))s)" >&2
done

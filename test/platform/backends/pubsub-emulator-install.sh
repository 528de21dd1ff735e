#!/usr/bin/env bash
# OPTIONAL (test/platform/install-backends.sh): without it the GCP change-notification test
# (test/e2e/controller/fleet-gcp.test.ts) is skipped and says why.
# Google's Cloud Pub/Sub emulator (the `cloud-pubsub-emulator` jar of the Google Cloud CLI),
# pinned by version and checksum, copied into ${ESI_CACHE:-~/.cache/esi}/pubsub-emulator/.
# test/support/platform/backends/pubsub-emulator.ts runs it with the machine's Java.
#
# Where it comes from: no registry this machine reaches serves it (Debian's archive has no
# google-cloud-cli packages; PyPI's `gcplocal` 0.1.0 registers Pub/Sub topics and
# subscriptions but no publish, pull or acknowledge: `POST .../topics/T:publish` answers
# 405 Method Not Allowed). The machine image carries the Debian package
# google-cloud-cli-pubsub-emulator (528.0.0-0) under /usr/lib/google-cloud-sdk; this
# script takes the jar from there when it is the pinned one. A machine without it reports
# so and exits 0 (the test is then skipped); a jar of another checksum fails the script.
set -euo pipefail

PACKAGE_VERSION=528.0.0-0
JAR_VERSION=0.8.20
JAR_SHA256=056bc216749e95ef495a81c9fa96b66863cedfb1b80b4d78ee8e3bde5a7b452f
SOURCE=${PUBSUB_EMULATOR_SOURCE:-/usr/lib/google-cloud-sdk/platform/pubsub-emulator/lib/cloud-pubsub-emulator-$JAR_VERSION-all.jar}

cache=${ESI_CACHE:-$HOME/.cache/esi}
dir="$cache/pubsub-emulator"
jar="$dir/cloud-pubsub-emulator-$JAR_VERSION-all.jar"

step() { printf '[pubsub-emulator-install] %s\n' "$*" >&2; }
fail() { printf '[pubsub-emulator-install] FAILED at step: %s\n' "$*" >&2; exit 1; }

if [ -s "$jar" ] && [ "$(sha256sum "$jar" | cut -d' ' -f1)" = "$JAR_SHA256" ]; then
  step "Pub/Sub emulator $JAR_VERSION cached at $jar"
  exit 0
fi
command -v java >/dev/null || { step "no java on PATH (Debian: openjdk-17-jre-headless); the GCP notification test is skipped"; exit 0; }
if [ ! -s "$SOURCE" ]; then
  step "google-cloud-cli-pubsub-emulator $PACKAGE_VERSION is not on this machine ($SOURCE); no reachable registry serves it; the GCP notification test is skipped"
  exit 0
fi
[ "$(sha256sum "$SOURCE" | cut -d' ' -f1)" = "$JAR_SHA256" ] || fail "checksum of $SOURCE (not the pinned $JAR_VERSION jar of $PACKAGE_VERSION)"
mkdir -p "$dir"
cp "$SOURCE" "$jar.tmp" && mv "$jar.tmp" "$jar"
step "Pub/Sub emulator $JAR_VERSION ready: $jar"

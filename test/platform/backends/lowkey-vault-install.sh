#!/usr/bin/env bash
# OPTIONAL (test/platform/install-backends.sh): without it the azurekv tests use the local stand-in.
# Fetches lowkey-vault (nagyesta's Azure Key Vault API test double, an executable Spring
# Boot jar) from Maven Central at a pinned version into
# ${ESI_CACHE:-~/.cache/esi}/lowkey-vault/, with Maven's own client (a private local
# repository under the cache, so ~/.m2 is not touched). A second run finds the jar and
# does nothing. test/support/platform/backends/lowkey-vault.ts starts it.
#
# The Maven Central this machine reaches does not carry com.github.nagyesta.lowkey-vault:
# lowkey-vault-app (only the project's client and Testcontainers libraries are there).
# That case is reported and the script exits 0, so the other backends still install; the
# azurekv tests then run against the local Key Vault API stand-in and say so in every
# test name. Any other failure (Maven missing, network, a corrupt jar) fails the script.
set -euo pipefail

LOWKEY_VAULT_VERSION=7.1.13
GROUP=com.github.nagyesta.lowkey-vault
ARTIFACT=lowkey-vault-app

cache=${ESI_CACHE:-$HOME/.cache/esi}
dir="$cache/lowkey-vault"
jar="$dir/$ARTIFACT-$LOWKEY_VAULT_VERSION.jar"
unavailable="$dir/unavailable-$LOWKEY_VAULT_VERSION"

step() { printf '[lowkey-vault-install] %s\n' "$*" >&2; }
fail() { printf '[lowkey-vault-install] FAILED at step: %s\n' "$*" >&2; exit 1; }

if [ -s "$jar" ]; then
  step "lowkey-vault $LOWKEY_VAULT_VERSION cached at $jar"
  exit 0
fi
# A negative answer is remembered for a day: the registry is asked again after that.
if [ -n "$(find "$unavailable" -mmin -1440 2>/dev/null)" ]; then
  step "lowkey-vault $LOWKEY_VAULT_VERSION: unavailable on the reachable Maven Central (checked $(sed -n 's/^checked //p' "$unavailable"));"
  step "  the azurekv tests use the local Key Vault API stand-in. Delete $unavailable to check again."
  exit 0
fi

command -v mvn >/dev/null || fail "find mvn (Apache Maven is needed to fetch lowkey-vault from Maven Central)"
mkdir -p "$dir"
log=$(mktemp)
trap 'rm -f "$log"' EXIT

step "lowkey-vault $LOWKEY_VAULT_VERSION: resolving $GROUP:$ARTIFACT from Maven Central"
if ! mvn -B -q -U -Dmaven.repo.local="$cache/m2" dependency:get \
  -Dartifact="$GROUP:$ARTIFACT:$LOWKEY_VAULT_VERSION:jar" -Dtransitive=false >"$log" 2>&1; then
  if grep -Eq "(Could not find artifact|Failure to find) $GROUP:$ARTIFACT" "$log"; then
    {
      echo "$GROUP:$ARTIFACT:$LOWKEY_VAULT_VERSION is not on the Maven Central this machine reaches"
      echo "checked $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    } >"$unavailable"
    step "UNAVAILABLE: $GROUP:$ARTIFACT:$LOWKEY_VAULT_VERSION is not on the reachable Maven Central;"
    step "  the azurekv tests use the local Key Vault API stand-in instead (see lowkey-vault.ts)."
    step "  To use lowkey-vault, put its jar at $jar (or set ESI_LOWKEY_VAULT_JAR)."
    exit 0
  fi
  tail -20 "$log" >&2
  fail "mvn dependency:get $GROUP:$ARTIFACT:$LOWKEY_VAULT_VERSION (is Maven Central reachable?)"
fi

src="$cache/m2/${GROUP//.//}/$ARTIFACT/$LOWKEY_VAULT_VERSION/$ARTIFACT-$LOWKEY_VAULT_VERSION.jar"
[ -s "$src" ] || fail "locate the downloaded jar at $src"
manifest=$(unzip -p "$src" META-INF/MANIFEST.MF 2>/dev/null) || fail "read the manifest of $src (corrupt download?)"
grep -q '^Start-Class:' <<<"$manifest" || fail "$src is not an executable Spring Boot jar (no Start-Class)"
jdk=$(sed -n 's/^Build-Jdk-Spec: *\([0-9]*\).*/\1/p' <<<"$manifest")
cp "$src" "$jar.tmp" && mv "$jar.tmp" "$jar"
rm -f "$unavailable"
step "lowkey-vault $LOWKEY_VAULT_VERSION ready: $jar (built for Java ${jdk:-?}; lowkey-vault.ts picks a matching JDK)"

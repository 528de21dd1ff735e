# Sourced by the platform scripts that build a tool from its published Go module
# (build-binaries.sh, build-helm.sh): one cache layout and one way to build a command.
#
#   source go-module.sh TAG     # sets cache, bin, the Go environment, step and fail
#   go_module_install NAME VERSION PACKAGE [LDFLAGS]
#
# Cache conventions: ESI_CACHE (default ~/.cache/esi), binaries by version under $bin
# (NAME-VERSION), GOMODCACHE/GOCACHE under it, GOFLAGS=-mod=mod, no cgo.

GO_MODULE_TAG=$1
cache=${ESI_CACHE:-$HOME/.cache/esi}
bin="$cache/bin"
mkdir -p "$bin" "$cache/go/mod" "$cache/go/build" "$cache/go/work"
export GOMODCACHE="$cache/go/mod" GOCACHE="$cache/go/build" GOFLAGS=-mod=mod GOTOOLCHAIN=${GOTOOLCHAIN:-auto}
export CGO_ENABLED=0 GOPROXY=${GOPROXY:-https://proxy.golang.org,direct}

step() { printf '[%s] %s\n' "$GO_MODULE_TAG" "$*" >&2; }
fail() { printf '[%s] FAILED at step: %s\n' "$GO_MODULE_TAG" "$*" >&2; exit 1; }

# Concurrent runs (test files run in parallel, helpers) wait for each other instead of
# both building: one builds, the others find its result.
lock() { exec 9>"$bin/.$1.lock"; flock 9; }

# Builds PACKAGE (a main package of a module whose go.mod has no `replace` lines, so
# `go install PACKAGE@VERSION` takes it directly) into $bin/NAME-VERSION, unless it is
# there already.
go_module_install() {
  local name=$1 version=$2 pkg=$3 ldflags=${4:--s -w}
  local out="$bin/$name-$version"
  lock "$name-$version"
  [ -x "$out" ] && { step "$name $version cached at $out"; return; }
  command -v go >/dev/null || fail "find the go toolchain (install Go to build $name)"
  local w="$cache/go/work/$name-$version" started=$SECONDS
  rm -rf "$w" && mkdir -p "$w"
  step "$name $version: compiling $pkg (minutes the first time; cached afterwards)"
  (cd "$w" && GOBIN="$w" go install -trimpath -ldflags="$ldflags" "$pkg@$version" >"$w/build.log" 2>&1) \
    || { tail -30 "$w/build.log" >&2; fail "go install $pkg@$version"; }
  mv "$w/$(basename "$pkg")" "$out"
  step "$name ready: $out ($((SECONDS - started))s)"
}

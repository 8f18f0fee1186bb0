#!/usr/bin/env bash
# Build the container runtime the cluster runs on when CONTAINER_RUNTIME=built (the default): containerd
# $CONTAINERD_VERSION (containerd, containerd-shim-runc-v2, ctr; static, CGO_ENABLED=0) and runc $RUNC_VERSION
# (cgo, -tags seccomp against libseccomp-dev: without seccomp, RuntimeDefault seccomp pods fail), from the Go
# module proxy (go.sum and the checksum database verify the sources). Each into its own version-keyed directory,
# $RUNTIME_CACHE/{containerd,runc}/vX.Y.Z/bin; skipped when present and reporting that version. Go caches in
# $RUNTIME_CACHE/{gopath,gocache}. Cold: ~3 min for containerd and ~1 min for runc on 2 idle cores.
# Prints the sha256 of what it built. With CONTAINER_RUNTIME=debian it has nothing to do.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
[ "$CONTAINER_RUNTIME" = built ] || { echo "build-runtime: CONTAINER_RUNTIME=$CONTAINER_RUNTIME: nothing to build"; exit 0; }
have_containerd() {
  local b
  for b in containerd containerd-shim-runc-v2 ctr; do [ -x "$CONTAINERD_BIN/$b" ] || return 1; done
  local v; v=$("$CONTAINERD_BIN/containerd" --version 2>/dev/null) && [[ $v == *" v$CONTAINERD_VERSION "* ]]
}
# the whole output first: grep -q would close the pipe early, and pipefail would count runc's SIGPIPE
have_runc() { local v; [ -x "$RUNC_BIN/runc" ] && v=$("$RUNC_BIN/runc" --version 2>/dev/null) && grep -qx "runc version $RUNC_VERSION" <<< "$v"; }
if have_containerd && have_runc; then echo "build-runtime: containerd v$CONTAINERD_VERSION and runc v$RUNC_VERSION present"; exit 0; fi
command -v go >/dev/null || die "go not found (need Go >= 1.26 on PATH or in /usr/local/go/bin)"
mkdir -p "$RUNTIME_CACHE"
exec 9> "$RUNTIME_CACHE/.build.lock"
flock -n 9 || { echo "build-runtime: another build holds $RUNTIME_CACHE/.build.lock, waiting"; flock 9; }
export GOPATH=$RUNTIME_CACHE/gopath GOCACHE=$RUNTIME_CACHE/gocache GOTOOLCHAIN=local GOFLAGS=-mod=mod
built() { # dir names...: move the .tmp build results in place and print their checksums
  local d=$1 b; shift
  for b in "$@"; do mv "$d/tmp/$b" "$d/$b"; done
  rmdir "$d/tmp"
  (cd "$d" && sha256sum "$@" | sed 's/^/  sha256 /')
}
if ! have_containerd; then
  s=$(date +%s)
  echo "build-runtime: building containerd v$CONTAINERD_VERSION into $CONTAINERD_BIN"
  rm -rf "$CONTAINERD_BIN/tmp"; mkdir -p "$CONTAINERD_BIN/tmp"
  M=github.com/containerd/containerd/v2
  GOBIN=$CONTAINERD_BIN/tmp CGO_ENABLED=0 go install -trimpath \
    -ldflags "-s -w -X $M/version.Version=v$CONTAINERD_VERSION -X $M/version.Revision=v$CONTAINERD_VERSION" \
    "$M/cmd/containerd@v$CONTAINERD_VERSION" "$M/cmd/containerd-shim-runc-v2@v$CONTAINERD_VERSION" "$M/cmd/ctr@v$CONTAINERD_VERSION"
  built "$CONTAINERD_BIN" containerd containerd-shim-runc-v2 ctr
  echo "BUILT containerd v$CONTAINERD_VERSION in $(( $(date +%s) - s ))s"
fi
if ! have_runc; then
  s=$(date +%s)
  pkg-config --exists libseccomp 2>/dev/null || die "runc needs libseccomp-dev and pkg-config (run hack/cluster/prereqs.sh)"
  echo "build-runtime: building runc v$RUNC_VERSION (seccomp) into $RUNC_BIN"
  rm -rf "$RUNC_BIN/tmp"; mkdir -p "$RUNC_BIN/tmp"
  GOBIN=$RUNC_BIN/tmp CGO_ENABLED=1 go install -trimpath -tags seccomp \
    -ldflags "-s -w -X main.version=$RUNC_VERSION -X main.gitCommit=v$RUNC_VERSION" \
    "github.com/opencontainers/runc@v$RUNC_VERSION"
  built "$RUNC_BIN" runc
  echo "BUILT runc v$RUNC_VERSION in $(( $(date +%s) - s ))s"
fi
have_containerd || die "containerd in $CONTAINERD_BIN does not report v$CONTAINERD_VERSION: $("$CONTAINERD_BIN/containerd" --version 2>&1)"
have_runc || die "runc in $RUNC_BIN does not report $RUNC_VERSION: $("$RUNC_BIN/runc" --version 2>&1 | head -1)"
grep -q '^libseccomp:' <<< "$("$RUNC_BIN/runc" --version)" || die "runc in $RUNC_BIN was built without seccomp"
echo "build-runtime: done"

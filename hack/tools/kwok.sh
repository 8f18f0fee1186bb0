#!/usr/bin/env bash
# Print the path of kwok $KWOK_VERSION (the fake-node controller that hack/bench/kwok.sh runs), building it
# first when it is absent: `go install` from the Go module proxy (go.sum and the checksum database verify
# the sources; nothing is added to this module's go.mod) into $CMSYNC_CACHE/tools/kwok/$KWOK_VERSION/kwok,
# once. Go caches in $CMSYNC_CACHE/tools/go{path,cache}. Cold: docs/performance.md has how long it takes.
# Progress goes to stderr; stdout is only the path.
# --path: print the path only, build nothing (exit 1 when it is absent).
set -euo pipefail
CMSYNC_CACHE=${CMSYNC_CACHE:-$HOME/.cache/kubectl-cmsync}
KWOK_VERSION=${KWOK_VERSION:-v0.8.0}
TOOLS=$CMSYNC_CACHE/tools
KWOK=$TOOLS/kwok/$KWOK_VERSION/kwok
export PATH=$PATH:/usr/local/go/bin
if [ "${1:-}" = --path ]; then echo "$KWOK"; [ -x "$KWOK" ]; exit; fi
have() { local v; [ -x "$KWOK" ] && v=$("$KWOK" --version 2>/dev/null) && [[ $v == *"$KWOK_VERSION"* ]]; }
if ! have; then
  . "$(dirname "$0")/lib.sh"
  tool_lock kwok
  if ! have; then
    s=$(date +%s)
    echo "kwok.sh: building kwok $KWOK_VERSION once into $(dirname "$KWOK")" >&2
    out=$(mktemp -d "$TOOLS/.kwok.XXXXXX")
    trap 'rm -rf "$out"' EXIT
    M=sigs.k8s.io/kwok
    GOPATH=$TOOLS/gopath GOCACHE=$TOOLS/gocache GOTOOLCHAIN=local GOFLAGS=-mod=mod GOBIN=$out CGO_ENABLED=0 \
      go install -trimpath -ldflags "-s -w -X $M/pkg/consts.Version=$KWOK_VERSION" "$M/cmd/kwok@$KWOK_VERSION" >&2
    mkdir -p "$(dirname "$KWOK")"
    mv "$out/kwok" "$KWOK"
    echo "kwok.sh: built kwok $KWOK_VERSION in $(( $(date +%s) - s ))s" >&2
  fi
  have || { echo "kwok.sh: $KWOK does not report $KWOK_VERSION: $("$KWOK" --version 2>&1)" >&2; exit 1; }
fi
echo "$KWOK"

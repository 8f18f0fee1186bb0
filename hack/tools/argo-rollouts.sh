#!/usr/bin/env bash
# Print the path of the Argo Rollouts controller $ARGO_ROLLOUTS_VERSION, building it first when it is absent, for
# the e2e suite's Rollout tests. Its go.mod has replace directives, so `go install pkg@version` refuses it: the
# module is downloaded from the Go module proxy (go.sum and the checksum database verify it; nothing is added to
# this module's go.mod), copied to a writable directory and `go build ./cmd/rollouts-controller` runs inside it,
# into $CMSYNC_CACHE/tools/argo-rollouts/$ARGO_ROLLOUTS_VERSION/rollouts-controller, once. Its CRDs are copied
# beside it (crds/*.yaml). v1.10.1: v1.10.2 and v1.9.3 declare a newer Go than the one this project builds with.
# Go caches in $CMSYNC_CACHE/tools/go{path,cache}. Cold: docs/performance.md has how long it takes. Progress goes
# to stderr; stdout is only the path.
# --path: print the path only, build nothing (exit 1 when it is absent).
# --crds: print the directory of the CRDs only, build nothing (exit 1 when it is absent).
set -euo pipefail
CMSYNC_CACHE=${CMSYNC_CACHE:-$HOME/.cache/kubectl-cmsync}
ARGO_ROLLOUTS_VERSION=${ARGO_ROLLOUTS_VERSION:-v1.10.1}
TOOLS=$CMSYNC_CACHE/tools
DIR=$TOOLS/argo-rollouts/$ARGO_ROLLOUTS_VERSION
BIN=$DIR/rollouts-controller
export PATH=$PATH:/usr/local/go/bin
if [ "${1:-}" = --path ]; then echo "$BIN"; [ -x "$BIN" ]; exit; fi
if [ "${1:-}" = --crds ]; then echo "$DIR/crds"; [ -f "$DIR/crds/rollout-crd.yaml" ]; exit; fi
have() { [ -x "$BIN" ] && [ -f "$DIR/crds/rollout-crd.yaml" ]; }
if ! have; then
  . "$(dirname "$0")/lib.sh"
  tool_lock argo-rollouts
  if ! have; then
    s=$(date +%s)
    echo "argo-rollouts.sh: building rollouts-controller $ARGO_ROLLOUTS_VERSION once into $DIR" >&2
    out=$(mktemp -d "$TOOLS/.argo-rollouts.XXXXXX")
    trap 'chmod -R u+w "$out"; rm -rf "$out"' EXIT
    export GOPATH=$TOOLS/gopath GOCACHE=$TOOLS/gocache GOTOOLCHAIN=local CGO_ENABLED=0
    M=github.com/argoproj/argo-rollouts
    src=$(cd "$out" && GOFLAGS=-mod=mod go mod download -json "$M@$ARGO_ROLLOUTS_VERSION" |
      sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
    [ -d "$src" ] || { echo "argo-rollouts.sh: go mod download gave no directory for $M@$ARGO_ROLLOUTS_VERSION" >&2; exit 1; }
    cp -r "$src" "$out/src"
    chmod -R u+w "$out/src"
    (cd "$out/src" && GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w" -o "$out/rollouts-controller" ./cmd/rollouts-controller) >&2
    mkdir -p "$DIR/crds"
    cp "$out/src"/manifests/crds/*-crd.yaml "$DIR/crds/"
    mv "$out/rollouts-controller" "$BIN"
    echo "argo-rollouts.sh: built rollouts-controller $ARGO_ROLLOUTS_VERSION in $(( $(date +%s) - s ))s" >&2
  fi
  have || { echo "argo-rollouts.sh: $BIN or its CRDs are missing after the build" >&2; exit 1; }
fi
echo "$BIN"

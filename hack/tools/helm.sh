#!/usr/bin/env bash
# Print the path of helm $HELM_VERSION, building it first when it is absent: `go install` from the Go module
# proxy (go.sum and the checksum database verify the sources; nothing is added to this module's go.mod) into
# $CMSYNC_CACHE/tools/helm/$HELM_VERSION/helm, once. Go caches in $CMSYNC_CACHE/tools/go{path,cache}.
# Cold: docs/performance.md has how long it takes. Progress goes to stderr; stdout is only the path.
# --path: print the path only, build nothing (exit 1 when it is absent).
set -euo pipefail
CMSYNC_CACHE=${CMSYNC_CACHE:-$HOME/.cache/kubectl-cmsync}
HELM_VERSION=${HELM_VERSION:-v3.22.0}
TOOLS=$CMSYNC_CACHE/tools
HELM=$TOOLS/helm/$HELM_VERSION/helm
export PATH=$PATH:/usr/local/go/bin
if [ "${1:-}" = --path ]; then echo "$HELM"; [ -x "$HELM" ]; exit; fi
have() { local v; [ -x "$HELM" ] && v=$("$HELM" version --template '{{.Version}}' 2>/dev/null) && [ "$v" = "$HELM_VERSION" ]; }
if ! have; then
  . "$(dirname "$0")/lib.sh"
  tool_lock helm
  if ! have; then
    s=$(date +%s)
    echo "helm.sh: building helm $HELM_VERSION once into $(dirname "$HELM")" >&2
    out=$(mktemp -d "$TOOLS/.helm.XXXXXX")
    trap 'rm -rf "$out"' EXIT
    M=helm.sh/helm/v3
    GOPATH=$TOOLS/gopath GOCACHE=$TOOLS/gocache GOTOOLCHAIN=local GOFLAGS=-mod=mod GOBIN=$out CGO_ENABLED=0 \
      go install -trimpath -ldflags "-s -w -X $M/internal/version.version=$HELM_VERSION" "$M/cmd/helm@$HELM_VERSION" >&2
    mkdir -p "$(dirname "$HELM")"
    mv "$out/helm" "$HELM"
    echo "helm.sh: built helm $HELM_VERSION in $(( $(date +%s) - s ))s" >&2
  fi
  have || { echo "helm.sh: $HELM does not report $HELM_VERSION: $("$HELM" version 2>&1)" >&2; exit 1; }
fi
echo "$HELM"

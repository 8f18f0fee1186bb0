#!/usr/bin/env bash
# Print the path of promtool $PROMTOOL_VERSION (Prometheus' rule checker and tester, for the chart's alerting
# rules), building it first when it is absent: `go install` from the Go module proxy (go.sum and the checksum
# database verify the sources; nothing is added to this module's go.mod) into
# $CMSYNC_CACHE/tools/promtool/$PROMTOOL_VERSION/promtool, once. Go caches in $CMSYNC_CACHE/tools/go{path,cache}.
# Prometheus' Go module is versioned v0.3xx.y for its release 3.xx.y, so PROMTOOL_VERSION is the module's.
# Cold: docs/performance.md has how long it takes. Progress goes to stderr; stdout is only the path.
# --path: print the path only, build nothing (exit 1 when it is absent).
set -euo pipefail
CMSYNC_CACHE=${CMSYNC_CACHE:-$HOME/.cache/kubectl-cmsync}
PROMTOOL_VERSION=${PROMTOOL_VERSION:-v0.316.0}
TOOLS=$CMSYNC_CACHE/tools
PROMTOOL=$TOOLS/promtool/$PROMTOOL_VERSION/promtool
export PATH=$PATH:/usr/local/go/bin
if [ "${1:-}" = --path ]; then echo "$PROMTOOL"; [ -x "$PROMTOOL" ]; exit; fi
# promtool --version's first line: "promtool, version 0.316.0 (branch: ..."
have() { [ -x "$PROMTOOL" ] && "$PROMTOOL" --version 2>&1 | head -1 | grep -qF "version ${PROMTOOL_VERSION#v} "; }
if ! have; then
  . "$(dirname "$0")/lib.sh"
  tool_lock promtool
  if ! have; then
    s=$(date +%s)
    echo "promtool.sh: building promtool $PROMTOOL_VERSION once into $(dirname "$PROMTOOL")" >&2
    out=$(mktemp -d "$TOOLS/.promtool.XXXXXX")
    trap 'rm -rf "$out"' EXIT
    # remove_all_sd: without Prometheus' service-discovery SDKs (AWS, Azure, Google, ...), which only
    # `promtool check service-discovery` needs: the rules' tests do not, and the build is far smaller
    GOPATH=$TOOLS/gopath GOCACHE=$TOOLS/gocache GOTOOLCHAIN=local GOFLAGS=-mod=mod GOBIN=$out CGO_ENABLED=0 \
      go install -tags remove_all_sd -trimpath -ldflags "-s -w -X github.com/prometheus/common/version.Version=${PROMTOOL_VERSION#v}" \
      "github.com/prometheus/prometheus/cmd/promtool@$PROMTOOL_VERSION" >&2
    mkdir -p "$(dirname "$PROMTOOL")"
    mv "$out/promtool" "$PROMTOOL"
    echo "promtool.sh: built promtool $PROMTOOL_VERSION in $(( $(date +%s) - s ))s" >&2
  fi
  have || { echo "promtool.sh: $PROMTOOL does not report $PROMTOOL_VERSION: $("$PROMTOOL" --version 2>&1 | head -1)" >&2; exit 1; }
fi
echo "$PROMTOOL"

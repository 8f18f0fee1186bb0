#!/usr/bin/env bash
# Exit 0 when the second control plane is up and its API server ready; prints its kubeconfig and the
# three-context kubeconfig (-q: prints nothing).
set -uo pipefail
. "$(dirname "$0")/cluster2-lib.sh"
if cluster2_healthy; then
  [ "${1:-}" = -q ] || echo "up: KUBECONFIG=$KUBECONFIG_FILE; contexts: $CONTEXTS_KUBECONFIG"
  exit 0
fi
[ "${1:-}" = -q ] || echo "down"
exit 1

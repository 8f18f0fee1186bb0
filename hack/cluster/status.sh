#!/usr/bin/env bash
# Exit 0 when the local cluster is up and healthy (every recorded daemon runs, the API server is ready, the
# node is Ready, the API server reaches the kubelet); else 1. Prints one line either way (-q: nothing).
set -uo pipefail
CMSYNC_FOLLOW_RUNNING=1 . "$(dirname "$0")/lib.sh"
q=0; [ "${1:-}" = -q ] && q=1
if [ -n "$(ls "$PIDS"/*.pid 2>/dev/null)" ] && cluster_healthy; then
  [ $q = 1 ] || echo "up: Kubernetes v$K8S_VERSION, runtime $CONTAINER_RUNTIME, node $NODE_NAME Ready; KUBECONFIG=$KUBECONFIG_FILE"
  exit 0
fi
if [ $q = 0 ]; then
  if [ -n "$(ls "$PIDS"/*.pid 2>/dev/null)" ]; then d=$(dead_daemons); echo "not healthy${d:+ (not running: $d)}"; else echo "down"; fi
fi
exit 1

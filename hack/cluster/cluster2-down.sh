#!/usr/bin/env bash
# Stop the second control plane (cluster2-lib.sh): only its recorded PIDs are signalled; its var/ is
# wiped (the logs kept in $CMSYNC_CACHE/cluster2/last-logs). Safe to run any time.
set -uo pipefail
. "$(dirname "$0")/cluster2-lib.sh"
if [ -z "${CMSYNC_CLUSTER2_LOCKED:-}" ] && [ -d "$CLUSTER_ROOT" ]; then exec 8> "$CLUSTER_ROOT/.lock"; flock 8; fi
[ -d "$VAR" ] || { echo "cluster2-down: nothing to do (no state in $VAR)"; exit 0; }
stop kube-apiserver
stop etcd
if [ -d "$LOG" ]; then rm -rf "$CLUSTER_ROOT/last-logs"; mv "$LOG" "$CLUSTER_ROOT/last-logs"; fi
rm -rf "$VAR" "$CONTEXTS_KUBECONFIG"
echo "cluster2-down: done"

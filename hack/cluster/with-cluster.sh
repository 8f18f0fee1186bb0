#!/usr/bin/env bash
# Run a command against the local cluster, starting it if needed:
#   hack/cluster/with-cluster.sh make e2e
# Installs missing packages, builds the Kubernetes binaries of $K8S_VERSION and the runtime if they are not
# cached, starts the cluster
# unless a healthy one is already up, runs the command with KUBECONFIG set and the cached kubectl first on
# PATH, then takes the cluster down ONLY if this run started it (also when the command failed or was
# interrupted; KEEP_CLUSTER=1 leaves it up). Exits with the command's status.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
[ $# -gt 0 ] || die "usage: $0 COMMAND [ARGS...]"
need_root
"$HACK_CLUSTER/prereqs.sh"
"$HACK_CLUSTER/build-runtime.sh"
"$HACK_CLUSTER/build.sh"
started=0
cleanup() {
  local rc=$?
  if [ $started = 1 ]; then
    if [ "${KEEP_CLUSTER:-0}" = 1 ]; then echo "KEEP_CLUSTER=1: leaving the cluster up (stop it with: make cluster-down)"
    else echo "taking down the cluster this run started"; "$HACK_CLUSTER/down.sh" || rc=1; fi
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
if "$HACK_CLUSTER/status.sh" -q; then
  same_cluster || die "a cluster with $(running_env)is up, and $(want_env)was asked for: take it down first (make cluster-down)"
  echo "using the cluster that is already up (v$K8S_VERSION; left up afterwards)"
else
  started=1
  "$HACK_CLUSTER/up.sh"
fi
export KUBECONFIG=$KUBECONFIG_FILE
"$@"

#!/usr/bin/env bash
# Print the path of the local cluster's admin kubeconfig (valid while the cluster is up).
. "$(dirname "$0")/lib.sh"
echo "$KUBECONFIG_FILE"

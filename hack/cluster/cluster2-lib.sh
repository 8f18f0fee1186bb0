# shellcheck shell=bash
# The second control plane (sourced by cluster2-up.sh, cluster2-down.sh, cluster2-status.sh): its own etcd
# and kube-apiserver, no kubelet, no controller-manager, no scheduler, for tests that read several
# kubeconfig contexts. Its pods get no node and stay Pending. Everything of it lives under
# $CMSYNC_CACHE/cluster2 ({pki,etc,var,last-logs}) and listens on its own ports on 127.0.0.1
# (CLUSTER2_PORTS), apart from the main cluster's (lib.sh's PORTS and $CMSYNC_CACHE/cluster).
# It runs the kube-apiserver the main cluster was built with (the version up.sh recorded, else K8S_VERSION).
CMSYNC_CACHE=${CMSYNC_CACHE:-$HOME/.cache/kubectl-cmsync}
MAIN_ROOT=$CMSYNC_CACHE/cluster
if [ -z "${K8S_VERSION:-}" ] && [ -f "$MAIN_ROOT/var/cluster.env" ]; then
  K8S_VERSION=$(sed -n 's/^K8S_VERSION=//p' "$MAIN_ROOT/var/cluster.env")
fi
CLUSTER_ROOT=$CMSYNC_CACHE/cluster2
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# the main cluster's admin kubeconfig (lib.sh's KUBECONFIG_FILE is ours)
MAIN_KUBECONFIG=$MAIN_ROOT/etc/admin.kubeconfig
ETCD2_CLIENT_PORT=2479
ETCD2_PEER_PORT=2480
APISERVER2_PORT=6543
CLUSTER2_PORTS="$ETCD2_CLIENT_PORT $ETCD2_PEER_PORT $APISERVER2_PORT"
CLUSTER2_DAEMONS="etcd kube-apiserver"
CLUSTER2_CONTEXT=cmsync-cp2
# the third context of contexts.kubeconfig: an API server nobody listens on (port 1 on loopback)
CLOSED_CONTEXT=cmsync-closed
CLOSED_SERVER=https://127.0.0.1:1
CONTEXTS_KUBECONFIG=$ETC/contexts.kubeconfig

apiserver2_ready() {
  curl -fsS --max-time 5 --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" \
    "https://127.0.0.1:$APISERVER2_PORT/readyz" >/dev/null 2>&1
}
cluster2_healthy() { alive etcd && alive kube-apiserver && apiserver2_ready; }

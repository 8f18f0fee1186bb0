#!/usr/bin/env bash
# Start the second control plane (cluster2-lib.sh): etcd on 127.0.0.1:2479/2480 and kube-apiserver on
# 127.0.0.1:6543, with their own CA and certificates (pki.sh) and admin kubeconfig (context cmsync-cp2),
# then write contexts.kubeconfig: the main cluster's context (when it is up), cmsync-cp2, and
# cmsync-closed (a closed port). A healthy second control plane is reused. Refuses (exit 1) when a port
# is taken or a binary is missing; on failure prints the tail of the failing daemon's log and cleans up.
# Needs no root and no kubelet: its pods stay Pending.
set -euo pipefail
. "$(dirname "$0")/cluster2-lib.sh"
mkdir -p "$CLUSTER_ROOT"
exec 8> "$CLUSTER_ROOT/.lock"
flock 8

write_contexts() {
  local kc=$CONTEXTS_KUBECONFIG.tmp files=$KUBECONFIG_FILE
  [ -f "$MAIN_KUBECONFIG" ] && files=$MAIN_KUBECONFIG:$KUBECONFIG_FILE
  KUBECONFIG=$files "$BIN/kubectl" config view --flatten > "$kc"
  "$BIN/kubectl" --kubeconfig="$kc" config set-cluster "$CLOSED_CONTEXT" --server="$CLOSED_SERVER" --insecure-skip-tls-verify=true >/dev/null
  "$BIN/kubectl" --kubeconfig="$kc" config set-credentials "$CLOSED_CONTEXT" --token=closed >/dev/null
  "$BIN/kubectl" --kubeconfig="$kc" config set-context "$CLOSED_CONTEXT" --cluster="$CLOSED_CONTEXT" --user="$CLOSED_CONTEXT" >/dev/null
  chmod 600 "$kc"; mv "$kc" "$CONTEXTS_KUBECONFIG"
  echo "contexts: $CONTEXTS_KUBECONFIG ($(KUBECONFIG=$CONTEXTS_KUBECONFIG "$BIN/kubectl" config get-contexts -o name | tr '\n' ' '))"
}

if cluster2_healthy; then
  echo "cluster2-up: already up (kube-apiserver https://127.0.0.1:$APISERVER2_PORT); reusing it"
  write_contexts
  exit 0
fi
for b in "$BIN/kube-apiserver" "$BIN/kubectl"; do
  [ -x "$b" ] || die "missing $b (run K8S_VERSION=$K8S_VERSION hack/cluster/build.sh, or make cluster-build)"
done
command -v etcd >/dev/null || die "missing etcd (run hack/cluster/prereqs.sh)"
# what a killed earlier run left
[ -d "$VAR" ] && { echo "cluster2-up: cleaning what an earlier run left behind"; CMSYNC_CLUSTER2_LOCKED=1 "$HACK_CLUSTER/cluster2-down.sh" | sed 's/^/  /'; }
busy=""
for p in $CLUSTER2_PORTS; do [ -z "$(ss -Hltn "( sport = :$p )" 2>/dev/null)" ] || busy="$busy $p"; done
[ -z "$busy" ] || die "port(s) already in use:$busy (the second control plane needs $CLUSTER2_PORTS on 127.0.0.1)"

ok=0
on_exit() { [ $ok = 1 ] || { echo "cluster2-up: failed; cleaning up (logs kept in $CLUSTER_ROOT/last-logs)" >&2; CMSYNC_CLUSTER2_LOCKED=1 "$HACK_CLUSTER/cluster2-down.sh" >/dev/null 2>&1 || true; }; }
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

CLUSTER_ROOT=$CLUSTER_ROOT "$HACK_CLUSTER/pki.sh" >/dev/null   # CLUSTER_ROOT is ours: its own CA, API server and admin certificates
mkdir -p "$ETC" "$VAR/etcd" "$PIDS" "$LOG"
cat > "$KUBECONFIG_FILE.tmp" <<KC
apiVersion: v1
kind: Config
clusters:
- name: $CLUSTER2_CONTEXT
  cluster:
    server: https://127.0.0.1:$APISERVER2_PORT
    certificate-authority-data: $(base64 -w0 "$PKI/ca.crt")
users:
- name: $CLUSTER2_CONTEXT-admin
  user:
    client-certificate-data: $(base64 -w0 "$PKI/admin.crt")
    client-key-data: $(base64 -w0 "$PKI/admin.key")
contexts:
- name: $CLUSTER2_CONTEXT
  context: {cluster: $CLUSTER2_CONTEXT, user: $CLUSTER2_CONTEXT-admin}
current-context: $CLUSTER2_CONTEXT
KC
chmod 600 "$KUBECONFIG_FILE.tmp"; mv "$KUBECONFIG_FILE.tmp" "$KUBECONFIG_FILE"

ts "starting the second control plane (state in $CLUSTER_ROOT)"
start etcd etcd --name cmsync-cp2 --data-dir "$VAR/etcd" \
  --listen-client-urls "http://127.0.0.1:$ETCD2_CLIENT_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD2_CLIENT_PORT" \
  --listen-peer-urls "http://127.0.0.1:$ETCD2_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD2_PEER_PORT" \
  --initial-cluster "cmsync-cp2=http://127.0.0.1:$ETCD2_PEER_PORT" --initial-cluster-state new
waitfor "etcd (second control plane) healthy" etcd 30 curl -fsS --max-time 2 "http://127.0.0.1:$ETCD2_CLIENT_PORT/health"
# no controller-manager creates ServiceAccounts here: the ServiceAccount admission plugin is off, so that
# pods are accepted without one; no endpoint reconciler (no `kubernetes` Service endpoint to serve)
start kube-apiserver "$BIN/kube-apiserver" \
  --etcd-servers="http://127.0.0.1:$ETCD2_CLIENT_PORT" \
  --bind-address=127.0.0.1 --secure-port="$APISERVER2_PORT" --endpoint-reconciler-type=none \
  --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
  --client-ca-file="$PKI/ca.crt" --authorization-mode=RBAC \
  --disable-admission-plugins=ServiceAccount \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
  --service-cluster-ip-range=10.97.0.0/24 --allow-privileged=true --profiling=false
waitfor "kube-apiserver (second control plane) /readyz" kube-apiserver 120 apiserver2_ready
write_contexts
ok=1
ts "second control plane up: etcd=$(pid_of etcd) kube-apiserver=$(pid_of kube-apiserver); KUBECONFIG=$KUBECONFIG_FILE"
echo "  stop it with: hack/cluster/cluster2-down.sh (or make cluster2-down)"

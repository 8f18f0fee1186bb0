# shellcheck shell=bash
# How each daemon of the local cluster is started and checked (sourced by up.sh and component.sh, after
# lib.sh). Loopback-only wiring: every component listens on and connects to 127.0.0.1 or a unix socket:
#   etcd 127.0.0.1:2379/2380, kube-apiserver 127.0.0.1:6443, controller-manager 127.0.0.1:10257,
#   scheduler 127.0.0.1:10259, kubelet 127.0.0.1:10250 (healthz 127.0.0.1:10248), containerd's CRI stream
#   server 127.0.0.1:<random>, kubelet -> containerd by unix socket.
# The API server -> kubelet traffic (exec, attach, logs, port-forward, nodes/N/proxy) goes through the API
# server's egress selector to the unix socket of kubelet-tunnel.sh, which only ever dials 127.0.0.1:10250.
# The node reports $NODE_IP (the machine's own address, or 10.245.0.1 on lo) as its InternalIP, as a label only:
# the kubelet refuses a loopback node IP, and the API server refuses to proxy to a loopback node address.

node_ip() { cat "$VAR/node-ip"; }

# extra_args NAME ENVVAR: the words of $ENVVAR (flags added to daemon NAME's command line, after its own;
# e.g. ETCD_EXTRA_ARGS=--quota-backend-bytes=8589934592), one per line, recorded in $VAR/extra-args.NAME so
# that a restart by component.sh keeps them; ENVVAR unset: the recorded ones (none recorded: none). Set and
# empty clears them. Split on blanks: a flag's value cannot hold one.
extra_args() {
  local f=$VAR/extra-args.$1 words
  if [ -n "${!2+set}" ]; then
    read -r -a words <<< "${!2}"
    printf '%s\n' "${words[@]}" | grep -v '^$' > "$f" || true
  fi
  [ -f "$f" ] && cat "$f"
  return 0
}

start_component() { # name
  local extra
  mapfile -t extra < <(case $1 in etcd) extra_args etcd ETCD_EXTRA_ARGS ;; kube-apiserver) extra_args kube-apiserver APISERVER_EXTRA_ARGS ;;
    kube-controller-manager) extra_args kube-controller-manager KCM_EXTRA_ARGS ;; esac)
  case $1 in
  etcd)
    start etcd etcd --name cmsync --data-dir "$VAR/etcd" \
      --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
      --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
      --initial-cluster cmsync=http://127.0.0.1:2380 --initial-cluster-state new "${extra[@]}" ;;
  containerd)
    start containerd containerd --config "$ETC/containerd/config.toml" ;;
  kubelet-tunnel)
    start kubelet-tunnel "$HACK_CLUSTER/kubelet-tunnel.sh" listen "$RUN/kubelet-tunnel.sock" "$(node_ip)" "$POD_SUBNET" ;;
  kube-apiserver)
    write_audit_policy
    # --advertise-address fills the endpoints of the `kubernetes` Service: the bridge's address, where
    # apiserver-relay.sh listens. The kubelet is dialled as <InternalIP>:10250 through the egress selector.
    start kube-apiserver kube-apiserver \
      --etcd-servers=http://127.0.0.1:2379 \
      --bind-address=127.0.0.1 --secure-port=6443 --advertise-address="$BRIDGE_IP" \
      --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
      --client-ca-file="$PKI/ca.crt" \
      --authorization-mode=Node,RBAC \
      --enable-admission-plugins=NodeRestriction \
      --service-account-issuer=https://kubernetes.default.svc.cluster.local \
      --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
      --service-cluster-ip-range=$SVC_CIDR \
      --kubelet-client-certificate="$PKI/apiserver-kubelet-client.crt" --kubelet-client-key="$PKI/apiserver-kubelet-client.key" \
      --kubelet-certificate-authority="$PKI/ca.crt" --kubelet-preferred-address-types=InternalIP \
      --egress-selector-config-file="$ETC/egress-selector.yaml" \
      --requestheader-client-ca-file="$PKI/front-proxy-ca.crt" --requestheader-allowed-names=front-proxy-client \
      --requestheader-username-headers=X-Remote-User --requestheader-group-headers=X-Remote-Group \
      --requestheader-extra-headers-prefix=X-Remote-Extra- \
      --proxy-client-cert-file="$PKI/front-proxy-client.crt" --proxy-client-key-file="$PKI/front-proxy-client.key" \
      --audit-policy-file="$ETC/audit-policy.yaml" --audit-log-path="$LOG/audit/audit.log" \
      --audit-log-maxsize=50 --audit-log-maxbackup=2 --audit-log-maxage=0 --audit-log-format=json \
      --allow-privileged=true --profiling=false "${extra[@]}" ;;
  apiserver-relay)
    start apiserver-relay "$HACK_CLUSTER/apiserver-relay.sh" "$KUBE_SVC_IP" "$BRIDGE_IP" ;;
  kube-controller-manager)
    start kube-controller-manager kube-controller-manager \
      --kubeconfig="$ETC/kcm.kubeconfig" --authentication-kubeconfig="$ETC/kcm.kubeconfig" --authorization-kubeconfig="$ETC/kcm.kubeconfig" \
      --bind-address=127.0.0.1 --leader-elect=false \
      --service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" --use-service-account-credentials=true \
      --cluster-signing-cert-file="$PKI/ca.crt" --cluster-signing-key-file="$PKI/ca.key" \
      --service-cluster-ip-range=$SVC_CIDR --allocate-node-cidrs=false --flex-volume-plugin-dir="$VAR/kubelet/volume-plugins" \
      --profiling=false "${extra[@]}" ;;
  kube-scheduler)
    start kube-scheduler kube-scheduler \
      --kubeconfig="$ETC/scheduler.kubeconfig" --authentication-kubeconfig="$ETC/scheduler.kubeconfig" --authorization-kubeconfig="$ETC/scheduler.kubeconfig" \
      --bind-address=127.0.0.1 --leader-elect=false --profiling=false ;;
  kubelet)
    # the kubelet writes pod logs to the hard-coded /var/log/pods: remember what was there before (once),
    # down.sh removes what appeared since
    [ -f "$VAR/var-log-pods.before" ] || { ls -A /var/log/pods 2>/dev/null || true; } > "$VAR/var-log-pods.before"
    # --pod-infra-container-image (only kept the image from garbage collection) was removed in 1.35: the
    # runtime names the sandbox image, and containerd pins it
    local pause=(); [ "$K8S_MINOR" -ge 35 ] || pause=(--pod-infra-container-image="$IMAGE_PAUSE")
    start kubelet kubelet --config="$ETC/kubelet-config.yaml" --kubeconfig="$ETC/kubelet.kubeconfig" \
      --hostname-override="$NODE_NAME" --node-ip="$(node_ip)" --root-dir="$VAR/kubelet" "${pause[@]}" ;;
  *) die "unknown component $1 (one of: $DAEMONS)" ;;
  esac
}

# The API server's audit log, $LOG/audit/audit.log (JSON lines, audit.k8s.io/v1 Events; rotated at 50 MB,
# 2 kept; down.sh moves it to last-logs/ with the other logs): what ServiceAccounts did, at the Metadata level
# (who, verb, object, response code; no bodies), read by the e2e suite's least-privilege test. The system
# components and the kube-system ServiceAccounts (the controller-manager's controllers) are left out, so
# that the log stays small; requests matching no rule are not logged. Written at each start of the API
# server, so that a restart (component.sh) of a cluster started before it had the policy finds it too.
write_audit_policy() {
  mkdir -p "$LOG/audit"
  cat > "$ETC/audit-policy.yaml.tmp" <<AP
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: None
  users: ["system:apiserver", "system:kube-controller-manager", "system:kube-scheduler", "system:kube-proxy"]
- level: None
  userGroups: ["system:nodes", "system:serviceaccounts:kube-system"]
- level: Metadata
  userGroups: ["system:serviceaccounts"]
AP
  mv "$ETC/audit-policy.yaml.tmp" "$ETC/audit-policy.yaml"
}

# kernel tunables the kubelet rewrote at start: put the machine's values back
restore_sysctls() {
  local k v
  [ -f "$VAR/sysctl.orig" ] || return 0
  while read -r k v; do [ -e "/proc/sys/$k" ] && [ "$(cat "/proc/sys/$k")" != "$v" ] && echo "$v" > "/proc/sys/$k"; done < "$VAR/sysctl.orig"
  return 0
}

wait_component() { # name [timeout]
  local t=${2:-120}
  case $1 in
  etcd) waitfor "etcd healthy" etcd "$t" curl -fsS --max-time 2 http://127.0.0.1:2379/health ;;
  containerd) waitfor "containerd socket" containerd "$t" ctr --address "$CTRD_SOCK" version ;;
  kubelet-tunnel) waitfor "kubelet tunnel socket" kubelet-tunnel "$t" test -S "$RUN/kubelet-tunnel.sock" ;;
  kube-apiserver) waitfor "kube-apiserver /readyz" kube-apiserver "$t" apiserver_ready ;;
  apiserver-relay) waitfor "the API server through the kubernetes Service (https://$KUBE_SVC_IP/livez)" apiserver-relay "$t" \
    curl -fsS --max-time 2 --cacert "$PKI/ca.crt" "https://$KUBE_SVC_IP/livez" ;;
  kube-controller-manager) waitfor "kube-controller-manager /healthz" kube-controller-manager "$t" curl -ksf --max-time 2 https://127.0.0.1:10257/healthz ;;
  kube-scheduler) waitfor "kube-scheduler /healthz" kube-scheduler "$t" curl -ksf --max-time 2 https://127.0.0.1:10259/healthz ;;
  kubelet)
    waitfor "kubelet /healthz" kubelet "$t" curl -fsS --max-time 2 http://127.0.0.1:10248/healthz
    waitfor "node $NODE_NAME Ready" kubelet "$t" node_ready
    restore_sysctls
    # API server -> egress selector -> kubelet-tunnel.sh -> kubelet: the path of exec, logs and configz
    waitfor "kubelet via the API server (nodes/$NODE_NAME/proxy/healthz)" kubelet-tunnel "$t" \
      kubectl_admin --request-timeout=5s get --raw "/api/v1/nodes/$NODE_NAME/proxy/healthz" ;;
  esac
}

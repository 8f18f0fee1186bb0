#!/usr/bin/env bash
# Start the local single-node cluster (etcd, containerd+runc, kube-apiserver, kube-controller-manager,
# kube-scheduler, kubelet, and the API server's tunnel to the kubelet), all state under $CLUSTER_ROOT.
#   - a live healthy cluster is reused (exit 0, says so);
#   - what a killed earlier run left behind (pid files, mounts, bridge, cgroups...) is cleaned first (down.sh);
#   - refuses clearly (exit 1) when not root, a package or binary is missing, or a port is taken;
#   - on failure prints the tail of the failing daemon's log and cleans up (KEEP_ON_FAILURE=1 leaves it);
#     logs stay in $CLUSTER_ROOT/last-logs.
# Needs: prereqs.sh (packages) and build.sh (binaries) once; builds images and PKI itself when missing.
# See components.sh for the loopback-only wiring.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$HACK_CLUSTER/components.sh"
need_root
mkdir -p "$CLUSTER_ROOT"
if [ -z "${CMSYNC_CLUSTER_LOCKED:-}" ]; then
  exec 8> "$CLUSTER_ROOT/.lock"
  flock -n 8 || { echo "up: another up/down is running, waiting for it"; flock 8; }
  export CMSYNC_CLUSTER_LOCKED=1
fi

say_kubeconfig() {
  echo "kubeconfig: $KUBECONFIG_FILE"
  echo "  export KUBECONFIG=$KUBECONFIG_FILE PATH=$BIN:\$PATH   # kubectl v$K8S_VERSION"
}

# ---- a live, healthy cluster: reuse it if it is the version and runtime asked for ----
if [ -n "$(ls "$PIDS"/*.pid 2>/dev/null)" ] && cluster_healthy; then
  same_cluster || die "a cluster with $(running_env)is up, and $(want_env)was asked for: take it down first (make cluster-down)"
  echo "up: cluster already up and healthy (node $NODE_NAME, Kubernetes v$K8S_VERSION, runtime $CONTAINER_RUNTIME); reusing it"
  restore_sysctls   # in case an earlier up was killed between the kubelet's start and the restore
  waitfor "default ServiceAccount and kube-root-ca.crt" kube-controller-manager 60 \
    bash -c "$BIN/kubectl --kubeconfig=$KUBECONFIG_FILE -n default get sa default && $BIN/kubectl --kubeconfig=$KUBECONFIG_FILE -n default get cm kube-root-ca.crt" >/dev/null
  say_kubeconfig
  exit 0
fi

need_packages
need_binaries
case $HACK_CLUSTER in *[[:space:]:,]*) die "the repository path $HACK_CLUSTER contains a space, ':' or ',' (socat cannot run kubelet-tunnel.sh from there)";; esac

# ---- leftovers of an earlier run (killed, or half started): clean them first ----
leftovers() {
  [ -e "$VAR" ] || ip link show "$BRIDGE" >/dev/null 2>&1 || findmnt -rn -o TARGET | grep -q "^$VAR/" ||
    ls -d /sys/fs/cgroup/*/kubepods >/dev/null 2>&1
}
if leftovers; then
  dead=""; for n in $DAEMONS; do [ -f "$PIDS/$n.pid" ] && ! alive "$n" && dead="$dead $n"; done
  echo "up: cleaning what an earlier cluster left behind${dead:+ (not running:$dead)}"
  "$HACK_CLUSTER/down.sh" | sed 's/^/  /'
fi

# ---- ports (all ours are on 127.0.0.1, but anything listening on the port would clash) ----
busy=""
for p in $PORTS; do [ -z "$(ss -Hltn "( sport = :$p )" 2>/dev/null)" ] || busy="$busy $p"; done
if [ -n "$busy" ]; then
  echo "ERROR: port(s) already in use:$busy (the cluster needs $PORTS on 127.0.0.1)" >&2
  for p in $busy; do ss -Hltnp "( sport = :$p )" >&2 || true; done
  exit 1
fi
ip link show "$BRIDGE" >/dev/null 2>&1 && die "a network interface $BRIDGE exists and was not cleaned: remove it (ip link del $BRIDGE) or set BRIDGE"

# from here on a failure cleans up what this run started (the logs are kept in last-logs/)
ok=0
on_exit() {
  [ $ok = 1 ] && return 0
  if [ "${KEEP_ON_FAILURE:-0}" = 1 ]; then echo "up: failed; KEEP_ON_FAILURE=1: left as is, logs in $LOG; clean with hack/cluster/down.sh" >&2
  else echo "up: failed; cleaning up (logs kept in $CLUSTER_ROOT/last-logs)" >&2; "$HACK_CLUSTER/down.sh" >/dev/null 2>&1 || true; fi
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

"$HACK_CLUSTER/images.sh" | sed 's/^/  /'
NODE_IP=${NODE_IP:-$(default_ip || true)}
NODE_IP=${NODE_IP:-$FALLBACK_NODE_IP}
NODE_NAME=$NODE_NAME NODE_IP=$NODE_IP "$HACK_CLUSTER/pki.sh" >/dev/null

mkdir -p "$ETC/cni/net.d" "$ETC/containerd" "$PIDS" "$LOG" "$RUN/containerd" "$VAR/etcd" "$VAR/kubelet" "$VAR/cni/networks" "$VAR/containerd"
printf 'K8S_VERSION=%s\nCONTAINER_RUNTIME=%s\n' "$K8S_VERSION" "$CONTAINER_RUNTIME" > "$VAR/cluster.env"
echo "$NODE_IP" > "$VAR/node-ip"
# the kubelet insists the node IP sits on an interface: only if none has it, add it to lo (down.sh removes it)
if ! ip -4 -o addr show | grep -qF " $NODE_IP/"; then ip addr add "$NODE_IP/32" dev lo; echo "$NODE_IP" > "$VAR/node-ip-on-lo"; fi
# the way in-cluster clients reach the API server (lib.sh): the bridge with its address (the CNI plugin finds it
# as it wants it), and the `kubernetes` Service's ClusterIP on lo (down.sh removes both)
# Its MAC address is set, not left to the kernel: a bridge whose address nobody set takes the lowest of its
# ports', so it changed each time a pod's veth came or went, and every pod's ARP entry for its gateway went stale
# (no gratuitous ARP without arp_notify): for 20-60 s the pods could not reach the API server nor answer the
# kubelet's probes (controllers killed by their liveness probe, Leases lost, watches silent).
ip link add "$BRIDGE" address "$BRIDGE_MAC" type bridge && ip addr add "$BRIDGE_IP/${POD_SUBNET#*/}" dev "$BRIDGE" &&
  ip link set "$BRIDGE" up
if ! ip -4 -o addr show | grep -qF " $KUBE_SVC_IP/"; then ip addr add "$KUBE_SVC_IP/32" dev lo; echo "$KUBE_SVC_IP" > "$VAR/svc-ip-on-lo"; fi

# ---- kubeconfigs ----
mkkc() { # user cert key out
  cat > "$4.tmp" <<KC
apiVersion: v1
kind: Config
clusters:
- name: cmsync-local
  cluster:
    server: https://127.0.0.1:6443
    certificate-authority-data: $(base64 -w0 "$PKI/ca.crt")
users:
- name: $1
  user:
    client-certificate-data: $(base64 -w0 "$2")
    client-key-data: $(base64 -w0 "$3")
contexts:
- name: cmsync-local
  context: {cluster: cmsync-local, user: $1}
current-context: cmsync-local
KC
  chmod 600 "$4.tmp"; mv "$4.tmp" "$4"
}
mkkc cmsync-admin "$PKI/admin.crt" "$PKI/admin.key" "$KUBECONFIG_FILE"
mkkc "system:node:$NODE_NAME" "$PKI/kubelet-client.crt" "$PKI/kubelet-client.key" "$ETC/kubelet.kubeconfig"
mkkc system:kube-controller-manager "$PKI/kcm.crt" "$PKI/kcm.key" "$ETC/kcm.kubeconfig"
mkkc system:kube-scheduler "$PKI/scheduler.crt" "$PKI/scheduler.key" "$ETC/scheduler.kubeconfig"

# ---- containerd: CRI plugin, local pause image, cgroupfs, CNI, stream server on loopback ----
# no CAP_SYS_RESOURCE on these machines: runc cannot set a negative oom_score_adj (-998 for pause), hence
# restrict_oom_score_adj
# containerd_common EXTRA: the lines both configuration versions share (EXTRA: one more plugin to disable)
containerd_common() {
  cat <<CT
root = "$VAR/containerd/root"
state = "$VAR/containerd/state"
disabled_plugins = [$1, "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = "$CTRD_SOCK"
[ttrpc]
  address = "$RUN/containerd/containerd.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$VAR/containerd/opt"
CT
}
if [ "$CONTAINER_RUNTIME" = built ]; then
# containerd 2.x: configuration version 3 (the CRI plugin is split into images, runtime and the gRPC server),
# read by every 2.x; 2.4 migrates it to its version 4 at start (one warning in its log). containerd 2.2+ warns
# that its cgroup v1 support is deprecated (kept until 2029 at the latest).
{ echo "version = 3"; containerd_common '"io.containerd.snapshotter.v1.erofs"'
cat <<CT
[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = "$IMAGE_PAUSE"
[plugins."io.containerd.cri.v1.runtime"]
  enable_selinux = false
  disable_hugetlb_controller = true
  restrict_oom_score_adj = true
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        BinaryName = "$(runc_path)"
        Root = "$RUN/runc"
        SystemdCgroup = false
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "$ETC/cni/net.d"
    max_conf_num = 1
[plugins."io.containerd.grpc.v1.cri"]
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
CT
} > "$ETC/containerd/config.toml"
else
# Debian's containerd 1.6: configuration version 2
{ echo "version = 2"; containerd_common '"io.containerd.snapshotter.v1.aufs"'
cat <<CT
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$IMAGE_PAUSE"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  disable_hugetlb_controller = true
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "$(runc_path)"
        Root = "$RUN/runc"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$ETC/cni/net.d"
    max_conf_num = 1
CT
} > "$ETC/containerd/config.toml"
fi

# ---- CNI: a bridge + host-local IPAM (+ loopback, added by containerd). No masquerade, no default route:
# the bridge's address is the gateway of the Service range only, so pods reach the API server through the
# `kubernetes` Service (lib.sh) and nothing else beyond their subnet ----
cat > "$ETC/cni/net.d/10-cmsync-bridge.conflist" <<CNI
{
  "cniVersion": "1.0.0",
  "name": "cmsync-net",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$BRIDGE",
      "isGateway": true,
      "isDefaultGateway": false,
      "ipMasq": false,
      "hairpinMode": false,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$POD_SUBNET", "gateway": "$BRIDGE_IP"}]],
        "routes": [{"dst": "$SVC_CIDR", "gw": "$BRIDGE_IP"}],
        "dataDir": "$VAR/cni/networks"
      }
    }
  ]
}
CNI

# ---- kubelet ----
cat > "$ETC/kubelet-config.yaml" <<KL
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1   # reached only through kubelet-tunnel.sh (and locally at 127.0.0.1)
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
tlsCertFile: $PKI/kubelet-serving.crt
tlsPrivateKeyFile: $PKI/kubelet-serving.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $PKI/ca.crt}
authorization:
  mode: Webhook
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://$CTRD_SOCK
failSwapOn: false
makeIPTablesUtilChains: false
volumePluginDir: $VAR/kubelet/volume-plugins
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
maxPods: 250
evictionHard:
  memory.available: "100Mi"
  nodefs.available: "2%"
  nodefs.inodesFree: "2%"
  imagefs.available: "2%"
# no image garbage collection: the two images are imported, not pulled, and nothing could pull them back.
# With the default (collect above 85% disk use) a full disk once removed localhost/pause:probe, and every
# new pod then stayed ContainerCreating ("failed to pull image localhost/pause:probe").
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
# syncFrequency (1m) and configMapAndSecretChangeDetectionStrategy (Watch) stay at their defaults on purpose:
# they are what the plugin models.
KL
# this machine has cgroup v1: from 1.35 the kubelet refuses to start on it unless told not to (the field
# exists since 1.31)
if [ "$K8S_MINOR" -ge 31 ] && [ "$(stat -fc %T /sys/fs/cgroup)" != cgroup2fs ]; then
  echo "failCgroupV1: false" >> "$ETC/kubelet-config.yaml"
fi

# ---- API server egress: all "cluster" traffic (to the kubelet, nodes/pods/services proxy) via the tunnel ----
cat > "$ETC/egress-selector.yaml" <<EG
apiVersion: apiserver.k8s.io/v1beta1
kind: EgressSelectorConfiguration
egressSelections:
- name: cluster
  connection:
    proxyProtocol: HTTPConnect
    transport:
      uds:
        udsName: $RUN/kubelet-tunnel.sock
EG

# kernel tunables the kubelet rewrites: remember the machine's values (restored after the kubelet starts,
# and by down.sh)
[ -f "$VAR/sysctl.orig" ] || for k in $SYSCTLS; do [ -e "/proc/sys/$k" ] && echo "$k $(cat "/proc/sys/$k")"; done > "$VAR/sysctl.orig"

ts "starting (node $NODE_NAME, reported IP $NODE_IP, state in $CLUSTER_ROOT)"
start_component etcd
start_component containerd
wait_component etcd 30
start_component kubelet-tunnel
start_component kube-apiserver
wait_component containerd 30
for img in pause busybox; do
  ref=$IMAGE_BUSYBOX; [ $img = pause ] && ref=$IMAGE_PAUSE
  ctr --address "$CTRD_SOCK" -n k8s.io images ls -q | grep -qxF "$ref" ||
    ctr --address "$CTRD_SOCK" -n k8s.io images import "$IMAGES/$img.tar" >/dev/null || fail containerd "importing $IMAGES/$img.tar failed"
done
ts "images imported: $IMAGE_PAUSE $IMAGE_BUSYBOX"
wait_component kubelet-tunnel 10
wait_component kube-apiserver 120
start_component apiserver-relay
start_component kube-controller-manager
start_component kube-scheduler
start_component kubelet
wait_component kubelet 120
waitfor "default ServiceAccount and kube-root-ca.crt" kube-controller-manager 60 \
  bash -c "$BIN/kubectl --kubeconfig=$KUBECONFIG_FILE -n default get sa default && $BIN/kubectl --kubeconfig=$KUBECONFIG_FILE -n default get cm kube-root-ca.crt"
wait_component kube-scheduler 30
wait_component apiserver-relay 10
restore_sysctls
ok=1
ts "cluster up. PIDs: $(for n in $DAEMONS; do echo -n "$n=$(pid_of $n) "; done)"
say_kubeconfig
echo "  stop it with: hack/cluster/down.sh (or make cluster-down)"

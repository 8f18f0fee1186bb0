# shellcheck shell=bash
# Common settings and helpers of the hack/cluster scripts (sourced, not run).
#
# Three places on disk:
#   K8S_ROOT      $HOME/.cache/kubectl-cmsync/k8s/v$K8S_VERSION  {bin,gopath,gocache,build}: the build cache,
#                 keyed by version, kept across clusters (~5 GB; the build takes ~8 min on 2 cores).
#   RUNTIME_CACHE $HOME/.cache/kubectl-cmsync/runtime  {containerd,runc}/vX.Y.Z/bin, gopath, gocache: the
#                 containerd and runc builds (build-runtime.sh), keyed by version.
#   CLUSTER_ROOT  $HOME/.cache/kubectl-cmsync/cluster  {pki,etc,images,var}: the cluster. var/ (etcd data,
#                 kubelet and containerd state, pid files, logs) is wiped by down.sh; the last run's logs
#                 are kept in last-logs/.
# Every connection between components stays on 127.0.0.1 or a unix socket (see up.sh).

CMSYNC_CACHE=${CMSYNC_CACHE:-$HOME/.cache/kubectl-cmsync}
CLUSTER_ROOT=${CLUSTER_ROOT:-$CMSYNC_CACHE/cluster}
# The scripts that act on the cluster that runs (down.sh, status.sh, component.sh) set CMSYNC_FOLLOW_RUNNING=1:
# they take its version and runtime from what up.sh recorded, whatever K8S_VERSION says.
if [ "${CMSYNC_FOLLOW_RUNNING:-0}" = 1 ] && [ -f "$CLUSTER_ROOT/var/cluster.env" ]; then
  K8S_VERSION=$(sed -n 's/^K8S_VERSION=//p' "$CLUSTER_ROOT/var/cluster.env")
  CONTAINER_RUNTIME=$(sed -n 's/^CONTAINER_RUNTIME=//p' "$CLUSTER_ROOT/var/cluster.env")
elif [ "${CMSYNC_FOLLOW_RUNNING:-0}" = 1 ] && [ -d "$CLUSTER_ROOT/var/pids" ]; then
  # started by scripts older than that record: v1.30.14 on Debian's containerd
  K8S_VERSION=1.30.14 CONTAINER_RUNTIME=debian
fi
# The Kubernetes version, with or without the leading v (1.37.2 or v1.37.2); v1.30.x to v1.37.x are supported.
K8S_DEFAULT_VERSION=1.37.2
K8S_VERSION=${K8S_VERSION:-$K8S_DEFAULT_VERSION}
K8S_VERSION=${K8S_VERSION#v}
[[ $K8S_VERSION =~ ^1\.(3[0-7])\.(0|[1-9][0-9]*)$ ]] ||
  { echo "ERROR: K8S_VERSION=$K8S_VERSION: expected a release from 1.30.0 to 1.37.x, such as 1.37.2 or v1.30.14" >&2; exit 1; }
K8S_MINOR=${BASH_REMATCH[1]}
K8S_ROOT=${K8S_ROOT:-$CMSYNC_CACHE/k8s/v$K8S_VERSION}
BIN=$K8S_ROOT/bin
# The container runtime: "built" = containerd $CONTAINERD_VERSION and runc $RUNC_VERSION built by build-runtime.sh
# into $RUNTIME_CACHE; "debian" = Debian's containerd 1.6 and runc packages (past their end of life; Kubernetes
# 1.30 to 1.34 only: containerd 1.6 has no support row for 1.35+). Default: debian up to 1.34 (what the e2e
# suite has passed on), built from 1.35.
if [ -z "${CONTAINER_RUNTIME:-}" ]; then
  if [ "$K8S_MINOR" -le 34 ]; then CONTAINER_RUNTIME=debian; else CONTAINER_RUNTIME=built; fi
fi
CONTAINERD_VERSION=2.4.2
RUNC_VERSION=1.5.2
RUNTIME_CACHE=${RUNTIME_CACHE:-$CMSYNC_CACHE/runtime}
CONTAINERD_BIN=$RUNTIME_CACHE/containerd/v$CONTAINERD_VERSION/bin
RUNC_BIN=$RUNTIME_CACHE/runc/v$RUNC_VERSION/bin
case $CONTAINER_RUNTIME in
built) RUNTIME_PATH=$CONTAINERD_BIN: ;;
debian)
  [ "$K8S_MINOR" -le 34 ] || { echo "ERROR: CONTAINER_RUNTIME=debian (containerd 1.6) does not support Kubernetes 1.35+ (K8S_VERSION=$K8S_VERSION): use CONTAINER_RUNTIME=built" >&2; exit 1; }
  RUNTIME_PATH="" ;;
*) echo "ERROR: CONTAINER_RUNTIME=$CONTAINER_RUNTIME: one of built (containerd $CONTAINERD_VERSION + runc $RUNC_VERSION, built here) or debian (the Debian packages, Kubernetes <= 1.34)" >&2; exit 1 ;;
esac
PKI=$CLUSTER_ROOT/pki
ETC=$CLUSTER_ROOT/etc
IMAGES=$CLUSTER_ROOT/images
VAR=$CLUSTER_ROOT/var
LOG=$VAR/log
RUN=$VAR/run
PIDS=$VAR/pids
KUBECONFIG_FILE=$ETC/admin.kubeconfig
CTRD_SOCK=$RUN/containerd/containerd.sock
NODE_NAME=${NODE_NAME:-localhost}
POD_SUBNET=${POD_SUBNET:-10.244.0.0/24}
SVC_CIDR=10.96.0.0/24
BRIDGE=cmsync0
BRIDGE_MAC=02:63:6d:73:00:01 # locally administered, fixed (up.sh says why)
# In-cluster clients (pods with a ServiceAccount token, such as the controller) reach the API server through
# the `kubernetes` Service: the host holds its ClusterIP $KUBE_SVC_IP (on lo: there is no kube-proxy) and the
# bridge's address $BRIDGE_IP (the Service's endpoint, --advertise-address); pods route the Service range, and
# nothing else beyond their subnet, through the bridge; apiserver-relay.sh relays both to 127.0.0.1:6443.
KUBE_SVC_IP=10.96.0.1
BRIDGE_IP=${POD_SUBNET%.0/*}.1
# fallback node IP (a label only, see up.sh), put on lo when the machine has no default route
FALLBACK_NODE_IP=10.245.0.1
K8S_BINARIES="kube-apiserver kubelet kube-controller-manager kube-scheduler kubectl"
# daemons in start order; down.sh stops them in reverse dependency order
DAEMONS="etcd containerd kubelet-tunnel kube-apiserver apiserver-relay kube-controller-manager kube-scheduler kubelet"
# ports the cluster listens on (all on 127.0.0.1); up.sh refuses to start if another process holds one
PORTS="2379 2380 6443 10248 10250 10257 10259"
# kernel tunables the kubelet rewrites at start (setupKernelTunables) and the CNI bridge may touch:
# saved by up.sh, restored by up.sh once the kubelet has started and again by down.sh
SYSCTLS="vm/overcommit_memory vm/panic_on_oom kernel/panic kernel/panic_on_oops kernel/keys/root_maxkeys kernel/keys/root_maxbytes net/ipv4/ip_forward"
IMAGE_BUSYBOX=localhost/busybox:probe
IMAGE_PAUSE=localhost/pause:probe
# containerd and runc: CONTAINER_RUNTIME=debian (and ctr for down.sh's cleanup either way); gcc, libc6-dev,
# pkg-config and libseccomp-dev: the pause image and runc with seccomp
APT_PACKAGES="etcd-server containerd runc containernetworking-plugins busybox-static socat gcc libc6-dev pkg-config libseccomp-dev jq bc curl openssl iproute2 util-linux procps tmux"

HACK_CLUSTER=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# containerd finds its shim (containerd-shim-runc-v2) on PATH
export PATH=$RUNTIME_PATH$BIN:/usr/local/go/bin:$PATH
# the runc containerd runs (containerd's config names it)
runc_path() { if [ "$CONTAINER_RUNTIME" = built ]; then echo "$RUNC_BIN/runc"; else command -v runc; fi; }

T0=${T0:-$(date +%s.%N)}
ts() { printf '[%6.1fs] %s\n' "$(echo "$(date +%s.%N) - $T0" | bc)" "$*"; }
die() { echo "ERROR: $*" >&2; exit 1; }
need_root() { [ "$(id -u)" = 0 ] || die "$(basename "$0") must run as root (the local cluster runs a kubelet: mounts, network namespaces, a bridge, cgroups); try: sudo $0"; }

# commands each package provides, to tell which package is missing
missing_packages() {
  local miss="" pair
  for pair in etcd:etcd-server containerd:containerd ctr:containerd containerd-shim-runc-v2:containerd runc:runc \
      /usr/lib/cni/bridge:containernetworking-plugins /usr/lib/cni/host-local:containernetworking-plugins \
      /usr/lib/cni/loopback:containernetworking-plugins /bin/busybox:busybox-static socat:socat gcc:gcc \
      jq:jq bc:bc curl:curl openssl:openssl ip:iproute2 findmnt:util-linux setsid:util-linux ps:procps tmux:tmux; do
    local c=${pair%%:*} p=${pair#*:}
    if [[ $c == /* ]]; then [ -x "$c" ] && continue; else command -v "$c" >/dev/null 2>&1 && continue; fi
    case " $miss " in *" $p "*) ;; *) miss="$miss $p" ;; esac
  done
  [ -f /usr/include/stdio.h ] || case " $miss " in *" libc6-dev "*) ;; *) miss="$miss libc6-dev" ;; esac
  command -v pkg-config >/dev/null 2>&1 || miss="$miss pkg-config"
  [ -f /usr/include/seccomp.h ] || miss="$miss libseccomp-dev"
  echo "${miss# }"
}
need_packages() {
  local m; m=$(missing_packages)
  [ -z "$m" ] || die "missing packages: $m (run hack/cluster/prereqs.sh, or: apt-get install -y $APT_PACKAGES)"
}
need_binaries() {
  local b
  for b in $K8S_BINARIES; do [ -x "$BIN/$b" ] || die "missing $BIN/$b (run K8S_VERSION=$K8S_VERSION hack/cluster/build.sh: ~8 min the first time)"; done
  if [ "$CONTAINER_RUNTIME" = built ]; then
    for b in "$CONTAINERD_BIN/containerd" "$CONTAINERD_BIN/containerd-shim-runc-v2" "$CONTAINERD_BIN/ctr" "$RUNC_BIN/runc"; do
      [ -x "$b" ] || die "missing $b (run hack/cluster/build-runtime.sh: ~4 min the first time)"
    done
  fi
}

# ---- processes: a pid file holds "PID STARTTIME" (STARTTIME from /proc/PID/stat), so that a recycled PID
# is never mistaken for ours. Only processes recorded this way are ever signalled.
proc_start() { local s; s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1; s=${s##*) }; set -- $s; echo "${20}"; }
# a zombie counts as gone: our daemons are orphans, and PID 1 on these machines reaps them only every ~2 s
# running PID: the process runs, or has not finished exiting: a killed multi-threaded daemon's main thread is a
# zombie while its other threads still tear down and hold its files (a listening port among them)
running() {
  local s; s=$(ps -o stat= -p "$1" 2>/dev/null | tr -d ' ')
  [ -n "$s" ] && { [ "${s:0:1}" != Z ] || [ "$(ls "/proc/$1/task" 2>/dev/null | wc -l)" -gt 1 ]; }
}
pid_of() { # name -> PID if that recorded process still runs (same start time), else nothing, status 1
  local f=$PIDS/$1.pid p st
  [ -s "$f" ] || return 1
  read -r p st < "$f" || true
  [ -n "$p" ] && running "$p" || return 1
  [ -z "${st:-}" ] || [ "$(proc_start "$p")" = "$st" ] || return 1
  echo "$p"
}
alive() { pid_of "$1" >/dev/null; }
stop() { # name [group]: SIGTERM (to its whole process group with "group"), up to $STOP_GRACE s (20), then SIGKILL
  local n=$1 p t i g=${STOP_GRACE:-20}
  if p=$(pid_of "$n"); then
    t=$p; [ "${2:-}" = group ] && t=-$p
    if [ "$g" = 0 ]; then
      kill -KILL -- "$t" 2>/dev/null; for i in $(seq 50); do running "$p" || break; sleep 0.1; done
      echo "killed $n ($p)"
    else
      kill -TERM -- "$t" 2>/dev/null
      for i in $(seq $((g * 10))); do running "$p" || break; sleep 0.1; done
      if running "$p"; then
        echo "  $n ($p) did not exit $g s after SIGTERM: SIGKILL"; kill -KILL -- "$t" 2>/dev/null
        for i in $(seq 50); do running "$p" || break; sleep 0.1; done
      fi
      echo "stopped $n ($p)"
    fi
  fi
  rm -f "$PIDS/$n.pid"
}
start() { # name cmd...: run as its own session (process group), log to $LOG/name.log, record "PID STARTTIME".
  # no descriptor past stderr is passed on: a daemon must not hold a lock of its caller (the up/down and build
  # locks on 8 and 9, or a flock(1) that wraps a test run and leaves its lock on 3), or that lock is never freed
  local n=$1 i p; shift
  mkdir -p "$PIDS" "$LOG"
  rm -f "$PIDS/$n.pid"
  setsid bash -c 'for fd in /proc/$$/fd/*; do fd=${fd##*/}; [ "$fd" -gt 2 ] && eval "exec $fd>&-"; done
    echo $$ > "$0.tmp"; exec "$@"' "$PIDS/$n.pid" "$@" >> "$LOG/$n.log" 2>&1 < /dev/null 8>&- 9>&- &
  for i in $(seq 100); do [ -s "$PIDS/$n.pid.tmp" ] && break; sleep 0.02; done
  p=$(cat "$PIDS/$n.pid.tmp") || die "could not start $n"
  echo "$p $(proc_start "$p")" > "$PIDS/$n.pid"; rm -f "$PIDS/$n.pid.tmp"
}
logtail() { # name [lines]
  [ -f "$LOG/$1.log" ] || return 0
  echo "---- last ${2:-30} lines of $LOG/$1.log ----" >&2
  tail -n "${2:-30}" "$LOG/$1.log" >&2
  echo "----" >&2
}
dead_daemons() { local n d=""; for n in $DAEMONS; do [ -f "$PIDS/$n.pid" ] && ! alive "$n" && d="$d $n"; done; echo "${d# }"; }
fail() { # component message: print the tail of the failing daemon's log (and of any daemon that died), exit 1
  local c=$1 n; shift
  echo "ERROR: $*" >&2
  logtail "$c" 40
  for n in $(dead_daemons); do [ "$n" = "$c" ] || { echo "($n is not running either)" >&2; logtail "$n" 40; }; done
  exit 1
}
waitfor() { # desc component timeout cmd...
  local d=$1 c=$2 t=$3; shift 3; local end=$(( $(date +%s) + t )) dead
  until "$@" >/dev/null 2>&1; do
    dead=$(dead_daemons); [ -z "$dead" ] || fail "${dead%% *}" "$dead exited while waiting for $d"
    [ "$(date +%s)" -lt "$end" ] || fail "$c" "timeout after ${t}s waiting for $d"
    sleep 0.2
  done
  ts "$d ok"
}

# the version and runtime of the cluster in $VAR (recorded by the up.sh that started it; no record: an older
# up.sh, v1.30.14 on Debian's containerd), and those this run asks for
running_env() {
  if [ -f "$VAR/cluster.env" ]; then tr '\n' ' ' < "$VAR/cluster.env"; else echo "K8S_VERSION=1.30.14 CONTAINER_RUNTIME=debian "; fi
}
want_env() { echo "K8S_VERSION=$K8S_VERSION CONTAINER_RUNTIME=$CONTAINER_RUNTIME "; }
same_cluster() { [ "$(running_env)" = "$(want_env)" ]; }

kubectl_admin() { "$BIN/kubectl" --kubeconfig="$KUBECONFIG_FILE" "$@"; }
node_ready() { kubectl_admin --request-timeout=5s get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null | grep -qx True; }
apiserver_ready() { curl -fsS --max-time 5 --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" https://127.0.0.1:6443/readyz >/dev/null 2>&1; }
# healthy = every recorded daemon runs, the API server is ready, the node is Ready and the API server reaches
# the kubelet through the tunnel
cluster_healthy() {
  local n
  for n in $DAEMONS; do alive "$n" || return 1; done
  apiserver_ready && node_ready && kubectl_admin --request-timeout=5s get --raw "/api/v1/nodes/$NODE_NAME/proxy/healthz" >/dev/null 2>&1
}

# the node IP: a label only (node InternalIP, kubelet serving cert SAN, what the API server names in its CONNECT
# to kubelet-tunnel.sh). Nothing ever connects to it. The machine's address on its default-route interface.
default_ip() {
  local d; d=$(ip -4 route show default | sed -n 's/.* dev \([^ ]*\).*/\1/p' | head -1)
  [ -n "$d" ] && ip -4 -o addr show dev "$d" scope global | awk '{sub("/.*", "", $4); print $4; exit}'
}

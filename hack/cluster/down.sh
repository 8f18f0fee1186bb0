#!/usr/bin/env bash
# Stop the local cluster and leave the machine clean; safe to run any time (also with nothing up, or after
# a killed run). Keeps bin/ (the build cache), pki/, etc/ and images/; wipes var/ (etcd data, kubelet and
# containerd state); the daemons' logs of this run are moved to $CLUSTER_ROOT/last-logs.
# Only processes whose PIDs (and start times) up.sh recorded are signalled, plus the containers and shims of
# our containerd, through containerd itself (started again for a moment if a killed run left containers behind).
# Then it undoes what the node did to the machine: mounts under var/, pod network namespaces, veths and the
# bridge, kubepods cgroups, kernel tunables the kubelet rewrote, our pods' logs under /var/log/pods and
# /var/log/containers, the kubelet's device-plugin socket, libcni's result cache, the node IP on lo (only if
# up.sh had to add it). Empty directories that the kubelet and containerd hard-code stay.
set -uo pipefail
CMSYNC_FOLLOW_RUNNING=1 . "$(dirname "$0")/lib.sh"
. "$HACK_CLUSTER/components.sh"
need_root
if [ -z "${CMSYNC_CLUSTER_LOCKED:-}" ] && [ -d "$CLUSTER_ROOT" ]; then
  exec 8> "$CLUSTER_ROOT/.lock"
  flock -n 8 || { echo "down: another up/down is running, waiting for it"; flock 8; }
fi
CTR="ctr --address $CTRD_SOCK -n k8s.io"

if [ ! -e "$VAR" ] && ! ip link show "$BRIDGE" >/dev/null 2>&1 && ! ls -d /sys/fs/cgroup/*/kubepods >/dev/null 2>&1; then
  echo "down: nothing to do (no cluster state in $VAR)"
  exit 0
fi

# 1. no new pods; let the kubelet tear every pod down properly (CNI DEL, netns removal, volume unmounts)
stop kwok  # hack/bench/kwok.sh's, when its own down was not run
stop kube-controller-manager; stop kube-scheduler
if alive kubelet && alive kube-apiserver && alive containerd; then
  # grace 1 s (not --force): the kubelet still kills each pod itself, without waiting out long grace periods
  kubectl_admin --request-timeout=10s delete pods --all -A --grace-period=1 --wait=false >/dev/null 2>&1
  for i in $(seq 150); do [ -z "$($CTR tasks ls -q 2>/dev/null)" ] && break; sleep 0.2; done
fi
stop kubelet

# 2. what is left in containerd: kill and delete it. If containerd is gone but a killed run left its state
# (shims and containers may still run), start it again for a moment: it reconnects to them.
tmp_containerd=0
if ! alive containerd && [ -f "$ETC/containerd/config.toml" ] &&
   [ -n "$(ls -A "$VAR/containerd/state/io.containerd.runtime.v2.task/k8s.io" 2>/dev/null)" ]; then
  echo "down: containerd is not running but left containers behind: starting it to clean them"
  start_component containerd; tmp_containerd=1
  for i in $(seq 100); do $CTR version >/dev/null 2>&1 && break; sleep 0.1; done
fi
NETNS=""
if alive containerd; then
  for c in $($CTR containers ls -q 2>/dev/null); do
    ns=$($CTR containers info "$c" 2>/dev/null | jq -r '.Spec.linux.namespaces[]? | select(.type=="network") | .path // empty' 2>/dev/null)
    NETNS="$NETNS $ns"
    $CTR tasks kill -s SIGKILL "$c" >/dev/null 2>&1
  done
  for c in $($CTR containers ls -q 2>/dev/null); do
    for i in $(seq 20); do $CTR tasks rm -f "$c" >/dev/null 2>&1; $CTR tasks ls -q 2>/dev/null | grep -qxF "$c" || break; sleep 0.1; done
    $CTR containers rm "$c" >/dev/null 2>&1
  done
fi
stop apiserver-relay group   # its two socat listeners and their relays: one process group
stop kube-apiserver
stop kubelet-tunnel group   # the socat listener and its per-connection relays: one process group (setsid)
stop etcd
stop containerd
[ $tmp_containerd = 1 ] && echo "down: cleaned containerd's leftovers"

# 3. container processes of our pods that outlived their shims (a SIGKILLed run): they sit in the cgroups
# our kubelet created, nowhere else
left=$(find /sys/fs/cgroup/memory/kubepods -name cgroup.procs -exec cat {} + 2>/dev/null | sort -u | tr '\n' ' ')
if [ -n "${left// /}" ]; then
  echo "down: killing container processes left in the kubepods cgroups: $left"
  kill -KILL $left 2>/dev/null; sleep 0.5
fi

# 4. mounts, network namespaces, links, address
for m in $(findmnt -rn -o TARGET | grep "^$VAR/" | sort -r); do umount -l "$m" 2>/dev/null; done
if ip link show "$BRIDGE" >/dev/null 2>&1; then
  # the pods' netns, named by the veths still attached to our bridge
  NETNS="$NETNS $(ip -o link show master "$BRIDGE" | sed -n 's/.* link-netns \([^ ]*\).*/\/run\/netns\/\1/p')"
  for v in $(ip -o link show master "$BRIDGE" | awk -F': ' '{print $2}' | cut -d@ -f1); do ip link del "$v" 2>/dev/null; done
  ip link del "$BRIDGE"
fi
for ns in $NETNS; do
  case $ns in /var/run/netns/cni-*|/run/netns/cni-*) [ -e "$ns" ] && { umount "$ns" 2>/dev/null; rm -f "$ns"; } ;; esac
done
rm -f /var/lib/cni/results/cmsync-net-*   # libcni's result cache of our network (the kubelet's CNI DEL removes it)
[ -f "$VAR/node-ip-on-lo" ] && ip addr del "$(cat "$VAR/node-ip-on-lo")/32" dev lo 2>/dev/null
[ -f "$VAR/svc-ip-on-lo" ] && ip addr del "$(cat "$VAR/svc-ip-on-lo")/32" dev lo 2>/dev/null

# 5. cgroups the kubelet created (cgroupfs driver, cgroup v1): remove the kubepods trees bottom-up
for d in /sys/fs/cgroup/*/kubepods; do [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null; done
for d in /sys/fs/cgroup/*/kubepods; do [ -d "$d" ] && echo "down: WARNING: could not remove $d (still in use?)" >&2; done

# 6. kernel tunables, pod logs, the device-plugin socket
restore_sysctls
# kubelet 1.30 hard-codes /var/log/pods and /var/log/containers: drop the pod log directories that appeared
# since up.sh (the kubelet's GC keeps them for a minute after a pod is deleted) and dangling symlinks
if [ -f "$VAR/var-log-pods.before" ]; then
  ls -A /var/log/pods 2>/dev/null | grep -vxF -f "$VAR/var-log-pods.before" | while read -r d; do rm -rf "/var/log/pods/$d"; done
fi
find /var/log/containers -maxdepth 1 -xtype l -delete 2>/dev/null
rm -f /var/lib/kubelet/device-plugins/kubelet.sock

# 7. wipe the state, keep the logs of this run
if [ -d "$LOG" ]; then rm -rf "$CLUSTER_ROOT/last-logs"; mv "$LOG" "$CLUSTER_ROOT/last-logs"; fi
rm -rf "$VAR"
echo "down: done (logs of the last run in $CLUSTER_ROOT/last-logs)"

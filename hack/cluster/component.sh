#!/usr/bin/env bash
# Stop, start, restart or kill one daemon of the running local cluster, for fault tests:
#   hack/cluster/component.sh restart kube-apiserver        # SIGTERM, then start again and wait until ready
#   hack/cluster/component.sh kill kube-apiserver           # SIGKILL (a crash); the daemon stays down
#   hack/cluster/component.sh start kube-apiserver          # start it again, wait until ready
#   KILL=1 hack/cluster/component.sh restart kube-apiserver # crash + start
# Components: etcd containerd kubelet-tunnel kube-apiserver kube-controller-manager kube-scheduler kubelet.
# A SIGTERMed kube-apiserver drains its clients' open watches first, which can take up to its 60 s shutdown
# timeout while the kubelet and controllers are connected: after GRACE seconds (default 20) it gets SIGKILL.
# `start` and `restart` wait until the component is healthy again (TIMEOUT seconds, default 120).
set -euo pipefail
CMSYNC_FOLLOW_RUNNING=1 . "$(dirname "$0")/lib.sh"
. "$HACK_CLUSTER/components.sh"
need_root
[ $# = 2 ] || die "usage: $0 stop|start|restart|kill COMPONENT   (one of: $DAEMONS)"
verb=$1 name=$2
case " $DAEMONS " in *" $name "*) ;; *) die "unknown component $name (one of: $DAEMONS)" ;; esac
[ -f "$VAR/node-ip" ] || die "the cluster is not up (no $VAR/node-ip): run hack/cluster/up.sh"
exec 8> "$CLUSTER_ROOT/.lock"; flock 8
group=""; [ "$name" = kubelet-tunnel ] && group=group
export STOP_GRACE=${GRACE:-20}
[ "${KILL:-0}" = 1 ] && STOP_GRACE=0
case $verb in
stop) stop "$name" $group ;;
kill) STOP_GRACE=0 stop "$name" $group ;;
start)
  if alive "$name"; then echo "$name already running (pid $(pid_of "$name"))"; exit 0; fi
  start_component "$name"; wait_component "$name" "${TIMEOUT:-120}"
  waitfor "the whole cluster healthy" "$name" "${TIMEOUT:-120}" cluster_healthy
  echo "started $name (pid $(pid_of "$name"))" ;;
restart)
  stop "$name" $group; start_component "$name"; wait_component "$name" "${TIMEOUT:-120}"
  waitfor "the whole cluster healthy" "$name" "${TIMEOUT:-120}" cluster_healthy
  echo "restarted $name (pid $(pid_of "$name"))" ;;
*) die "usage: $0 stop|start|restart|kill COMPONENT" ;;
esac

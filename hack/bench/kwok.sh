#!/usr/bin/env bash
# The controller at scale, on fake nodes (not part of make test; docs/performance.md, "The controller at
# scale, on kwok"):
#   hack/bench/kwok.sh up        kwok (hack/tools/kwok.sh) as a process on this machine, against the local
#                                cluster's API server over loopback, managing NODES fake nodes (label
#                                type=kwok, taint kwok.x-k8s.io/node=fake:NoSchedule: no real pod lands there);
#                                in NAMESPACES namespaces cmsync-kwok-NNN, WORKLOADS Deployments and
#                                StatefulSets of PODS pods in all, bound to the fake nodes (spec.nodeName; the
#                                scheduler is not involved), OBJECTS ConfigMaps (3/7) and Secrets (4/7) holding
#                                DATA_MB MB of values together (sizes from 100 B to 900 KiB, most small).
#   hack/bench/kwok.sh measure   the controller from the chart (its defaults, all namespaces, --enable-pprof),
#                                then its figures: see measure below.
#   hack/bench/kwok.sh data      the same ConfigMaps and Secrets made to hold DATA_MB MB (applied over them),
#                                to measure the controller against the data's size at the same pod count.
#   hack/bench/kwok.sh down      everything above, in one command (kwok stopped last).
# Defaults: PODS=100000 WORKLOADS=1000 NAMESPACES=100 NODES=100 OBJECTS=35000 DATA_MB=800.
# Every pod reads 8 objects in every mode: env (configMapKeyRef), envFrom (a ConfigMap and a Secret),
# a ConfigMap volume, a projected volume (a ConfigMap with a Secret), a subPath, a Secret volume. Per
# namespace, workload 0 has reloader.stakater.com/auto, workload 1 Reloader's named reload annotations,
# workload 2 reloader.stakater.com/auto in even namespaces; workloads 3 and 4 kubectl-cmsync.io/watch;
# the rest are not opted in. Workloads 2, 5 and 8 are StatefulSets (podManagementPolicy Parallel).
# The cluster's controller-manager must have its client limits raised and etcd a larger quota: start the
# cluster with them (`hack/bench/kwok.sh cluster-args` prints them: eval its output before make cluster-up),
# or `up` restarts both with them.
set -euo pipefail
KCM_ARGS="--kube-api-qps=400 --kube-api-burst=800 --concurrent-replicaset-syncs=10 --concurrent-statefulset-syncs=10"
ETCD_ARGS="--quota-backend-bytes=8589934592"
if [ "${1:-}" = cluster-args ]; then
  printf 'export KCM_EXTRA_ARGS="%s" ETCD_EXTRA_ARGS="%s"\n' "$KCM_ARGS" "$ETCD_ARGS"
  exit
fi
. "$(dirname "$0")/lib.sh"
PODS=${PODS:-100000} WORKLOADS=${WORKLOADS:-1000} NAMESPACES=${NAMESPACES:-100} NODES=${NODES:-100}
OBJECTS=${OBJECTS:-35000} DATA_MB=${DATA_MB:-800} CONCURRENCY=${CONCURRENCY:-16}
LABEL=cmsync-kwok=true
# kwok's pod addresses: not routed anywhere, apart from the cluster's pod and Service ranges
KWOK_CIDR=10.64.0.0/12 KWOK_NODE_IP=10.63.0.1

for v in PODS WORKLOADS NAMESPACES NODES OBJECTS DATA_MB CONCURRENCY; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive whole number, got \"${!v}\""
done
PER_NS=$((WORKLOADS / NAMESPACES)) REPLICAS=$((PODS / WORKLOADS))
CMS=$((OBJECTS * 3 / 7 / NAMESPACES)) SECRETS=$((OBJECTS * 4 / 7 / NAMESPACES))
check_sizes() {
  (( WORKLOADS % NAMESPACES == 0 && PER_NS >= 5 )) || die "WORKLOADS ($WORKLOADS) must be a multiple of NAMESPACES ($NAMESPACES), at least 5 each"
  (( PODS % WORKLOADS == 0 )) || die "PODS ($PODS) must be a multiple of WORKLOADS ($WORKLOADS)"
  (( CMS >= PER_NS * 5 && SECRETS >= PER_NS * 3 )) ||
    die "OBJECTS ($OBJECTS) too few: each namespace needs 5 ConfigMaps and 3 Secrets per workload ($((PER_NS * 8 * 7 / 4 * NAMESPACES)) at least)"
}

. "$(dirname "$0")/kwok-lib.sh"

case ${1:-} in
up) check_sizes; kwok_up ;;
measure) . "$(dirname "$0")/kwok-measure.sh"; measure ;;
data) kwok_data ;;
down) kwok_down ;;
*)
  echo "usage: PODS=100000 OBJECTS=35000 DATA_MB=800 $0 up|data|measure|down|cluster-args" >&2
  exit 2
  ;;
esac

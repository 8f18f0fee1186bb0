#!/usr/bin/env bash
# kubectl cmsync status -A over two kubeconfig contexts (the cluster and the second control plane,
# hack/cluster/cluster2-up.sh) against the cluster alone, on this machine, in one run: the median wall time
# of RUNS runs of each and their ratio. The contexts are read at once (--context-concurrency), so the ratio
# should be near 1 (the slowest context), not 2 (the sum). The second control plane is given as many pods
# as the cluster holds (Pending, each mounting a ConfigMap: objects only, no node), so that both are read
# the same amount. It is started if down, and then stopped at the end.
#   RUNS=5 hack/bench/contexts.sh        (needs the cluster up: make cluster-up)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
RUNS=${RUNS:-5} NS=cmsync-bench-ctx
started=0
hack/cluster/cluster2-status.sh -q || { hack/cluster/cluster2-up.sh >/dev/null; started=1; }
cleanup() {
  if [ $started = 1 ]; then hack/cluster/cluster2-down.sh >/dev/null; else kubectl --kubeconfig="$CP2" delete namespace $NS --wait=false >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT
CP2=$CMSYNC_CACHE/cluster2/etc/admin.kubeconfig
CONTEXTS=$CMSYNC_CACHE/cluster2/etc/contexts.kubeconfig
pods=$(kubectl get pods -A --no-headers | wc -l)
ts "the cluster holds $pods pods; giving the second control plane as many (Pending) in $NS"
kubectl --kubeconfig="$CP2" create namespace $NS --dry-run=client -o yaml | kubectl --kubeconfig="$CP2" apply -f - >/dev/null
{
  printf -- '---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: %s}\ndata: {key: v}\n' $NS
  for i in $(seq 1 "$pods"); do
    printf -- '---\napiVersion: v1\nkind: Pod\nmetadata: {name: p-%s, namespace: %s}\nspec:\n  containers: [{name: c, image: %s, volumeMounts: [{name: cfg, mountPath: /etc/cfg}]}]\n  volumes: [{name: cfg, configMap: {name: cfg}}]\n' \
      "$i" $NS "$IMAGE_BUSYBOX"
  done
} | kubectl --kubeconfig="$CP2" apply -f - >/dev/null
# time_status ARGS: the median wall time of RUNS runs of status -A ARGS (its output dropped)
time_status() {
  local i t0 times=()
  kubectl cmsync --kubeconfig="$CONTEXTS" status -A "$@" >/dev/null 2>&1   # warm-up
  for i in $(seq "$RUNS"); do
    t0=$(now); kubectl cmsync --kubeconfig="$CONTEXTS" status -A "$@" >/dev/null 2>&1; times+=("$(echo "$(now) - $t0" | bc)")
  done
  printf '%s\n' "${times[@]}" | median
}
one=$(time_status --context cmsync-local)
two=$(time_status --context cmsync-local,cmsync-cp2)
cp2=$(time_status --context cmsync-cp2)
echo "status -A, median of $RUNS runs ($pods pods in each context):"
echo "  cmsync-local alone:               ${one} s"
echo "  cmsync-cp2 alone:                 ${cp2} s"
echo "  cmsync-local + cmsync-cp2 at once: ${two} s"
echo "  ratio two/one: $(echo "scale=2; $two / $one" | bc)"

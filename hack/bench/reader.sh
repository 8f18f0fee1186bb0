#!/usr/bin/env bash
# The node reader beside the exec reader (not part of make test), on one Deployment of PODS pods mounting one
# ConfigMap, in alternating runs:
#   - `refresh --wait` right after an edit, until every pod is verified current (the reader's start included);
#   - `status --verify` of the same pods.
# Medians over RUNS runs of each reader, and container restarts (must be 0). After each node run, an untimed
# `status --verify --reader=exec` of the same state must agree with the node reader's use by use (state,
# reason, cause, synced-at): the readers are compared at full scale.
#   PODS=50 RUNS=3 hack/bench/reader.sh        (needs the cluster up: make cluster-up)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
NS=cmsync-bench-reader PODS=${PODS:-50} RUNS=${RUNS:-3}
NODE=(--reader=node --reader-image="$IMAGE_BUSYBOX" --reader-namespace=$NS)
ts "deploying $PODS pods"
deploy $NS app "$PODS"
r0=$(restarts $NS)
edit() { kubectl -n $NS patch configmap app --type merge -p "{\"data\":{\"key\":\"$1\"}}" >/dev/null; }
readers() { kubectl -n $NS get pods -l app.kubernetes.io/component=node-reader --no-headers 2>/dev/null | wc -l; }
# uses JSON: what the two readers must agree on, use by use
uses() { echo "$1" | jq -S '[.items[] | {pod: .pod.name, container: .container.name, mode, state, stateReason, stateCause, syncedAt}] | sort_by(.pod, .container, .mode)'; }
declare -A refresh verify
for i in $(seq "$RUNS"); do
  for reader in exec node; do
    args=(); [ $reader = node ] && args=("${NODE[@]}")
    t=$(now); edit "$reader-$i-$RANDOM"
    kubectl cmsync refresh -n $NS app --timeout 120s "${args[@]}" >/tmp/cmsync-bench-reader.out ||
      { cat /tmp/cmsync-bench-reader.out; die "refresh --reader=$reader failed"; }
    e=$(echo "$(now) - $t" | bc); refresh[$reader]+="$e "
    t=$(now)
    out=$(kubectl cmsync status -n $NS app --verify -o json "${args[@]}")
    v=$(echo "$(now) - $t" | bc); verify[$reader]+="$v "
    insync=$(echo "$out" | jq '[.items[] | select(.state=="in-sync")] | length')
    uses "$out" >/tmp/cmsync-bench-reader-$reader.json
    echo "run $i --reader=$reader: refresh --wait ${e}s, status --verify ${v}s ($insync of $PODS in-sync; load average $(cut -d' ' -f1-3 /proc/loadavg))"
    [ "$insync" = "$PODS" ] || die "expected $PODS in-sync uses, got $insync"
    [ "$(readers)" = 0 ] || die "reader pods left after the run"
  done
  uses "$(kubectl cmsync status -n $NS app --verify -o json)" >/tmp/cmsync-bench-reader-exec.json
  cmp -s /tmp/cmsync-bench-reader-exec.json /tmp/cmsync-bench-reader-node.json ||
    { diff /tmp/cmsync-bench-reader-exec.json /tmp/cmsync-bench-reader-node.json | head -20; die "run $i: the readers disagree"; }
  echo "run $i: both readers verified the same $(jq length /tmp/cmsync-bench-reader-node.json) uses alike"
done
r1=$(restarts $NS)
echo "pods: $PODS, runs: $RUNS"
for reader in exec node; do
  # shellcheck disable=SC2086
  echo "--reader=$reader: refresh --wait median $(printf '%s\n' ${refresh[$reader]} | median)s (runs: ${refresh[$reader]}), status --verify median $(printf '%s\n' ${verify[$reader]} | median)s (runs: ${verify[$reader]})"
done
echo "container restarts during the benchmark: $((r1 - r0))"
kubectl delete namespace $NS --wait=false >/dev/null

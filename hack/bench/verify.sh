#!/usr/bin/env bash
# `kubectl cmsync status --verify` over many pods (not part of make test). Goal: 100 pods verified in <= 3 s.
#   PODS=100 RUNS=5 hack/bench/verify.sh        (needs the cluster up: make cluster-up)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
NS=cmsync-bench-verify PODS=${PODS:-100} RUNS=${RUNS:-5}
ts "deploying $PODS pods"
deploy $NS app "$PODS"
ts "pods ready; running status --verify $RUNS times"
times=()
for i in $(seq "$RUNS"); do
  t=$(now)
  out=$(kubectl cmsync status -n $NS app --verify -o json)
  e=$(echo "$(now) - $t" | bc)
  insync=$(echo "$out" | jq '[.items[] | select(.state=="in-sync")] | length')
  total=$(echo "$out" | jq '.items | length')
  echo "run $i: ${e}s, $insync of $total uses in-sync"
  [ "$insync" = "$PODS" ] || die "expected $PODS in-sync uses, got $insync of $total"
  times+=("$e")
done
printf '%s\n' "${times[@]}" | median | xargs printf "verify: %s pods, median %ss over $RUNS runs\n" "$PODS"
kubectl delete namespace $NS --wait=false >/dev/null

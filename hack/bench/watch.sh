#!/usr/bin/env bash
# kubectl cmsync watch (not part of make test): one Deployment of PODS pods mounting one ConfigMap, the watch
# started with its defaults (--debounce 2s). Per run, one edit of the ConfigMap; the figure is the time from
# the edit until the last pod's annotate result is verified current (the event's sinceChangeNs, and the
# script's own wall clock). Then the watch's CPU while idle for IDLE seconds and its peak RSS.
#   PODS=50 RUNS=3 hack/bench/watch.sh        (needs the cluster up: make cluster-up)
#   READER=node ...: the wait's reads by the node reader (one exec per node per round) instead of one exec per pod
set -euo pipefail
. "$(dirname "$0")/lib.sh"
NS=cmsync-bench-watch PODS=${PODS:-50} RUNS=${RUNS:-3} IDLE=${IDLE:-30} READER=${READER:-exec}
args=(--reader="$READER")
[ "$READER" = exec ] || args+=(--reader-image="$IMAGE_BUSYBOX" --reader-namespace=$NS)
ts "deploying $PODS pods"
deploy $NS app "$PODS"
r0=$(restarts $NS)
out=$(mktemp)
kubectl-cmsync watch -n $NS app -o json "${args[@]}" >"$out" 2>"$out.err" &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -f "$out" "$out.err"' EXIT
until grep -q '"event":"ready"' "$out"; do sleep 0.1; kill -0 $pid || { cat "$out.err"; die "watch ended"; }; done
results() { jq -c 'select(.event=="result" and .outcome=="current")' "$out" | wc -l; }
ticks() { awk '{print $14+$15}' /proc/$pid/stat; }
since=() wall=()
for i in $(seq "$RUNS"); do
  before=$(results)
  t=$(now)
  kubectl -n $NS patch configmap app --type merge -p "{\"data\":{\"key\":\"run-$i-$RANDOM\"}}" >/dev/null
  deadline=$(( $(date +%s) + 120 ))
  until [ "$(results)" -ge $((before + PODS)) ]; do
    [ "$(date +%s)" -lt $deadline ] || { tail -5 "$out"; die "run $i: not every pod verified current within 120 s"; }
    sleep 0.1
  done
  w=$(echo "$(now) - $t" | bc)
  s=$(jq -r 'select(.event=="result" and .outcome=="current") | .sinceChangeNs' "$out" | tail -n "$PODS" | sort -g | tail -1)
  s=$(echo "scale=3; $s / 1000000000" | bc)
  since+=("$s") wall+=("$w")
  echo "run $i: last of $PODS pods verified current ${s}s after the edit (script's clock ${w}s; load average $(cut -d' ' -f1-3 /proc/loadavg))"
  sleep 3
done
c0=$(ticks); sleep "$IDLE"; c1=$(ticks)
hz=$(getconf CLK_TCK)
echo "pods: $PODS, runs: $RUNS, --reader=$READER"
echo "edit to last pod verified: median $(printf '%s\n' "${since[@]}" | median)s (runs: ${since[*]}), script's clock median $(printf '%s\n' "${wall[@]}" | median)s"
echo "watch idle CPU: $(echo "scale=2; ($c1 - $c0) * 100 / $hz / $IDLE" | bc)% of a core over ${IDLE}s; peak RSS $(awk '/VmHWM/{print $2, $3}' /proc/$pid/status)"
echo "container restarts during the benchmark: $(( $(restarts $NS) - r0 ))"
kill -INT $pid; wait $pid || die "watch exited non-zero after SIGINT"
kubectl delete namespace $NS --wait=false >/dev/null

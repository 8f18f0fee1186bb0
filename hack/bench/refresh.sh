#!/usr/bin/env bash
# How long until ALL pods mounting one ConfigMap see an edit (not part of make test):
#   (a) the kubelet alone (its periodic pod resync: 60-90 s expected), watched with `status --verify`;
#   (b) `kubectl cmsync refresh --wait` right after the edit (pod annotation bumps without a prior exec, each pod
#       verified by one exec after its own patch).
# Median over RUNS runs of each, the ratio, and container restarts (must be 0); after each (b) run, the
# CPU-seconds of the plugin and of every process on the machine during it (cpu_ticks in lib.sh).
#   PODS=50 RUNS=3 hack/bench/refresh.sh        (needs the cluster up: make cluster-up)
#   KUBELET_RUNS=0 skips (a), e.g. to time only the refresh side.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
[ -x /usr/bin/time ] || die "/usr/bin/time is needed (apt-get install -y time)"
NS=cmsync-bench-refresh PODS=${PODS:-50} RUNS=${RUNS:-3} KUBELET_RUNS=${KUBELET_RUNS:-${RUNS:-3}}
ts "deploying $PODS pods"
deploy $NS app "$PODS"
r0=$(restarts $NS)
insync() { kubectl cmsync status -n $NS app --verify -o json | jq '[.items[] | select(.state=="in-sync")] | length'; }
edit() { kubectl -n $NS patch configmap app --type merge -p "{\"data\":{\"key\":\"$1\"}}" >/dev/null; }
kubelet=() refresh=()
for i in $(seq "$RUNS"); do
  # (a) kubelet alone; a random pause first so the edit lands at a random phase of the resync
  if [ "$i" -le "$KUBELET_RUNS" ]; then
  sleep $((RANDOM % 20))
  t=$(now); edit "kubelet-$i-$RANDOM"
  until [ "$(insync)" = "$PODS" ]; do
    [ "$(echo "$(now) - $t > 300" | bc)" = 1 ] && die "the kubelet did not update all pods within 300 s"
    sleep 0.5
  done
  e=$(echo "$(now) - $t" | bc); kubelet+=("$e"); echo "run $i (a) kubelet alone: all $PODS current after ${e}s (load average $(cut -d' ' -f1-3 /proc/loadavg))"
  fi
  # (b) refresh, with the CPU of every process on the machine around it (cpu_ticks) and of the plugin itself
  cpu_ticks >/tmp/cmsync-bench-cpu.0
  t=$(now); edit "refresh-$i-$RANDOM"
  /usr/bin/time -f '%U %S' -o /tmp/cmsync-bench-plugin.cpu kubectl cmsync refresh -n $NS app --timeout 120s >/tmp/cmsync-bench-refresh.out ||
    { cat /tmp/cmsync-bench-refresh.out; die "refresh failed"; }
  e=$(echo "$(now) - $t" | bc); refresh+=("$e"); echo "run $i (b) refresh --wait: all $PODS verified current after ${e}s (load average $(cut -d' ' -f1-3 /proc/loadavg))"
  cpu_ticks >/tmp/cmsync-bench-cpu.1
  echo "  CPU-seconds: the plugin $(awk '{print $1 + $2}' /tmp/cmsync-bench-plugin.cpu)s (in bash below); $(cpu_split /tmp/cmsync-bench-cpu.0 /tmp/cmsync-bench-cpu.1)"
  # a pod refresh called current must be in-sync; an exec that fails under load (unverifiable) is read again
  ok=""; for _ in 1 2 3; do [ "$(insync)" = "$PODS" ] && { ok=1; break; }; sleep 2; done
  [ -n "$ok" ] || die "refresh returned but not all pods are in-sync"
done
a=$(printf '%s\n' "${kubelet[@]}" | median); b=$(printf '%s\n' "${refresh[@]}" | median)
[ -n "$a" ] || a=0
r1=$(restarts $NS)
echo "pods: $PODS, runs: $RUNS"
echo "(a) kubelet alone:   median ${a}s  (runs: ${kubelet[*]})"
echo "(b) refresh --wait:  median ${b}s  (runs: ${refresh[*]})"
echo "ratio (a)/(b): $(echo "scale=1; $a / $b" | bc)x"
echo "container restarts during the benchmark: $((r1 - r0))"
kubectl delete namespace $NS --wait=false >/dev/null

#!/usr/bin/env bash
# How long a ConfigMap change takes to reach a mounted volume on the local cluster (not part of make test).
#   RUNS=3 ANNOTATE_RUNS=10 hack/bench/propagation.sh
# "plain":    patch the ConfigMap, wait for the file to change (the kubelet's periodic pod sync: 60-90 s
#             expected with the default syncFrequency 1m and Watch strategy); a random 0-59 s pause before
#             each edit (RANDOM_PHASE=1, default) so edits land at random phases of the resync
# "annotate": patch the ConfigMap, then bump a pod annotation (kubectl-cmsync.io/refreshed-at)
# The waiting is done inside the container (a loop on the file, started before the edit), so the figure
# does not include exec round trips. Needs the cluster up (make cluster-up).
set -euo pipefail
cd "$(dirname "$0")/../.."
. hack/cluster/lib.sh
hack/cluster/status.sh -q || die "the local cluster is not up (make cluster-up)"
export KUBECONFIG=$KUBECONFIG_FILE
K=$BIN/kubectl
NS=cmsync-bench
RUNS=${RUNS:-3} ANNOTATE_RUNS=${ANNOTATE_RUNS:-10} RANDOM_PHASE=${RANDOM_PHASE:-1}
now() { date +%s.%N; }

# a fresh namespace (waits for one left terminating by an earlier run)
$K delete namespace $NS --ignore-not-found --wait=true --timeout=120s >/dev/null
$K create namespace $NS >/dev/null
$K -n $NS create configmap bench --from-literal=key=initial >/dev/null
cat <<Y | $K apply -f - >/dev/null
apiVersion: v1
kind: Pod
metadata: {name: bench, namespace: $NS}
spec:
  terminationGracePeriodSeconds: 1
  dnsPolicy: Default
  containers:
  - name: c
    image: $IMAGE_BUSYBOX
    imagePullPolicy: Never
    command: ["sleep", "1000000"]
    volumeMounts: [{name: cm, mountPath: /etc/cm}]
  volumes:
  - name: cm
    configMap: {name: bench}
Y
$K -n $NS wait pod/bench --for=condition=Ready --timeout=120s >/dev/null
trap '$K delete namespace $NS --wait=false >/dev/null 2>&1 || true' EXIT

# wait inside the container until /etc/cm/key holds $1 (passed as an argument, never spliced into the script)
WAITER='while [ "$(cat /etc/cm/key)" != "$1" ]; do usleep 20000; done'
measure() { # mode idx
  local val t0 t1 pre=""
  if [ "$1" = plain ] && [ "$RANDOM_PHASE" = 1 ]; then pre=$((RANDOM % 60)); sleep $pre; fi
  val="$1-$2-$(date +%s%N)"
  timeout 200 "$K" -n $NS exec bench -- sh -c "$WAITER" sh "$val" & local w=$!
  sleep 1   # the waiter is running
  t0=$(now)
  $K -n $NS patch configmap bench --type merge -p "{\"data\":{\"key\":\"$val\"}}" >/dev/null
  [ "$1" = annotate ] && $K -n $NS annotate pod bench --overwrite "kubectl-cmsync.io/refreshed-at=$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)" >/dev/null
  if ! wait $w; then echo "$1 run $2: TIMEOUT (or exec failed)"; return; fi
  t1=$(now)
  printf '%-8s run %2d: %6.2f s%s\n' "$1" "$2" "$(echo "$t1 - $t0" | bc)" "${pre:+  (edit after a ${pre} s pause)}"
  echo "$1 $(echo "$t1 - $t0" | bc)" >> "$RESULTS"
}
RESULTS=$(mktemp)
for i in $(seq "$RUNS"); do measure plain "$i"; done
for i in $(seq "$ANNOTATE_RUNS"); do measure annotate "$i"; done
for m in plain annotate; do
  { grep "^$m " "$RESULTS" || true; } | awk '{print $2}' | sort -n | awk -v m=$m '{a[NR]=$1} END {if (NR) printf "%-8s n=%d min %.2f s  median %.2f s  max %.2f s\n", m, NR, a[1], a[int((NR+1)/2)], a[NR]}'
done
rm -f "$RESULTS"

#!/usr/bin/env bash
# Figures of `kubectl cmsync dashboard`, run in tmux as a person runs it:
#  (1) latency: time from `kubectl patch` of a ConfigMap to the dashboard's screen showing the change
#      (its status line names the changed object), RUNS times (default 10), one ConfigMap per run; median.
#  (2) memory: peak RSS (VmHWM) of the dashboard with PODS pods in scope (default 10000): Pending pods bound
#      to a Node object that has no kubelet (they never run, the API server and the watch carry them all);
#      each mounts a ConfigMap and reads one key as env. Measured after the first screen and after an edit.
# Needs the local cluster (make cluster-up) and tmux. PARTS=latency or PARTS=memory runs one part.
# Everything it creates is deleted at the end (namespaces cmsync-bench-dash*, node cmsync-bench-no-kubelet).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
command -v tmux >/dev/null || die "tmux is needed (apt-get install -y tmux)"
RUNS=${RUNS:-10}
PODS=${PODS:-10000}
PARTS=${PARTS:-latency memory}
SOCK=cmsync-bench-$$
NODE=cmsync-bench-no-kubelet
cleanup() {
  tmux -L "$SOCK" kill-server 2>/dev/null || true
  # the memory part's pods never run: without a kubelet to confirm their graceful deletion the namespace
  # would take pod GC's pace to go (about 10 minutes for 10,000), and the next run would wait for it
  # one DELETE of the collection (kubectl delete pods --all sends one request per pod)
  kubectl delete --raw "/api/v1/namespaces/cmsync-bench-dash-mem/pods?gracePeriodSeconds=0" >/dev/null 2>&1 || true
  kubectl delete namespace cmsync-bench-dash cmsync-bench-dash-mem --wait=false --ignore-not-found >/dev/null 2>&1 || true
  kubectl delete node "$NODE" --ignore-not-found >/dev/null 2>&1 || true
}
trap cleanup EXIT

screen() { tmux -L "$SOCK" capture-pane -p -t dash; }
# wait_screen PATTERN TIMEOUT_S: poll the pane every 10 ms until grep -E PATTERN matches
wait_screen() {
  local end; end=$(echo "$(now) + $2" | bc)
  until screen | grep -qE -- "$1"; do
    (( $(echo "$(now) > $end" | bc) )) && { screen >&2; die "timed out waiting for /$1/ on the dashboard"; }
    sleep 0.01
  done
}
start_dashboard() { # args...
  tmux -L "$SOCK" kill-server 2>/dev/null || true
  tmux -L "$SOCK" new-session -d -s dash -x 160 -y 40 "$PWD/bin/kubectl-cmsync" dashboard "$@"
}
pane_pid() { tmux -L "$SOCK" display-message -p -t dash '#{pane_pid}'; }
rss_mib() { awk -v k="$2" '$1 == k":" {printf "%.1f\n", $2/1024}' "/proc/$1/status"; }

if [[ " $PARTS " == *" latency "* ]]; then
  NS=cmsync-bench-dash
  kubectl wait --for=delete namespace/"$NS" --timeout=180s >/dev/null 2>&1 || true
  kubectl create namespace "$NS" >/dev/null
  vols="" mounts=""
  for i in $(seq 0 $((RUNS - 1))); do
    kubectl -n "$NS" create configmap "bench-$i" --from-literal=key=v0 >/dev/null
    vols+="      - {name: c$i, configMap: {name: bench-$i}}"$'\n'
    mounts+="        - {name: c$i, mountPath: /etc/c$i}"$'\n'
  done
  cat <<Y | kubectl apply -f - >/dev/null
apiVersion: v1
kind: Pod
metadata: {name: consumer, namespace: $NS}
spec:
  terminationGracePeriodSeconds: 1
  automountServiceAccountToken: false
  containers:
  - name: c
    image: $IMAGE_BUSYBOX
    imagePullPolicy: Never
    command: ["sleep", "1000000"]
    volumeMounts:
$mounts
  volumes:
$vols
Y
  kubectl -n "$NS" wait --for=condition=Ready pod/consumer --timeout=120s >/dev/null
  start_dashboard -n "$NS"
  wait_screen "● live" 30
  wait_screen "bench-$((RUNS - 1))" 30
  lat=() after=()
  for i in $(seq 0 $((RUNS - 1))); do
    sleep 2
    t0=$(now)
    kubectl -n "$NS" patch configmap "bench-$i" --type merge -p "{\"data\":{\"key\":\"v$RANDOM\"}}" >/dev/null
    t1=$(now)
    wait_screen "configmap/bench-$i changed" 10
    t2=$(now)
    lat+=("$(echo "$t2 - $t0" | bc)")
    after+=("$(echo "$t2 - $t1" | bc)")
    echo "run $((i + 1)): patch->shown $(echo "$t2 - $t0" | bc) s (kubectl patch returned after $(echo "$t1 - $t0" | bc) s)"
  done
  echo "patch->shown: median $(printf '%s\n' "${lat[@]}" | median) s, min $(printf '%s\n' "${lat[@]}" | sort -g | head -1), max $(printf '%s\n' "${lat[@]}" | sort -g | tail -1) (n=$RUNS)"
  echo "patch returned->shown: median $(printf '%s\n' "${after[@]}" | median) s"
  tmux -L "$SOCK" kill-server 2>/dev/null || true
fi

if [[ " $PARTS " == *" memory "* ]]; then
  NS=cmsync-bench-dash-mem
  kubectl wait --for=delete namespace/"$NS" --timeout=300s >/dev/null 2>&1 || true
  kubectl create namespace "$NS" >/dev/null
  kubectl -n "$NS" create configmap big --from-literal=key=v0 >/dev/null
  # a Node object with no kubelet: pods bound to it stay Pending; they tolerate its not-ready taints for good
  cat <<Y | kubectl apply -f - >/dev/null
apiVersion: v1
kind: Node
metadata: {name: $NODE, labels: {cmsync-bench: "true"}}
Y
  t0=$(now)
  batch=500
  for start in $(seq 0 $batch $((PODS - 1))); do
    end=$((start + batch - 1)); (( end >= PODS )) && end=$((PODS - 1))
    {
      echo '{"apiVersion":"v1","kind":"List","items":['
      for i in $(seq "$start" "$end"); do
        [ "$i" -gt "$start" ] && echo ','
        printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p-%d","namespace":"%s","labels":{"app":"big"},"ownerReferences":[]},"spec":{"nodeName":"%s","automountServiceAccountToken":false,"tolerations":[{"operator":"Exists","effect":"NoExecute"},{"operator":"Exists","effect":"NoSchedule"}],"containers":[{"name":"c","image":"%s","imagePullPolicy":"Never","env":[{"name":"KEY","valueFrom":{"configMapKeyRef":{"name":"big","key":"key"}}}],"volumeMounts":[{"name":"cfg","mountPath":"/etc/cfg"}]}],"volumes":[{"name":"cfg","configMap":{"name":"big"}}]}}' "$i" "$NS" "$NODE" "$IMAGE_BUSYBOX"
      done
      echo ']}'
    } | kubectl create -f - >/dev/null
  done
  echo "created $PODS pods in $(echo "$(now) - $t0" | bc) s"
  t0=$(now)
  start_dashboard -n "$NS"
  wait_screen "big .* $PODS " 300
  echo "first screen with $PODS pods after $(echo "$(now) - $t0" | bc) s"
  pid=$(pane_pid)
  sleep 5
  echo "after the first screen: RSS $(rss_mib "$pid" VmRSS) MiB, peak $(rss_mib "$pid" VmHWM) MiB"
  kubectl -n "$NS" patch configmap big --type merge -p '{"data":{"key":"v1"}}' >/dev/null
  wait_screen "configmap/big changed" 60
  sleep 10
  echo "after an edit of the ConfigMap they all use: RSS $(rss_mib "$pid" VmRSS) MiB, peak $(rss_mib "$pid" VmHWM) MiB"
  screen | head -5
fi

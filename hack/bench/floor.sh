#!/usr/bin/env bash
# refresh --wait against the floor (not part of make test): how long `refresh --wait` takes to verify an edit
# beside the moment the last container really had it.
# A Deployment of PODS busybox pods mounts ConfigMap app; each container polls its file every 100 ms with shell
# builtins only (read of the file, read -t on an idle fifo as the sleep: no process forked per poll) and prints
# "seen VALUE" when the value changes. The runtime stamps each line as it reads it from the container: those
# stamps (the pods' log files under /var/log/pods, on this machine's clock) are the truth.
# Each run edits the ConfigMap, then times `refresh --wait` from its start to its exit; the floor is from the same
# start to the last container's "seen" line of the new value. The readers alternate, RUNS runs each.
#   PODS=50 RUNS=3 hack/bench/floor.sh        (needs the cluster up: make cluster-up; KEEP=1 keeps the pods)
#   LOAD=10: the runs beside 10 CPU burners the script starts after the pods are up and stops at its exit (a busy
#   machine, repeatable; the load average of each run is printed)
#   READERS=watch or READERS=controller: `kubectl cmsync watch --reader=node`, or the controller run here (out of
#   the cluster, no election: the loop, reader and verification it runs in the cluster), started once, instead of
#   refresh: per run the edit, then the time from the edit to its last "current" result (its event times) beside
#   the last container's moment; and the same two from its first annotation (its debounce left out of both)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
NS=cmsync-bench-floor PODS=${PODS:-50} RUNS=${RUNS:-3} READERS=${READERS:-exec node}
NODE=(--reader=node --reader-image="$IMAGE_BUSYBOX" --reader-namespace=$NS)
# shellcheck disable=SC2016 # the poller's variables are its own shell's
POLL='mkfifo /tmp/idle; exec 3<>/tmp/idle; l=; while :; do v=; read -r v </etc/cfg/key; [ "$v" = "$l" ] || { echo "seen $v"; l=$v; }; read -t 0.1 x <&3; done'

ts "deploying $PODS polling pods"
fresh_namespace $NS
kubectl -n $NS label namespace $NS pod-security.kubernetes.io/enforce=privileged --overwrite >/dev/null
kubectl -n $NS create configmap app --from-literal=key=v0 --dry-run=client -o yaml | kubectl apply -f - >/dev/null
# the poller replaces sleep as the container's command
echo "        configMap: {name: app}" | deployment_yaml $NS app "$PODS" "" |
  awk -v poll="$POLL" '/command: \["sleep", "1000000"\]/ { gsub(/"/, "\\\"", poll); print "        command: [\"sh\", \"-c\", \"" poll "\"]"; next } { print }' |
  kubectl apply -f - >/dev/null
kubectl -n $NS rollout status deployment/app --timeout=600s >/dev/null
sleep "${SETTLE:-20}"
r0=$(restarts $NS)
start_load "${LOAD:-0}"

# seen_last VALUE: the latest runtime time (seconds since the epoch) at which a container printed "seen VALUE",
# and how many containers did
seen_last() {
  local f
  for f in /var/log/pods/${NS}_app-*/c/*.log; do
    grep -h " seen $1\$" "$f" | head -1
  done | awk '{ split($1, a, /[-T:Z]/); print a[1], a[2], a[3], a[4], a[5], a[6] }' |
    while read -r y mo d h mi s; do date -u -d "$y-$mo-$d $h:$mi:$s" +%s.%N; done | sort -g | awk '{n++; last=$1} END {printf "%s %d\n", last, n}'
}

declare -A took floor
# watch_run I: one edit acted on by the watch started below; prints the run's line and adds its figures
watch_run() {
  local v="watch-$1-$RANDOM" before t load last n fl e act
  before=$(jq -c 'select(.event=="result" and .outcome=="current")' "$wout" | wc -l)
  load=$(cut -d' ' -f1 /proc/loadavg)
  t=$(now)
  kubectl -n $NS patch configmap app --type merge -p "{\"data\":{\"key\":\"$v\"}}" >/dev/null
  local deadline=$(($(date +%s) + 120))
  until [ "$(jq -c 'select(.event=="result" and .outcome=="current")' "$wout" | wc -l)" -ge $((before + PODS)) ]; do
    [ "$(date +%s)" -lt $deadline ] || { tail -5 "$wout"; die "run $1: not every pod verified current by the $loop within 120 s"; }
    sleep 0.1
  done
  sleep 1 # the runtime writes the last lines
  read -r last n < <(seen_last "$v")
  [ "$n" = "$PODS" ] || die "run $1: $n of $PODS containers printed the new value"
  # the event times (RFC 3339, nanoseconds) of this run's last current result and first annotation
  e=$(jq -r 'select(.event=="result" and .outcome=="current") | .time' "$wout" | tail -n "$PODS" | xargs -n1 date +%s.%N -d | sort -g | tail -1)
  act=$(jq -r 'select(.event=="action") | .time' "$wout" | tail -n "$PODS" | xargs -n1 date +%s.%N -d | sort -g | head -1)
  took[watch]+="$(echo "$e - $t" | bc) " floor[watch]+="$(echo "$last - $t" | bc) "
  took[watch-act]+="$(echo "$e - $act" | bc) " floor[watch-act]+="$(echo "$last - $act" | bc) "
  printf "run %s $loop: from the edit %.2fs, last container %.2fs, ratio %.2f; from the first annotation %.2fs, last container %.2fs, ratio %.2f (load average %s)\n" \
    "$1" "$(echo "$e - $t" | bc)" "$(echo "$last - $t" | bc)" "$(echo "($e - $t) / ($last - $t)" | bc -l)" \
    "$(echo "$e - $act" | bc)" "$(echo "$last - $act" | bc)" "$(echo "($e - $act) / ($last - $act)" | bc -l)" "$load"
}
if [ "$READERS" = watch ] || [ "$READERS" = controller ]; then
  wout=$(mktemp) loop=$READERS
  largs=(-o json)
  [ "$loop" = controller ] && largs=(--leader-elect=false --key-namespace=$NS --require-opt-in=false --metrics-addr=127.0.0.1:0)
  kubectl cmsync "$loop" -n $NS app "${largs[@]}" "${NODE[@]}" >"$wout" 2>"$wout.err" &
  wpid=$!
  trap 'kill $wpid 2>/dev/null || true; stop_load; rm -f "$wout" "$wout.err"' EXIT
  until grep -q '"event":"ready"' "$wout"; do sleep 0.1; kill -0 $wpid || { cat "$wout.err"; die "$loop ended"; }; done
  for i in $(seq "$RUNS"); do watch_run "$i"; sleep "${GAP:-5}"; done
  READERS="watch watch-act"
fi
for i in $(seq "$RUNS"); do
  for reader in $READERS; do
    [[ $reader != watch* ]] || continue
    args=(); [ "$reader" = node ] && args=("${NODE[@]}")
    v="$reader-$i-$RANDOM"
    kubectl -n $NS patch configmap app --type merge -p "{\"data\":{\"key\":\"$v\"}}" >/dev/null
    load=$(cut -d' ' -f1 /proc/loadavg)
    t=$(now)
    kubectl cmsync refresh -n $NS app --yes --timeout 120s "${args[@]}" >/tmp/cmsync-bench-floor.out 2>&1 ||
      { cat /tmp/cmsync-bench-floor.out; die "refresh --reader=$reader failed"; }
    e=$(echo "$(now) - $t" | bc)
    sleep 1 # the runtime writes the last lines
    read -r last n < <(seen_last "$v")
    [ "$n" = "$PODS" ] || die "run $i: $n of $PODS containers printed the new value"
    fl=$(echo "$last - $t" | bc)
    took[$reader]+="$e " floor[$reader]+="$fl "
    printf 'run %s --reader=%s: refresh --wait %.2fs, last container %.2fs, ratio %.2f (load average %s)\n' \
      "$i" "$reader" "$e" "$fl" "$(echo "$e / $fl" | bc -l)" "$load"
    sleep "${GAP:-5}"
  done
done
r1=$(restarts $NS)
stop_load
echo "pods: $PODS, runs: $RUNS, CPU burners: ${LOAD:-0}"
for reader in $READERS; do
  # shellcheck disable=SC2086
  mt=$(printf '%s\n' ${took[$reader]} | median) mf=$(printf '%s\n' ${floor[$reader]} | median)
  what="--reader=$reader: refresh --wait"
  [ "$reader" = watch ] && what="$loop, from the edit:"
  [ "$reader" = watch-act ] && what="$loop, from its first annotation:"
  printf -- '%s median %.2fs, last container median %.2fs, ratio of the medians %.2f\n' \
    "$what" "$mt" "$mf" "$(echo "$mt / $mf" | bc -l)"
done
echo "container restarts during the benchmark: $((r1 - r0))"
[ -n "${KEEP:-}" ] || kubectl delete namespace $NS --wait=false >/dev/null

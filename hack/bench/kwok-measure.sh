# shellcheck shell=bash
# hack/bench/kwok.sh measure (sourced): the controller from the chart beside the kwok fixture, and its figures:
#   start to ready (the leader container's start to its "ready" event), RSS and Go heap at rest (its
#   /metrics; a heap profile, go tool pprof -top, in OUT), idle CPU over IDLE s and its API requests at rest
#   (the audit log: the controller's ServiceAccount), EDITS edits of cm-0 (read by env by workload 0, which
#   has reloader.stakater.com/auto: a restart), one each EDIT_GAP s (2), each in the next namespace: edit to
#   seen, to first decision (action or deferred), to first action and to the restart's PATCH (audit log),
#   p50/p99, and the API requests over the edits; UNREADABLE edits of a volume
#   that opted-in workload 3 reads (an annotation, then reads of pods that cannot be read: no container
#   runs): the exec requests and retries they cost; the peak RSS over a release of RELEASE edits; and
#   `kubectl cmsync status -A -o json` (and with --group-by workload) against
#   `kubectl get pods,configmaps,secrets -A -o json`: wall time and peak RSS.
# Everything it starts (the chart's release, a port-forward) is removed at its end, but its namespace and the key
# Secret in it (the records' key and watermark, for the next run; `down` deletes them).
CTL=cmsync-system RELEASE=cmsync TAG=localhost/kubectl-cmsync:bench
IDLE=${IDLE:-60} EDITS=${EDITS:-200} EDIT_GAP=${EDIT_GAP:-2} UNREADABLE=${UNREADABLE:-10} RELEASE_EDITS=${RELEASE_EDITS:-1000}
OUT=${OUT:-/tmp/cmsync-kwok} PF_PORT=${PF_PORT:-18080} CTL_MEMORY=${CTL_MEMORY:-4Gi}
PF_PID=""

# The release goes; its namespace stays, with the key Secret (and the watermark on it), so that the next
# run's leader compares the records this one wrote, as a new leader or an upgrade does. Its Lease goes, so
# that the next leader need not wait for it to expire. `down` deletes the namespace.
ctl_cleanup() {
  [ -z "$PF_PID" ] || kill "$PF_PID" 2>/dev/null || true
  "$HELM" uninstall $RELEASE -n $CTL --wait >/dev/null 2>&1 || true
  kubectl -n $CTL delete leases --all --ignore-not-found >/dev/null 2>&1 || true
}

# api PATCH-PATH JSON: a merge patch straight to the API server (no kubectl start-up in the timing)
api_patch() {
  curl -fsS -o /dev/null --max-time 30 --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" \
    -X PATCH -H 'Content-Type: application/merge-patch+json' --data "$2" "https://127.0.0.1:6443$1"
}
edit_cm() { api_patch "/api/v1/namespaces/$1/configmaps/$2" "{\"data\":{\"k0\":\"$3\"}}"; }
ns_of() { printf 'cmsync-kwok-%03d' $(($1 % NAMESPACES)); }

metric() { curl -fsS --max-time 10 "http://127.0.0.1:$PF_PORT/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
mib() { awk -v b="$1" 'BEGIN {printf "%.1f", b / 1048576}'; }

# audit_count FROM TO: the controller's requests between two epoch times (the audit log, all its files), by
# verb and resource, and their total
audit_count() {
  cat "$LOG"/audit/audit*.log 2>/dev/null | grep -F "system:serviceaccount:$CTL:" |
    jq -r --argjson a "$1" --argjson b "$2" '(.stageTimestamp | sub("\\.[0-9]+Z$"; "Z") | fromdate) as $t
      | select(.stage == "ResponseComplete" and $t >= ($a | floor) and $t < ($b | ceil))
      | "\(.verb) \(.objectRef.resource // .requestURI)\(if .objectRef.subresource then "/" + .objectRef.subresource else "" end)"' |
    sort | uniq -c | sort -rn | awk '{t += $1; s = s (s ? ", " : "") $2 " " $3 " " $1} END {print t + 0 " (" s ")"}'
}

ctl_start() {
  ts "building and importing the image"
  go run ./hack/image -binary bin/kubectl-cmsync -tag $TAG -o bin/image.tar >/dev/null
  hack/cluster/load-image.sh bin/image.tar >/dev/null
  trap ctl_cleanup EXIT
  ts "installing the chart (its defaults; the image, --enable-pprof, a memory limit of $CTL_MEMORY)"
  "$HELM" install $RELEASE charts/kubectl-cmsync -n $CTL --create-namespace --set image.repository=${TAG%:*} \
    --set image.tag=${TAG##*:} --set image.pullPolicy=Never --set 'extraArgs={--enable-pprof}' \
    --set resources.limits.memory="$CTL_MEMORY" >/dev/null
  DEPLOY=$(kubectl -n $CTL get deployment -o jsonpath='{.items[0].metadata.name}')
  LEADER=$(controller_leader $CTL "$DEPLOY")
  # ready: its "ready" line, or, once a start that acts on every namespace has rotated its log past that
  # line, the pod's Ready condition (whole seconds)
  local started ready cond='{.status.conditions[?(@.type=="Ready")].'
  until kubectl -n $CTL logs "$LEADER" | grep -q '"event":"ready"' ||
    [ "$(kubectl -n $CTL get pod "$LEADER" -o jsonpath="${cond}status}")" = True ]; do sleep 0.5; done
  started=$(kubectl -n $CTL get pod "$LEADER" -o jsonpath='{.status.containerStatuses[0].state.running.startedAt}')
  ready=$(kubectl -n $CTL logs "$LEADER" | jq -rR 'fromjson? | select(.event == "ready") | .time' | head -1)
  [ -n "$ready" ] || ready=$(kubectl -n $CTL get pod "$LEADER" -o jsonpath="${cond}lastTransitionTime}")
  echo "start to ready: $(echo "$(date -d "$ready" +%s.%N) - $(date -d "$started" +%s)" | bc) s (container started $started, ready $ready; the start time has whole seconds)"
  kubectl -n $CTL port-forward "pod/$LEADER" "$PF_PORT:8080" >/dev/null 2>&1 &
  PF_PID=$!
  until curl -fsS --max-time 2 "http://127.0.0.1:$PF_PORT/readyz" >/dev/null 2>&1; do sleep 0.5; done
}

# leader_hwm: the leader's peak RSS so far (VmHWM of its process on this machine: its start included,
# before /metrics answers)
leader_hwm() {
  local p
  for p in $(pgrep -f "kubectl-cmsync controller"); do
    if tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx "POD_NAME=$LEADER"; then
      awk '/^VmHWM/ {printf "%.1f MiB", $2 / 1024}' "/proc/$p/status"
      return
    fi
  done
  echo "unknown"
}

at_rest() {
  local c0 c1 t0 t1
  sleep 30 # the informers' first handling done
  go tool pprof -top -sample_index=inuse_space "http://127.0.0.1:$PF_PORT/debug/pprof/heap" > "$OUT/heap-rest.txt" 2>/dev/null
  echo "at rest: RSS $(mib "$(metric process_resident_memory_bytes)") MiB (peak since its start $(leader_hwm)), Go heap in use $(mib "$(metric go_memstats_heap_inuse_bytes)") MiB (live $(mib "$(metric go_memstats_heap_alloc_bytes)") MiB); profile $OUT/heap-rest.txt:"
  sed -n '1,16p' "$OUT/heap-rest.txt"
  t0=$(now) c0=$(metric process_cpu_seconds_total)
  sleep "$IDLE"
  t1=$(now) c1=$(metric process_cpu_seconds_total)
  echo "idle CPU: $(awk -v a="$c0" -v b="$c1" -v t="$IDLE" 'BEGIN {printf "%.2f", (b - a) * 100 / t}')% of a core over ${IDLE} s; load average $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "API requests at rest over ${IDLE} s: $(audit_count "$t0" "$t1")"
}

# edits: EDITS edits of cm-0, one each EDIT_GAP s, each in the next namespace (round robin), so that a
# namespace's restart has EDIT_GAP * NAMESPACES s to complete before its next edit and at most
# --max-concurrent-restarts rollouts run when one completes within 2 * EDIT_GAP s; prints "EPOCH NAMESPACE" per edit
edits() {
  local i t
  for ((i = 0; i < EDITS; i++)); do
    t=$(now); edit_cm "$(ns_of $i)" cm-0 "e$i-$RANDOM" && echo "$t $(ns_of $i)"; sleep "$EDIT_GAP"
  done
}

# first_after EVENTS-FILE EDITS-FILE: per edit ("EPOCH NAMESPACE"), seconds to the first of the events
# ("EPOCH NAMESPACE") in its namespace at or after it, or "none"
first_after() {
  awk 'NR == FNR { at[NR] = $1; an[NR] = $2; n = NR; next }
    { best = ""; for (k = 1; k <= n; k++) if (an[k] == $2 && at[k] >= $1 && (best == "" || at[k] < best)) best = at[k]
      if (best == "") print "none"; else printf "%.3f\n", best - $1 }' "$1" "$2"
}

# log_events LOG-FILE KINDS: the leader's events of those kinds (a jq regex) as "EPOCH NAMESPACE"; for
# "change", the time its first edit was seen (firstEdit) instead
log_events() {
  jq -rR --arg k "$2" 'fromjson? | select(.event | test("^(" + $k + ")$"))
    | "\(if .event == "change" then .firstEdit else .time end) \(.action.target.namespace // .object.namespace // "")"' "$1" |
    while read -r t ns; do echo "$(date -d "$t" +%s.%N) $ns"; done
}

# audit_patches FROM: the controller's patches of Deployments and StatefulSets (its restarts) from the audit
# log, as "EPOCH NAMESPACE" (the API server's response time, microseconds)
audit_patches() {
  cat "$LOG"/audit/audit*.log 2>/dev/null | grep -F "system:serviceaccount:$CTL:" |
    jq -r --argjson a "$1" 'select(.stage == "ResponseComplete" and .verb == "patch"
        and (.objectRef.resource == "deployments" or .objectRef.resource == "statefulsets") and .objectRef.subresource == null)
      | (.stageTimestamp | capture("^(?<s>[^.Z]+)(?<f>\\.[0-9]+)?Z$")) as $c
      | (($c.s + "Z" | fromdate) + (("0" + ($c.f // "")) | tonumber)) as $t | select($t >= $a) | "\($t) \(.objectRef.namespace)"'
}

# percentiles: "N; p50 X s, p99 Y s, max Z s" of the numbers on stdin
percentiles() {
  sort -g | awk '{a[NR] = $1} END { if (!NR) { print "0"; exit }
    printf "%d; p50 %.2f s, p99 %.2f s, max %.2f s\n", NR, a[int((NR + 1) / 2)], a[int(NR * 0.99 + 0.999)], a[NR] }'
}

edit_figures() {
  local t0 t1 f
  ts "$EDITS edits of cm-0 (reloader.stakater.com/auto, env: restarts), one each $EDIT_GAP s across the namespaces"
  t0=$(now)
  edits > "$OUT/edits.txt"
  sleep 30
  t1=$(now)
  kubectl -n $CTL logs "$LEADER" > "$OUT/controller.log"
  log_events "$OUT/controller.log" change > "$OUT/seen.txt"
  log_events "$OUT/controller.log" 'action|deferred' > "$OUT/decided.txt"
  log_events "$OUT/controller.log" action > "$OUT/actions.txt"
  audit_patches "$t0" > "$OUT/restarts.txt"
  echo "edits: $EDITS, one each $EDIT_GAP s over $NAMESPACES namespaces; load average $(cut -d' ' -f1-3 /proc/loadavg)"
  for f in "seen.txt:edit to seen by the informer (the change's firstEdit)" \
    "decided.txt:edit to first decision (action or deferred event; includes the --debounce of 2 s)" \
    "actions.txt:edit to first action event (a deferred restart: when it is sent)" \
    "restarts.txt:edit to the restart's PATCH (audit log)"; do
    echo "  ${f#*:}: $(first_after "$OUT/${f%%:*}" "$OUT/edits.txt" | grep -v none | percentiles) (of $EDITS edits)"
  done
  echo "  deferred events: $(jq -rR 'fromjson? | select(.event == "deferred") | .message' "$OUT/controller.log" | wc -l), of which the restart limit: $(jq -rR 'fromjson? | select(.event == "deferred") | .message' "$OUT/controller.log" | grep -c 'under way' || true)"
  echo "API requests over the edits ($(echo "$t1 - $t0" | bc) s): $(audit_count "$t0" "$t1")"
  echo "controller RSS after the edits: $(mib "$(metric process_resident_memory_bytes)") MiB"
}

unreadable() {
  local i t0 t1 r0 r1 e0 e1
  ts "$UNREADABLE edits of cm-17 (workload 3, kubectl-cmsync.io/watch, a volume: annotate, then pods that cannot be read)"
  r0=$(metric cmsync_retries_total) e0=$(metric cmsync_errors_total) t0=$(now)
  for ((i = 0; i < UNREADABLE; i++)); do edit_cm "$(ns_of $i)" cm-17 "u$i-$RANDOM"; done
  sleep 60
  t1=$(now) r1=$(metric cmsync_retries_total) e1=$(metric cmsync_errors_total)
  echo "unreadable pods, $UNREADABLE edits over 60 s: retries $(awk -v a="$r0" -v b="$r1" 'BEGIN {print b - a}'), errors $(awk -v a="$e0" -v b="$e1" 'BEGIN {print b - a}'); API requests $(audit_count "$t0" "$t1")"
}

release_rss() {
  local i peak=0 r end
  if (( CMS <= PER_NS * 5 )); then
    echo "no release: each namespace's $CMS ConfigMaps are all read by its $PER_NS workloads (5 each), and the release edits those no workload reads; raise OBJECTS (or set RELEASE_EDITS=0)" >&2
    return
  fi
  ts "a release of $RELEASE_EDITS edits (ConfigMaps no workload reads, 10 per namespace at a time)"
  ( for ((i = 0; i < RELEASE_EDITS; i++)); do echo "$(ns_of $i) cm-$((PER_NS * 5 + i / NAMESPACES % (CMS - PER_NS * 5)))"; done |
    xargs -P "$CONCURRENCY" -L1 bash -c 'curl -fsS -o /dev/null --cacert "$0/ca.crt" --cert "$0/admin.crt" --key "$0/admin.key" -X PATCH -H "Content-Type: application/merge-patch+json" --data "{\"data\":{\"k0\":\"r$RANDOM\"}}" "https://127.0.0.1:6443/api/v1/namespaces/$1/configmaps/$2"' "$PKI" ) &
  local rel=$!
  end=$(( $(date +%s) + 600 ))
  while [ "$(date +%s)" -lt "$end" ]; do
    r=$(metric process_resident_memory_bytes) && awk -v r="$r" -v p="$peak" 'BEGIN {exit !(r > p)}' && peak=$r
    kill -0 $rel 2>/dev/null || { [ -n "${released:-}" ] || released=$(date +%s); [ $(( $(date +%s) - released )) -lt 60 ] || break; }
    sleep 1
  done
  echo "release of $RELEASE_EDITS edits: peak RSS $(mib "$peak") MiB (peak since its start $(leader_hwm)) (sampled each second, until 60 s after the last edit); load average $(cut -d' ' -f1-3 /proc/loadavg)"
}

status_vs_kubectl() {
  local f
  local raw="kubectl get pods,configmaps,secrets -A -o json"
  [ "${RAW:-1}" = 1 ] || raw="" # RAW=0: not the raw fetch (kubectl took 7 min and 3.4 GiB at 320 MB)
  for f in "kubectl cmsync status -A -o json" "kubectl cmsync status -A --group-by workload" ${raw:+"$raw"}; do
    # shellcheck disable=SC2086
    if /usr/bin/time -f "%e %M" -o "$OUT/time.txt" $f > /dev/null 2> "$OUT/stderr.txt"; then
      echo "$f: $(awk 'END {printf "%s s wall, peak RSS %.0f MiB", $1, $2 / 1024}' "$OUT/time.txt"); load average $(cut -d' ' -f1-3 /proc/loadavg)"
    else
      echo "$f: failed: $(tail -3 "$OUT/stderr.txt")"
    fi
  done
}

measure() {
  mkdir -p "$OUT"
  HELM=$(hack/tools/helm.sh)
  read -r n ready < <(pod_count)
  echo "fixture: $n pods ($ready ready), $(kubectl get configmaps -A --no-headers | wc -l) ConfigMaps, $(kubectl get secrets -A --no-headers | wc -l) Secrets; $(held)"
  ctl_start
  at_rest
  [ "$EDITS" = 0 ] || edit_figures
  [ "$UNREADABLE" = 0 ] || unreadable
  [ "$RELEASE_EDITS" = 0 ] || release_rss
  go tool pprof -top -sample_index=inuse_space "http://127.0.0.1:$PF_PORT/debug/pprof/heap" > "$OUT/heap-after.txt" 2>/dev/null || true
  [ "${STATUS:-1}" = 0 ] || status_vs_kubectl
  kubectl -n $CTL logs "$LEADER" > "$OUT/controller.log"
  echo "the leader's log and profiles: $OUT"
}

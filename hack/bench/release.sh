#!/usr/bin/env bash
# One release across namespaces, acted on by kubectl cmsync controller in the cluster (not part of make
# test): NSS namespaces cmsync-bench-rel-N, each with 100 ConfigMaps and two opted-in Deployments of
# PODS_PER pods: vol mounts cm-0..49 (one projected volume), env mounts cm-50..98 and reads KEY of cm-99
# as an environment variable. The release edits every ConfigMap, one `kubectl apply --server-side` per
# namespace, all at once. Figures: how long the edits took; the time until the leader logs the last pod
# verified current, from its namespace's first edit (the results' sinceChangeNs) and from the end of the
# edits; the restarts (one per env Deployment is right); the API server's requests during the release
# (apiserver_request_total, every client's); and the leader's RSS and CPU (its own metrics).
#   hack/bench/release.sh                 (needs the cluster up: make cluster-up)
#   STUCK=1: the env Deployment of namespace 0 never becomes ready after its restart (its container, which
#   checks KEY in both runs, exits at once unless KEY is the old value, so its new pods crash-loop, as an app
#   that rejects its new configuration does): its restart is verified only at --timeout,
#   and the figure is that of the other namespaces, to compare with a run without it (which prints the
#   figure of the same namespaces too); then cm-0 of namespace 0 (vol's) is edited again, and
#   the time until a round takes that change and vol's pods are verified current for it is printed.
#   MAX_RESTARTS=N, WORKERS=N: the controller's --max-concurrent-restarts and --workers (unset: its
#   defaults).
#   SHADOW=1: the chart with shadow: true (release cmsync-bench-shadow in its own namespace, all namespaces, the
#   image tagged :bench-shadow) instead of deploy/controller: it decides and sends nothing. The figure is the
#   time until every change is a row of its record (each row is written once --shadow-window, 2m, has passed
#   after the change's first edit), the rows and their classes, the record's size; restarts and annotations
#   must be none.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
NSS=${NSS:-10} PODS_PER=${PODS_PER:-10} STUCK=${STUCK:-0} MAX_RESTARTS=${MAX_RESTARTS:-} WORKERS=${WORKERS:-} SHADOW=${SHADOW:-0}
CTL=cmsync-system TAG=localhost/kubectl-cmsync:bench NAME=kubectl-cmsync-controller
if [ "$SHADOW" = 1 ]; then
  CTL=cmsync-bench-shadow TAG=localhost/kubectl-cmsync:bench-shadow NAME=cmsync-bench-shadow-kubectl-cmsync-controller
  HELM=$(hack/tools/helm.sh --path) || die "helm is not built: run hack/tools/helm.sh once"
fi
ts "building and importing the image"
go run ./hack/image -binary bin/kubectl-cmsync -tag $TAG -o bin/image.tar >/dev/null
hack/cluster/load-image.sh bin/image.tar >/dev/null
# configmaps NS VALUE: the 100 ConfigMaps of namespace NS, each with key=VALUE (KEY=VALUE for cm-99)
configmaps() {
  local j
  for j in $(seq 0 98); do printf -- '---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%s, namespace: %s}\ndata: {key: "%s"}\n' "$j" "$1" "$2"; done
  printf -- '---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-99, namespace: %s}\ndata: {KEY: "%s"}\n' "$1" "$2"
}
# workload NS NAME FIRST LAST: Deployment NAME mounting cm-FIRST..cm-LAST in one projected volume
workload() {
  local j
  {
    echo "        projected:"
    echo "          sources:"
    for j in $(seq "$3" "$4"); do echo "          - configMap: {name: cm-$j, items: [{key: key, path: cm-$j}]}"; done
  } | deployment_yaml "$1" "$2" "$PODS_PER" 'kubectl-cmsync.io/watch: "true"'
}
# env_patch NS CHECK: the env Deployment reads KEY of cm-99; with CHECK (namespace 0's, in both runs, so that
# its cost is the same with and without the stuck rollout) its container checks KEY before it sleeps: stuck,
# it exits 1 unless KEY is v0 (the new pods crash-loop, the rollout never completes); ready, any value passes.
# A check at start costs a crash loop's few restarts; a readiness probe every second would cost an exec a
# second on every pod, and the stuck run's surge pods would add their own execs to the machine's load.
env_patch() {
  local cmd="" test='test -n \"$KEY\"'
  [ "$2" = stuck ] && test='test \"$KEY\" = v0'
  [ -n "$2" ] && cmd=',"command":["sh","-c","'"$test"' && exec sleep 1000000"]'
  echo '{"spec":{"template":{"spec":{"containers":[{"name":"c","env":[{"name":"KEY","valueFrom":{"configMapKeyRef":{"name":"cm-99","key":"KEY"}}}]'"$cmd"'}]}}}}'
}
ts "deploying $((NSS * 2 * PODS_PER)) pods in $((NSS * 2)) Deployments reading $((NSS * 100)) ConfigMaps in $NSS namespaces"
for n in $(seq 0 $((NSS - 1))); do
  ns=cmsync-bench-rel-$n
  fresh_namespace "$ns"
  configmaps "$ns" v0 | kubectl apply --server-side --field-manager=bench-release -f - >/dev/null
  { workload "$ns" vol 0 49; workload "$ns" env 50 98; } | kubectl apply -f - >/dev/null
  check=; [ "$n" = 0 ] && check=ready; [ "$STUCK" = 1 ] && [ "$n" = 0 ] && check=stuck
  kubectl -n "$ns" patch deployment env --type=strategic -p "$(env_patch "$ns" "$check")" >/dev/null
done
for n in $(seq 0 $((NSS - 1))); do
  for d in vol env; do kubectl -n cmsync-bench-rel-$n rollout status deployment/$d --timeout=900s >/dev/null; done
done
sleep "${SETTLE:-20}"
ts "deploying the controller (all namespaces$( [ "$SHADOW" = 1 ] && echo ", shadow"))"
kubectl wait --for=delete namespace/$CTL --timeout=180s >/dev/null 2>&1 || true # a previous run's, terminating
trap 'kubectl delete namespace $CTL --ignore-not-found --wait=false >/dev/null 2>&1 || true; kubectl delete clusterrole,clusterrolebinding $NAME >/dev/null 2>&1 || true' EXIT
if [ "$SHADOW" = 1 ]; then
  extra=${MAX_RESTARTS:+--max-concurrent-restarts=$MAX_RESTARTS}${MAX_RESTARTS:+${WORKERS:+,}}${WORKERS:+--workers=$WORKERS}
  "$HELM" install cmsync-bench-shadow charts/kubectl-cmsync --namespace $CTL --create-namespace --set shadow=true \
    --set image.repository="${TAG%:*}" --set image.tag="${TAG##*:}" --set image.pullPolicy=Never ${extra:+--set "extraArgs={$extra}"} >/dev/null
else
  kubectl kustomize deploy/controller |
    sed -e "s#image: [^ ]*kubectl-cmsync:[^ ]*#image: $TAG#" -e "s#imagePullPolicy: IfNotPresent#imagePullPolicy: Never#" \
        -e "s#- --all-namespaces#- --all-namespaces${MAX_RESTARTS:+\n        - --max-concurrent-restarts=$MAX_RESTARTS}${WORKERS:+\n        - --workers=$WORKERS}#" |
    kubectl apply -f - >/dev/null
fi
leader=$(controller_leader $CTL $NAME)
ready='"event":"resume"'; [ "$SHADOW" = 1 ] && ready='"event":"ready"'
until kubectl -n $CTL logs "$leader" | grep -q "$ready"; do sleep 0.5; done
start_scraper $CTL "$leader"
requests() { kubectl get --raw /metrics | awk '/^apiserver_request_total\{/ {s += $NF} END {printf "%d\n", s}'; }
# current RE: the annotations and restarts verified current in namespaces matching RE, as "ACTION NS
# sinceChangeNs" lines (not the results of action none: a pod found current needed nothing)
current() {
  kubectl -n $CTL logs "$leader" | jq -r --arg re "$1" 'select(.event=="result" and .outcome=="current" and .action.action != "none" and (.action.target.namespace | test($re)))
    | "\(.action.action) \(.action.target.namespace) \(.sinceChangeNs)"'
}
# shadow_figures: waits until every ConfigMap edited is a row of the shadow record (or dropped by its cap),
# then prints the rows, their classes, the record, what was sent to the workloads and pods (nothing is
# right), the API server's requests and the leader's CPU and RSS
shadow_figures() {
  local want=$((NSS * 100)) rows dropped deadline=$(( $(date +%s) + 900 ))
  record() { kubectl -n $CTL get configmap cmsync-shadow -o json 2>/dev/null || echo '{}'; }
  until r=$(record); rows=$(jq -r '.data["records.jsonl"] // "" | split("\n") | map(select(. != "")) | length' <<<"$r")
    dropped=$(jq -r '.metadata.annotations["kubectl-cmsync.io/shadow-dropped"] // "0"' <<<"$r"); [ $((rows + dropped)) -ge $want ]; do
    [ "$(date +%s)" -lt $deadline ] || die "$((rows + dropped)) of $want changes recorded within 900 s"
    sleep 1
  done
  t2=$(now) req1=$(requests) cpu1=$(metric process_cpu_seconds_total) rss=$(metric process_resident_memory_bytes)
  echo "pods: $((NSS * 2 * PODS_PER)) in $((NSS * 2)) Deployments, $want ConfigMaps in $NSS namespaces, shadow; $(kubectl get pods -A --no-headers | wc -l) pods in the cluster"
  echo "the edits: $(echo "$t1 - $t0" | bc | xargs printf '%.1f')s ($NSS server-side applies at once)"
  echo "every change recorded: $(echo "$t2 - $t1" | bc | xargs printf '%.1f')s from the end of the edits (--shadow-window 2m included)"
  echo "rows: $rows, dropped by the cap: $dropped, record: $(jq -r '.data["records.jsonl"] // "" | length' <<<"$r") bytes"
  echo "classes: $(jq -r '.data["records.jsonl"] // "" | split("\n") | map(select(. != "") | fromjson | .class) | group_by(.) | map("\(.[0]) \(length)") | join(", ")' <<<"$r")"
  echo "cmsync's decisions: $(kubectl -n $CTL logs "$leader" | jq -r 'select(.event=="action" or .event=="deferred") | "\(.event) \(.action.action)"' | sort | uniq -c | awk '{printf "%s%s %s %s", (NR > 1 ? ", " : ""), $1, $2, $3} END {print ""}')"
  echo "sent: $(kubectl get deployments -A -o json | jq '[.items[] | select(.metadata.namespace | startswith("cmsync-bench-rel-")) | select(.spec.template.metadata.annotations["kubectl.kubernetes.io/restartedAt"])] | length') Deployments restarted, $(kubectl get pods -A -o json | jq '[.items[] | select(.metadata.annotations["kubectl-cmsync.io/refreshed-at"])] | length') pods annotated"
  echo "API server requests during the release (every client's): $((req1 - req0))"
  echo "leader CPU during the release: $(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN {printf "%.2f", b - a}') s; RSS $(awk -v r="$rss" 'BEGIN {printf "%.1f", r / 1048576}') MiB"
  kubectl -n $CTL logs "$leader" > "${CTL_LOG:-/tmp/cmsync-bench-release.log}" && echo "the leader's log: ${CTL_LOG:-/tmp/cmsync-bench-release.log}"
  for n in $(seq 0 $((NSS - 1))); do kubectl delete namespace cmsync-bench-rel-$n --wait=false >/dev/null; done
}
# next_change (STUCK=1): the stuck namespace's next change: cm-0, which vol reads, edited again once the
# others are verified; the time from that edit until a round takes it (its "change" event) and until vol's
# pods are verified current for it
next_change() {
  local ns=cmsync-bench-rel-0 te seen last deadline=$(( $(date +%s) + 600 ))
  # after: the events of ns from the second change of cm-0 on, as "EVENT NAME-OR-ACTION OUTCOME TIME"
  after() {
    kubectl -n $CTL logs "$leader" | jq -r --arg ns $ns 'select(.object.namespace==$ns or .action.target.namespace==$ns)
      | "\(.event) \(.object.name // .action.action) \(.outcome // "-") \(.time)"' |
      awk '$1 == "change" && $2 == "cm-0" {n++} n >= 2'
  }
  te=$(now)
  kubectl -n $ns patch configmap cm-0 --type=merge -p '{"data":{"key":"v2"}}' >/dev/null
  until [ "$(after | grep -c '^result annotate current')" -ge "$PODS_PER" ]; do
    [ "$(date +%s)" -lt $deadline ] || die "the stuck namespace's next change not verified within 600 s"
    sleep 1
  done
  seen=$(after | awk '$1 == "change" {print $4; exit}')
  last=$(after | awk '$1 == "result" && $2 == "annotate" && $3 == "current" {print $4}' | sort | tail -1)
  echo "the stuck namespace's next change (cm-0 edited again): taken by a round $(echo "$(date -d "$seen" +%s.%N) - $te" | bc | xargs printf '%.1f')s after the edit, vol's $PODS_PER pods verified $(echo "$(date -d "$last" +%s.%N) - $te" | bc | xargs printf '%.1f')s after it"
}
nine='^cmsync-bench-rel-([1-9]|[0-9][0-9]+)$' # the namespaces but rel-0: those a stuck run counts
others='^cmsync-bench-rel-'; [ "$STUCK" = 1 ] && others=$nine
want_envs=$NSS; [ "$STUCK" = 1 ] && want_envs=$((NSS - 1))
want=$(( want_envs * (PODS_PER + 1) )) # in the namespaces counted: every vol pod annotated, one restart of env
cpu0=$(metric process_cpu_seconds_total) req0=$(requests)
ts "the release: $((NSS * 100)) ConfigMaps edited, one server-side apply per namespace, all at once"
t0=$(now)
for n in $(seq 0 $((NSS - 1))); do configmaps cmsync-bench-rel-$n v1 | kubectl apply --server-side --field-manager=bench-release -f - >/dev/null & done
wait
t1=$(now)
[ "$SHADOW" = 1 ] && { shadow_figures; exit 0; }
deadline=$(( $(date +%s) + 600 ))
until [ "$(current "$others" | wc -l)" -ge "$want" ]; do
  [ "$(date +%s)" -lt $deadline ] || { kubectl -n $CTL logs "$leader" | tail -5; die "not every pod verified current within 600 s"; }
  sleep 1
done
last=$(current "$others" | awk '{print $3}' | sort -g | tail -1)
# the wall time of the last result, for the time from the end of the edits
at=$(kubectl -n $CTL logs "$leader" | jq -r --arg re "$others" 'select(.event=="result" and .outcome=="current" and .action.action != "none" and (.action.target.namespace | test($re))) | .time' | sort | tail -1)
req1=$(requests) cpu1=$(metric process_cpu_seconds_total) rss=$(metric process_resident_memory_bytes)
restarts=$(kubectl -n $CTL logs "$leader" | jq -r 'select(.event=="action" and .action.action=="restart") | .action.target.namespace + "/" + .action.target.name' | sort | uniq -c)
echo "pods: $((NSS * 2 * PODS_PER)) in $((NSS * 2)) Deployments, $((NSS * 100)) ConfigMaps in $NSS namespaces, stuck: $STUCK, --max-concurrent-restarts ${MAX_RESTARTS:-default}, --workers ${WORKERS:-default}; $(kubectl get pods -A --no-headers | wc -l) pods in the cluster"
echo "the edits: $(echo "$t1 - $t0" | bc | xargs printf '%.1f')s ($NSS server-side applies at once)"
echo "to the last pod verified$( [ "$STUCK" = 1 ] && echo " (the $((NSS - 1)) other namespaces)"): $(echo "scale=2; $last / 1000000000" | bc)s from its namespace's first edit, $(echo "$(date -d "$at" +%s.%N) - $t1" | bc | xargs printf '%.1f')s from the end of the edits"
if [ "$STUCK" = 0 ]; then
  at9=$(kubectl -n $CTL logs "$leader" | jq -r --arg re "$nine" 'select(.event=="result" and .outcome=="current" and .action.action != "none" and (.action.target.namespace | test($re))) | .time' | sort | tail -1)
  echo "to the last pod verified in the $((NSS - 1)) namespaces a STUCK=1 run counts (all but rel-0): $(echo "$(date -d "$at9" +%s.%N) - $t1" | bc | xargs printf '%.1f')s from the end of the edits"
fi
echo "restarts: $(echo "$restarts" | awk '{n += $1; if ($1 != 1) bad = bad " " $2 "x" $1} END {print n (bad ? ", more than one:" bad : ", one per env Deployment")}')"
echo "API server requests during the release (every client's): $((req1 - req0))"
echo "leader CPU during the release: $(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN {printf "%.2f", b - a}') s; RSS $(awk -v r="$rss" 'BEGIN {printf "%.1f", r / 1048576}') MiB"
[ "$STUCK" = 1 ] && next_change
kubectl -n $CTL logs "$leader" > "${CTL_LOG:-/tmp/cmsync-bench-release.log}" && echo "the leader's log: ${CTL_LOG:-/tmp/cmsync-bench-release.log}"
for n in $(seq 0 $((NSS - 1))); do kubectl delete namespace cmsync-bench-rel-$n --wait=false >/dev/null; done

#!/usr/bin/env bash
# kubectl cmsync controller, in the cluster (not part of make test): deploy/controller (2 replicas) and, in
# namespace cmsync-bench-ctl, DEPLOYMENTS Deployments (opted in) of PODS pods in all, mounting CONFIGMAPS
# ConfigMaps in all (each Deployment its share, in one projected volume). Per run, one release: every
# ConfigMap edited by one `kubectl apply`; the figure is the time from the first edit until the leader logs
# the last pod's annotate result verified current (the result's sinceChangeNs), and the number of annotate
# actions (one per pod when the edits are coalesced). Then the leader's own metrics
# (process_cpu_seconds_total and process_resident_memory_bytes, scraped from a pod as Prometheus would: the
# API server has no route to pods here) over IDLE seconds, the container restarts, and what Reloader does
# for the same release by its documented behaviour.
#   PODS=200 RUNS=3 hack/bench/controller.sh        (needs the cluster up: make cluster-up)
#   ALL=1: the controller watches every namespace (the manifests' --all-namespaces) instead of -n; with
#   hack/bench/scale.sh's 10,000-pod fixture up, its informers then cache the fixture's ConfigMaps and Secrets.
#   DEPLOYMENTS=10 CONFIGMAPS=100: ten Deployments of PODS/10 pods, each reading 10 of 100 ConfigMaps.
#   READER=node: deploy/controller-node-reader (one reader pod per node, in cmsync-readers) instead of exec.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
NS=cmsync-bench-ctl PODS=${PODS:-200} RUNS=${RUNS:-3} IDLE=${IDLE:-60} CTL=cmsync-system ALL=${ALL:-0} READER=${READER:-exec}
case $READER in
exec) KUSTOMIZATION=deploy/controller ;;
node) KUSTOMIZATION=deploy/controller-node-reader ;;
*) die "READER must be exec or node, got $READER" ;;
esac
DEPLOYMENTS=${DEPLOYMENTS:-1} CONFIGMAPS=${CONFIGMAPS:-1}
(( PODS % DEPLOYMENTS == 0 && CONFIGMAPS % DEPLOYMENTS == 0 )) || die "PODS ($PODS) and CONFIGMAPS ($CONFIGMAPS) must be multiples of DEPLOYMENTS ($DEPLOYMENTS)"
PER=$((CONFIGMAPS / DEPLOYMENTS))
TAG=localhost/kubectl-cmsync:bench
ts "building and importing the image"
go run ./hack/image -binary bin/kubectl-cmsync -tag $TAG -o bin/image.tar >/dev/null
hack/cluster/load-image.sh bin/image.tar >/dev/null
# configmaps VALUE: the CONFIGMAPS ConfigMaps, cfg-D-J for Deployment D, each with key=VALUE
configmaps() {
  local d j
  for d in $(seq 0 $((DEPLOYMENTS - 1))); do
    for j in $(seq 0 $((PER - 1))); do
      printf -- '---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg-%s-%s, namespace: %s}\ndata: {key: "%s"}\n' "$d" "$j" $NS "$1"
    done
  done
}
# deployment D: Deployment app-D, PODS/DEPLOYMENTS busybox pods, opted in, its ConfigMaps in one projected volume
deployment() {
  local j
  {
    echo "        projected:"
    echo "          sources:"
    for j in $(seq 0 $((PER - 1))); do echo "          - configMap: {name: cfg-$1-$j, items: [{key: key, path: cfg-$j}]}"; done
  } | deployment_yaml $NS "app-$1" $((PODS / DEPLOYMENTS)) 'kubectl-cmsync.io/watch: "true"'
}
ts "deploying $PODS pods in $DEPLOYMENTS Deployments reading $CONFIGMAPS ConfigMaps"
fresh_namespace $NS
configmaps v0 | kubectl apply -f - >/dev/null
for d in $(seq 0 $((DEPLOYMENTS - 1))); do deployment "$d"; done | kubectl apply -f - >/dev/null
for d in $(seq 0 $((DEPLOYMENTS - 1))); do kubectl -n $NS rollout status deployment/app-"$d" --timeout=600s >/dev/null; done
sleep "${SETTLE:-20}"
r0=$(restarts $NS)
ts "deploying the controller"
kubectl wait --for=delete namespace/$CTL --timeout=180s >/dev/null 2>&1 || true # a previous run's, terminating
readers=""; [ "$READER" = node ] && readers=cmsync-readers && fresh_namespace $readers
trap 'kubectl delete namespace $CTL $readers --ignore-not-found --wait=false >/dev/null 2>&1 || true; kubectl delete clusterrole,clusterrolebinding kubectl-cmsync-controller >/dev/null 2>&1 || true' EXIT
kubectl kustomize $KUSTOMIZATION |
  sed -e "s#image: [^ ]*kubectl-cmsync:[^ ]*#image: $TAG#" -e "s#imagePullPolicy: IfNotPresent#imagePullPolicy: Never#" \
      -e "s#- --all-namespaces#- $( [ "$ALL" = 1 ] && echo --all-namespaces || echo --namespace=$NS )#" \
      -e "s#- --reader=node#- --reader=node\n        - --reader-image=$IMAGE_BUSYBOX#" |
  kubectl apply -f - >/dev/null
leader=$(controller_leader $CTL)
until kubectl -n $CTL logs "$leader" | grep -q '"event":"ready"'; do sleep 0.5; done
start_scraper $CTL "$leader"
results() { kubectl -n $CTL logs "$leader" | jq -c 'select(.event=="result" and .outcome=="current")' 2>/dev/null | wc -l; }
annotations() { kubectl -n $CTL logs "$leader" | jq -c 'select(.event=="action" and .action.action=="annotate")' 2>/dev/null | wc -l; }
rss0=$(metric process_resident_memory_bytes)
since=() actions=()
for i in $(seq "$RUNS"); do
  before=$(results) a0=$(annotations)
  configmaps "run-$i-$RANDOM" | kubectl apply -f - >/dev/null
  deadline=$(( $(date +%s) + 180 ))
  until [ "$(results)" -ge $((before + PODS)) ]; do
    [ "$(date +%s)" -lt $deadline ] || { kubectl -n $CTL logs "$leader" | tail -5; die "run $i: not every pod verified current within 180 s"; }
    sleep 1
  done
  s=$(kubectl -n $CTL logs "$leader" | jq -r 'select(.event=="result" and .outcome=="current") | .sinceChangeNs' | tail -n "$PODS" | sort -g | tail -1)
  s=$(echo "scale=3; $s / 1000000000" | bc)
  since+=("$s")
  sleep 5 # an annotation of a second round would show by now
  actions+=($(( $(annotations) - a0 )))
  echo "run $i: last of $PODS pods verified current ${s}s after the first edit, ${actions[-1]} annotate actions (load average $(cut -d' ' -f1-3 /proc/loadavg))"
done
c0=$(metric process_cpu_seconds_total); sleep "$IDLE"; c1=$(metric process_cpu_seconds_total)
rss=$(metric process_resident_memory_bytes)
echo "pods: $PODS in $DEPLOYMENTS Deployments, $CONFIGMAPS ConfigMaps, runs: $RUNS, leader $leader, $( [ "$ALL" = 1 ] && echo "all namespaces ($(kubectl get configmaps -A --no-headers | wc -l) ConfigMaps, $(kubectl get secrets -A --no-headers | wc -l) Secrets, $(kubectl get pods -A --no-headers | wc -l) pods in the cluster)" || echo "namespace $NS")"
echo "release to last pod verified: median $(printf '%s\n' "${since[@]}" | median)s (runs: ${since[*]}); annotate actions per run: ${actions[*]}"
echo "controller RSS when ready, before the first edit: $(awk -v r="$rss0" 'BEGIN {printf "%.1f", r / 1048576}') MiB"
# the exposition format may print floats in exponent form (6.5e+07): awk reads both
echo "controller idle CPU: $(awk -v a="$c0" -v b="$c1" -v t="$IDLE" 'BEGIN {printf "%.2f", (b - a) * 100 / t}')% of a core over ${IDLE}s; RSS $(awk -v r="$rss" 'BEGIN {printf "%.1f", r / 1048576}') MiB"
echo "container restarts of the $PODS pods during the benchmark: $(( $(restarts $NS) - r0 ))"
echo "Reloader, same releases (documented behaviour: a rolling restart of every workload that references a changed object, one per change): $((RUNS * CONFIGMAPS)) template updates, at least $((RUNS * PODS)) pods replaced"
kubectl -n $CTL logs "$leader" > "${CTL_LOG:-/tmp/cmsync-bench-controller.log}" && echo "the leader's log: ${CTL_LOG:-/tmp/cmsync-bench-controller.log}"
kubectl delete namespace $NS --wait=false >/dev/null

#!/usr/bin/env bash
# kubectl cmsync controller, in the cluster (not part of make test): deploy/controller (2 replicas) watching
# namespace cmsync-bench-ctl, where one Deployment (opted in) of PODS pods mounts one ConfigMap. Per run, one
# edit of the ConfigMap; the figure is the time from the edit until the leader logs the last pod's annotate
# result verified current (the result's sinceChangeNs). Then the leader's own metrics (process_cpu_seconds_total
# and process_resident_memory_bytes, scraped from a pod as Prometheus would: the API server has no route to pods
# here) over IDLE seconds, the container restarts, and what Reloader does for the same edit by its documented
# behaviour.
#   PODS=200 RUNS=3 hack/bench/controller.sh        (needs the cluster up: make cluster-up)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
NS=cmsync-bench-ctl PODS=${PODS:-200} RUNS=${RUNS:-3} IDLE=${IDLE:-60} CTL=cmsync-system
TAG=localhost/kubectl-cmsync:bench
ts "building and importing the image"
go run ./hack/image -binary bin/kubectl-cmsync -tag $TAG -o bin/image.tar >/dev/null
hack/cluster/load-image.sh bin/image.tar >/dev/null
ts "deploying $PODS pods"
deploy $NS app "$PODS"
kubectl -n $NS annotate deployment app kubectl-cmsync.io/watch=true --overwrite >/dev/null
r0=$(restarts $NS)
ts "deploying the controller"
trap 'kubectl delete namespace $CTL --wait=false >/dev/null 2>&1; kubectl delete clusterrole,clusterrolebinding kubectl-cmsync-controller >/dev/null 2>&1 || true' EXIT
kubectl kustomize deploy/controller |
  sed -e "s#image: localhost/kubectl-cmsync:dev#image: $TAG#" -e "s#imagePullPolicy: IfNotPresent#imagePullPolicy: Never#" \
      -e "s#- --all-namespaces#- --namespace=$NS#" | kubectl apply -f - >/dev/null
kubectl -n $CTL rollout status deployment/kubectl-cmsync-controller --timeout=180s >/dev/null
leader=$(kubectl -n $CTL get lease kubectl-cmsync-controller -o jsonpath='{.spec.holderIdentity}')
until kubectl -n $CTL logs "$leader" | grep -q '"event":"ready"'; do sleep 0.5; done
kubectl -n $CTL run scraper --image="$IMAGE_BUSYBOX" --image-pull-policy=Never --labels=cmsync-bench=scraper \
  --overrides='{"spec":{"securityContext":{"runAsNonRoot":true,"runAsUser":65532,"seccompProfile":{"type":"RuntimeDefault"}},"containers":[{"name":"scraper","image":"'"$IMAGE_BUSYBOX"'","imagePullPolicy":"Never","command":["sleep","100000"],"securityContext":{"allowPrivilegeEscalation":false,"capabilities":{"drop":["ALL"]}}}]}}' >/dev/null
kubectl -n $CTL wait --for=condition=Ready pod/scraper --timeout=60s >/dev/null
ip=$(kubectl -n $CTL get pod "$leader" -o jsonpath='{.status.podIP}')
metric() { kubectl -n $CTL exec scraper -- wget -qO- "http://$ip:8080/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
results() { kubectl -n $CTL logs "$leader" | jq -c 'select(.event=="result" and .outcome=="current")' 2>/dev/null | wc -l; }
since=()
for i in $(seq "$RUNS"); do
  before=$(results)
  kubectl -n $NS patch configmap app --type merge -p "{\"data\":{\"key\":\"run-$i-$RANDOM\"}}" >/dev/null
  deadline=$(( $(date +%s) + 180 ))
  until [ "$(results)" -ge $((before + PODS)) ]; do
    [ "$(date +%s)" -lt $deadline ] || { kubectl -n $CTL logs "$leader" | tail -5; die "run $i: not every pod verified current within 180 s"; }
    sleep 1
  done
  s=$(kubectl -n $CTL logs "$leader" | jq -r 'select(.event=="result" and .outcome=="current") | .sinceChangeNs' | tail -n "$PODS" | sort -g | tail -1)
  s=$(echo "scale=3; $s / 1000000000" | bc)
  since+=("$s")
  echo "run $i: last of $PODS pods verified current ${s}s after the edit (load average $(cut -d' ' -f1-3 /proc/loadavg))"
  sleep 5
done
c0=$(metric process_cpu_seconds_total); sleep "$IDLE"; c1=$(metric process_cpu_seconds_total)
rss=$(metric process_resident_memory_bytes)
echo "pods: $PODS, runs: $RUNS, leader $leader"
echo "edit to last pod verified: median $(printf '%s\n' "${since[@]}" | median)s (runs: ${since[*]})"
# the exposition format may print floats in exponent form (6.5e+07): awk reads both
echo "controller idle CPU: $(awk -v a="$c0" -v b="$c1" -v t="$IDLE" 'BEGIN {printf "%.2f", (b - a) * 100 / t}')% of a core over ${IDLE}s; RSS $(awk -v r="$rss" 'BEGIN {printf "%.1f", r / 1048576}') MiB"
echo "container restarts of the $PODS pods during the benchmark: $(( $(restarts $NS) - r0 ))"
echo "Reloader, same edits (documented behaviour: a rolling restart of every workload that references the object): $RUNS rollouts, $((RUNS * PODS)) pods replaced"
kubectl delete namespace $NS --wait=false >/dev/null

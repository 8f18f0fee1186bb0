#!/usr/bin/env bash
# A scale fixture for the status benchmarks (not part of make test):
#   hack/bench/scale.sh up     PODS pods (default 10000) in NAMESPACES namespaces (default 50) named
#                              cmsync-scale-NN; per namespace 10 Deployments (their ReplicaSets own the
#                              pods, PODS/NAMESPACES/10 replicas each), 60 ConfigMaps and 10 Secrets
#                              (3,000 and 500 at the defaults). Every pod uses 7 objects in every mode:
#                              volume, items, projected (a ConfigMap with a Secret), subPath, env,
#                              envFrom, and a sidecar (restartable init container) mounting a volume.
#                              Running `up` again with another PODS rescales the Deployments.
#   hack/bench/scale.sh shrink N  deletes the highest-numbered namespaces until N pods are left (the
#                              pods are spread evenly), to measure 10k, then 3k, then 1k on the way down.
#   hack/bench/scale.sh down   deletes all of it (the namespaces and the Node) in one command.
# The pods are bound (spec.nodeName) to the Node object cmsync-scale-no-kubelet that has no kubelet behind
# it, and tolerate every taint: they stay Pending, and neither pod GC (the node exists) nor taint eviction
# removes them; the scheduler never sees them. Objects are created by `kubectl create`, one namespace per
# kubectl, CONCURRENCY (default 4) namespaces at a time; the pods are created by the
# controller-manager at its own pace (its client is limited to 20 requests/s): `up` prints how long.
# Everything talks to the local API server over loopback (the kubeconfig of hack/cluster).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
PODS=${PODS:-10000}
NAMESPACES=${NAMESPACES:-50}
CONCURRENCY=${CONCURRENCY:-4}
NODE=cmsync-scale-no-kubelet
LABEL=cmsync-scale=true
DEPLOYMENTS=10

# scale_count: the fixture's pods, as their ReplicaSets count them (a LIST of 500 ReplicaSets, not 10,000 pods)
scale_count() {
  kubectl get replicasets -A -l "$LABEL" -o jsonpath='{range .items[*]}{.status.replicas}{"\n"}{end}' |
    awk '{s+=$1} END {print s+0}'
}

# namespace_manifest NS REPLICAS: the namespace's objects as one YAML stream
namespace_manifest() {
  local ns=$1 replicas=$2 d c s
  cat <<Y
apiVersion: v1
kind: Namespace
metadata: {name: $ns, labels: {cmsync-scale: "true"}}
Y
  for c in $(seq 0 $((DEPLOYMENTS * 6 - 1))); do
    cat <<Y
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cm-$c, namespace: $ns}
data: {key: "value-$c", app.properties: "a=1\nb=2\n", other: "x"}
Y
  done
  for s in $(seq 0 $((DEPLOYMENTS - 1))); do
    cat <<Y
---
apiVersion: v1
kind: Secret
metadata: {name: secret-$s, namespace: $ns}
stringData: {password: "not-a-real-password-$s"}
Y
  done
  for d in $(seq 0 $((DEPLOYMENTS - 1))); do
    c=$((d * 6))
    cat <<Y
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: app-$d, namespace: $ns}
spec:
  replicas: $replicas
  selector: {matchLabels: {app: app-$d}}
  template:
    metadata: {labels: {app: app-$d, cmsync-scale: "true"}}
    spec:
      nodeName: $NODE
      tolerations: [{operator: Exists}]
      automountServiceAccountToken: false
      enableServiceLinks: false
      initContainers:
      - name: sidecar
        image: $IMAGE_PAUSE
        imagePullPolicy: Never
        restartPolicy: Always
        volumeMounts: [{name: whole, mountPath: /etc/sidecar}]
      containers:
      - name: app
        image: $IMAGE_PAUSE
        imagePullPolicy: Never
        env:
        - name: KEY
          valueFrom: {configMapKeyRef: {name: cm-$((c + 4)), key: key}}
        envFrom:
        - configMapRef: {name: cm-$((c + 5))}
          prefix: CFG_
        volumeMounts:
        - {name: whole, mountPath: /etc/whole}
        - {name: items, mountPath: /etc/items}
        - {name: projected, mountPath: /etc/projected}
        - {name: sub, mountPath: /etc/app.properties, subPath: app.properties}
      volumes:
      - name: whole
        configMap: {name: cm-$c}
      - name: items
        configMap: {name: cm-$((c + 1)), items: [{key: key, path: key.txt}]}
      - name: projected
        projected:
          sources:
          - configMap: {name: cm-$((c + 2))}
          - secret: {name: secret-$d}
      - name: sub
        configMap: {name: cm-$((c + 3))}
Y
  done
}

# delete_namespaces NS...: deletes the namespaces and force-deletes their pods, again until they are gone
# (a bound pod is deleted gracefully and only its kubelet would finish that; there is none): once a
# namespace is terminating no controller re-creates pods, so one DELETE collection with
# gracePeriodSeconds=0 per namespace ends them, like `kubectl delete --force --grace-period=0`. It is
# repeated, as an API server restart (other sessions' fault tests) can drop a request.
delete_namespaces() {
  local out tries=0
  kubectl delete namespace "$@" --wait=false >/dev/null 2>&1 || true
  while :; do
    (( tries++ < 60 )) || die "namespaces still terminating after 10 minutes: $out"
    if ! out=$(kubectl get namespace "$@" --ignore-not-found -o jsonpath='{range .items[*]}{.metadata.name}{" "}{end}' 2>/dev/null); then
      sleep 10 # the API server is restarting
      continue
    fi
    [ -n "$out" ] || return 0
    printf '/api/v1/namespaces/%s/pods?gracePeriodSeconds=0\n' $out |
      xargs -r -P "$CONCURRENCY" -I{} kubectl delete --raw {} >/dev/null 2>&1 || true
    sleep 10
  done
}

case ${1:-} in
up)
  (( PODS % (NAMESPACES * DEPLOYMENTS) == 0 )) || die "PODS ($PODS) must be a multiple of NAMESPACES*$DEPLOYMENTS ($((NAMESPACES * DEPLOYMENTS)))"
  replicas=$((PODS / NAMESPACES / DEPLOYMENTS))
  t0=$(now)
  # a Node object with no kubelet: pods bound to it stay Pending
  cat <<Y | kubectl apply --server-side -f - >/dev/null
apiVersion: v1
kind: Node
metadata: {name: $NODE, labels: {cmsync-scale: "true"}}
Y
  export -f namespace_manifest
  export DEPLOYMENTS NODE IMAGE_PAUSE
  # a namespace that exists already (a previous `up`) only has its Deployments scaled
  have=" $(kubectl get namespace -l "$LABEL" -o jsonpath='{.items[*].metadata.name}') "
  seq -f 'cmsync-scale-%02g' 0 $((NAMESPACES - 1)) | while read -r ns; do [[ $have == *" $ns "* ]] || echo "$ns"; done |
    xargs -r -P "$CONCURRENCY" -I{} bash -c 'namespace_manifest "$1" "$2" | kubectl create -f - >/dev/null' _ {} "$replicas"
  seq -f 'cmsync-scale-%02g' 0 $((NAMESPACES - 1)) | while read -r ns; do [[ $have == *" $ns "* ]] && echo "$ns"; done |
    xargs -r -P "$CONCURRENCY" -I{} kubectl -n {} scale deployment --all --replicas="$replicas" >/dev/null
  t1=$(now)
  echo "objects created or scaled in $(echo "$t1 - $t0" | bc) s ($NAMESPACES namespaces, $((NAMESPACES * DEPLOYMENTS * 6)) ConfigMaps, $((NAMESPACES * DEPLOYMENTS)) Secrets, $((NAMESPACES * DEPLOYMENTS)) Deployments of $replicas)"
  last=-1 stalled=0
  while :; do
    n=$(scale_count)
    [ "$n" = "$PODS" ] && break
    if [ "$n" = "$last" ]; then stalled=$((stalled + 1)); else stalled=0; fi
    (( stalled < 60 )) || die "the pod count is stuck at $n of $PODS for 2 minutes"
    last=$n
    sleep 2
  done
  echo "$PODS pods exist after $(echo "$(now) - $t0" | bc) s (the controller-manager's pace)"
  ;;
down)
  t0=$(now)
  mapfile -t nss < <(kubectl get namespace -l "$LABEL" -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}')
  [ ${#nss[@]} -eq 0 ] || delete_namespaces "${nss[@]}"
  kubectl delete node "$NODE" --ignore-not-found >/dev/null
  echo "deleted in $(echo "$(now) - $t0" | bc) s"
  ;;
shrink)
  want=${2:-}
  [[ $want =~ ^[0-9]+$ ]] || die "usage: $0 shrink N (the number of pods to keep)"
  t0=$(now)
  mapfile -t nss < <(kubectl get namespace -l "$LABEL" -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | sort)
  (( ${#nss[@]} > 0 )) || die "no fixture namespaces (run $0 up first)"
  have=$(scale_count)
  per=$((have / ${#nss[@]}))
  (( per > 0 )) || die "the fixture has no pods yet"
  (( want % per == 0 )) || die "N ($want) must be a multiple of the pods per namespace ($per)"
  keep=$((want / per))
  (( keep <= ${#nss[@]} )) || die "only $have pods in ${#nss[@]} namespaces; use up to grow"
  drop=("${nss[@]:keep}")
  [ ${#drop[@]} -gt 0 ] || { echo "$have pods already"; exit 0; }
  delete_namespaces "${drop[@]}"
  echo "$(scale_count) pods left in $keep namespaces after $(echo "$(now) - $t0" | bc) s"
  ;;
count)
  scale_count
  ;;
*)
  echo "usage: PODS=10000 NAMESPACES=50 $0 up|down|count, or $0 shrink N" >&2
  exit 2
  ;;
esac

# shellcheck shell=bash
# hack/bench/kwok.sh's fixture (sourced): the fake nodes, kwok's process, the namespaces' objects.

# size_exponent: P such that sizes 100 * 9216^(x^P), x spread evenly over (0,1), average DATA_MB MB over
# OBJECTS objects (100 B to 900 KiB; most are small, a few large)
size_exponent() {
  awk -v mean="$((DATA_MB * 1000000 / OBJECTS))" 'function avg(p,  i, s) { s = 0; for (i = 0; i < 2000; i++) s += 100 * 9216 ^ (((i + 0.5) / 2000) ^ p); return s / 2000 }
    BEGIN { if (mean >= avg(0.0001) || mean <= 100) { print "none"; exit }
            lo = 0.0001; hi = 1000; for (k = 0; k < 100; k++) { m = sqrt(lo * hi); if (avg(m) > mean) lo = m; else hi = m }; print m }'
}

# namespace_manifest NS INDEX: the namespace, its ConfigMaps and Secrets (with their values) and its workloads,
# one YAML stream. Object I of the fixture (over all namespaces) holds a value of 100 * 9216^(x^P) bytes,
# x = the fractional part of (I + 0.5) * 0.618...: every size range is in every namespace.
namespace_manifest() {
  local ns=$1 n=$2 w
  awk -v ns="$ns" -v n="$n" -v cms="$CMS" -v secrets="$SECRETS" -v p="$SIZE_P" 'BEGIN {
    printf "apiVersion: v1\nkind: Namespace\nmetadata: {name: %s, labels: {cmsync-kwok: \"true\"}}\n", ns
    per = cms + secrets
    xs = "x"; while (length(xs) < 921600) xs = xs xs
    as = "A"; while (length(as) < 1228804) as = as as
    for (j = 0; j < per; j++) {
      x = ((n * per + j) + 0.5) * 0.6180339887498949; x -= int(x)
      size = int(100 * 9216 ^ (x ^ p))
      if (j < cms) {
        printf "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%d, namespace: %s}\ndata: {k0: \"v0\", blob: \"%s\"}\n", j, ns, substr(xs, 1, size)
      } else {
        # base64 of size zero bytes: 4 characters per 3 bytes
        printf "---\napiVersion: v1\nkind: Secret\nmetadata: {name: secret-%d, namespace: %s}\ndata: {k0: djA=, blob: %s}\n", j - cms, ns, substr(as, 1, 4 * int((size + 2) / 3))
      }
    }
  }'
  [ -n "${OBJECTS_ONLY:-}" ] || for w in $(seq 0 $((PER_NS - 1))); do workload_manifest "$ns" "$n" "$w"; done
}

# workload_manifest NS INDEX W: workload W of namespace number INDEX, its pods bound to a fake node
workload_manifest() {
  local ns=$1 n=$2 w=$3 c=$(($3 * 5)) s=$(($3 * 3)) kind=Deployment extra="" ann=""
  case $w in
  0) ann='reloader.stakater.com/auto: "true"' ;;
  1) ann="configmap.reloader.stakater.com/reload: cm-$c, secret.reloader.stakater.com/reload: secret-$s" ;;
  2) (( n % 2 )) || ann='reloader.stakater.com/auto: "true"' ;;
  3 | 4) ann='kubectl-cmsync.io/watch: "true"' ;;
  esac
  case $w in 2 | 5 | 8) kind=StatefulSet extra="serviceName: app-$w
  podManagementPolicy: Parallel" ;; esac
  cat <<Y
---
apiVersion: apps/v1
kind: $kind
metadata: {name: app-$w, namespace: $ns, labels: {cmsync-kwok: "true"}, annotations: {$ann}}
spec:
  replicas: $REPLICAS
  ${extra:-revisionHistoryLimit: 2}
  selector: {matchLabels: {app: app-$w}}
  template:
    metadata: {labels: {app: app-$w, cmsync-kwok: "true"}}
    spec:
      nodeName: kwok-node-$(( (n * PER_NS + w) % NODES ))
      tolerations: [{key: kwok.x-k8s.io/node, operator: Exists, effect: NoSchedule}]
      automountServiceAccountToken: false
      enableServiceLinks: false
      containers:
      - name: app
        image: $IMAGE_PAUSE
        imagePullPolicy: Never
        env:
        - name: K0
          valueFrom: {configMapKeyRef: {name: cm-$c, key: k0}}
        envFrom:
        - configMapRef: {name: cm-$((c + 1))}
          prefix: CFG_
        - secretRef: {name: secret-$s}
          prefix: SEC_
        volumeMounts:
        - {name: whole, mountPath: /etc/whole}
        - {name: projected, mountPath: /etc/projected}
        - {name: sub, mountPath: /etc/k0, subPath: k0}
        - {name: secret, mountPath: /etc/secret}
      volumes:
      - name: whole
        configMap: {name: cm-$((c + 2))}
      - name: projected
        projected:
          sources:
          - configMap: {name: cm-$((c + 3))}
          - secret: {name: secret-$((s + 1))}
      - name: sub
        configMap: {name: cm-$((c + 4))}
      - name: secret
        secret: {secretName: secret-$((s + 2))}
Y
}

# nodes_manifest: the NODES fake nodes kwok manages
nodes_manifest() {
  local i
  for i in $(seq 0 $((NODES - 1))); do
    cat <<Y
---
apiVersion: v1
kind: Node
metadata:
  name: kwok-node-$i
  labels: {type: kwok, cmsync-kwok: "true", kubernetes.io/hostname: kwok-node-$i}
  annotations: {kwok.x-k8s.io/node: fake, node.alpha.kubernetes.io/ttl: "0"}
spec:
  taints: [{key: kwok.x-k8s.io/node, value: fake, effect: NoSchedule}]
status:
  capacity: {cpu: "64", memory: 256Gi, pods: "2000"}
  allocatable: {cpu: "64", memory: 256Gi, pods: "2000"}
Y
  done
}

# cluster_args: the controller-manager's client limits and etcd's quota, restarting the daemon whose
# recorded extra flags (hack/cluster/components.sh) differ
cluster_args() {
  local name var want
  for name in kube-controller-manager etcd; do
    if [ $name = etcd ]; then var=ETCD_EXTRA_ARGS want=$ETCD_ARGS; else var=KCM_EXTRA_ARGS want=$KCM_ARGS; fi
    [ "$(cat "$VAR/extra-args.$name" 2>/dev/null | tr '\n' ' ')" = "$(printf '%s ' $want)" ] && continue
    ts "restarting $name with $want"
    env "$var=$want" hack/cluster/component.sh restart $name >/dev/null
  done
}

# pod_count: the fixture's pods as their workloads count them, and how many are ready
pod_count() {
  { kubectl get deployments -A -l "$LABEL" -o jsonpath='{range .items[*]}{.status.replicas} {.status.readyReplicas}{"\n"}{end}'
    kubectl get statefulsets -A -l "$LABEL" -o jsonpath='{range .items[*]}{.status.replicas} {.status.readyReplicas}{"\n"}{end}'; } |
    awk '{s += $1; r += $2} END {print s + 0, r + 0}'
}

# kwok_stages: kwok's own "fast" stages (nodes Ready at once, with a Lease; pods Running and Ready at once,
# deleted at once), from its module's sources, which the build left in the module cache
kwok_stages() {
  local dir=$CMSYNC_CACHE/tools/gopath/pkg/mod/sigs.k8s.io/kwok@${KWOK_VERSION:-v0.8.0}/kustomize/stage f
  for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
    pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
    [ -f "$dir/$f" ] || die "kwok's stage $dir/$f is missing (hack/tools/kwok.sh builds kwok and leaves it there)"
    echo "---"; cat "$dir/$f"
  done
  # a running pod the node lifecycle controller marked not ready (its node's Lease renewed late: kwok's
  # lease updates conflict under load) is made ready again; kwok's own stages make only a Pending pod ready
  cat <<'Y'
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-ready-again
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values: ['Running']
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: 'NotIn'
      values: ['True']
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Initialized
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Ready
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: ContainersReady
Y
}

kwok_up() {
  local kwok t0 t1 n ready last=-1 stalled=0
  SIZE_P=$(size_exponent)
  [ "$SIZE_P" != none ] || die "DATA_MB ($DATA_MB) over OBJECTS ($OBJECTS) is $((DATA_MB * 1000000 / OBJECTS)) bytes each: it must be between 100 B and about 900 KiB"
  kwok=$(hack/tools/kwok.sh)
  t0=$(now)
  cluster_args
  nodes_manifest | kubectl apply -f - >/dev/null
  if ! alive kwok; then
    kwok_stages > "$VAR/kwok-stages.yaml"
    # the nodes' and pods' status is kwok's, the nodes' Leases too (else the node lifecycle controller marks the
    # pods not ready); no server of its own (no --server-address): nothing listens. Its client-go would ask
    # for watch lists, which this API server's storage refuses: off.
    KUBE_FEATURE_WatchListClient=false start kwok "$kwok" --node-lease-duration-seconds=40 --kubeconfig="$KUBECONFIG_FILE" --manage-nodes-with-label-selector=type=kwok \
      --cidr=$KWOK_CIDR --node-ip=$KWOK_NODE_IP --config="$VAR/kwok-stages.yaml"
  fi
  until [ "$(kubectl get nodes -l type=kwok -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' | grep -c True)" -ge "$NODES" ]; do
    alive kwok || { tail -20 "$LOG/kwok.log" >&2; die "kwok exited (its log: $LOG/kwok.log)"; }
    sleep 1
  done
  export -f namespace_manifest workload_manifest
  export CMS SECRETS SIZE_P PER_NS REPLICAS NODES IMAGE_PAUSE
  # a namespace is labelled created once all its objects are; one left half made (an interrupted `up`) is
  # completed (what exists is left as it is)
  have=" $(kubectl get namespace -l cmsync-kwok-created=true -o jsonpath='{.items[*].metadata.name}') "
  seq 0 $((NAMESPACES - 1)) | while read -r i; do ns=$(printf 'cmsync-kwok-%03d' "$i"); [[ $have == *" $ns "* ]] || echo "$ns $i"; done |
    xargs -r -P "$CONCURRENCY" -L1 bash -c 'set -o pipefail
      if ! out=$(namespace_manifest "$1" "$2" | kubectl create -f - 2>&1 >/dev/null); then
        out=$(grep -v "(AlreadyExists)" <<< "$out") && { echo "$1: $out" >&2; exit 255; }
      fi
      kubectl label namespace "$1" cmsync-kwok-created=true >/dev/null' _
  # a namespace of a previous `up` keeps its objects; its workloads are scaled to this PODS
  seq 0 $((NAMESPACES - 1)) | while read -r i; do ns=$(printf 'cmsync-kwok-%03d' "$i"); if [[ $have == *" $ns "* ]]; then echo "$ns"; fi; done |
    xargs -r -P "$CONCURRENCY" -I{} kubectl -n {} scale deployment,statefulset -l "$LABEL" --replicas="$REPLICAS" >/dev/null
  t1=$(now)
  echo "$NODES fake nodes, $NAMESPACES namespaces, $((CMS * NAMESPACES)) ConfigMaps, $((SECRETS * NAMESPACES)) Secrets ($DATA_MB MB), $WORKLOADS workloads created in $(echo "$t1 - $t0" | bc) s"
  while :; do
    read -r n ready < <(pod_count)
    [ "$ready" -ge "$PODS" ] && break
    if [ "$ready" = "$last" ]; then stalled=$((stalled + 1)); else stalled=0; fi
    (( stalled < 60 )) || die "$ready of $PODS pods ready, no progress for 2 minutes"
    last=$ready
    sleep 2
  done
  echo "$PODS pods running (kwok) after $(echo "$(now) - $t0" | bc) s; load average $(cut -d' ' -f1-3 /proc/loadavg)"
  held
}

# held: what the API server and etcd hold
held() {
  local db
  db=$(curl -fsS --max-time 5 http://127.0.0.1:2379/metrics | awk '$1 == "etcd_mvcc_db_total_size_in_bytes" {printf "%.0f", $2 / 1048576}')
  echo "kube-apiserver RSS $(rss_mib kube-apiserver) MiB, etcd RSS $(rss_mib etcd) MiB, etcd DB ${db} MiB, kwok RSS $(rss_mib kwok) MiB, kube-controller-manager RSS $(rss_mib kube-controller-manager) MiB; free: $(free -m | awk '/^Mem/ {print $7}') MiB available"
}
rss_mib() { local p; p=$(pid_of "$1") && awk '/^VmRSS/ {printf "%.0f", $2 / 1024}' "/proc/$p/status"; }

# kwok_data: the fixture's ConfigMaps and Secrets made to hold DATA_MB MB together (the same objects and
# keys, other sizes), applied server-side over those `up` created; the workloads are left as they are
kwok_data() {
  local t0
  SIZE_P=$(size_exponent)
  [ "$SIZE_P" != none ] || die "DATA_MB ($DATA_MB) over OBJECTS ($OBJECTS) is $((DATA_MB * 1000000 / OBJECTS)) bytes each: it must be between 100 B and about 900 KiB"
  t0=$(now)
  export -f namespace_manifest
  export CMS SECRETS SIZE_P OBJECTS_ONLY=1
  seq 0 $((NAMESPACES - 1)) | while read -r i; do printf 'cmsync-kwok-%03d %d\n' "$i" "$i"; done |
    xargs -r -P "$CONCURRENCY" -L1 bash -c 'set -o pipefail
      namespace_manifest "$1" "$2" | kubectl apply --server-side --force-conflicts --field-manager=cmsync-kwok -f - >/dev/null' _
  echo "$((CMS * NAMESPACES)) ConfigMaps and $((SECRETS * NAMESPACES)) Secrets applied with $DATA_MB MB in $(echo "$(now) - $t0" | bc) s; load average $(cut -d' ' -f1-3 /proc/loadavg)"
  held
}

kwok_down() {
  local t0 nss
  t0=$(now)
  mapfile -t nss < <(kubectl get namespace -l "$LABEL" -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}')
  # kwok deletes the pods of the fake nodes when they are deleted gracefully: it must run until they are gone.
  # It took 3 pods a second at 10,000 pods, so they are deleted at once (--force) as well.
  if [ ${#nss[@]} -gt 0 ]; then
    kubectl delete namespace "${nss[@]}" --wait=false >/dev/null
    printf '%s\n' "${nss[@]}" | xargs -P "$CONCURRENCY" -I{} kubectl -n {} delete pods --all --force --grace-period=0 --wait=false >/dev/null 2>&1 || true
    kubectl wait --for=delete namespace "${nss[@]}" --timeout=1200s >/dev/null
  fi
  kubectl delete namespace cmsync-system --ignore-not-found >/dev/null # measure's: the key Secret and its records' watermark
  kubectl delete nodes -l type=kwok --ignore-not-found >/dev/null
  stop kwok >/dev/null
  echo "deleted in $(echo "$(now) - $t0" | bc) s"
}

# shellcheck shell=bash
# Shared by the hack/bench scripts (sourced): cluster check, plugin on PATH, a Deployment of N pods
# consuming one ConfigMap, median of a list of numbers.
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
. hack/cluster/lib.sh
hack/cluster/status.sh -q || die "the local cluster is not up (make cluster-up)"
export KUBECONFIG=$KUBECONFIG_FILE
go build -o bin/kubectl-cmsync ./cmd/kubectl-cmsync
# kubectl finds the plugin on PATH
export PATH=$PWD/bin:$BIN:$PATH
now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else printf "%.3f\n", (a[NR/2]+a[NR/2+1])/2}'; }

# deploy NS NAME REPLICAS: a Deployment whose pods mount ConfigMap NAME as a volume and read one key as env
deploy() {
  local ns=$1 name=$2 n=$3
  # a previous run's namespace may still be terminating
  kubectl wait --for=delete namespace/"$ns" --timeout=180s >/dev/null 2>&1 || true
  kubectl create namespace "$ns" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
  kubectl -n "$ns" create configmap "$name" --from-literal=key=v0 --dry-run=client -o yaml | kubectl apply -f - >/dev/null
  cat <<Y | kubectl apply -f - >/dev/null
apiVersion: apps/v1
kind: Deployment
metadata: {name: $name, namespace: $ns}
spec:
  replicas: $n
  selector: {matchLabels: {app: $name}}
  template:
    metadata: {labels: {app: $name}}
    spec:
      terminationGracePeriodSeconds: 1
      dnsPolicy: Default
      automountServiceAccountToken: false
      containers:
      - name: c
        image: $IMAGE_BUSYBOX
        imagePullPolicy: Never
        command: ["sleep", "1000000"]
        volumeMounts: [{name: cfg, mountPath: /etc/cfg}]
      volumes:
      - name: cfg
        configMap: {name: $name}
Y
  kubectl -n "$ns" rollout status deployment/"$name" --timeout=600s >/dev/null
  # let the kubelet finish starting the pods (probes, status updates) before timing anything
  sleep "${SETTLE:-20}"
}

restarts() { kubectl -n "$1" get pods -o jsonpath='{range .items[*]}{.status.containerStatuses[0].restartCount}{"\n"}{end}' | awk '{s+=$1} END {print s+0}'; }

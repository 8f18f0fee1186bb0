# shellcheck shell=bash
# Shared by the hack/bench scripts (sourced): cluster check, plugin on PATH, a Deployment of N pods
# consuming one ConfigMap, median of a list of numbers.
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
. hack/cluster/lib.sh
hack/cluster/status.sh -q || die "the local cluster is not up (make cluster-up)"
export KUBECONFIG=$KUBECONFIG_FILE
# built as the release is (.goreleaser.yaml: CGO_ENABLED=0, -trimpath, -s -w): what users run, and its
# peak RSS is what they get (the binary's own mapped pages are a third of it)
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o bin/kubectl-cmsync ./cmd/kubectl-cmsync
# kubectl finds the plugin on PATH
export PATH=$PWD/bin:$BIN:$PATH
now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else printf "%.3f\n", (a[NR/2]+a[NR/2+1])/2}'; }

# fresh_namespace NS: creates NS, after a previous run's namespace of that name has terminated (one that is
# not terminating is reused)
fresh_namespace() {
  if [ "$(kubectl get namespace "$1" -o jsonpath='{.status.phase}' 2>/dev/null)" = Terminating ]; then
    kubectl wait --for=delete namespace/"$1" --timeout=180s >/dev/null 2>&1 || true
  fi
  kubectl create namespace "$1" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
}

# deployment_yaml NS NAME REPLICAS ANNOTATIONS: a Deployment of busybox pods mounting volume cfg at
# /etc/cfg; the volume's source (YAML indented 8 spaces, after "- name: cfg") is read from stdin
deployment_yaml() {
  cat <<Y
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: $2, namespace: $1, annotations: {$4}}
spec:
  replicas: $3
  selector: {matchLabels: {app: $2}}
  template:
    metadata: {labels: {app: $2}}
    spec:
      terminationGracePeriodSeconds: 1
      dnsPolicy: Default
      automountServiceAccountToken: false
      enableServiceLinks: false
      containers:
      - name: c
        image: $IMAGE_BUSYBOX
        imagePullPolicy: Never
        command: ["sleep", "1000000"]
        volumeMounts: [{name: cfg, mountPath: /etc/cfg}]
      volumes:
      - name: cfg
Y
  cat
}

# deploy NS NAME REPLICAS: a Deployment whose pods mount ConfigMap NAME as a volume
deploy() {
  local ns=$1 name=$2 n=$3
  fresh_namespace "$ns"
  kubectl -n "$ns" create configmap "$name" --from-literal=key=v0 --dry-run=client -o yaml | kubectl apply -f - >/dev/null
  echo "        configMap: {name: $name}" | deployment_yaml "$ns" "$name" "$n" "" | kubectl apply -f - >/dev/null
  kubectl -n "$ns" rollout status deployment/"$name" --timeout=600s >/dev/null
  # let the kubelet finish starting the pods (probes, status updates) before timing anything
  sleep "${SETTLE:-20}"
}

restarts() { kubectl -n "$1" get pods -o jsonpath='{range .items[*]}{.status.containerStatuses[0].restartCount}{"\n"}{end}' | awk '{s+=$1} END {print s+0}'; }

# cpu_ticks: one line per process, "PID name ticks": its user+system CPU in clock ticks, its reaped
# children's included (/proc/PID/stat utime+stime+cutime+cstime; kernel threads are named "kernel"), and a
# line "0 all ticks", the machine's busy CPU from /proc/stat. cpu_split of two calls around a run says
# where its CPU went: a runc exec's CPU lands in its containerd-shim, a tunnel connection's in the
# listening socat, a finished kubectl's in the shell that ran it.
cpu_ticks() {
  awk '/^cpu /{print 0, "all", $2+$3+$4+$7+$8+$9}' /proc/stat
  local f l
  # read by the shell, one file at a time: a process may end between the glob and the read (mawk would
  # stop at the first file it cannot open)
  for f in /proc/[0-9]*/stat; do if { IFS= read -r l <"$f"; } 2>/dev/null; then printf '%s\n' "$l"; fi; done |
    awk '{ i = index($0, "("); j = 0; for (k = length($0); k > 0; k--) if (substr($0, k, 1) == ")") { j = k; break }
           name = substr($0, i + 1, j - i - 1); split(substr($0, j + 2), f, " ")
           pid = substr($0, 1, i - 2); if (f[2] == 2 || pid == 2) name = "kernel"; gsub(/[ \/:]/, "_", name)
           print pid, name, f[12] + f[13] + f[14] + f[15] }'
}
# cpu_split BEFORE AFTER: CPU-seconds by process name between two cpu_ticks outputs (files), the largest
# first, after the machine's total ("all"). Only processes alive at both ends count, with what they
# reaped in between.
cpu_split() {
  local hz; hz=$(getconf CLK_TCK)
  awk -v hz="$hz" 'NR == FNR { b[$1 " " $2] = $3; next } ($1 " " $2) in b { d[$2] += $3 - b[$1 " " $2] }
    END { for (n in d) if (d[n] > 0) printf "%s %.2f\n", n, d[n] / hz }' "$1" "$2" |
    sort -k2 -g -r | awk '{printf "%s%s %ss", (NR > 1 ? ", " : ""), $1, $2} END {print ""}'
}

# controller_leader CTL [NAME]: waits for the controller's Deployment NAME (default deploy/controller's,
# kubectl-cmsync-controller; the chart's is RELEASE-kubectl-cmsync-controller) in namespace CTL to roll out
# and prints the pod that holds its Lease (of the same name)
controller_leader() {
  local name=${2:-kubectl-cmsync-controller}
  kubectl -n "$1" rollout status deployment/"$name" --timeout=180s >/dev/null
  kubectl -n "$1" get lease "$name" -o jsonpath='{.spec.holderIdentity}'
}

# start_scraper CTL POD: a pod "scraper" in namespace CTL from which metric reads POD's /metrics, as Prometheus
# would (the API server has no route to pods here)
start_scraper() {
  kubectl -n "$1" run scraper --image="$IMAGE_BUSYBOX" --image-pull-policy=Never --labels=cmsync-bench=scraper \
    --overrides='{"spec":{"securityContext":{"runAsNonRoot":true,"runAsUser":65532,"seccompProfile":{"type":"RuntimeDefault"}},"containers":[{"name":"scraper","image":"'"$IMAGE_BUSYBOX"'","imagePullPolicy":"Never","command":["sleep","100000"],"securityContext":{"allowPrivilegeEscalation":false,"capabilities":{"drop":["ALL"]}}}]}}' >/dev/null
  kubectl -n "$1" wait --for=condition=Ready pod/scraper --timeout=60s >/dev/null
  SCRAPE_NS=$1 SCRAPE_IP=$(kubectl -n "$1" get pod "$2" -o jsonpath='{.status.podIP}')
}
# metric NAME: the value of metric NAME (no labels) on the pod start_scraper named
metric() { kubectl -n "$SCRAPE_NS" exec scraper -- wget -qO- "http://$SCRAPE_IP:8080/metrics" | awk -v m="$1" '$1 == m {print $2}'; }

# start_load N: N CPU burners (busy shell loops, each one runnable task: a load average of about N on top of
# what runs already), stopped when the script exits. LOAD=10 on 2 cores is a busy CI runner or node. It sets the
# EXIT trap: a script with an EXIT trap of its own calls stop_load in it.
LOAD_PIDS=()
start_load() {
  local n=${1:-0} i
  [[ $n =~ ^[0-9]+$ ]] || die "LOAD must be a number of CPU burners, got $n"
  ((n > 0)) || return 0
  for ((i = 0; i < n; i++)); do
    sh -c 'while :; do :; done' &
    LOAD_PIDS+=($!)
  done
  trap stop_load EXIT
  ts "started $n CPU burners (LOAD=$n); waiting ${LOAD_WARMUP:-30} s for the load average to climb"
  sleep "${LOAD_WARMUP:-30}"
}
stop_load() { ((${#LOAD_PIDS[@]} == 0)) || kill "${LOAD_PIDS[@]}" 2>/dev/null || true; LOAD_PIDS=(); }

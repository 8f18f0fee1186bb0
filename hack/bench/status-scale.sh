#!/usr/bin/env bash
# status at scale, side by side (not part of make test; fill the cluster first: hack/bench/scale.sh up):
#   raw     `kubectl get --raw` of /api/v1/pods, /api/v1/configmaps and /apis/apps/v1/replicasets, one
#           after the other, nothing decoded: the floor of any client
#   kubectl `kubectl get pods,configmaps,replicasets -A -o json` (what users script with jq instead)
#   status  `kubectl cmsync status -A -o json`
#   table   `kubectl cmsync status -A` (the human table)
#   one     `kubectl cmsync status cm-0 -n cmsync-scale-00` (one ConfigMap in a namespace of PODS/50 pods)
#   old     `status -A -o json` of the build CMSYNC_OLD names (only when set)
# alternating, RUNS runs each (default 5), every output to /dev/null; median wall time and peak RSS
# (/usr/bin/time -f '%e %M') and the ratios to raw. CASES picks some of them (default all).
#   RUNS=5 hack/bench/status-scale.sh
set -euo pipefail
. "$(dirname "$0")/lib.sh"
RUNS=${RUNS:-5}
# CMSYNC: the plugin binary to time (default: the one built from this tree), e.g. a build of another commit
CMSYNC=${CMSYNC:-$PWD/bin/kubectl-cmsync}
# CMSYNC_OLD: another build (e.g. of main) whose `status -A -o json` runs as the case "old", in the same
# minutes as the others
CMSYNC_OLD=${CMSYNC_OLD:-}
CASES=${CASES:-raw kubectl status table one${CMSYNC_OLD:+ old}}
[ -x /usr/bin/time ] || die "/usr/bin/time is needed (apt-get install -y time)"
pods=$(kubectl get --raw "/api/v1/pods?limit=1" | jq '(.metadata.remainingItemCount // 0) + (.items | length)')
cms=$(kubectl get --raw "/api/v1/configmaps?limit=1" | jq '(.metadata.remainingItemCount // 0) + (.items | length)')
one_ns=cmsync-scale-00
one_pods=$(kubectl get --raw "/api/v1/namespaces/$one_ns/pods?limit=1" | jq '(.metadata.remainingItemCount // 0) + (.items | length)')
echo "cluster: $pods pods, $cms ConfigMaps; $one_ns has $one_pods pods"

run_case() {
  case $1 in
  raw) for p in /api/v1/pods /api/v1/configmaps /apis/apps/v1/replicasets; do kubectl get --raw "$p" >/dev/null; done ;;
  kubectl) kubectl get pods,configmaps,replicasets -A -o json >/dev/null ;;
  status) "$CMSYNC" status -A -o json >/dev/null ;;
  table) "$CMSYNC" status -A >/dev/null ;;
  one) "$CMSYNC" status cm-0 -n "$one_ns" >/dev/null ;;
  old) "$CMSYNC_OLD" status -A -o json >/dev/null ;;
  esac
}
export -f run_case
export one_ns CMSYNC CMSYNC_OLD
declare -A wall rss
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
for i in $(seq "$RUNS"); do
  for c in $CASES; do
    /usr/bin/time -o "$tmp" -f '%e %M' bash -c 'run_case "$1"' _ "$c"
    read -r e m <"$tmp"
    wall[$c]+="$e "
    rss[$c]+="$((m / 1024)) "
    echo "run $i $c: ${e}s $((m / 1024)) MiB"
  done
done
printf '\n%-8s %10s %14s %10s %10s\n' case "wall (s)" "peak RSS (MiB)" "wall/raw" "RSS/raw"
for c in $CASES; do
  w=$(printf '%s\n' ${wall[$c]} | median)
  r=$(printf '%s\n' ${rss[$c]} | median)
  eval "w_$c=$w r_$c=$r"
  if [[ " $CASES " == *" raw "* ]]; then
    printf '%-8s %10s %14s %9.2fx %9.2fx\n' "$c" "$w" "$r" "$(echo "$w / $w_raw" | bc -l)" "$(echo "$r / $r_raw" | bc -l)"
  else
    printf '%-8s %10s %14s\n' "$c" "$w" "$r"
  fi
done
echo "(median of $RUNS runs each, alternating; $pods pods; load average at the end:$(uptime | sed 's/.*load average://'))"

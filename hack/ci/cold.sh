#!/usr/bin/env bash
# CI as a fresh machine runs it, timed (not part of make test): `bash .ci/run` on a fresh clone of HEAD with
# every cache empty, in a new temporary HOME (Go's module and build caches, and ~/.cache/kubectl-cmsync: the
# Kubernetes, containerd and runc builds, helm, the Argo Rollouts controller, krew's validator, the cluster).
#   make ci-cold                   (root; the local cluster must be down: the run starts its own from the new HOME)
#   APT=purge make ci-cold         also removes first the Debian packages that only the cluster needs (COLD_PURGE:
#                                  of hack/cluster/lib.sh's APT_PACKAGES, those a new machine does not have; it has
#                                  Go, gcc and the usual tools) and apt's downloaded archives, so that the run
#                                  installs them as on a fresh machine; the run puts them back
#   KEEP=1                         keeps the temporary HOME and clone (several GB) for a look afterwards
# Prints the wall time, the CPU time and peak RSS of the whole run, and the times of its stages as the log
# shows them; the log (every line stamped with the seconds since the start) is kept in $COLD_LOG.
set -euo pipefail
cd "$(dirname "$0")/../.."
. hack/cluster/lib.sh
need_root
hack/cluster/status.sh -q && die "a local cluster is up: the cold run starts its own from an empty HOME; take it down first (make cluster-down)"
APT=${APT:-keep}
COLD_PURGE=${COLD_PURGE:-etcd-server containerd runc containernetworking-plugins busybox-static socat libseccomp-dev jq tmux}
case $APT in keep | purge) ;; *) die "APT=$APT: want keep (the default) or purge" ;; esac
command -v /usr/bin/time >/dev/null || die "/usr/bin/time is missing: apt-get install -y time"

work=$(mktemp -d /var/tmp/cmsync-cold.XXXXXX)
COLD_LOG=${COLD_LOG:-/var/tmp/cmsync-cold-$(date -u +%Y%m%dT%H%M%SZ).log}
cleanup() { [ -n "${KEEP:-}" ] && echo "kept: $work" || rm -rf "$work"; }
trap cleanup EXIT

if [ "$APT" = purge ]; then
  # dpkg-query fails when a package is not known at all (already removed)
  # shellcheck disable=SC2086 # the list is words
  removable=$(dpkg-query -W -f='${db:Status-Status} ${Package}\n' $COLD_PURGE 2>/dev/null | awk '$1 == "installed" { print $2 }' || true)
  echo "removing: ${removable:-nothing}"
  # shellcheck disable=SC2086
  [ -z "$removable" ] || DEBIAN_FRONTEND=noninteractive apt-get purge -y -q $removable >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get autoremove -y -q >/dev/null
  apt-get clean
fi

git clone -q --no-local . "$work/src"
git -C "$work/src" checkout -q "$(git rev-parse HEAD)"
mkdir -p "$work/home"
echo "cold run of $(git rev-parse --short HEAD) in $work (HOME=$work/home), log: $COLD_LOG"
start=$(date +%s)
# a clean environment: HOME and PATH, Go's settings from its own go.env, nothing cached
set +e
env -i HOME="$work/home" PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin TERM=dumb CI=true \
  /usr/bin/time -f 'TIME wall %e s, user %U s, system %S s, CPU %P, peak RSS %M KB' \
  bash -c 'cd "$1" && bash .ci/run' _ "$work/src" 2>&1 |
  while IFS= read -r line; do printf '%6d %s\n' $(($(date +%s) - start)) "$line"; done >"$COLD_LOG"
rc=${PIPESTATUS[0]}
set -e
end=$(date +%s)
# the stages as the log shows them: the first line of each. make --output-sync prints a target's lines when
# the target ends, so the targets built side by side are seen at their ends
stage() { grep -m1 -E "$2" "$COLD_LOG" | awk -v s="$1" '{ printf "  %-34s at %5d s\n", s, $1 }' || true; }
echo "stages (seconds from the start):"
stage "Debian packages installed (end)" 'prereqs: (ok|all packages present)'
stage "go vet ended" 'go vet -trimpath -tags e2e'
stage "release-fast ended" 'release-fast: passed'
stage "go test -race ended" 'go test -race'
stage "cluster started" 'cluster up. PIDs'
stage "e2e suite started" 'go test -trimpath -tags e2e ./test/e2e'
stage "e2e suite ended" '(ok|FAIL)[[:space:]]+github.com/kubectl-cmsync/kubectl-cmsync/test/e2e'
grep -E '^ *[0-9]+ (ok|FAIL|---) .*test/e2e' "$COLD_LOG" | tail -2 || true
grep -E '^ *[0-9]+ TIME ' "$COLD_LOG" | sed 's/^ *[0-9]* TIME /  /' || true
printf 'cold CI: %s, %d min %d s (exit %d); log: %s\n' "$([ "$rc" = 0 ] && echo passed || echo FAILED)" $(((end - start) / 60)) $(((end - start) % 60)) "$rc" "$COLD_LOG"
exit "$rc"

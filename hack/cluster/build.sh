#!/usr/bin/env bash
# Build the Kubernetes binaries (kube-apiserver kubelet kube-controller-manager kube-scheduler kubectl) of
# version $K8S_VERSION from the Go module proxy, into the version-keyed cache $K8S_ROOT/bin. Skips when all
# five are there and report that version. ~8 min on 2 cores the first time; Go caches (~5 GB) in
# $K8S_ROOT/{gopath,gocache}, the wrapper module in $K8S_ROOT/build.
# k8s.io/kubernetes cannot be `go install`ed: a wrapper module requires it and replaces every staging module
# (k8s.io/api, client-go, ...) by its v0.X.Y release. A lock keeps two runs of this script from building at once.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
V=$K8S_VERSION
have_all() {
  local b
  for b in $K8S_BINARIES; do [ -x "$BIN/$b" ] || return 1; done
  "$BIN/kubectl" version --client -o json 2>/dev/null | grep -q "\"gitVersion\": \"v$V\""
}
if have_all; then echo "build: k8s v$V binaries present in $BIN"; exit 0; fi
command -v go >/dev/null || die "go not found (need Go >= 1.26 on PATH or in /usr/local/go/bin)"
mkdir -p "$K8S_ROOT/bin" "$K8S_ROOT/build"
exec 9> "$K8S_ROOT/.build.lock"
flock -n 9 || { echo "build: another build holds $K8S_ROOT/.build.lock, waiting"; flock 9; }
if have_all; then echo "build: k8s v$V binaries present in $BIN"; exit 0; fi
export GOPATH=$K8S_ROOT/gopath GOCACHE=$K8S_ROOT/gocache GOTOOLCHAIN=local CGO_ENABLED=0
echo "build: building k8s v$V into $BIN (about 8 min on 2 cores the first time)"
cd "$K8S_ROOT/build"
if [ ! -f go.mod ] || ! grep -q "k8s.io/kubernetes v$V" go.mod; then
  rm -f go.mod go.sum
  go mod download -json "k8s.io/kubernetes@v$V" >/dev/null
  M=$GOPATH/pkg/mod/cache/download/k8s.io/kubernetes/@v/v$V.mod
  { echo "module cmsynclocal/build"; echo; echo "go 1.22.0"; echo; echo "require k8s.io/kubernetes v$V"; echo; echo "replace (";
    grep -E '^\s+k8s.io/[a-z0-9-]+ => ./staging' "$M" | awk -v v="v0.${V#1.}" '{print "\t" $1 " => " $1 " " v}';
    echo ")"; } > go.mod
  T=""; for c in $K8S_BINARIES; do T="$T k8s.io/kubernetes/cmd/$c@v$V"; done
  # always name the version (@v$V): otherwise go get silently upgrades
  go get -tool $T
fi
MINOR=$(echo "$V" | cut -d. -f2)
LD="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  LD="$LD -X $p.gitVersion=v$V -X $p.gitMajor=1 -X $p.gitMinor=$MINOR -X $p.gitTreeState=clean -X $p.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
done
for c in $K8S_BINARIES; do
  [ -x "$BIN/$c" ] && continue
  s=$(date +%s)
  go build -trimpath -ldflags "$LD" -o "$BIN/$c.tmp" "k8s.io/kubernetes/cmd/$c"
  mv "$BIN/$c.tmp" "$BIN/$c"
  echo "BUILT $c in $(( $(date +%s) - s ))s size $(stat -c %s "$BIN/$c")"
done
have_all || die "build finished but $BIN does not hold all of: $K8S_BINARIES at v$V"
echo "build: done"

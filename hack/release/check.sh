#!/usr/bin/env bash
# make release-check: prove that a release would work, without publishing anything and without network
# access beyond the Go module proxy.
#   1. goreleaser $GORELEASER_VERSION (built once with `go install`, cached by version in
#      $CMSYNC_CACHE/tools), and krew's CLI and validate-krew-manifest at the version of tools/go.mod
#      (built once, cached the same way);
#   2. `goreleaser check`, then `goreleaser release --snapshot --clean --skip=publish` into dist/;
#   3. dist/krew/cmsync.yaml and plugins/krew.yaml agree apart from version, uri and sha256;
#   4. krew's validator accepts both (-skip-install: their URIs are on GitHub; step 5 installs instead);
#   5. `kubectl krew install --manifest --archive` of every platform's snapshot archive into a temporary
#      KREW_ROOT (krew checks each archive's sha256 against the manifest), with LICENSE, README.md and the
#      completion helper installed; then, for this machine's platform, `kubectl cmsync version` through
#      kubectl from $KREW_ROOT/bin, and the completion helper from the installed archive;
#   6. hack/release/image.sh: the image index (linux/amd64, linux/arm64) deploy/controller names, as an OCI
#      layout in dist/image/oci (not pushed);
#   7. hack/release/chart.sh: the chart packaged into dist/chart (not pushed).
# kubectl is the cached v$K8S_VERSION of hack/cluster/build.sh (KUBECTL=/path/to/kubectl overrides it).
# RELEASE_PLATFORMS=all (default, `make release-check`): the five platforms of .goreleaser.yaml.
# RELEASE_PLATFORMS=host: `goreleaser check` of the whole file, but the snapshot release, the
# manifest comparison and the krew install of this machine's platform only (hack/release/oneplatform narrows
# the configuration and the checked-in manifest): one cross build instead of five.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
. hack/cluster/lib.sh   # CMSYNC_CACHE, BIN (the cached kubectl)
export PATH=$PATH:/usr/local/go/bin
GORELEASER_VERSION=${GORELEASER_VERSION:-v2.16.0}
. hack/release/lib.sh    # TOOLS, install_tool, krew_tool
start=$(date +%s)
step() { echo "release-check: $*"; }
fail() { echo "release-check: FAILED: $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# 1. tools
GORELEASER=$TOOLS/goreleaser-$GORELEASER_VERSION/goreleaser
if [ ! -x "$GORELEASER" ]; then
  step "building goreleaser $GORELEASER_VERSION once into $(dirname "$GORELEASER") (5 to 25 min on 2 cores)"
fi
install_tool "$(dirname "$GORELEASER")" goreleaser \
  sh -c 'GOBIN="$out" go install "github.com/goreleaser/goreleaser/v2@$0"' "$GORELEASER_VERSION"
krew_tool kubectl-krew
krew_tool validate-krew-manifest
step "tools: goreleaser $("$GORELEASER" --version 2>/dev/null | awk '/^GitVersion:/ {print $2}'), krew $KREW_VERSION"

# 2. goreleaser
export GORELEASER_CURRENT_TAG=${GORELEASER_CURRENT_TAG:-}
# goreleaser reads the commit, date and remote URL from git; without a remote (a local repository, not a
# clone) it drops all of them and stamps the commit "none". Give it the homepage as origin, through git's
# environment only (the repository's config is not touched).
if ! git ls-remote --get-url >/dev/null 2>&1; then
  step "no git remote: goreleaser gets remote.origin.url=https://github.com/kubectl-cmsync/kubectl-cmsync.git from the environment"
  export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=remote.origin.url GIT_CONFIG_VALUE_0=https://github.com/kubectl-cmsync/kubectl-cmsync.git
fi
"$GORELEASER" check
this_os=$(go env GOOS) this_arch=$(go env GOARCH)
PLATFORMS="linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64"
CONFIG=.goreleaser.yaml CHECKED_IN=plugins/krew.yaml
case ${RELEASE_PLATFORMS:-all} in
all) ;;
host)
  PLATFORMS=$this_os/$this_arch CONFIG=$tmp/goreleaser-$this_os-$this_arch.yaml CHECKED_IN=$tmp/krew-$this_os-$this_arch.yaml
  go run ./hack/release/oneplatform config "$PLATFORMS" < .goreleaser.yaml > "$CONFIG"
  go run ./hack/release/oneplatform manifest "$PLATFORMS" < plugins/krew.yaml > "$CHECKED_IN"
  step "RELEASE_PLATFORMS=host: $PLATFORMS only (make release-check builds all five)" ;;
*) fail "RELEASE_PLATFORMS=${RELEASE_PLATFORMS}: all or host" ;;
esac
t0=$(date +%s)
"$GORELEASER" release --config "$CONFIG" --snapshot --clean --skip=publish >"$tmp/goreleaser.log" 2>&1 ||
  { cat "$tmp/goreleaser.log"; fail "goreleaser release --snapshot"; }
step "snapshot release of $(echo $PLATFORMS | wc -w) platform(s) in $(( $(date +%s) - t0 )) s"
MANIFEST=dist/krew/cmsync.yaml
[ -f "$MANIFEST" ] || { cat "$tmp/goreleaser.log"; fail "goreleaser wrote no $MANIFEST"; }
grep -q "krew plugin manifest" "$tmp/goreleaser.log" || fail "goreleaser did not run its krew step"
(cd dist && sha256sum --quiet -c checksums.txt) || fail "dist/checksums.txt does not match the archives"

# 3. generated vs checked-in manifest
go run ./hack/krewmanifest "$MANIFEST" "$CHECKED_IN"

# 4. krew's validator, on copies named after the plugin (it takes the name from the file name)
mkdir -p "$tmp/generated" "$tmp/checked-in"
cp "$MANIFEST" "$tmp/generated/cmsync.yaml"
cp plugins/krew.yaml "$tmp/checked-in/cmsync.yaml"
for m in "$tmp/generated/cmsync.yaml" "$tmp/checked-in/cmsync.yaml"; do
  "$KREW_TOOLS/validate-krew-manifest" -manifest "$m" -skip-install >"$tmp/validate.log" 2>&1 ||
    { cat "$tmp/validate.log"; fail "validate-krew-manifest rejected $m"; }
done
step "validate-krew-manifest $KREW_VERSION accepts $MANIFEST and plugins/krew.yaml"

# 5. offline krew installs, every platform, through kubectl: the cluster's (built by hack/cluster/build.sh,
# when it runs beside this script its lock makes this wait for it), or $KUBECTL
if [ -z "${KUBECTL:-}" ]; then
  "$HACK_CLUSTER/build.sh" >/dev/null   # cached: returns at once when built
  KUBECTL=$BIN/kubectl
fi
step "kubectl $("$KUBECTL" version --client -o json | awk -F'"' '/gitVersion/ {print $4}')"
VERSION=$(awk '/^  version:/ {print $2}' "$MANIFEST")
for platform in $PLATFORMS; do
  os=${platform%/*} arch=${platform#*/} ext=tar.gz exe="" helper=kubectl_complete-cmsync
  [ "$os" = windows ] && { ext=zip exe=.exe helper=kubectl_complete-cmsync.cmd; }
  archive=$ROOT/dist/kubectl-cmsync_${VERSION#v}_${os}_${arch}.$ext
  [ -f "$archive" ] || fail "no archive $archive for $platform"
  kr=$tmp/krew-$os-$arch
  mkdir -p "$kr"
  # through kubectl, as a user would: kubectl finds kubectl-krew on PATH
  if ! env KREW_ROOT="$kr" KREW_OS="$os" KREW_ARCH="$arch" KREW_NO_UPGRADE_CHECK=1 PATH="$KREW_TOOLS:$PATH" \
      "$KUBECTL" krew install --manifest="$tmp/generated/cmsync.yaml" --archive="$archive" >"$tmp/install.log" 2>&1; then
    cat "$tmp/install.log"; fail "kubectl krew install of $archive ($platform)"
  fi
  store=$kr/store/cmsync/$VERSION
  for f in LICENSE README.md "$helper" "kubectl-cmsync$exe"; do
    [ -f "$store/$f" ] || fail "$platform: $f is not in the installed archive ($(ls "$store" | tr '\n' ' '))"
  done
  [ -e "$kr/bin/kubectl-cmsync$exe" ] || fail "$platform: krew linked no $kr/bin/kubectl-cmsync$exe"
  if [ "$platform" = "$this_os/$this_arch" ]; then
    here=$kr
  fi
done
step "kubectl krew install --manifest --archive: $PLATFORMS, each with LICENSE, README.md and $helper"

[ -n "${here:-}" ] || fail "no archive for this machine ($this_os/$this_arch)"
# kubectl cmsync version through kubectl, with only $KREW_ROOT/bin and the system on PATH; no cluster
printf 'apiVersion: v1\nkind: Config\n' > "$tmp/empty.kubeconfig"
out=$(env PATH="$here/bin:/usr/bin:/bin" KUBECONFIG="$tmp/empty.kubeconfig" "$KUBECTL" cmsync version) ||
  fail "kubectl cmsync version from $here/bin"
echo "$out" | sed 's/^/    /'
echo "$out" | grep -qx "Client Version: $VERSION" || fail "kubectl cmsync version does not say $VERSION"
commit=$(git rev-parse HEAD)
echo "$out" | grep -qx "Git Commit: $commit" || fail "kubectl cmsync version does not say commit $commit"
# the completion helper from the installed archive finds the plugin in $KREW_ROOT/bin
cp "$here/store/cmsync/$VERSION/kubectl_complete-cmsync" "$here/bin/"
comps=$(env PATH="$here/bin:/usr/bin:/bin" KUBECONFIG="$tmp/empty.kubeconfig" kubectl_complete-cmsync "")
echo "$comps" | grep -q '^status' || fail "kubectl_complete-cmsync \"\" did not list status: $comps"
step "kubectl cmsync version and kubectl_complete-cmsync work from the krew install"

# 6. the container image the kustomization and the chart name: the two-platform OCI index, built (no push)
IMAGE_VERSION=$(sed -n 's/^  newTag: //p' deploy/controller/kustomization.yaml)
hack/release/image.sh "$IMAGE_VERSION" | sed 's/^/release-check: /'

# 7. the chart, packaged (the release pushes it as an OCI chart: hack/release/chart.sh --push)
hack/release/chart.sh | sed 's/^/release-check: /'
step "OK in $(( $(date +%s) - start )) s"

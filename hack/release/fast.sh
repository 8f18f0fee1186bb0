#!/usr/bin/env bash
# make release-fast (part of make test): the release's packaging, checked without goreleaser's snapshot
# release (make release-check): what can break unseen between releases, in a few minutes.
#   1. krew's validate-krew-manifest (tools/go.mod's version, built once and cached like release-check's)
#      accepts plugins/krew.yaml;
#   2. hack/release/image.sh: the image index (linux/amd64, linux/arm64) at the kustomization's tag, as an OCI
#      layout in dist/image/oci, with both platforms in it;
#   3. hack/release/chart.sh: the chart linted (--strict) and packaged, its appVersion the image's tag.
# goreleaser itself (its check and snapshot release) stays in make release-check: building it takes 5 to 25
# minutes on 2 cores, more than the rest of this CI's cold run can spare.
set -euo pipefail
cd "$(dirname "$0")/../.."
. hack/cluster/lib.sh   # CMSYNC_CACHE
export PATH=$PATH:/usr/local/go/bin
. hack/release/lib.sh    # install_tool, krew_tool
start=$(date +%s)
step() { echo "release-fast: $*"; }
fail() { echo "release-fast: FAILED: $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# 1. krew
krew_tool validate-krew-manifest
VKM=$KREW_TOOLS/validate-krew-manifest
mkdir -p "$tmp/m" && cp plugins/krew.yaml "$tmp/m/cmsync.yaml"
"$VKM" -manifest "$tmp/m/cmsync.yaml" -skip-install >"$tmp/vkm.log" 2>&1 || { cat "$tmp/vkm.log"; fail "validate-krew-manifest rejected plugins/krew.yaml"; }
step "validate-krew-manifest $KREW_VERSION accepts plugins/krew.yaml"

# 2. the image index
tag=$(awk '/newTag:/ {print $2}' deploy/controller/kustomization.yaml)
hack/release/image.sh "$tag" >/dev/null
for arch in amd64 arm64; do
  grep -rqs "\"architecture\":\"$arch\"" dist/image/oci/blobs || fail "dist/image/oci holds no linux/$arch image"
done
step "image index $tag (linux/amd64, linux/arm64) in dist/image/oci"

# 3. the chart
hack/release/chart.sh | sed 's/^/release-fast: /'
step "passed in $(( $(date +%s) - start )) s"

#!/usr/bin/env bash
# The release's container image: kubectl-cmsync for linux/amd64 and linux/arm64 (static, CGO_ENABLED=0, cross
# compiled with GOARCH, stamped like .goreleaser.yaml's builds), one image each (hack/image), in one OCI image
# index tagged $IMAGE_REPO:VERSION, written as an OCI layout to dist/image/oci.
#   hack/release/image.sh v0.2.0          build only (make release-check runs this with the version of the
#                                         kustomization and the chart)
#   hack/release/image.sh v0.2.0 --push   and push the index (REGISTRY_USER and REGISTRY_PASSWORD: for ghcr.io,
#                                         a GitHub user and a token with write:packages)
# No registry, daemon or Docker is needed to build; pushing needs the registry only.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=$PATH:/usr/local/go/bin
IMAGE_REPO=${IMAGE_REPO:-ghcr.io/kubectl-cmsync/kubectl-cmsync}
[ $# -ge 1 ] && [[ $1 == v[0-9]* ]] || { echo "usage: $0 vX.Y.Z [--push]" >&2; exit 2; }
version=$1; shift
push=()
[ "${1:-}" = --push ] && push=(-push)
M=github.com/kubectl-cmsync/kubectl-cmsync/pkg/version
commit=$(git rev-parse HEAD 2>/dev/null || echo none)
bins=()
for arch in amd64 arm64; do
  out=dist/image/linux_$arch/kubectl-cmsync
  CGO_ENABLED=0 GOOS=linux GOARCH=$arch go build -trimpath -ldflags "-s -w -X $M.version=$version -X $M.commit=$commit" \
    -o "$out" ./cmd/kubectl-cmsync
  bins+=(-binary "$arch=$out")
done
CGO_ENABLED=0 go run -trimpath ./hack/image "${bins[@]}" -tag "$IMAGE_REPO:$version" -layout dist/image/oci "${push[@]}"
echo "image: $IMAGE_REPO:$version (linux/amd64, linux/arm64) in dist/image/oci${push:+, pushed}"

#!/usr/bin/env bash
# The release's Helm chart: charts/kubectl-cmsync packaged as dist/chart/kubectl-cmsync-VERSION.tgz with helm
# (hack/tools/helm.sh), and with --push pushed as an OCI chart beside the image, to
# oci://$CHART_REPO (helm registry login first: for ghcr.io, a GitHub user and a token with write:packages).
#   hack/release/chart.sh           package only (make test and make release-check run this)
#   hack/release/chart.sh --push    and push it
# The chart's version and appVersion are the release's (Chart.yaml); the release sets them with the
# kustomization's newTag and plugins/krew.yaml.
set -euo pipefail
cd "$(dirname "$0")/../.."
CHART_REPO=${CHART_REPO:-ghcr.io/kubectl-cmsync/charts}
HELM=$(hack/tools/helm.sh)
rm -rf dist/chart
"$HELM" lint --strict charts/kubectl-cmsync >/dev/null
"$HELM" package charts/kubectl-cmsync -d dist/chart >/dev/null
pkg=$(ls dist/chart/kubectl-cmsync-*.tgz)
app=$(awk -F'"' '/^appVersion:/ {print $2}' charts/kubectl-cmsync/Chart.yaml)
tag=$(awk '/newTag:/ {print $2}' deploy/controller/kustomization.yaml)
[ "v$app" = "$tag" ] || { echo "chart.sh: the chart's appVersion $app is not deploy/controller's image tag $tag" >&2; exit 1; }
if [ "${1:-}" = --push ]; then
  "$HELM" push "$pkg" "oci://$CHART_REPO"
fi
echo "chart: $pkg (appVersion $app)${1:+, pushed to oci://$CHART_REPO}"

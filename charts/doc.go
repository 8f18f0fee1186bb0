// Package charts holds the Helm chart of the in-cluster controller
// (kubectl-cmsync/). Its Go code is the chart's tests: helm lint, helm
// template against goldens (go test ./charts -update rewrites them), and
// the rendered RBAC, image and scope against deploy/controller. They run
// helm from hack/tools/helm.sh's cache.
package charts

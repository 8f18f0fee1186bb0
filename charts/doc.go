// Package charts holds the Helm chart of the in-cluster controller
// (kubectl-cmsync/). Its Go code is the chart's tests: helm lint, helm
// template against goldens (go test ./charts -update rewrites them), the
// rendered RBAC, image and scope against deploy/controller, and the values
// schema (schema_test.go: what it accepts and refuses). They run
// helm from hack/tools/helm.sh's cache.
package charts

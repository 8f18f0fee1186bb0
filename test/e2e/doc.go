// Package e2e holds the end-to-end tests of kubectl-cmsync: they run the
// plugin the way users do (`kubectl cmsync ...`, found by kubectl's plugin
// discovery) against a real single-node cluster (hack/cluster/up.sh) and check
// every prediction against what the kubelet really does.
//
// The tests carry the build tag e2e and need KUBECONFIG pointing at that
// cluster:
//
//	make e2e                      # or:
//	KUBECONFIG=$(hack/cluster/kubeconfig.sh) go test -tags e2e ./test/e2e/... -count=1
//
// Without a reachable cluster they fail (never skip) and say why.
package e2e

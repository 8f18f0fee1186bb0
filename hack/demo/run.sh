#!/usr/bin/env bash
# The demo (make demo): deploy hack/demo/demo.yaml on the local cluster, wait for the pods, edit a
# ConfigMap, and show what `kubectl cmsync status -A` makes of it. Expects the cluster up (make cluster-up)
# and the plugin built in bin/ (make build). Leaves the cluster up.
set -euo pipefail
cd "$(dirname "$0")/../.."
. hack/cluster/lib.sh
[ -x bin/kubectl-cmsync ] || die "bin/kubectl-cmsync not built (make build)"
hack/cluster/status.sh -q || die "the local cluster is not up (make cluster-up)"
export KUBECONFIG=$KUBECONFIG_FILE
# kubectl finds the plugin on PATH: `kubectl cmsync` runs bin/kubectl-cmsync
export PATH=$PWD/bin:$BIN:$PATH
echo "+ kubectl apply -f hack/demo/demo.yaml"
kubectl apply -f hack/demo/demo.yaml
# an immutable ConfigMap cannot be changed by apply: re-running the demo keeps it as it is
echo "+ waiting for the pods"
kubectl -n cmsync-demo rollout status deployment/web --timeout=120s
kubectl -n cmsync-demo rollout status statefulset/db --timeout=120s
kubectl -n cmsync-demo wait pod/toolbox --for=condition=Ready --timeout=120s
echo
echo "+ kubectl -n cmsync-demo patch configmap app-config  (greeting and log-level change)"
kubectl -n cmsync-demo patch configmap app-config --type merge \
  -p "{\"data\":{\"greeting\":\"hello at $(date -u +%H:%M:%S)\",\"log-level\":\"debug\"}}"
echo
echo "+ kubectl cmsync status -A"
kubectl cmsync status -A
echo
echo "+ kubectl cmsync status -n cmsync-demo app-config --verify   (what each container really has)"
kubectl cmsync status -n cmsync-demo app-config --verify
echo
echo "+ kubectl cmsync refresh -n cmsync-demo app-config --yes   (annotate pending pods, restart workloads with stale env/subPath)"
# exit 3 is expected here: the bare pod toolbox reads app-config through envFrom and can only be re-created by hand
rc=0; kubectl cmsync refresh -n cmsync-demo app-config --yes || rc=$?
[ $rc = 0 ] || [ $rc = 3 ] || exit $rc
echo
echo "+ kubectl cmsync status -n cmsync-demo app-config --verify"
kubectl cmsync status -n cmsync-demo app-config --verify
echo
echo "The cluster is still up:"
echo "  export KUBECONFIG=$KUBECONFIG_FILE PATH=$PWD/bin:$BIN:\$PATH"
echo "  kubectl cmsync status -n cmsync-demo"
echo "Take it down with: make cluster-down"

#!/usr/bin/env bash
# Import an image tarball (docker save or OCI archive, such as hack/image's) into the running local cluster's
# containerd, in the namespace the kubelet uses, so that pods run it with imagePullPolicy: Never or
# IfNotPresent; prints the image name(s) imported. There is no registry: this is how images reach the node.
#   hack/cluster/load-image.sh dist/image/kubectl-cmsync.tar
set -euo pipefail
CMSYNC_FOLLOW_RUNNING=1
. "$(dirname "$0")/lib.sh"
[ $# = 1 ] && [ -f "$1" ] || die "usage: $0 IMAGE.tar (a docker save or OCI archive tarball)"
need_root
"$HACK_CLUSTER/status.sh" -q || die "the local cluster is not up (make cluster-up)"
ctr --address "$CTRD_SOCK" -n k8s.io images import "$1"

#!/bin/bash
# The API server for in-cluster clients (pods with a ServiceAccount token): two TCP relays to kube-apiserver at
# 127.0.0.1:6443 (TLS passes through untouched; the API server's certificate names both addresses):
#   SVC_IP:443        the `kubernetes` Service's ClusterIP (held on lo: there is no kube-proxy), which
#                     rest.InClusterConfig dials (KUBERNETES_SERVICE_HOST and _PORT)
#   BRIDGE_IP:6443    the Service's endpoint (--advertise-address), for clients that read the endpoints
#   apiserver-relay.sh SVC_IP BRIDGE_IP   daemon (up.sh); both socat listeners in one process group
set -uo pipefail
[ $# = 2 ] || { echo "usage: $0 SVC_IP BRIDGE_IP" >&2; exit 2; }
socat TCP4-LISTEN:443,bind="$1",fork,reuseaddr,backlog=256 TCP4:127.0.0.1:6443,nodelay &
exec socat TCP4-LISTEN:6443,bind="$2",fork,reuseaddr,backlog=256 TCP4:127.0.0.1:6443,nodelay

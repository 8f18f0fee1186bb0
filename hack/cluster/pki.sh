#!/usr/bin/env bash
# Certificates and keys of the local cluster in $CLUSTER_ROOT/pki (ECDSA P-256, 10 years). Idempotent:
# existing files are kept. With NODE_IP set (up.sh does), also the kubelet's client and serving
# certificates, re-issued when the node name or IP changed.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
NODE_IP=${NODE_IP:-}
command -v openssl >/dev/null || die "missing openssl (run hack/cluster/prereqs.sh)"
mkdir -p "$PKI" && cd "$PKI"
umask 077
eckey() { openssl ecparam -name prime256v1 -genkey -noout -out "$1" 2>/dev/null; }
mkca() { # name cn
  [ -f "$1.crt" ] && return 0
  eckey "$1.key"
  openssl req -x509 -new -key "$1.key" -sha256 -days 3650 -subj "/CN=$2" -out "$1.crt" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature"
}
leaf() { # name subject eku [san] [ca]
  local n=$1 subj=$2 eku=$3 san=${4:-} ca=${5:-ca}
  [ -f "$n.crt" ] && return 0
  eckey "$n.key"
  openssl req -new -key "$n.key" -subj "$subj" -out "$n.csr"
  { echo "basicConstraints=critical,CA:FALSE"; echo "keyUsage=critical,digitalSignature,keyEncipherment"; echo "extendedKeyUsage=$eku"
    [ -n "$san" ] && echo "subjectAltName=$san"; } > "$n.ext"
  openssl x509 -req -in "$n.csr" -CA "$ca.crt" -CAkey "$ca.key" -CAcreateserial -days 3650 -sha256 -extfile "$n.ext" -out "$n.crt" 2>/dev/null
  rm -f "$n.csr" "$n.ext"
}
mkca ca kubectl-cmsync-local-ca
mkca front-proxy-ca kubectl-cmsync-local-front-proxy-ca
# the API server's names: loopback (every local client), the `kubernetes` Service's ClusterIP and its
# endpoint on the bridge (in-cluster clients); a certificate without the current ones is re-issued
APISERVER_SAN="IP:127.0.0.1,IP:$KUBE_SVC_IP,IP:$BRIDGE_IP"
if [ -f apiserver.crt ] && ! openssl x509 -in apiserver.crt -noout -ext subjectAltName 2>/dev/null | tr -d ' ' |
    grep -q "IPAddress:$KUBE_SVC_IP,IPAddress:$BRIDGE_IP,"; then rm -f apiserver.crt apiserver.key; fi
leaf apiserver "/CN=kube-apiserver" serverAuth \
  "$APISERVER_SAN,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
leaf apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" clientAuth
leaf admin "/O=system:masters/CN=cmsync-admin" clientAuth
leaf kcm "/CN=system:kube-controller-manager" clientAuth
leaf scheduler "/CN=system:kube-scheduler" clientAuth
leaf front-proxy-client "/CN=front-proxy-client" clientAuth "" front-proxy-ca
# The API server verifies the kubelet as https://$NODE_IP:10250 (the bytes go through kubelet-tunnel.sh to
# 127.0.0.1:10250); 127.0.0.1 and localhost are there for local checks.
if [ -n "$NODE_IP" ]; then
  [ "$(cat node-id 2>/dev/null)" = "$NODE_NAME $NODE_IP" ] || rm -f kubelet-client.* kubelet-serving.*
  echo "$NODE_NAME $NODE_IP" > node-id
  leaf kubelet-client "/O=system:nodes/CN=system:node:$NODE_NAME" clientAuth
  leaf kubelet-serving "/CN=$NODE_NAME" serverAuth "IP:$NODE_IP,IP:127.0.0.1,DNS:localhost$([ "$NODE_NAME" = localhost ] || echo ",DNS:$NODE_NAME")"
fi
[ -f sa.key ] || { openssl genrsa -out sa.key 2048 2>/dev/null; openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null; }
chmod 600 ./*.key
echo "pki: ready in $PKI${NODE_IP:+ (node $NODE_NAME, IP $NODE_IP)}"

#!/usr/bin/env bash
# Build the two local images as OCI image-layout tarballs, without any registry (none is reachable here):
#   localhost/busybox:probe  static busybox + one symlink per applet (the e2e fixtures' image)
#   localhost/pause:probe    one static binary (pause.c), no shell: the pod sandbox image, and the "no shell"
#                            container of the e2e tests
# into $CLUSTER_ROOT/images/{busybox,pause}.tar; up.sh imports them into containerd. Skips existing tarballs
# unless FORCE=1. Reproducible (fixed mtimes, sorted tar).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
[ "${FORCE:-0}" = 1 ] || { [ -s "$IMAGES/busybox.tar" ] && [ -s "$IMAGES/pause.tar" ] && { echo "images: present in $IMAGES"; exit 0; }; }
for c in jq gcc sha256sum tar; do command -v $c >/dev/null || die "missing $c (run hack/cluster/prereqs.sh)"; done
[ -x /bin/busybox ] || die "missing /bin/busybox (run hack/cluster/prereqs.sh: busybox-static)"
mkdir -p "$IMAGES"
export SOURCE_DATE_EPOCH=0
W=$(mktemp -d "$IMAGES/.work.XXXXXX")
trap 'rm -rf "$W"' EXIT

mkimage() { # ref rootfsdir cmdjson out
  local ref=$1 rootfs=$2 cmd=$3 out=$4 w=$W/layout
  rm -rf "$w"; mkdir -p "$w/blobs/sha256"
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$rootfs" -cf "$w/layer.tar" .
  local ld ls cd cs md ms
  ld=$(sha256sum "$w/layer.tar" | cut -d' ' -f1); ls=$(stat -c %s "$w/layer.tar")
  mv "$w/layer.tar" "$w/blobs/sha256/$ld"
  jq -cn --arg d "sha256:$ld" --argjson cmd "$cmd" \
    '{architecture:"amd64",os:"linux",config:{Cmd:$cmd,Env:["PATH=/bin:/usr/bin:/sbin"],WorkingDir:"/"},rootfs:{type:"layers",diff_ids:[$d]},history:[{created_by:"kubectl-cmsync hack/cluster/images.sh"}]}' > "$w/config.json"
  cd=$(sha256sum "$w/config.json" | cut -d' ' -f1); cs=$(stat -c %s "$w/config.json")
  mv "$w/config.json" "$w/blobs/sha256/$cd"
  jq -cn --arg cd "sha256:$cd" --argjson cs "$cs" --arg ld "sha256:$ld" --argjson ls "$ls" \
    '{schemaVersion:2,mediaType:"application/vnd.oci.image.manifest.v1+json",config:{mediaType:"application/vnd.oci.image.config.v1+json",digest:$cd,size:$cs},layers:[{mediaType:"application/vnd.oci.image.layer.v1.tar",digest:$ld,size:$ls}]}' > "$w/manifest.json"
  md=$(sha256sum "$w/manifest.json" | cut -d' ' -f1); ms=$(stat -c %s "$w/manifest.json")
  mv "$w/manifest.json" "$w/blobs/sha256/$md"
  jq -cn --arg md "sha256:$md" --argjson ms "$ms" --arg name "$ref" --arg tag "${ref##*:}" \
    '{schemaVersion:2,mediaType:"application/vnd.oci.image.index.v1+json",manifests:[{mediaType:"application/vnd.oci.image.manifest.v1+json",digest:$md,size:$ms,platform:{architecture:"amd64",os:"linux"},annotations:{"io.containerd.image.name":$name,"org.opencontainers.image.ref.name":$tag}}]}' > "$w/index.json"
  echo '{"imageLayoutVersion":"1.0.0"}' > "$w/oci-layout"
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$w" -cf "$out.tmp" oci-layout index.json blobs
  mv "$out.tmp" "$out"
  echo "images: built $out ($ref, manifest sha256:$md)"
}

# busybox: static busybox + a symlink per applet
R=$W/busybox; mkdir -p "$R"/{bin,etc,tmp,proc,sys,dev,root}
cp /bin/busybox "$R/bin/busybox"
for a in $(/bin/busybox --list); do [ "$a" = busybox ] || ln -sf busybox "$R/bin/$a"; done
echo 'root:x:0:0:root:/root:/bin/sh' > "$R/etc/passwd"
echo 'root:x:0:' > "$R/etc/group"
chmod 1777 "$R/tmp"
mkimage "$IMAGE_BUSYBOX" "$R" '["sh"]' "$IMAGES/busybox.tar"

# pause: one static binary, nothing else (no shell)
R=$W/pause; mkdir -p "$R"
gcc -static -Os -s -o "$R/pause" "$HACK_CLUSTER/pause.c"
mkimage "$IMAGE_PAUSE" "$R" '["/pause"]' "$IMAGES/pause.tar"

#!/usr/bin/env bash
# Install the Debian packages the local cluster needs (etcd, containerd, runc, CNI plugins, busybox, socat,
# a C compiler for the pause image, and small tools). Does nothing when all are already installed.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
m=$(missing_packages)
if [ -z "$m" ]; then echo "prereqs: all packages present"; exit 0; fi
command -v apt-get >/dev/null || die "missing packages: $m, and no apt-get to install them (a Debian/Ubuntu machine is expected)"
echo "prereqs: installing $APT_PACKAGES (missing: $m)"
apt-get update
# policy-rc.d (when present) keeps apt from starting the daemons; there is no systemd on these machines anyway
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $APT_PACKAGES
m=$(missing_packages)
[ -z "$m" ] || die "still missing after apt-get install: $m"
echo "prereqs: ok"

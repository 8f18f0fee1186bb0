# Sourced by hack/release/check.sh and fast.sh (after hack/cluster/lib.sh, for CMSYNC_CACHE): the release
# tools, each built once and cached by version in $TOOLS.
TOOLS=$CMSYNC_CACHE/tools

# install_tool DIR NAME COMMAND...: run COMMAND with $out set to a fresh directory, then move its NAME
# into DIR (so that an interrupted build leaves nothing half-written in the cache). One at a time.
install_tool() {
  local dir=$1 name=$2; shift 2
  [ -x "$dir/$name" ] && return 0
  mkdir -p "$TOOLS"
  exec 8> "$TOOLS/.lock"
  flock 8
  if [ ! -x "$dir/$name" ]; then
    out=$(mktemp -d "$TOOLS/.build.XXXXXX")
    out="$out" "$@"
    mkdir -p "$dir"
    mv "$out/$name" "$dir/$name"
    rm -rf "$out"
  fi
  flock -u 8
}

# krew's tools at the version of tools/go.mod, in $KREW_TOOLS
KREW_VERSION=$(go -C tools list -m -f '{{.Version}}' sigs.k8s.io/krew)
KREW_TOOLS=$TOOLS/krew-$KREW_VERSION

# krew_tool NAME: install krew's command NAME (kubectl-krew from cmd/krew, validate-krew-manifest)
krew_tool() {
  local cmd=$1
  [ "$cmd" = kubectl-krew ] && cmd=krew
  install_tool "$KREW_TOOLS" "$1" sh -c 'go -C tools build -o "$out/$0" "sigs.k8s.io/krew/cmd/$1"' "$1" "$cmd"
}

# Sourced by the scripts of hack/tools: each builds one tool once into $TOOLS (set by the caller).

# tool_lock NAME: hold $TOOLS/.NAME.lock (fd 9) until the script exits, so that two runs build the tool
# once; a run that waits says so on stderr. Without flock (util-linux; macOS has none) builds are not
# serialized.
tool_lock() {
  mkdir -p "$TOOLS"
  exec 9> "$TOOLS/.$1.lock"
  if command -v flock >/dev/null; then
    flock -n 9 || { echo "$1: another build holds $TOOLS/.$1.lock, waiting" >&2; flock 9; }
  fi
}

package containerread

import "strconv"

// verifyScript reads every path given as an argument and, when asked, the
// shell's own initial environment. Everything that comes from the cluster
// (paths, file names) is an argument or a file name, never script text.
// Output: records of NUL-terminated fields; a file's content is preceded by
// its size and followed by the per-run nonce, so no content can fake a
// record. The regular files of one directory are read with one stat and
// one cat when stat is there and none is larger than max bytes (a G record:
// names, then mode and size of each, then the contents back to back, then
// the nonce): a fork per file made 1,000 keys take half a minute on a busy
// node. Works with busybox ash, dash and bash; needs ls and cat (stat and
// sha256sum optional).
//
// Arguments: $1 max bytes, $2 nonce, $3 "1" to read the environment, then
// the paths.
const verifyScript = `m=$1 n=$2 e=$3
shift 3
h=
command -v sha256sum >/dev/null 2>&1 && h=1
r() { printf '%s\0' "$@"; }
f() {
  fl=$(ls -lnd "$1" 2>/dev/null)
  set -f
  set -- "$1" "$2" $fl
  set +f
  fp=${3:-?} fs=$7
  case $fs in ''|*[!0-9]*) fs=; for fw in $(wc -c <"$1" 2>/dev/null); do fs=$fw; break; done;; esac
  case $fs in ''|*[!0-9]*) r F "$2" "$fp" -1 U; return;; esac
  r F "$2" "$fp" "$fs"
  if [ "$fs" -le "$m" ]; then
    r C
    cat "$1" 2>/dev/null
    r "$n"
  elif [ -n "$h" ]; then
    fx=$(sha256sum <"$1" 2>/dev/null)
    r H "${fx%% *}"
  else
    r S
  fi
}
w() {
  [ "$3" -gt 32 ] && return
  set -- "$2" "$3" "$1"
  for wx in "$3"/* "$3"/.[!.]* "$3"/..?*; do
    wy=$1${wx##*/}
    if [ -L "$wx" ]; then r L "$wy"
    elif [ -d "$wx" ]; then r D "$wy"; w "$wx" "$wy/" $(($2+1))
    elif [ -f "$wx" ]; then set -- "$@" "${wx##*/}"
    elif [ -e "$wx" ]; then r O "$wy"
    fi
  done
  g "$@"
}
g() {
  gp=$1 gd=$3
  shift 3
  [ $# -eq 0 ] && return
  gs=
  [ $# -gt 1 ] && gs=$(cd -- "$gd" 2>/dev/null && stat -c '%A %s' -- "$@" 2>/dev/null)
  gn=0 gb=1
  set -f
  for gw in $gs; do
    gn=$((gn+1))
    case $((gn%2)):$gw in 0:|0:*[!0-9]*) gb=;; 0:*) [ "$gw" -le "$m" ] || gb=;; esac
  done
  [ "$gn" -eq $(($#*2)) ] || gb=
  if [ -n "$gb" ]; then
    r G "$gp" $#
    r "$@"
    r $gs
    set +f
    r C
    (cd -- "$gd" && cat -- "$@") 2>/dev/null
    r "$n"
  else
    set +f
    for gx do f "$gd/$gx" "$gp$gx"; done
  fi
}
t() { [ -L "$1/..data" ] && (cd -P "$1/..data" 2>/dev/null && pwd -P); }
i=0
for p do
  k=0
  while :; do
    r P $i
    if [ -L "$p/..data" ]; then
      a=$(t "$p"); a=${a##*/}
      r A "$a"
      [ -n "$a" ] && w "$p/$a" "" 0
      b=$(t "$p"); b=${b##*/}
      r Q "$b"
      [ "$a" = "$b" ] && break
      k=$((k+1))
      [ $k -ge 3 ] && break
    elif [ -d "$p" ]; then r K d; w "$p" "" 0; r Q ""; break
    elif [ -f "$p" ]; then r K f; f "$p" ""; r Q ""; break
    elif [ -e "$p" ]; then r K o Q ""; break
    else r K n Q ""; break
    fi
  done
  i=$((i+1))
done
if [ "$e" = 1 ]; then
  if [ -r /proc/$$/environ ]; then r V; cat /proc/$$/environ 2>/dev/null; r "$n"; else r W; fi
fi
r Z "$n"
`

// ScriptArgv returns the argv of the verify exec.
func ScriptArgv(maxBytes int64, nonce string, env bool, paths []string) []string {
	e := "0"
	if env {
		e = "1"
	}
	argv := []string{"sh", "-c", verifyScript, "sh", strconv.FormatInt(maxBytes, 10), nonce, e}
	return append(argv, paths...)
}

package nodereader

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread"
)

// nodeScript runs in the reader pod, once per node per read. Everything
// from the cluster (container IDs, paths) is an argument, never script
// text; container IDs are checked to be hex before they are passed. It
// forks a handful of processes whatever the number of pods: one grep over
// every process's cgroup and one keeping the requested IDs, one grep of
// their stat files, one sort, one tar of every path, a few to find the
// runtimes' state directories, and one cat per environment asked for. Its
// loops are over lists held whole in variables, so that its time grows
// little with the pods: busybox's read builtin makes a system call a
// byte, set -- in a loop copies every argument each time, and ${x#*y}
// matches in a time that grows with the square of x's length.
//
// It finds, through hostPID, each requested container's main process: the
// processes whose pod cgroup line ends in the container ID, the earliest
// started whose parent is not one of them (an exec's process is a child of
// the runtime's shim, and starts later). It finds the kubelet (comm
// "kubelet", in no pod's cgroup) and its root directory: $2 when given,
// else --root-dir on its command line, else /var/lib/kubelet, seen through
// the kubelet's own mount namespace (/proc/KUBELET/root: Secret and
// projected volumes are tmpfs mounts the kubelet made after the reader
// started), linked as dir/k. Then it prints the environments asked for
// and reads the paths.
//
// An environment is the one the runtime configured for the container: the
// OCI spec (config.json) it started the container from, found in the
// state directory of containerd or CRI-O (runtimes, from the runtime's own
// command line and configuration, as a distribution may move it). An
// entrypoint that changes a variable before it execs its program does not
// change that. Where no spec is found, /proc/PID/environ of the main
// process stands in. Each file is opened first by the shell: an unreadable
// one is reported, not half printed.
//
// The paths: where tar exists, one tar of those that exist, between two
// listings (ls -ld) of the atomic volumes' ..data links: a target that
// moved meanwhile is a volume the kubelet swapped as it was read
// (tarread.go parses it). Where tar is missing or fails (a file that
// vanished as it was read, one it could not open), or a path holds a
// newline, the exec reader's script reads the paths instead.
//
// Arguments: $1 dir, $2 kubelet root directory or "", $3 the verify
// script, $4 max bytes, $5 the verify script's nonce, $6 this script's
// nonce, $7 the number of containers, then per container its ID and "1"
// to read its environment, then "--" and the paths.
//
// Output (NUL-terminated fields, read in any order up to Y): R rootdir
// source kubeletPID; when an environment is asked, C kind PID statedir
// source per runtime found; M ID PID per container found; per environment
// asked S ID path, the spec, the nonce, or E ID, the environ, the nonce,
// or N ID; Y nonce; then T, B and the links' listing, the tar, X nonce,
// tar's exit status and the listing again; then, unless tar's status is
// 0, V and the verify script's output.
const nodeScript = `d=$1 rd=$2 vs=$3 m=$4 n1=$5 n2=$6 nc=$7
shift 7
r() { printf '%s\0' "$@"; }
nl='
'
ids=' ' envs=
while [ "$nc" -gt 0 ]; do
  ids="$ids$1 "
  [ "$2" = 1 ] && envs="$envs $1"
  shift 2
  nc=$((nc-1))
done
[ "$1" = -- ] || { echo 'bad arguments' >&2; exit 2; }
shift
rm -rf "$d" && mkdir -p "$d" || exit 1
kp=
# host PROC: PROC (/proc/PID) is a process of the node itself: root's, and
# in no pod's cgroup (a name alone could be any user's program)
host() {
  grep -qs kubepods "$1/cgroup" && return 1
  grep -qs '^Uid:[[:space:]]*0[[:space:]]' "$1/status"
}
for f in $(grep -lsx kubelet /proc/[0-9]*/comm); do
  f=${f%/comm}
  host "$f" && { kp=${f#/proc/}; break; }
done
# arg PID NAME...: the value of the first flag NAME (NAME=V or NAME V) on
# the command line of process PID
arg() {
  ap=$1
  shift
  tr '\0' '\n' <"/proc/$ap/cmdline" 2>/dev/null | {
    f=
    while IFS= read -r a; do
      [ -n "$f" ] && { printf '%s' "$a"; exit 0; }
      for n do
        case $a in "$n") f=1;; "$n"=*) printf '%s' "${a#*=}"; exit 0;; esac
      done
    done
    exit 1
  }
}
# tv FILE TABLE KEY: the quoted string value of KEY in TABLE ("" for the
# top level) of the TOML file FILE
ws=' 	'
tv() {
  tt=
  while IFS= read -r l || [ -n "$l" ]; do
    l=${l#"${l%%[!$ws]*}"}
    case $l in \[*) tt=${l#\[} tt=${tt%%\]*} tt=${tt#"${tt%%[!$ws]*}"} tt=${tt%"${tt##*[!$ws]}"}; continue;; esac
    [ "$tt" = "$2" ] || continue
    k=${l%%=*} k=${k%"${k##*[!$ws]}"}
    [ "$k" = "$3" ] || continue
    v=${l#*=} v=${v#"${v%%[!$ws]*}"}
    case $v in \"*) v=${v#\"} v=${v%%\"*};; \'*) v=${v#\'} v=${v%%\'*};; *) continue;; esac
    printf '%s' "$v"
    return 0
  done <"$1"
  return 1
}
# runtimes finds the state directories of the container runtimes on the
# node, from each runtime's own command line and configuration, seen
# through its mount namespace: a C record each, and "kind directory" lines
# in $d/rt. containerd: --state, else the top-level state of its --config
# (default /etc/containerd/config.toml), else /run/containerd. CRI-O:
# --runroot, else runroot of [crio] in its --config (default
# /etc/crio/crio.conf) and its --config-dir drop-ins (default
# /etc/crio/crio.conf.d), else runroot of [storage] in
# /etc/containers/storage.conf, else /run/containers/storage.
runtimes() {
  : >"$d/rt"
  for f in $(grep -lsx -e containerd -e crio /proc/[0-9]*/comm); do
    f=${f%/comm} n=
    host "$f" || continue
    read -r n <"$f/comm" 2>/dev/null || continue
    case $n in
    containerd) rtc "${f#/proc/}";;
    crio) rtr "${f#/proc/}";;
    *) continue;;
    esac
    case $s in /*) ;; *) continue;; esac
    r C "$n" "${f#/proc/}" "$s" "$sc"
    printf '%s %s\n' "$n" "$f/root$s" >>"$d/rt"
  done
}
# rtc PID: containerd's state directory into s, its source into sc
rtc() {
  s=$(arg "$1" --state) sc=flag
  [ -n "$s" ] && return
  cf=$(arg "$1" --config -c) || cf=/etc/containerd/config.toml
  case $cf in /*) cf=/proc/$1/root$cf;; *) cf=/proc/$1/cwd/$cf;; esac
  s=$(tv "$cf" "" state 2>/dev/null) sc=config
  [ -n "$s" ] || s=/run/containerd sc=default
}
# rtr PID: CRI-O's run root into s, its source into sc
rtr() {
  s=$(arg "$1" --runroot) sc=flag
  [ -n "$s" ] && return
  cf=$(arg "$1" --config -c) || cf=/etc/crio/crio.conf
  cdir=$(arg "$1" --config-dir -d) || cdir=/etc/crio/crio.conf.d
  case $cf in /*) cf=/proc/$1/root$cf;; *) cf=/proc/$1/cwd/$cf;; esac
  case $cdir in /*) cdir=/proc/$1/root$cdir;; *) cdir=/proc/$1/cwd/$cdir;; esac
  s=$(tv "$cf" crio runroot 2>/dev/null) sc=config
  for x in "$cdir"/*.conf; do
    v=$(tv "$x" crio runroot 2>/dev/null) && s=$v
  done
  [ -n "$s" ] || s=$(tv "/proc/$1/root/etc/containers/storage.conf" storage runroot 2>/dev/null) sc=storage.conf
  [ -n "$s" ] || s=/run/containers/storage sc=default
}
# spec ID PID: the OCI spec (config.json) of container ID into sp:
# containerd's task bundle, or CRI-O's container userdata, whose pid file
# (init.pid, pidfile) names the container's main process PID
spec() {
  sp=
  [ -n "$2" ] || return 1
  while IFS=' ' read -r k sd; do
    case $k in
    containerd) for x in "$sd"/io.containerd.runtime.v2.task/*/"$1"/config.json; do ispec "$x" init.pid "$2" && return 0; done;;
    crio) for x in "$sd"/*-containers/"$1"/userdata/config.json; do ispec "$x" pidfile "$2" && return 0; done;;
    esac
  done <"$d/rt"
  return 1
}
# ispec SPEC PIDFILE PID: SPEC is a file beside PIDFILE holding PID (into sp)
ispec() {
  [ -f "$1" ] || return 1
  ip=
  read -r ip <"${1%/*}/$2" 2>/dev/null || [ -n "$ip" ] || return 1
  [ "$ip" = "$3" ] && sp=$1
}
src=flag
if [ -z "$rd" ]; then
  src=default rd=/var/lib/kubelet
  if [ -n "$kp" ]; then
    x=$(arg "$kp" --root-dir -root-dir)
    case $x in /*) rd=$x src=cmdline;; esac
  fi
fi
kr=/proc/1/root
[ -n "$kp" ] && kr=/proc/$kp/root
ln -s "$kr$rd" "$d/k"
r R "$rd" "$src" "${kp:-0}"
[ -n "$envs" ] && runtimes
# ev ID PID: the environment of container ID, whose main process is PID
ev() {
  # true, not the special builtin ":", whose failed redirection would end the script
  if spec "$1" "$2" && { true <"$sp"; } 2>/dev/null; then r S "$1" "$sp"; cat "$sp" 2>/dev/null; r "$n2"
  elif { true <"/proc/$2/environ"; } 2>/dev/null; then r E "$1"; cat "/proc/$2/environ" 2>/dev/null; r "$n2"
  else r N "$1"; fi
}
# the processes of the requested containers, by the first pod cgroup line of
# each (cgroup v1 lists one per hierarchy); grep -F keeps the lines that
# name a requested ID, so that the loops see those alone.
sf() { pp=$2 sa=${20}; }
cg=
if [ "$ids" != ' ' ]; then
  printf '%s\n' $ids >"$d/ids"
  cg=$(grep -H -s -m 1 kubepods /proc/[0-9]*/cgroup | grep -F -f "$d/ids")
fi
set -f
IFS=$nl
pc=$nl fs=
for l in $cg; do
  c=${l##*/} c=${c%.scope} c=${c##*-}
  case $c in ''|*[!0-9a-f]*) continue;; esac
  case $ids in *" $c "*) ;; *) continue;; esac
  p=${l#/proc/} p=${p%%/*}
  case $p in ''|*[!0-9]*) continue;; esac
  pc="$pc$p:$c$nl" fs="$fs$nl/proc/$p/stat"
done
st=
[ -n "$fs" ] && st=$(LC_ALL=C grep -a -H '' $fs 2>/dev/null)
# jn P:ID...: each stat line joined with its container as "START PID PPID
# ID" in ss. The lines are in the order of the pairs (grep reads its files
# in order), less those of processes that ended meanwhile; a line that is
# not a stat file's own (a newline in a process's name) is skipped. A
# process that still runs but whose line was not used makes its container's
# main process unknown (bad): it may be that process.
jn() {
  ss= bad=' ' u=
  for l in $st; do
    p=${l#/proc/} p=${p%%/*}
    case $p in ''|*[!0-9]*) continue;; esac
    case $l in "/proc/$p/stat:$p "*) ;; *) continue;; esac
    while [ $# -gt 0 ] && [ "${1%%:*}" != "$p" ]; do un "$1"; shift; done
    [ $# -gt 0 ] || break
    IFS=' '
    sf ${l##*) }
    IFS=$nl
    case $sa$pp in ''|*[!0-9]*) continue;; esac
    ss="$ss$sa $p $pp ${1#*:}$nl" u=$1
  done
  while [ $# -gt 0 ]; do un "$1"; shift; done
}
# un P:ID: the pair jn passes over
un() { [ "$1" = "$u" ] || [ ! -e "/proc/${1%%:*}" ] || bad="$bad${1#*:} "; }
jn $pc
so=
[ -n "$ss" ] && so=$(printf '%s' "$ss" | sort -n)
# each container's main process: of its processes, oldest first, the first
# whose parent is not one of them (an exec's process is a child of the
# runtime's shim, and starts later)
sl() { sa=$1 p=$2 pp=$3 c=$4; }
pm=' ' ep=
for l in $so; do
  IFS=' '
  sl $l
  IFS=$nl
  case $pm$bad in *" $c "*) continue;; esac
  case $pc in *"$nl$pp:$c$nl"*) continue;; esac
  pm="$pm$c "
  r M "$c" "$p"
  case "$envs " in *" $c "*) ep="$ep $c:$p";; esac
done
unset IFS
set +f
for e in $ep; do ev "${e%:*}" "${e#*:}"; done
for c in $envs; do
  case $pm in *" $c "*) ;; *) r N "$c";; esac
done
r Y "$n2"
# ll: ls -ld of the ..data links of the paths; tt: tar of the paths that
# exist. Their lists are strings split at newlines, which no path holds
# here (see below).
ll() {
  l=
  for p do [ -L "$p/..data" ] && l="$l$nl$p/..data"; done
  [ -n "$l" ] || return 0
  IFS=$nl
  set -f
  ls -ld -- $l 2>/dev/null
  unset IFS
  set +f
}
tt() {
  l=
  for p do { [ -e "$p" ] || [ -L "$p" ]; } && l="$l$nl$p"; done
  [ -n "$l" ] || return 0
  IFS=$nl
  set -f
  tar -cf - $l 2>/dev/null
  x=$?
  unset IFS
  set +f
  return $x
}
x=1 ut=
command -v tar >/dev/null 2>&1 && ut=1
# a path with a newline, which no checked name makes, is read by the verify
# script
case $* in *"$nl"*) ut=;; esac
if [ -n "$ut" ]; then
  r T B "$(ll "$@")"
  tt "$@"
  x=$?
  r X "$n2" "$x" "$(ll "$@")"
fi
if [ "$x" -ne 0 ]; then
  r V
  sh -c "$vs" sh "$m" "$n1" 0 "$@"
  x=$?
fi
rm -rf "$d"
exit $x
`

// The exec reader's script finds the ..data target with cd -P and pwd -P.
// Seen from the reader pod the volume lies in another mount namespace,
// where getcwd fails: the node reader reads the link itself (the kubelet
// writes it relative, ..data -> ..TIMESTAMP).
const (
	targetByCd       = `t() { [ -L "$1/..data" ] && (cd -P "$1/..data" 2>/dev/null && pwd -P); }`
	targetByReadlink = `t() { [ -L "$1/..data" ] && readlink "$1/..data"; }`
)

// verifyScriptText is the exec reader's script (argv[2] of its exec) with
// the ..data target read by readlink; "" when the script no longer has the
// line to replace (a unit test fails then).
func verifyScriptText() string {
	s := containerread.ScriptArgv(0, "n", false, nil)[2]
	if strings.Count(s, targetByCd) != 1 {
		return ""
	}
	return strings.Replace(s, targetByCd, targetByReadlink, 1)
}

// nodeArgv is the argv of one node read.
func nodeArgv(nr *nodeBatch, dir, rootDir string, maxBytes int64, nonce1, nonce2 string) []string {
	argv := []string{"sh", "-c", nodeScript, "sh", dir, rootDir, verifyScriptText(), strconv.FormatInt(maxBytes, 10), nonce1, nonce2,
		strconv.Itoa(len(nr.containers))}
	for _, c := range nr.containers {
		e := "0"
		if c.env {
			e = "1"
		}
		argv = append(argv, c.id, e)
	}
	argv = append(argv, "--")
	return append(argv, nr.paths...)
}

// nodeOutput is what the node script printed before the verify script's
// output.
type nodeOutput struct {
	pids    map[string]string // container ID -> PID
	env     map[string]map[string]string
	noEnv   map[string]bool
	rootDir string
	source  string // flag, cmdline or default
	kubelet string // PID, "0" when not found
	// runtimes found when an environment was asked (C records)
	runtimes []runtimeDir
	// specPath: the OCI spec each environment in env was read from (S
	// records); specErr: a spec found but not understood
	specPath map[string]string
	specErr  map[string]string
	rest     []byte // what the paths showed: T and a tar, or V and the verify script's output
}

// runtimeDir is a container runtime the node script found, and its state
// directory.
type runtimeDir struct {
	kind, pid, dir, source string
}

// parseNodeOutput reads the records up to Y.
func parseNodeOutput(out []byte, nonce string) (*nodeOutput, error) {
	o := &nodeOutput{pids: map[string]string{}, env: map[string]map[string]string{}, noEnv: map[string]bool{},
		specPath: map[string]string{}, specErr: map[string]string{}}
	p := &containerread.NULFields{B: out}
	trailer := append([]byte(nonce), 0)
	for {
		tag, err := p.Field()
		if err != nil {
			return nil, err
		}
		switch tag {
		case "M":
			f, err := p.Fields(2)
			if err != nil {
				return nil, err
			}
			o.pids[f[0]] = f[1]
		case "R":
			f, err := p.Fields(3)
			if err != nil {
				return nil, err
			}
			o.rootDir, o.source, o.kubelet = f[0], f[1], f[2]
		case "C":
			f, err := p.Fields(4)
			if err != nil {
				return nil, err
			}
			o.runtimes = append(o.runtimes, runtimeDir{kind: f[0], pid: f[1], dir: f[2], source: f[3]})
		case "E":
			id, err := p.Field()
			if err != nil {
				return nil, err
			}
			b, err := untilTrailer(p, trailer)
			if err != nil {
				return nil, err
			}
			o.env[id] = containerread.ParseEnviron(b)
		case "S":
			f, err := p.Fields(2)
			if err != nil {
				return nil, err
			}
			b, err := untilTrailer(p, trailer)
			if err != nil {
				return nil, err
			}
			o.specPath[f[0]] = f[1]
			if env, err := specEnv(b); err != nil {
				o.specErr[f[0]] = err.Error()
			} else {
				o.env[f[0]] = env
			}
		case "N":
			id, err := p.Field()
			if err != nil {
				return nil, err
			}
			o.noEnv[id] = true
		case "Y":
			f, err := p.Field()
			if err != nil {
				return nil, err
			}
			if f != nonce {
				return nil, errors.New("bad end of the node records")
			}
			o.rest = p.B[p.Pos:]
			return o, nil
		default:
			// the position only: out of step, the field may be a container's
			// environment, Secret values included
			return nil, fmt.Errorf("unknown record at byte %d of the node's output", p.Pos-len(tag)-1)
		}
	}
}

// untilTrailer returns the bytes up to the trailer and moves past it.
func untilTrailer(p *containerread.NULFields, trailer []byte) ([]byte, error) {
	i := bytes.Index(p.B[p.Pos:], trailer)
	if i < 0 {
		return nil, containerread.ErrTruncated
	}
	b := p.B[p.Pos : p.Pos+i]
	p.Pos += i + len(trailer)
	return b, nil
}

// specEnv returns the environment of an OCI runtime spec (process.env,
// NAME=VALUE entries). Its errors never quote the spec, which holds the
// values of Secrets.
func specEnv(b []byte) (map[string]string, error) {
	var spec struct {
		Process *struct {
			Env []string `json:"env"`
		} `json:"process"`
	}
	if err := json.Unmarshal(b, &spec); err != nil {
		return nil, errors.New("the runtime's OCI spec is not valid JSON")
	}
	if spec.Process == nil {
		return nil, errors.New("the runtime's OCI spec has no process")
	}
	env := make(map[string]string, len(spec.Process.Env))
	for _, e := range spec.Process.Env {
		if k, v, ok := strings.Cut(e, "="); ok && k != "" {
			env[k] = v // a later entry wins, as in ParseEnviron
		}
	}
	return env, nil
}

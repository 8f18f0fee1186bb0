package inspect

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilexec "k8s.io/client-go/util/exec"
)

// Executor runs argv in a container and streams its output. It is the only
// door from observation to the cluster (exec.go has the implementation that
// goes through the API server, as kubectl exec does). A non-zero exit is an
// error that carries the code (k8s.io/client-go/util/exec.ExitError).
type Executor interface {
	Exec(ctx context.Context, namespace, pod, container string, argv []string, stdout, stderr io.Writer) error
}

// PathRequest is one container path to read.
type PathRequest struct {
	// Path is absolute, in the container: a volume's mountPath, or the
	// mountPath of a subPath mount (a file or a directory).
	Path string
	// Expect lists the relative paths to read one by one when the container
	// has no shell (the full listing needs one).
	Expect []string
	// List asks the no-shell fallback to list the top-level names (whole
	// object volumes, where a removed key leaves a file nobody expects).
	List bool
}

// ObserveRequest is everything read from one container in one exec.
type ObserveRequest struct {
	Namespace, Pod, Container string
	Paths                     []PathRequest
	// Env reads the container's environment.
	Env bool
}

// ObserveOptions bound one observation.
type ObserveOptions struct {
	// MaxBytes: larger files are compared by size and sha256 only.
	MaxBytes int64
	// Timeout of one exec (0: none).
	Timeout time.Duration
	// MaxOutput bounds what one exec may print (0: 64 MiB + 4*MaxBytes).
	MaxOutput int64
}

// PathKind is what a container path turned out to be.
type PathKind string

const (
	// PathAtomic is an atomic-writer volume: ..data -> ..TIMESTAMP.
	PathAtomic  PathKind = "atomic"
	PathDir     PathKind = "dir"
	PathFile    PathKind = "file"
	PathMissing PathKind = "missing"
	PathOther   PathKind = "other"
	// PathUnknown: read without a shell, the type could not be told.
	PathUnknown PathKind = "unknown"
)

// ObservedFile is one file as the container shows it.
type ObservedFile struct {
	// Path is relative to the observed path ("" for a path that is a file).
	Path string
	// Mode holds the permission bits (07777), -1 when unknown.
	Mode int32
	// Size in bytes, -1 when unknown.
	Size int64
	// Data is the content when it was read (HasData).
	Data    []byte
	HasData bool
	// SHA256 (hex) of a file larger than MaxBytes, when the container has
	// sha256sum.
	SHA256 string
	// Unread says why neither Data nor SHA256 is known.
	Unread string
}

// ObservedPath is one requested path as the container shows it.
type ObservedPath struct {
	Kind PathKind
	// Target is the name ..data points to (atomic volumes).
	Target string
	// Unstable: ..data moved while it was read, on every attempt.
	Unstable bool
	// Files by relative path.
	Files map[string]*ObservedFile
	// Dirs and Others (symlinks, special files) by relative path.
	Dirs, Others []string
	// Listed: Files is the complete list of files under the path.
	Listed bool
	// Names is the top-level listing of the no-shell fallback (nil when
	// unknown or when Listed).
	Names []string
	// Err says why the path could not be read (no-shell fallback).
	Err string
}

// Observation is what one exec into a container showed.
type Observation struct {
	Paths map[string]*ObservedPath
	// Env is the container's environment, when EnvRead.
	Env     map[string]string
	EnvRead bool
	// EnvErr says why the environment could not be read.
	EnvErr string
	// NoShell: the container has no sh; the fallback read what it could.
	NoShell bool
	// Err is set when nothing could be observed.
	Err *ObserveError
	// Execs counts the execs made.
	Execs int
}

// Reasons an observation fails: the words of the contract's unverifiable
// state.
const (
	ObserveForbidden  = "forbidden"
	ObserveNoShell    = "no shell"
	ObserveNotRunning = "not running"
	ObserveTimeout    = "timeout"
	ObserveFailed     = "error"
)

// ObserveError says why a container could not be observed, with a hint.
type ObserveError struct {
	Reason  string
	Message string
	Hint    string
	// redacted, when set, replaces Message for the uses of a Secret: the
	// message quotes what the container printed (a file's bytes may be a
	// Secret's).
	redacted string
}

// reasonFor is Error for a use of an object of this kind.
func (e *ObserveError) reasonFor(kind string) string {
	if kind == KindSecret && e.redacted != "" {
		r := *e
		r.Message, r.redacted = e.redacted, ""
		return r.Error()
	}
	return e.Error()
}

// parseError is malformed output of the observation script. field is the
// raw text that did not parse, output of the container: it is quoted only
// a few bytes long, and left out for Secret uses (see ObserveError).
type parseError struct{ msg, field string }

// parseErrorQuote bounds how much container output an error quotes.
const parseErrorQuote = 8

func (e *parseError) Error() string {
	return fmt.Sprintf("%s %q", e.msg, truncate(e.field, parseErrorQuote))
}

func badRecord(msg, field string) error { return &parseError{msg: msg, field: field} }

// redactedError is err without the container output it quotes.
func redactedError(err error) string {
	var pe *parseError
	if errors.As(err, &pe) {
		return pe.msg
	}
	return err.Error()
}

func (e *ObserveError) Error() string {
	s := e.Reason
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Hint != "" {
		s += " (" + e.Hint + ")"
	}
	return s
}

// observeScript reads every path given as an argument and, when asked, the
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
const observeScript = `m=$1 n=$2 e=$3
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

// ScriptArgv returns the argv of the observation exec.
func ScriptArgv(maxBytes int64, nonce string, env bool, paths []string) []string {
	e := "0"
	if env {
		e = "1"
	}
	argv := []string{"sh", "-c", observeScript, "sh", strconv.FormatInt(maxBytes, 10), nonce, e}
	return append(argv, paths...)
}

// ErrTruncated is returned by ParseObservation when the output ends before
// the final record (the exec was cut short).
var ErrTruncated = errors.New("output ended early")

// ParseObservation parses the output of the observation script for the
// given paths (in argument order).
func ParseObservation(out []byte, nonce string, paths []string) (*Observation, error) {
	if nonce == "" {
		return nil, errors.New("empty nonce")
	}
	p := &recordParser{b: out, nonce: []byte(nonce)}
	obs := &Observation{Paths: map[string]*ObservedPath{}}
	var cur *ObservedPath
	var curIdx = -1
	attempts := map[int]*ObservedPath{}
	for {
		tag, err := p.field()
		if err != nil {
			return nil, err
		}
		switch tag {
		case "P":
			s, err := p.field()
			if err != nil {
				return nil, err
			}
			idx, err := strconv.Atoi(s)
			if err != nil || idx < 0 || idx >= len(paths) {
				return nil, badRecord("bad path index", s)
			}
			cur = &ObservedPath{Files: map[string]*ObservedFile{}, Listed: true}
			curIdx = idx
		case "A", "K":
			if cur == nil {
				return nil, fmt.Errorf("record %s outside a path", tag)
			}
			s, err := p.field()
			if err != nil {
				return nil, err
			}
			if tag == "A" {
				cur.Kind, cur.Target = PathAtomic, s
				continue
			}
			switch s {
			case "d":
				cur.Kind = PathDir
			case "f":
				cur.Kind = PathFile
			case "o":
				cur.Kind, cur.Listed = PathOther, false
			case "n":
				cur.Kind, cur.Listed = PathMissing, false
			default:
				return nil, badRecord("bad path kind", s)
			}
		case "D", "L", "O":
			if cur == nil {
				return nil, fmt.Errorf("record %s outside a path", tag)
			}
			s, err := p.field()
			if err != nil {
				return nil, err
			}
			if tag == "D" {
				cur.Dirs = append(cur.Dirs, s)
			} else {
				cur.Others = append(cur.Others, s)
			}
		case "F":
			if cur == nil {
				return nil, errors.New("file record outside a path")
			}
			rel, err := p.field()
			if err != nil {
				return nil, err
			}
			perm, err := p.field()
			if err != nil {
				return nil, err
			}
			sz, err := p.field()
			if err != nil {
				return nil, err
			}
			size, err := strconv.ParseInt(sz, 10, 64)
			if err != nil || size < -1 {
				return nil, badRecord("bad size", sz)
			}
			f := &ObservedFile{Path: rel, Mode: ParseLsMode(perm), Size: size}
			cur.Files[rel] = f
			kind, err := p.field()
			if err != nil {
				return nil, err
			}
			switch kind {
			case "C":
				if size < 0 {
					return nil, errors.New("content without a size")
				}
				data, ok, err := p.content(size)
				if err != nil {
					return nil, err
				}
				if ok {
					f.Data, f.HasData = data, true
				} else {
					f.Unread = "the file changed size while it was read"
				}
			case "H":
				h, err := p.field()
				if err != nil {
					return nil, err
				}
				if validSHA256(h) {
					f.SHA256 = h
				} else {
					f.Unread = "sha256sum failed"
				}
			case "S":
				f.Unread = "larger than --max-bytes and the container has no sha256sum"
			case "U":
				f.Unread = "unreadable"
			default:
				return nil, badRecord("bad file record", kind)
			}
		case "G":
			if cur == nil {
				return nil, errors.New("file batch outside a path")
			}
			if err := p.batch(cur); err != nil {
				return nil, err
			}
		case "Q":
			if cur == nil {
				return nil, errors.New("end record outside a path")
			}
			s, err := p.field()
			if err != nil {
				return nil, err
			}
			if cur.Kind == PathAtomic && s != cur.Target {
				cur.Unstable = true
			}
			if prev, ok := attempts[curIdx]; !ok || prev.Unstable || !cur.Unstable {
				attempts[curIdx] = cur
			}
			cur, curIdx = nil, -1
		case "V":
			data, err := p.until()
			if err != nil {
				return nil, err
			}
			obs.Env, obs.EnvRead = ParseEnviron(data), true
		case "W":
			obs.EnvErr = "/proc/$$/environ (the shell's environment) is not readable in the container"
		case "Z":
			s, err := p.field()
			if err != nil {
				return nil, err
			}
			if s != nonce {
				return nil, errors.New("bad final record")
			}
			if cur != nil {
				return nil, errors.New("unterminated path record")
			}
			for i, pth := range paths {
				if a, ok := attempts[i]; ok {
					obs.Paths[pth] = a
				}
			}
			return obs, nil
		default:
			return nil, badRecord("unknown record", tag)
		}
	}
}

type recordParser struct {
	b     []byte
	pos   int
	nonce []byte
}

// field reads up to the next NUL.
func (p *recordParser) field() (string, error) {
	if p.pos >= len(p.b) {
		return "", ErrTruncated
	}
	i := bytes.IndexByte(p.b[p.pos:], 0)
	if i < 0 {
		return "", ErrTruncated
	}
	s := string(p.b[p.pos : p.pos+i])
	p.pos += i + 1
	return s, nil
}

// batch reads a G record: the prefix of the names, their count, the
// names, a mode and a size for each, "C", then the contents back to back
// and the nonce. When the contents do not add up (a file changed or
// vanished between stat and cat) every file of the batch is unread.
func (p *recordParser) batch(cur *ObservedPath) error {
	prefix, err := p.field()
	if err != nil {
		return err
	}
	cs, err := p.field()
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(cs)
	// every name takes at least 4 bytes of output (name, mode, size, each NUL-terminated)
	if err != nil || n < 1 || n > (len(p.b)-p.pos)/4 {
		return badRecord("bad file count", cs)
	}
	files := make([]*ObservedFile, n)
	for i := range files {
		name, err := p.field()
		if err != nil {
			return err
		}
		files[i] = &ObservedFile{Path: prefix + name}
	}
	var total int64
	for _, f := range files {
		perm, err := p.field()
		if err != nil {
			return err
		}
		sz, err := p.field()
		if err != nil {
			return err
		}
		size, err := strconv.ParseInt(sz, 10, 64)
		if err != nil || size < 0 || size > int64(len(p.b)) {
			return badRecord("bad size", sz)
		}
		f.Mode, f.Size = ParseLsMode(perm), size
		total += size
	}
	if c, err := p.field(); err != nil {
		return err
	} else if c != "C" {
		return badRecord("bad file batch", c)
	}
	data, ok, err := p.content(total)
	if err != nil {
		return err
	}
	for _, f := range files {
		if ok {
			f.Data, f.HasData, data = data[:f.Size:f.Size], true, data[f.Size:]
		} else {
			f.Unread = "the file changed size while it was read"
		}
		cur.Files[f.Path] = f
	}
	return nil
}

// content reads size bytes followed by the nonce and a NUL. When the
// trailer is not where the size says (the file changed while it was read),
// it resynchronises on the next nonce and reports ok false.
func (p *recordParser) content(size int64) ([]byte, bool, error) {
	trailer := append(append([]byte{}, p.nonce...), 0)
	rest := int64(len(p.b) - p.pos)
	if size <= rest-int64(len(trailer)) {
		end := p.pos + int(size)
		if bytes.Equal(p.b[end:end+len(trailer)], trailer) {
			data := p.b[p.pos:end]
			p.pos = end + len(trailer)
			return data, true, nil
		}
	}
	i := bytes.Index(p.b[p.pos:], trailer)
	if i < 0 {
		return nil, false, ErrTruncated
	}
	p.pos += i + len(trailer)
	return nil, false, nil
}

// until reads up to the nonce and a NUL.
func (p *recordParser) until() ([]byte, error) {
	trailer := append(append([]byte{}, p.nonce...), 0)
	i := bytes.Index(p.b[p.pos:], trailer)
	if i < 0 {
		return nil, ErrTruncated
	}
	data := p.b[p.pos : p.pos+i]
	p.pos += i + len(trailer)
	return data, nil
}

func validSHA256(h string) bool {
	if len(h) != 64 {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// ParseLsMode turns the first field of `ls -l` ("-rw-r--r--", maybe with a
// trailing "." or "+") into permission bits; -1 when it is not one.
func ParseLsMode(s string) int32 {
	if len(s) < 10 {
		return -1
	}
	var m int32
	bits := []struct {
		pos  int
		c    byte
		bit  int32
		spec int32 // setuid, setgid, sticky with the exec bit
		nx   byte  // the same special bit without exec
	}{
		{1, 'r', 0o400, 0, 0}, {2, 'w', 0o200, 0, 0}, {3, 'x', 0o100, 0o4000, 'S'},
		{4, 'r', 0o040, 0, 0}, {5, 'w', 0o020, 0, 0}, {6, 'x', 0o010, 0o2000, 'S'},
		{7, 'r', 0o004, 0, 0}, {8, 'w', 0o002, 0, 0}, {9, 'x', 0o001, 0o1000, 'T'},
	}
	for _, b := range bits {
		c := s[b.pos]
		switch {
		case c == '-':
		case c == b.c:
			m |= b.bit
		case b.spec != 0 && (c == 's' || c == 't'):
			m |= b.bit | b.spec
		case b.spec != 0 && c == b.nx:
			m |= b.spec
		default:
			return -1
		}
	}
	return m
}

// ParseEnviron splits a NUL-separated environment (/proc/PID/environ) into
// variables; a later duplicate wins.
func ParseEnviron(data []byte) map[string]string {
	env := map[string]string{}
	for _, kv := range bytes.Split(data, []byte{0}) {
		if len(kv) == 0 {
			continue
		}
		k, v, ok := bytes.Cut(kv, []byte("="))
		if !ok || len(k) == 0 {
			continue
		}
		env[string(k)] = string(v)
	}
	return env
}

// parseEnvLines parses the output of `env`, one NAME=VALUE a line; a line
// without "=" continues the previous value (a value with a newline).
func parseEnvLines(data []byte) map[string]string {
	env := map[string]string{}
	last := ""
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok || k == "" || strings.ContainsAny(k, " \t") {
			if last != "" {
				env[last] += "\n" + line
			}
			continue
		}
		env[k], last = v, k
	}
	return env
}

// dataDirRe matches the name of an atomic writer's timestamped directory.
var dataDirRe = regexp.MustCompile(`^\.\.(\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_\d{2})\.\d+$`)

// SyncedAt returns the UTC time encoded in a ..data target name
// ("..2024_01_02_15_04_05.123456789").
func SyncedAt(target string) (time.Time, bool) {
	m := dataDirRe.FindStringSubmatch(target)
	if m == nil {
		return time.Time{}, false
	}
	t, err := time.ParseInLocation("2006_01_02_15_04_05", m[1], time.UTC)
	if err != nil {
		return time.Time{}, false
	}
	return t, true
}

// NewNonce returns a random per-run marker for the script's framing.
func NewNonce() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return "cmsync-" + hex.EncodeToString(b[:])
}

// limitWriter keeps at most n bytes and reports overflow.
type limitWriter struct {
	buf      bytes.Buffer
	n        int64
	overflow bool
	cancel   context.CancelFunc
}

func (w *limitWriter) Write(p []byte) (int, error) {
	if int64(w.buf.Len())+int64(len(p)) > w.n {
		w.overflow = true
		if w.cancel != nil {
			w.cancel()
		}
		return 0, errors.New("output limit exceeded")
	}
	return w.buf.Write(p)
}

// Observe reads what the container shows for the requested paths (and its
// environment) with one exec of the observation script. A container without
// sh gets a fallback: one `cat` per expected file, `ls -1a` for listings,
// `cat /proc/self/environ` (else `env`) for the environment. It never fails:
// what could not be read is said in the Observation.
func Observe(ctx context.Context, ex Executor, req ObserveRequest, o ObserveOptions) *Observation {
	if o.MaxBytes < 0 {
		o.MaxBytes = 0
	}
	limit := o.MaxOutput
	if limit <= 0 {
		limit = 64<<20 + 4*o.MaxBytes
	}
	paths := make([]string, len(req.Paths))
	for i, p := range req.Paths {
		paths[i] = p.Path
	}
	var lastErr, lastRedacted string
	for attempt := 0; attempt < 2; attempt++ {
		nonce := NewNonce()
		stdout, stderr, err := runExec(ctx, ex, req, ScriptArgv(o.MaxBytes, nonce, req.Env, paths), o.Timeout, limit)
		if err != nil && stdout.overflow {
			return &Observation{Execs: attempt + 1, Err: &ObserveError{Reason: ObserveFailed,
				Message: fmt.Sprintf("the container printed more than %d bytes", limit), Hint: "lower --max-bytes"}}
		}
		if err != nil {
			oe := ClassifyExecError(ctx, err, stderr.buf.Bytes())
			if oe.Reason == ObserveNoShell {
				obs := observeWithoutShell(ctx, ex, req, o, limit)
				obs.Execs += attempt + 1
				return obs
			}
			// A script error after complete output still counts.
			if obs, perr := ParseObservation(stdout.buf.Bytes(), nonce, paths); perr == nil {
				obs.Execs = attempt + 1
				return obs
			}
			if oe.Reason != ObserveFailed || attempt == 1 {
				return &Observation{Execs: attempt + 1, Err: oe}
			}
			lastErr, lastRedacted = oe.Error(), ""
			continue
		}
		obs, perr := ParseObservation(stdout.buf.Bytes(), nonce, paths)
		if perr == nil {
			obs.Execs = attempt + 1
			return obs
		}
		lastErr = fmt.Sprintf("unexpected output (%v)%s", perr, stderrSuffix(stderr.buf.Bytes()))
		lastRedacted = fmt.Sprintf("unexpected output (%s)%s", redactedError(perr), stderrSuffix(stderr.buf.Bytes()))
	}
	return &Observation{Execs: 2, Err: &ObserveError{Reason: ObserveFailed, Message: lastErr, redacted: lastRedacted}}
}

func stderrSuffix(b []byte) string {
	s := strings.TrimSpace(string(b))
	if s == "" {
		return ""
	}
	return ": " + truncate(strings.ReplaceAll(s, "\n", " "), 200)
}

func runExec(ctx context.Context, ex Executor, req ObserveRequest, argv []string, timeout time.Duration, limit int64) (*limitWriter, *limitWriter, error) {
	cctx, cancel := ctx, context.CancelFunc(func() {})
	if timeout > 0 {
		cctx, cancel = context.WithTimeout(ctx, timeout)
	}
	defer cancel()
	stdout := &limitWriter{n: limit, cancel: cancel}
	stderr := &limitWriter{n: 64 << 10}
	err := ex.Exec(cctx, req.Namespace, req.Pod, req.Container, argv, stdout, stderr)
	if err == nil && cctx.Err() != nil {
		err = cctx.Err()
	}
	if err != nil && errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
		err = fmt.Errorf("%w: %v", context.DeadlineExceeded, err)
	}
	return stdout, stderr, err
}

// ClassifyExecError turns an exec failure into the contract's reasons.
func ClassifyExecError(ctx context.Context, err error, stderr []byte) *ObserveError {
	msg := err.Error()
	low := strings.ToLower(msg)
	var code utilexec.ExitError
	hasCode := errors.As(err, &code)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return &ObserveError{Reason: ObserveTimeout, Message: "the exec did not finish in time", Hint: "raise --exec-timeout"}
	case errors.Is(err, context.Canceled) || ctx.Err() != nil:
		return &ObserveError{Reason: ObserveFailed, Message: "interrupted"}
	case apierrors.IsForbidden(err) || strings.Contains(low, "forbidden"):
		return forbiddenExec(msg)
	case NotFoundBinary(err, stderr):
		return &ObserveError{Reason: ObserveNoShell, Message: "the container has no sh"}
	case apierrors.IsNotFound(err) || podNotFound.MatchString(msg):
		// deleted while it was observed (the upgrade answers 404)
		return &ObserveError{Reason: ObserveNotRunning, Message: "the pod was deleted: " + firstLine(msg)}
	case strings.Contains(low, "container not found") || strings.Contains(low, "not running") ||
		strings.Contains(low, "stopped state") || strings.Contains(low, "container_exited") ||
		strings.Contains(low, "is terminated") || strings.Contains(low, "not created") ||
		// containerd, when the container exits while an exec starts in it
		strings.Contains(low, "no running task found") || strings.Contains(low, "ttrpc: closed"):
		return &ObserveError{Reason: ObserveNotRunning, Message: firstLine(msg)}
	case hasCode:
		return &ObserveError{Reason: ObserveFailed, Message: fmt.Sprintf("exit code %d%s", code.ExitStatus(), stderrSuffix(stderr))}
	}
	return &ObserveError{Reason: ObserveFailed, Message: firstLine(msg)}
}

// deniedVerb finds the verb an RBAC denial names: `User "u" cannot create
// resource "pods/exec" ...`.
var deniedVerb = regexp.MustCompile(`cannot (\w+) resource "pods/exec"`)

// execRoleRule is the Role rule that allows verify's exec (both verbs:
// WebSocket exec is a GET, the SPDY fallback a POST).
const execRoleRule = `{apiGroups: [""], resources: ["pods/exec"], verbs: ["get", "create"]}`

// forbiddenExec is the observation error of an exec RBAC denies. Its
// reason leads with the missing permission ("forbidden: create pods/exec"),
// then the API server's words and the rule that grants it.
func forbiddenExec(msg string) *ObserveError {
	verb := "create"
	if m := deniedVerb.FindStringSubmatch(msg); m != nil {
		verb = m[1]
	}
	server := firstLine(msg)
	// client-go prefixes the API server's message with its own words
	server = strings.TrimPrefix(server, "unable to upgrade connection: ")
	return &ObserveError{Reason: ObserveForbidden, Message: verb + " pods/exec",
		Hint: server + "; verify needs get and create on pods/exec: a Role with " + execRoleRule + " grants them"}
}

// NotFoundBinary tells whether an exec failed because argv[0] does not exist
// in the container (as containerd/runc, CRI-O and docker report it).
func NotFoundBinary(err error, stderr []byte) bool {
	if err == nil {
		return false
	}
	low := strings.ToLower(err.Error())
	if strings.Contains(low, "executable file not found") ||
		(strings.Contains(low, "no such file or directory") && (strings.Contains(low, "exec") || strings.Contains(low, "oci runtime"))) {
		return true
	}
	var code utilexec.ExitError
	if errors.As(err, &code) && (code.ExitStatus() == 126 || code.ExitStatus() == 127) {
		se := strings.ToLower(string(stderr))
		return strings.Contains(se, "executable file not found") || strings.Contains(se, "no such file or directory") ||
			strings.Contains(se, "not found") || len(bytes.TrimSpace(stderr)) == 0
	}
	return false
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return truncate(requestURL.ReplaceAllString(s, `$1 "$2"`), 300)
}

// podNotFound matches the API server's answer for a pod that is gone.
var podNotFound = regexp.MustCompile(`\bpods "[^"]*" not found\b`)

// requestURL matches a quoted request URL with its query in an error
// message: the query of an exec request is the whole observation script,
// which would hide the cause at the end of the message.
var requestURL = regexp.MustCompile(`\b(GET|POST|Get|Post) "([^"?]*)\?[^"]*"`)

// observeWithoutShell is the fallback for containers without sh.
func observeWithoutShell(ctx context.Context, ex Executor, req ObserveRequest, o ObserveOptions, limit int64) *Observation {
	obs := &Observation{NoShell: true, Paths: map[string]*ObservedPath{}}
	noCat := false
	run := func(argv ...string) ([]byte, []byte, error) {
		obs.Execs++
		stdout, stderr, err := runExec(ctx, ex, req, argv, o.Timeout, limit)
		return stdout.buf.Bytes(), stderr.buf.Bytes(), err
	}
	fatal := func(err error, stderr []byte) bool {
		oe := ClassifyExecError(ctx, err, stderr)
		switch oe.Reason {
		case ObserveForbidden, ObserveNotRunning, ObserveTimeout:
			obs.Err = oe
			return true
		}
		if errors.Is(err, context.Canceled) || ctx.Err() != nil {
			obs.Err = oe
			return true
		}
		return false
	}
	if req.Env {
		out, se, err := run("cat", "/proc/self/environ")
		switch {
		case err == nil:
			obs.Env, obs.EnvRead = ParseEnviron(out), true
		case fatal(err, se):
			return obs
		case NotFoundBinary(err, se):
			noCat = true
			out, se, err = run("env")
			switch {
			case err == nil:
				obs.Env, obs.EnvRead = parseEnvLines(out), true
			case fatal(err, se):
				return obs
			default:
				obs.EnvErr = "the container has neither sh, cat nor env"
			}
		default:
			obs.EnvErr = "cat /proc/self/environ failed" + stderrSuffix(se)
		}
	}
	for _, pr := range req.Paths {
		op := &ObservedPath{Kind: PathUnknown, Files: map[string]*ObservedFile{}}
		obs.Paths[pr.Path] = op
		if noCat {
			op.Err = "the container has neither sh nor cat"
			continue
		}
		if pr.List {
			out, se, err := run("ls", "-1a", pr.Path)
			switch {
			case err == nil:
				names := []string{}
				for _, n := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
					if n == "" || n == "." || n == ".." {
						continue
					}
					names = append(names, n)
					if _, ok := SyncedAt(n); ok {
						if op.Target == "" {
							op.Target = n
						} else {
							op.Unstable = true // two data directories: mid-swap
						}
					}
				}
				op.Names = names
				if op.Target != "" {
					op.Kind = PathAtomic
				}
			case fatal(err, se):
				return obs
			}
		}
		for _, rel := range pr.Expect {
			p := pr.Path
			if rel != "" {
				p = path.Join(pr.Path, rel)
			}
			out, se, err := run("cat", p)
			switch {
			case err == nil:
				f := &ObservedFile{Path: rel, Mode: -1, Size: int64(len(out))}
				if int64(len(out)) > o.MaxBytes && o.MaxBytes > 0 {
					// The whole file came anyway: compare its hash like the script would.
					f.SHA256 = sha256Hex(out)
				} else {
					f.Data, f.HasData = out, true
				}
				op.Files[rel] = f
			case fatal(err, se):
				return obs
			case NotFoundBinary(err, se):
				noCat = true
				op.Err = "the container has neither sh nor cat"
			default:
				low := strings.ToLower(string(se))
				if strings.Contains(low, "no such file") || strings.Contains(low, "not a directory") {
					continue // absent
				}
				if strings.Contains(low, "is a directory") {
					op.Dirs = append(op.Dirs, rel)
					continue
				}
				op.Files[rel] = &ObservedFile{Path: rel, Mode: -1, Size: -1, Unread: "cat failed" + stderrSuffix(se)}
			}
			if noCat {
				break
			}
		}
	}
	if noCat && !obs.EnvRead {
		obs.Err = &ObserveError{Reason: ObserveNoShell, Message: "the container has neither sh nor cat",
			Hint: "use an image with a shell, or check by hand with kubectl debug"}
	}
	return obs
}

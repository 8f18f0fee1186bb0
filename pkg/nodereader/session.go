package nodereader

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	utilexec "k8s.io/client-go/util/exec"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread"
)

// A read of a node is one run of the node script. Each exec costs a round
// trip through the API server, the kubelet and the runtime, which starts a
// process in the reader's container: 0.1 s on an idle node, 0.3-0.7 s on a
// busy one, where the script's own work is tens of milliseconds. A wait reads
// the pods of a node again and again until the kubelet has remounted them,
// so the reader keeps one exec open per reader pod instead, a session,
// opened as soon as the pod's container runs (probe): its script waits for
// requests on its stdin and runs the node script once per request, with
// the request's arguments. It ends with its stdin, or after sessionIdleLimit without a
// request (a client that died).
//
// A request is lines: "r", the two nonces, the max bytes, the number of
// containers, the number of paths, then each container's ID and "1" or
// "0" (read its environment), then the paths. The script reads each line
// into a variable and passes it to the node script as an argument, never
// as script text: the containers' and the paths' lines are joined, then
// split at newlines into the arguments (set -- in a loop would make
// busybox copy every argument each time). A path with a newline cannot be
// sent this way: its read is one exec of its own; an empty line ends the
// session (exit 2), as a malformed count does.

// StdinExecutor is an Executor that can also give the command a stdin
// (containerread.RemoteExecutor). With one, the node reader reads each node
// through a session; without, one exec per read.
type StdinExecutor interface {
	ExecStdin(ctx context.Context, t containerread.Target, argv []string, stdin io.Reader, stdout, stderr io.Writer) error
}

const (
	// sessionIdleLimit: the session script ends after this long without a
	// request, whatever its client does.
	sessionIdleLimit = 60 * time.Second
	// sessionReuse: a session unused for this long is ended, not used
	// again, so that a request never races the script's own end.
	sessionReuse = 20 * time.Second
)

// sessionScript serves the reads of a session: $1 the idle limit in
// seconds, $2 the scratch directory, $3 the kubelet's root directory or
// "", $4 the verify script; the session's nonce is the first line of its
// stdin, not an argument, so that no process on the node reads it in the
// script's command line. Each read's output ends with Z, the nonce and the
// read's exit status; it greets with the status "ready" as it starts. read -t (busybox ash, bash)
// bounds the wait for a request; a shell without it (dash) waits for the
// end of stdin, and the pod's deletion ends it in any case.
const sessionScript = `to=$1 sd=$2 srd=$3 svs=$4 nl='
'
IFS= read -r n3 || exit 2
printf '%s\0' Z "$n3" ready
t=
read -t 1 x </dev/null 2>/dev/null
[ $? -eq 1 ] && t="-t $to"
while IFS= read -r $t l && [ "$l" = r ]; do
  IFS= read -r a1 && IFS= read -r a2 && IFS= read -r sm && IFS= read -r snc && IFS= read -r snp || exit 2
  case $sm$snc$snp in ''|*[!0-9]*) exit 2;; esac
  cs= ps=
  i=$((snc*2))
  while [ "$i" -gt 0 ]; do IFS= read -r a || exit 2; cs="$cs$nl$a"; i=$((i-1)); done
  i=$snp
  while [ "$i" -gt 0 ]; do IFS= read -r a || exit 2; ps="$ps$nl$a"; i=$((i-1)); done
  case $cs$ps$nl in *"$nl$nl"*) exit 2;; esac
  IFS=$nl
  set -f
  set -- "$sd" "$srd" "$svs" "$sm" "$a1" "$a2" "$snc" $cs -- $ps
  unset IFS
  set +f
  (
` + nodeScript + `
  ) </dev/null
  printf '%s\0' Z "$n3" "$?"
done
`

// sessionArgv is the argv of a session.
func sessionArgv(dir, rootDir string) []string {
	return []string{"sh", "-c", sessionScript, "sh", strconv.Itoa(int(sessionIdleLimit / time.Second)), dir, rootDir, verifyScriptText()}
}

// sessionRequest is the request of one read of nr, false when an argument
// has a newline.
func sessionRequest(nr *nodeBatch, maxBytes int64, n1, n2 string) ([]byte, bool) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "r\n%s\n%s\n%d\n%d\n%d\n", n1, n2, maxBytes, len(nr.containers), len(nr.paths))
	for _, c := range nr.containers {
		e := "0"
		if c.env {
			e = "1"
		}
		b.WriteString(c.id + "\n" + e + "\n")
	}
	for _, p := range nr.paths {
		if strings.ContainsAny(p, "\n") {
			return nil, false
		}
		b.WriteString(p + "\n")
	}
	return b.Bytes(), true
}

// session is a reader pod's open exec of sessionScript.
type session struct {
	in     *io.PipeWriter
	out    *frameWriter
	stderr *boundedBuffer
	cancel context.CancelFunc
	done   chan struct{} // closed once the exec has returned, err set
	err    error
	// lastUsed is when a read last asked it, or it was opened (under
	// Reader.mu)
	lastUsed time.Time
}

// greeted tells whether the session's script has started.
func (s *session) greeted() bool { return closed(s.out.greeted) }

// startSession opens a session on the reader pod. It ends with bg, or
// close.
func startSession(bg context.Context, se StdinExecutor, target containerread.Target, dir, rootDir string) *session {
	ctx, cancel := context.WithCancel(bg)
	pr, pw := io.Pipe()
	n3 := containerread.NewNonce()
	s := &session{in: pw, out: newFrameWriter(n3), stderr: &boundedBuffer{n: 64 << 10}, cancel: cancel, done: make(chan struct{})}
	argv := sessionArgv(dir, rootDir)
	stdin := io.MultiReader(strings.NewReader(n3+"\n"), pr)
	go func() {
		err := se.ExecStdin(ctx, target, argv, stdin, s.out, s.stderr)
		s.err = err
		_ = pr.CloseWithError(io.ErrClosedPipe) // a request written after the end fails
		close(s.done)
	}()
	return s
}

func (s *session) ended() bool { return closed(s.done) }

// close ends the session: its stdin first (the script exits), and the
// stream.
func (s *session) close() {
	_ = s.in.Close()
	s.cancel()
}

// read sends one request and returns its read. A read given up (timeout,
// ctx) closes the session: its output would come to the next read, which
// must see the node as it is after it was asked.
func (s *session) read(ctx context.Context, req []byte, timeout time.Duration) (frame, error) {
	s.stderr.reset() // what this read prints on stderr, not an earlier one
	// fails only once the exec has ended, which done reports
	go func() { _, _ = s.in.Write(req) }()
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	select {
	case f := <-s.out.frames:
		return f, nil
	case <-s.done:
		select {
		case f := <-s.out.frames:
			return f, nil
		default:
		}
		if s.err != nil {
			return frame{}, s.err
		}
		return frame{}, errSessionEnded
	case <-expired:
		s.close()
		return frame{}, context.DeadlineExceeded
	case <-ctx.Done():
		s.close()
		return frame{}, ctx.Err()
	}
}

var errSessionEnded = errors.New("the node reader's session ended before its read")

// exitError is the error of a read whose script exited with status.
func exitError(status string) error {
	code, err := strconv.Atoi(status)
	if err != nil || code == 0 {
		return nil
	}
	return utilexec.CodeExitError{Err: fmt.Errorf("command terminated with exit code %d", code), Code: code}
}

// frame is the output of one read of a session, and its exit status.
type frame struct {
	out    []byte
	status string
}

// frameWriter is a session's stdout: it cuts the stream into frames at
// each Z record with the session's nonce, which a file's content cannot
// hold unless its writer knew the nonce (it is only on the session's
// stdin); each read's own nonces (parseRead) check the frame again.
type frameWriter struct {
	mu     sync.Mutex
	buf    []byte
	scan   int // where the search for the next end resumes
	end    []byte
	frames chan frame
	// greeted is closed by the script's greeting, its first output
	greeted     chan struct{}
	greetedOnce bool
}

func newFrameWriter(nonce string) *frameWriter {
	return &frameWriter{end: []byte("Z\x00" + nonce + "\x00"), frames: make(chan frame, 1), greeted: make(chan struct{})}
}

// Write implements io.Writer.
func (w *frameWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.Index(w.buf[w.scan:], w.end)
		if i < 0 {
			w.scan = max(0, len(w.buf)-len(w.end)+1)
			return len(p), nil
		}
		i += w.scan
		rest := w.buf[i+len(w.end):]
		j := bytes.IndexByte(rest, 0)
		if j < 0 {
			w.scan = i // the status is still to come
			return len(p), nil
		}
		f := frame{out: w.buf[:i:i], status: string(rest[:j])}
		w.buf, w.scan = bytes.Clone(rest[j+1:]), 0
		if f.status == "ready" && !w.greetedOnce {
			w.greetedOnce = true
			close(w.greeted)
			continue
		}
		select {
		case w.frames <- f:
		default:
			// only a read asked for makes output: out of step
			return 0, errors.New("node reader session: output nobody asked for")
		}
	}
}

// boundedBuffer keeps the first n bytes written to it.
type boundedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	n   int
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.n - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *boundedBuffer) reset() {
	b.mu.Lock()
	b.buf.Reset()
	b.mu.Unlock()
}

func (b *boundedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// sessionRead reads nr through rp's session, opening one when it has
// none (or it has ended, or was unused for sessionReuse). A session that
// had greeted and fails is replaced once, for the same read: the stream
// may have broken while it was idle. ok is false when nr cannot be sent as
// a request.
func (r *Reader) sessionRead(ctx context.Context, se StdinExecutor, rp *readerPod, nr *nodeBatch, dir string, maxBytes int64, timeout time.Duration) (got *nodeResult, verr *containerread.VerifyError, ok bool) {
	n1, n2 := containerread.NewNonce(), containerread.NewNonce()
	req, ok := sessionRequest(nr, maxBytes, n1, n2)
	if !ok {
		return nil, nil, false
	}
	for attempt := 0; ; attempt++ {
		s := r.sessionFor(se, rp, dir)
		greeted := s.greeted()
		f, err := s.read(ctx, req, timeout)
		if err != nil {
			r.dropSession(rp, s)
			if greeted && attempt == 0 && ctx.Err() == nil && r.bg.Err() == nil && !errors.Is(err, context.DeadlineExceeded) {
				continue
			}
			return nil, r.sessionError(ctx, rp.name, s, err), true
		}
		got, perr := parseRead(f.out, n1, n2, nr.paths, maxBytes)
		if perr != nil {
			r.dropSession(rp, s) // start afresh
			if err := exitError(f.status); err != nil {
				return nil, classify(ctx, r.opts.Namespace, rp.name, err, s.stderr.Bytes()), true
			}
			return nil, unexpectedOutput(r.opts.Namespace, rp.name, perr), true
		}
		return got, nil, true
	}
}

// sessionFor returns rp's session, opening one when it has none fit to
// use.
func (r *Reader) sessionFor(se StdinExecutor, rp *readerPod, dir string) *session {
	now := r.opts.Clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := rp.session; s != nil && !s.ended() && now.Sub(s.lastUsed) < sessionReuse {
		s.lastUsed = now
		return s
	}
	rp.endSession()
	rp.session = r.openSession(se, rp.name, dir)
	rp.session.lastUsed = now
	return rp.session
}

// openSession starts a session on the reader pod name.
func (r *Reader) openSession(se StdinExecutor, name, dir string) *session {
	return startSession(r.bg, se, containerread.Target{Namespace: r.opts.Namespace, Pod: name, Container: containerName}, dir, r.opts.KubeletRootDir)
}

// dropSession closes s and forgets it, if it is still rp's.
func (r *Reader) dropSession(rp *readerPod, s *session) {
	s.close()
	r.mu.Lock()
	if rp.session == s {
		rp.session = nil
	}
	r.mu.Unlock()
}

// sessionError says why a session's read failed.
func (r *Reader) sessionError(ctx context.Context, pod string, s *session, err error) *containerread.VerifyError {
	if errors.Is(err, errSessionEnded) {
		return &containerread.VerifyError{Reason: containerread.VerifyFailed,
			Message: "node reader " + r.opts.Namespace + "/" + pod + ": " + err.Error() + stderrNote(s.stderr.Bytes())}
	}
	return classify(ctx, r.opts.Namespace, pod, err, s.stderr.Bytes())
}

// stderrNote is the first line of what a script printed on stderr.
func stderrNote(b []byte) string {
	if l := firstLine(string(b)); l != "" {
		return " (" + l + ")"
	}
	return ""
}

const (
	// probeInterval is the pause between two sessions tried on a reader
	// pod that is starting, for probeSteady (a reader pod starts within a
	// second or two); then it grows by half each time, up to
	// probeMaxInterval, and the probe stops after probeFor (a pod whose
	// image is pulled starts in its own time, which the status tells).
	// Each refused try is two requests: WebSocket, then SPDY.
	probeInterval    = 150 * time.Millisecond
	probeSteady      = 3 * time.Second
	probeMaxInterval = time.Second
	probeFor         = 10 * time.Second
	// probeGrace is how long the probe may still open its session once
	// the pod's status says it runs; after it, the session is opened anew.
	probeGrace = time.Second
)

// probe opens sessions on the new reader pod name until one greets, sends
// it (nil when it gives up or ctx ends) and closes the channel. The kubelet
// finds the container of an exec through the runtime itself, so an exec
// succeeds as soon as the container runs, before the pod's status says
// so (the kubelet relists its containers once a second), and the session
// is open by then. A session that fails for another reason
// than a container not running yet ends the probe (the pod's status and
// the first read report it). Once running is closed (the status says the
// pod runs) it tries again without a pause.
func (r *Reader) probe(ctx context.Context, se StdinExecutor, name string, running <-chan struct{}) <-chan *session {
	out := make(chan *session, 1)
	go func() {
		defer close(out)
		out <- r.probeLoop(ctx, se, name, running)
	}()
	return out
}

func (r *Reader) probeLoop(ctx context.Context, se StdinExecutor, name string, running <-chan struct{}) *session {
	ctx, cancel := context.WithTimeout(ctx, probeFor)
	defer cancel()
	start := time.Now()
	for pause := probeInterval; ; {
		s := r.openSession(se, name, readDir)
		select {
		case <-s.out.greeted:
			return s
		case <-s.done:
			s.close()
		case <-ctx.Done():
			s.close()
			return nil
		}
		if s.err == nil || containerread.ClassifyExecError(ctx, s.err, s.stderr.Bytes()).Reason != containerread.VerifyNotRunning {
			return nil
		}
		if time.Since(start) > probeSteady {
			pause = min(pause*3/2, probeMaxInterval)
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-running:
			t.Stop()
		case <-t.C:
		}
	}
}

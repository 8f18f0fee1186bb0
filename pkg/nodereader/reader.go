package nodereader

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/coalesce"
	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread"
)

// Options configure a Reader.
type Options struct {
	// Namespace of the reader pods (default DefaultNamespace).
	Namespace string
	// Image of the reader pods (default DefaultImage).
	Image string
	// KubeletRootDir is the kubelet's --root-dir; "" finds it on the node.
	KubeletRootDir string
	// Lifetime bounds each reader pod (activeDeadlineSeconds; default
	// DefaultLifetime).
	Lifetime time.Duration
	// StartTimeout bounds the wait for a reader pod to run (default 60s).
	StartTimeout time.Duration
	// Concurrency bounds the nodes read at once (default 16).
	Concurrency int
	// Fallback, when set (--reader=auto), reads the containers of a node
	// where no reader pod can start (forbidden by RBAC or Pod Security, an
	// image that cannot be pulled, a node it cannot be scheduled on); that
	// node is not tried again for the rest of the run.
	Fallback containerread.Reader
	// Now is the API server's time (default time.Now): a reader pod of
	// another run has outlived its deadline by the clock that wrote its
	// creation time, not by a client's that may run ahead.
	Now func() time.Time
	// IdleTimeout, when positive, deletes a node's reader pod once no read
	// has used it for that long (idle.go); the next read of the node starts
	// a new one. 0 keeps every pod until Close (a one-shot command).
	IdleTimeout time.Duration
	// Clock measures IdleTimeout (default the real clock; tests).
	Clock clock.WithTicker
	// PodFailed, when set, is called once for each reader pod that failed:
	// it did not start (refused, not scheduled, its image not pulled, not
	// running within StartTimeout) or it ended during a read. A start
	// interrupted by Close or by the caller's context is no failure.
	PodFailed func()
}

func (o Options) withDefaults() Options {
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.Image == "" {
		o.Image = DefaultImage
	}
	if o.Lifetime <= 0 {
		o.Lifetime = DefaultLifetime
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.IdleTimeout < 0 {
		o.IdleTimeout = 0
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 60 * time.Second
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 16
	}
	return o
}

// Reader is a containerread.Reader with one reader pod per node, made
// when a node is first read and kept until Close (a wait reads the same
// nodes again and again), or, with Options.IdleTimeout, until it has been
// idle that long. Close must be called: it deletes the pods.
type Reader struct {
	client kubernetes.Interface
	exec   containerread.Executor
	opts   Options
	runID  string

	// bg ends at Close (stopBg), and with it every start under way;
	// starts counts them, prepares bounds Prepare's
	bg       context.Context
	stopBg   context.CancelFunc
	starts   sync.WaitGroup
	prepares chan struct{}

	sweep sync.Once
	// unsure: a create of this run's failed (it may have made a pod all
	// the same) or a deletion failed; Close then lists what is left
	unsure atomic.Bool
	mu     sync.Mutex
	closed bool                  // Close was called: no pod may outlive it
	pods   map[string]*readerPod // by node
	// prepared are the pods Prepare started (AwaitPrepared)
	prepared []*readerPod
	reads    coalesce.Keyed[string, *job] // by node
	// unavailable: the nodes where no reader could start, read by
	// Options.Fallback since
	unavailable map[string]bool
	// janitorDone is closed when the janitor (idle.go) has stopped; nil
	// while none was started
	janitorDone chan struct{}
}

// New returns a Reader; ex runs the reads in the reader pods (the exec
// reader's Executor).
func New(client kubernetes.Interface, ex containerread.Executor, o Options) *Reader {
	o = o.withDefaults()
	bg, stop := context.WithCancel(context.Background())
	r := &Reader{client: client, exec: ex, opts: o, runID: NewRunID(), pods: map[string]*readerPod{},
		unavailable: map[string]bool{}, bg: bg, stopBg: stop, prepares: make(chan struct{}, o.Concurrency)}
	r.reads.Ready = r.awaitStart
	return r
}

// RunID is the value of this run's LabelRun.
func (r *Reader) RunID() string { return r.runID }

// ReadContainers implements containerread.Reader: one exec per node.
func (r *Reader) ReadContainers(ctx context.Context, reqs []containerread.Request, o containerread.Options) []*containerread.Verified {
	out := make([]*containerread.Verified, len(reqs))
	fallback := make([]bool, len(reqs))
	dir := readDir
	nodes, failed := batchByNode(reqs, dir)
	for i, err := range failed {
		out[i] = &containerread.Verified{Err: err}
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, r.opts.Concurrency)
	for _, nr := range nodes {
		if r.isUnavailable(nr.node) {
			for _, c := range nr.containers {
				fallback[c.req] = true
			}
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			r.reads.Do(ctx, nr.node, &job{nr: nr, out: out, fallback: fallback}, func(ctx context.Context, jobs []*job) {
				r.readNode(ctx, merge(jobs), dir, o, jobs)
			})
		}()
	}
	wg.Wait()
	r.readFallback(ctx, reqs, out, fallback, o)
	return out
}

func (r *Reader) isUnavailable(node string) bool {
	if r.opts.Fallback == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.unavailable[node]
}

// readFallback reads the containers marked for Options.Fallback with it.
func (r *Reader) readFallback(ctx context.Context, reqs []containerread.Request, out []*containerread.Verified, marked []bool, o containerread.Options) {
	var sub []containerread.Request
	var at []int
	for i, m := range marked {
		if m {
			sub, at = append(sub, reqs[i]), append(at, i)
		}
	}
	if len(sub) == 0 || r.opts.Fallback == nil {
		return
	}
	for k, v := range r.opts.Fallback.ReadContainers(ctx, sub, o) {
		out[at[k]] = v
	}
}

// readOn reads the node through its reader pod. A reader that ended (its
// --reader-lifetime, an eviction) is replaced and the read made once more
// on the new one, so that a long-running controller's reads go on past a
// reader's deadline. started is false when no reader pod could be started
// (the caller falls back on exec where it may).
func (r *Reader) readOn(ctx context.Context, nr *nodeBatch, dir string, o containerread.Options) (got *nodeResult, started bool, verr *containerread.VerifyError) {
	for attempt := 0; attempt < 2; attempt++ {
		var rp *readerPod
		if rp, verr = r.podFor(ctx, nr.node); verr != nil {
			return nil, false, verr
		}
		var ended bool
		got, verr, ended = r.attempt(ctx, rp, nr, dir, o)
		if !ended {
			return got, true, verr
		}
		r.podFailed(ctx)
		r.forget(nr.node, rp.name) // ended: a new one for the next attempt, or the next read
	}
	return nil, true, verr
}

// podFailed reports a reader pod's failure to Options.PodFailed, unless
// the run or the read is being stopped (then it is no failure of the pod).
func (r *Reader) podFailed(ctx context.Context) {
	if r.opts.PodFailed != nil && ctx.Err() == nil && r.bg.Err() == nil {
		r.opts.PodFailed()
	}
}

// attempt is one read on rp, released even if it panics (readNode
// recovers): a pod left counted as in use would never be idle. ended: the
// read failed because the pod no longer runs.
func (r *Reader) attempt(ctx context.Context, rp *readerPod, nr *nodeBatch, dir string, o containerread.Options) (*nodeResult, *containerread.VerifyError, bool) {
	defer r.release(rp)
	got, verr := r.execNode(ctx, rp, nr, dir, o)
	return got, verr, verr != nil && !r.running(rp.name)
}

// readNode reads the containers of the jobs, merged into one read of the
// node, into each job's out; a failure is every one of their containers'.
func (r *Reader) readNode(ctx context.Context, nr *nodeBatch, dir string, o containerread.Options, jobs []*job) {
	fail := func(err *containerread.VerifyError) {
		for _, j := range jobs {
			for _, c := range j.nr.containers {
				j.out[c.req] = &containerread.Verified{Err: err, Execs: 1}
			}
		}
	}
	defer func() {
		if p := recover(); p != nil {
			fail(&containerread.VerifyError{Reason: containerread.VerifyFailed, Message: fmt.Sprint("internal error: ", p)})
		}
	}()
	got, started, verr := r.readOn(ctx, nr, dir, o)
	if verr != nil {
		fail(verr)
		if !started {
			r.fallBack(ctx, nr.node, jobs)
		}
		return
	}
	for _, j := range jobs {
		for _, c := range j.nr.containers {
			j.out[c.req] = containerVerified(c, got, nr.node)
		}
	}
}

// fallBack marks the node unavailable and the jobs' containers for
// Options.Fallback, when there is one and the reader failed to start (not
// because the run ends).
func (r *Reader) fallBack(ctx context.Context, node string, jobs []*job) {
	if r.opts.Fallback == nil || ctx.Err() != nil {
		return
	}
	r.mu.Lock()
	closed := r.closed
	if !closed {
		r.unavailable[node] = true
	}
	r.mu.Unlock()
	if closed {
		return
	}
	for _, j := range jobs {
		for _, c := range j.nr.containers {
			j.fallback[c.req] = true
		}
	}
}

// execNode reads the node through the reader pod rp: through its session
// when the Executor takes a stdin, else by one exec of the node script.
func (r *Reader) execNode(ctx context.Context, rp *readerPod, nr *nodeBatch, dir string, o containerread.Options) (*nodeResult, *containerread.VerifyError) {
	maxBytes := max(o.MaxBytes, 0)
	// one read serves many containers: its timeout grows with them
	timeout := o.Timeout
	if timeout > 0 {
		timeout += time.Duration(len(nr.containers)) * 100 * time.Millisecond
	}
	if se, ok := r.exec.(StdinExecutor); ok {
		if got, verr, sent := r.sessionRead(ctx, se, rp, nr, dir, maxBytes, timeout); sent {
			return got, verr
		}
	}
	cctx, cancel := ctx, context.CancelFunc(func() {})
	if timeout > 0 {
		cctx, cancel = context.WithTimeout(ctx, timeout)
	}
	defer cancel()
	n1, n2 := containerread.NewNonce(), containerread.NewNonce()
	var stdout, stderr bytes.Buffer
	err := r.exec.Exec(cctx, containerread.Target{Namespace: r.opts.Namespace, Pod: rp.name, Container: containerName}, nodeArgv(nr, dir, r.opts.KubeletRootDir, maxBytes, n1, n2), &stdout, &stderr)
	if err == nil && cctx.Err() != nil {
		err = cctx.Err()
	}
	got, perr := parseRead(stdout.Bytes(), n1, n2, nr.paths, maxBytes)
	switch {
	case perr == nil:
		return got, nil
	case err != nil:
		return nil, classify(cctx, r.opts.Namespace, rp.name, err, stderr.Bytes())
	}
	return nil, unexpectedOutput(r.opts.Namespace, rp.name, perr)
}

// parseRead parses the output of one run of the node script.
func parseRead(out []byte, n1, n2 string, paths []string, maxBytes int64) (*nodeResult, error) {
	no, err := parseNodeOutput(out, n2)
	if err != nil {
		return nil, err
	}
	obs, err := parsePaths(no.rest, n1, n2, paths, maxBytes)
	if err != nil {
		return nil, err
	}
	return &nodeResult{no: no, obs: obs}, nil
}

// classify says why a read of the reader pod failed.
func classify(ctx context.Context, namespace, pod string, err error, stderr []byte) *containerread.VerifyError {
	ve := containerread.ClassifyExecError(ctx, err, stderr)
	ve.Message = "node reader " + namespace + "/" + pod + ": " + ve.Message
	return ve
}

// unexpectedOutput is the failure of a read whose output did not parse.
func unexpectedOutput(namespace, pod string, perr error) *containerread.VerifyError {
	return &containerread.VerifyError{Reason: containerread.VerifyFailed, Message: fmt.Sprintf("node reader %s/%s: unexpected output (%v)", namespace, pod, perr)}
}

// parsePaths parses what the node script showed of the paths: a tar (T,
// parsed by tarread.go), or the verify script's records (V: the image has
// no tar, or tar failed).
func parsePaths(rest []byte, n1, n2 string, paths []string, maxBytes int64) (*containerread.Verified, error) {
	if bytes.HasPrefix(rest, []byte("T\x00")) {
		v, after, err := parseTarSection(rest[2:], n2, paths, maxBytes)
		if err != nil || v != nil {
			return v, err
		}
		rest = after
	}
	if bytes.HasPrefix(rest, []byte("V\x00")) {
		return containerread.ParseVerified(rest[2:], n1, paths)
	}
	return nil, containerread.ErrTruncated
}

// nodeResult is what one node read showed: the node script's output and
// the containers' files parsed from it.
type nodeResult struct {
	no  *nodeOutput
	obs *containerread.Verified
}

// containerVerified is one container's share of a node read, keyed by the
// container's own paths as the exec reader keys them.
func containerVerified(c containerPaths, got *nodeResult, node string) *containerread.Verified {
	if _, ok := got.no.pids[c.id]; !ok {
		return &containerread.Verified{Execs: 1, Err: &containerread.VerifyError{Reason: containerread.VerifyNotRunning,
			Message: fmt.Sprintf("no process of container %.12s on node %s (it may have just stopped)", c.id, node)}}
	}
	v := &containerread.Verified{Paths: map[string]*containerread.VerifiedPath{}, Execs: 1}
	for own, seen := range c.view {
		if p, ok := got.obs.Paths[seen]; ok {
			v.Paths[own] = p
		}
	}
	if c.env {
		containerEnv(v, c.id, got.no)
	}
	return v
}

// containerEnv sets the container's environment as the node script read
// it: from the runtime's OCI spec, else from its main process, saying why.
func containerEnv(v *containerread.Verified, id string, no *nodeOutput) {
	if msg, ok := no.specErr[id]; ok {
		v.EnvErr = msg + " (" + no.specPath[id] + ")"
		return
	}
	env, ok := no.env[id]
	_, fromSpec := no.specPath[id]
	switch {
	case ok && fromSpec:
		v.Env, v.EnvRead = env, true
	case ok && len(env) > 0:
		v.Env, v.EnvRead = env, true
		v.EnvNote = "read from the main process (/proc/PID/environ), as " + noSpecReason(no) +
			": an entrypoint that changes a variable before it execs shows its own value"
	case ok:
		v.EnvErr = "the main process's environment is empty (the process may have rewritten it), and " + noSpecReason(no)
	default:
		v.EnvErr = "neither the runtime's OCI spec nor the main process's environment (/proc/PID/environ) is readable from the node reader; " + noSpecReason(no)
	}
}

// noSpecReason says why no OCI spec was read for a container.
func noSpecReason(no *nodeOutput) string {
	if len(no.runtimes) == 0 {
		return "no containerd or CRI-O process was found on the node"
	}
	dirs := make([]string, len(no.runtimes))
	for i, rt := range no.runtimes {
		dirs[i] = fmt.Sprintf("%s's %s (%s)", rt.kind, rt.dir, rt.source)
	}
	return "the runtime's OCI spec of the container is not under " + strings.Join(dirs, " or ")
}

// running tells whether the reader pod still runs (a failed read of an
// ended pod is not retried on it: the next read makes a new one).
func (r *Reader) running(name string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p, err := r.client.CoreV1().Pods(r.opts.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return !apierrors.IsNotFound(err) // unknown: keep it, the next read tells
	}
	return p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning
}

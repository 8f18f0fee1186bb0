package inspect

// The words of --verify, as the files and unexported names use them:
//
//   - read: what a container has, read by a containerread.Reader (one exec
//     per container, or one per node with pkg/nodereader). This file plans
//     the reads, one per container (verify_request.go says what each use
//     needs read), runs them and gathers the results.
//   - precheck: the uses decided without a read (precheck.go).
//   - compare: what the container shows against what the API holds, one
//     file per kind of use (compare_volume.go, compare_subpath.go,
//     compare_env.go), giving a Comparison and its State.
//   - VerifyUses verifies a report's uses; pkg/refresh's Verifier
//     re-reads pods while a refresh waits, with it.

import (
	"context"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread"
)

// VerifyOptions tune Verify.
type VerifyOptions struct {
	// MaxBytes: larger files are compared by size and sha256 only
	// (0: 1 MiB; negative: every non-empty file by hash).
	MaxBytes int64
	// Concurrency bounds the execs running at once (default 16).
	Concurrency int
	// ExecTimeout bounds one exec (default 10s).
	ExecTimeout time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Progress receives a one-line progress report ("\r"-rewritten) once the
	// run has taken longer than ProgressAfter; nil for none. The caller
	// passes stderr only when it is a terminal.
	Progress      io.Writer
	ProgressAfter time.Duration
	// Reader reads the containers; nil: one exec per container through the
	// Executor given to VerifyUses (ExecReader).
	Reader containerread.Reader
}

func (o VerifyOptions) withDefaults() VerifyOptions {
	if o.MaxBytes == 0 {
		o.MaxBytes = 1 << 20
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 16
	}
	if o.ExecTimeout <= 0 {
		o.ExecTimeout = 10 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ProgressAfter <= 0 {
		o.ProgressAfter = 2 * time.Second
	}
	return o
}

// VerifiedUse is one verified use.
type VerifiedUse struct {
	Use        Use
	Comparison Comparison
	// Pod is the consuming pod (nil when it is not in the snapshot): its
	// spec tells which values of the container may come from a Secret.
	Pod *corev1.Pod
}

// Verify reads every consuming container (one exec per container, at
// most opts.Concurrency at once) and fills State, StateReason and SyncedAt
// of each item. It never fails: what could not be checked is unverifiable
// with the reason.
func Verify(ctx context.Context, items []Use, snap *Snapshot, ex containerread.Executor, opts VerifyOptions) []Use {
	res := VerifyUses(ctx, items, snap, ex, opts)
	out := make([]Use, len(res))
	for i, r := range res {
		out[i] = r.Use
	}
	return out
}

// VerifyUses is Verify with the comparisons behind each state (what
// `diff` prints). Results are in the order of items.
func VerifyUses(ctx context.Context, items []Use, snap *Snapshot, ex containerread.Executor, opts VerifyOptions) []VerifiedUse {
	opts = opts.withDefaults()
	if snap == nil {
		snap = &Snapshot{}
	}
	results := make([]VerifiedUse, len(items))
	// Each use's object and payload, computed once.
	inputs := make([]useInputs, len(items))
	reads := planReads(items, snap, results, inputs)
	reader := opts.Reader
	if reader == nil {
		reader = containerread.ExecReader{Executor: ex, Concurrency: opts.Concurrency, Progress: opts.Progress, ProgressAfter: opts.ProgressAfter}
	}
	readAll(ctx, reads, reader, containerread.Options{MaxBytes: opts.MaxBytes, Timeout: opts.ExecTimeout})
	co := CompareOptions{Now: opts.Now(), Object: snap.Object}
	for _, r := range reads {
		r.obs = explainRestart(r.obs, r.pod, r.container)
		for _, i := range r.uses {
			results[i].Comparison = safeCompare(items[i], results[i].Pod, inputs[i], r.obs, co)
		}
	}
	for i := range results {
		results[i].Use = withComparison(results[i].Use, results[i].Comparison)
	}
	return results
}

// containerKey names one consuming container.
type containerKey struct{ namespace, pod, container string }

// containerRead is the one exec into a container that serves all its uses:
// the paths to read (merged over the uses), the indexes of those uses, and
// what the read showed.
type containerRead struct {
	req   containerread.ExecRequest
	paths map[string]int // index in req.Paths by path
	uses  []int
	obs   *containerread.Verified

	// pod and container: the reader reads by the pod (its node, its
	// containers' IDs), and their status explains a failed read
	pod       *corev1.Pod
	container *ContainerRef
}

// planReads fills each result's item and pod, decides the uses that need no
// exec (precheck), and groups the others by container, in the order of
// their first use.
func planReads(items []Use, snap *Snapshot, results []VerifiedUse, inputs []useInputs) []*containerRead {
	pods := map[NamespacedName]*corev1.Pod{}
	for i := range snap.Pods {
		p := &snap.Pods[i]
		pods[NamespacedName{p.Namespace, p.Name}] = p
	}
	byContainer := map[containerKey]*containerRead{}
	var reads []*containerRead
	for i, it := range items {
		results[i].Use = it
		pod := pods[NamespacedName{it.Object.Namespace, it.Pod.Name}]
		results[i].Pod = pod
		obj := snap.Object(it.Key())
		if it.Object.Kind == KindSecret && obj.Unread && it.Container != nil {
			results[i].Comparison = Comparison{State: StateUnverifiable, Reason: "Secrets were not read (--secrets)", Cause: CauseSecretsNotRead}
			continue
		}
		inputs[i] = inputsFor(it, obj)
		if c, done := precheck(it, pod, inputs[i]); done {
			results[i].Comparison = c
			continue
		}
		k := containerKey{it.Object.Namespace, it.Pod.Name, it.Container.Name}
		r := byContainer[k]
		if r == nil {
			r = &containerRead{req: containerread.ExecRequest{Namespace: k.namespace, Pod: k.pod, Container: k.container}, paths: map[string]int{},
				pod: pod, container: it.Container}
			byContainer[k] = r
			reads = append(reads, r)
		}
		r.uses = append(r.uses, i)
		prs, env := requestFor(it, pod, inputs[i], snap.Object)
		r.add(prs, env)
	}
	return reads
}

// add merges what one use needs read into the container's request.
func (r *containerRead) add(prs []containerread.PathRequest, env bool) {
	r.req.Env = r.req.Env || env
	for _, pr := range prs {
		j, ok := r.paths[pr.Path]
		if !ok {
			r.paths[pr.Path] = len(r.req.Paths)
			r.req.Paths = append(r.req.Paths, pr)
			continue
		}
		m := &r.req.Paths[j]
		m.List = m.List || pr.List
		m.Expect = unionStrings(m.Expect, pr.Expect)
	}
}

// readAll hands every read to the reader and keeps what each showed; a
// reader that panics or answers for fewer containers leaves the others
// failed, not the run.
func readAll(ctx context.Context, reads []*containerRead, reader containerread.Reader, o containerread.Options) {
	reqs := make([]containerread.Request, len(reads))
	for i, r := range reads {
		reqs[i] = containerread.Request{ExecRequest: r.req, Pod: r.pod}
	}
	var got []*containerread.Verified
	func() {
		defer func() {
			if p := recover(); p != nil {
				got = nil
				for _, r := range reads {
					r.obs = &containerread.Verified{Err: &containerread.VerifyError{Reason: containerread.VerifyFailed, Message: fmt.Sprint("internal error: ", p)}}
				}
			}
		}()
		got = reader.ReadContainers(ctx, reqs, o)
	}()
	for i, r := range reads {
		switch {
		case i < len(got) && got[i] != nil:
			r.obs = got[i]
		case r.obs == nil:
			r.obs = &containerread.Verified{Err: &containerread.VerifyError{Reason: containerread.VerifyFailed, Message: "internal error: the reader returned no result"}}
		}
	}
}

// withComparison is the item with the state the comparison decided.
func withComparison(it Use, c Comparison) Use {
	it.State = c.State
	it.StateReason = c.Reason
	it.StateCause = c.Cause
	it.StateFix = c.Fix
	it.Verified = c.Verified
	if c.SyncedAt != nil {
		t := metav1.NewTime(c.SyncedAt.UTC())
		it.SyncedAt = &t
	} else {
		it.SyncedAt = nil
	}
	return it
}

// safeCompare is CompareUse that turns a panic into an unverifiable state:
// one odd container must not take the whole report down.
func safeCompare(it Use, pod *corev1.Pod, in useInputs, obs *containerread.Verified, o CompareOptions) (c Comparison) {
	defer func() {
		if r := recover(); r != nil {
			c = Comparison{State: StateUnverifiable, Reason: fmt.Sprint("internal error while comparing: ", r)}
		}
	}()
	return compareUse(it, pod, in, obs, o)
}

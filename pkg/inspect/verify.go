package inspect

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// Result is one verified use.
type Result struct {
	Item       Item
	Comparison Comparison
	// Pod is the consuming pod (nil when it is not in the snapshot): its
	// spec tells which values of the container may come from a Secret.
	Pod *corev1.Pod
}

// Verify observes every consuming container (one exec per container, at
// most opts.Concurrency at once) and fills State, StateReason and SyncedAt
// of each item. It never fails: what could not be checked is unverifiable
// with the reason.
func Verify(ctx context.Context, items []Item, snap *Snapshot, ex Executor, opts VerifyOptions) []Item {
	res := VerifyResults(ctx, items, snap, ex, opts)
	out := make([]Item, len(res))
	for i, r := range res {
		out[i] = r.Item
	}
	return out
}

type containerKey struct{ namespace, pod, container string }

// VerifyResults is Verify with the comparisons behind each state (what
// `diff` prints). Results are in the order of items.
func VerifyResults(ctx context.Context, items []Item, snap *Snapshot, ex Executor, opts VerifyOptions) []Result {
	opts = opts.withDefaults()
	if snap == nil {
		snap = &Snapshot{}
	}
	pods := map[NamespacedName]*corev1.Pod{}
	for i := range snap.Pods {
		p := &snap.Pods[i]
		pods[NamespacedName{p.Namespace, p.Name}] = p
	}
	results := make([]Result, len(items))
	// Each use's object and payload, computed once.
	inputs := make([]useInputs, len(items))
	type group struct {
		req   ObserveRequest
		paths map[string]int
		idx   []int
		obs   *Observation
	}
	groups := map[containerKey]*group{}
	var order []containerKey
	for i, it := range items {
		results[i].Item = it
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
		g := groups[k]
		if g == nil {
			g = &group{req: ObserveRequest{Namespace: k.namespace, Pod: k.pod, Container: k.container}, paths: map[string]int{}}
			groups[k] = g
			order = append(order, k)
		}
		g.idx = append(g.idx, i)
		prs, env := requestFor(it, pod, inputs[i], snap.Object)
		g.req.Env = g.req.Env || env
		for _, pr := range prs {
			j, ok := g.paths[pr.Path]
			if !ok {
				g.paths[pr.Path] = len(g.req.Paths)
				g.req.Paths = append(g.req.Paths, pr)
				continue
			}
			m := &g.req.Paths[j]
			m.List = m.List || pr.List
			m.Expect = unionStrings(m.Expect, pr.Expect)
		}
	}

	// Observe, at most Concurrency at once.
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		done    int
		printed bool
	)
	start := time.Now()
	sem := make(chan struct{}, opts.Concurrency)
	progress := func() {
		if opts.Progress == nil || len(order) < 2 {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if time.Since(start) < opts.ProgressAfter {
			return
		}
		printed = true
		fmt.Fprintf(opts.Progress, "\rverifying: %d/%d containers", done, len(order))
	}
	ticker := time.NewTicker(200 * time.Millisecond)
	stopTicker := make(chan struct{})
	go func() {
		for {
			select {
			case <-ticker.C:
				progress()
			case <-stopTicker:
				return
			}
		}
	}()
	for _, k := range order {
		g := groups[k]
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			defer func() {
				if r := recover(); r != nil {
					g.obs = &Observation{Err: &ObserveError{Reason: ObserveFailed, Message: fmt.Sprint("internal error: ", r)}}
				}
				mu.Lock()
				done++
				mu.Unlock()
			}()
			if ctx.Err() != nil {
				g.obs = &Observation{Err: &ObserveError{Reason: ObserveFailed, Message: "interrupted"}}
				return
			}
			g.obs = Observe(ctx, ex, g.req, ObserveOptions{MaxBytes: opts.MaxBytes, Timeout: opts.ExecTimeout})
		}()
	}
	wg.Wait()
	ticker.Stop()
	close(stopTicker)
	mu.Lock()
	if printed {
		fmt.Fprint(opts.Progress, "\r\033[K")
	}
	mu.Unlock()

	now := opts.Now()
	co := CompareOptions{Now: now, Object: snap.Object}
	for _, k := range order {
		g := groups[k]
		for _, i := range g.idx {
			it := items[i]
			pod := pods[NamespacedName{it.Object.Namespace, it.Pod.Name}]
			results[i].Comparison = safeCompare(it, pod, inputs[i], g.obs, co)
		}
	}
	for i := range results {
		c := results[i].Comparison
		results[i].Item.State = c.State
		results[i].Item.StateReason = c.Reason
		results[i].Item.StateCause = c.Cause
		results[i].Item.Observed = c.Observed
		if c.SyncedAt != nil {
			t := metav1.NewTime(c.SyncedAt.UTC())
			results[i].Item.SyncedAt = &t
		} else {
			results[i].Item.SyncedAt = nil
		}
	}
	return results
}

// safeCompare is CompareUse that turns a panic into an unverifiable state:
// one odd container must not take the whole report down.
func safeCompare(it Item, pod *corev1.Pod, in useInputs, obs *Observation, o CompareOptions) (c Comparison) {
	defer func() {
		if r := recover(); r != nil {
			c = Comparison{State: StateUnverifiable, Reason: fmt.Sprint("internal error while comparing: ", r)}
		}
	}()
	return compareUse(it, pod, in, obs, o)
}

package inspect

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"sort"
	"strings"
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

// FileStatus is how one file of a use compares.
type FileStatus string

const (
	FileEqual       FileStatus = "equal"
	FileDiffers     FileStatus = "differs"
	FileMissing     FileStatus = "missing"      // in the API, not in the container
	FileExtra       FileStatus = "extra"        // in the container, no longer in the API
	FileNotCompared FileStatus = "not-compared" // too large without sha256sum, or unreadable
)

// FileComparison compares one file of a volume or subPath use.
type FileComparison struct {
	// Path is relative to the use's mount (the volume root, or the
	// directory a subPath binds; "" for a subPath onto a file).
	Path     string
	Key      string
	Status   FileStatus
	Expected *ExpectedFile
	Observed *ObservedFile
	// ExpectedMode is the mode the kubelet leaves (fsGroup included);
	// ModeDiffers is informational: modes come from the pod spec, never
	// from the object, so they do not make a use stale.
	ExpectedMode int32
	ModeDiffers  bool
}

// EnvComparison compares one environment variable of an env or envFrom use.
type EnvComparison struct {
	Name, Key                string
	Expected, Observed       string
	ExpectedSet, ObservedSet bool
	Equal                    bool
}

// Comparison is the verdict of --verify for one use, with what it is based on.
type Comparison struct {
	State  State
	Reason string
	// Cause classifies an unverifiable state (see StateCause).
	Cause    StateCause
	SyncedAt *time.Time
	Files    []FileComparison
	Env      []EnvComparison
	// Observed tells whether the container was read.
	Observed bool
}

// Differs reports whether the comparison found content that differs.
func (c Comparison) Differs() bool {
	for _, f := range c.Files {
		if f.Status == FileDiffers || f.Status == FileMissing || f.Status == FileExtra {
			return true
		}
	}
	for _, e := range c.Env {
		if !e.Equal {
			return true
		}
	}
	return false
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

// useInputs is what one use is compared with, computed once per use: the
// object as the API has it and, for a volume use, the kubelet's payload.
type useInputs struct {
	obj   Object
	pl    Payload
	plErr error
}

func inputsFor(it Item, obj Object) useInputs {
	in := useInputs{obj: obj}
	switch it.Mode {
	case ModeVolume, ModeItems, ModeProjected, ModeSubPath, ModeSubPathExpr:
		in.pl, in.plErr = ItemPayload(it, obj)
	}
	return in
}

func unionStrings(a, b []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range append(append([]string{}, a...), b...) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// precheck decides the uses that need no exec: nothing to observe, a
// required object or key that is missing, a pod or container not running.
func precheck(it Item, pod *corev1.Pod, in useInputs) (Comparison, bool) {
	obj := in.obj
	what := fmt.Sprintf("%s %q", it.Object.Kind, it.Object.Name)
	if it.Mode == ModeUnmounted || it.Container == nil {
		return Comparison{State: StateNA, Reason: "no container mounts this volume: there is nothing to check"}, true
	}
	switch it.Mode {
	case ModeEnv, ModeEnvFrom:
		if !obj.Exists && !it.Optional {
			return Comparison{State: StateMissing, Reason: fmt.Sprintf("%s does not exist; a running container keeps the values it started with, and a restart fails until it is created", what)}, true
		}
		if it.Mode == ModeEnv && obj.Exists && !it.Optional && len(it.Keys) > 0 {
			if _, ok := envValue(obj, it.Keys[0]); !ok {
				return Comparison{State: StateMissing, Reason: fmt.Sprintf("key %q is not in %s; a running container keeps the value it started with, and a restart fails until the key is added", it.Keys[0], what)}, true
			}
		}
	default:
		if it.Volume == nil {
			return Comparison{State: StateNA, Reason: "no volume mount recorded for this use"}, true
		}
		if err := in.plErr; err != nil {
			var pe *PayloadError
			if errors.As(err, &pe) && (pe.ObjectMissing || len(pe.MissingKeys) > 0) {
				return Comparison{State: StateMissing, Reason: pe.Error() + "; the kubelet cannot update the volume, so the container keeps what it had (a new container cannot start)"}, true
			}
			return Comparison{State: StateUnverifiable, Reason: "the kubelet cannot write this volume: " + err.Error(), Cause: CauseVolumeNotWritable}, true
		}
	}
	if pod == nil {
		return Comparison{State: StateUnverifiable, Reason: "not running: the pod is not in the snapshot", Cause: CauseNotRunning}, true
	}
	if pod.DeletionTimestamp != nil {
		return Comparison{State: StateNA, Reason: "the pod is terminating: its replacement, if any, is checked instead"}, true
	}
	if PodTerminated(pod) {
		return Comparison{State: StateNA, Reason: fmt.Sprintf("the pod has completed (%s): nothing runs to check", pod.Status.Phase)}, true
	}
	// Judged per container, whatever the pod's phase: a Pending pod whose
	// other containers run still holds what they read.
	st, found := containerStatus(pod, it.Container.Name, it.Container.Type)
	if it.Container.Type == ContainerInit && found && st.State.Terminated != nil {
		return initContainerByTime(it, obj, st.State.Terminated), true
	}
	switch {
	case !found && it.Container.Type == ContainerInit:
		return Comparison{State: StateNA, Reason: "the init container has not run yet (no status): it reads the current content when it starts"}, true
	case !found:
		return Comparison{State: StateUnverifiable, Reason: "not running: the container has no status yet (it never started)", Cause: CauseNotRunning}, true
	case st.State.Running != nil:
		return Comparison{}, false
	case st.State.Waiting != nil:
		r := st.State.Waiting.Reason
		if r == "" {
			r = "Waiting"
		}
		if it.Container.Type == ContainerInit {
			return Comparison{State: StateNA, Reason: fmt.Sprintf("the init container has not run yet (%s): it reads the current content when it starts", r)}, true
		}
		if st.LastTerminationState.Terminated == nil && st.RestartCount == 0 {
			return Comparison{State: StateUnverifiable, Reason: fmt.Sprintf("not running: the container never started (waiting: %s)", r), Cause: CauseNotRunning}, true
		}
		return Comparison{State: StateUnverifiable, Reason: fmt.Sprintf("not running: the container is waiting (%s)", r), Cause: CauseNotRunning}, true
	case st.State.Terminated != nil:
		r := st.State.Terminated.Reason
		if r == "" {
			r = "Terminated"
		}
		return Comparison{State: StateNA, Reason: fmt.Sprintf("the container has terminated (%s): nothing to check", r)}, true
	}
	return Comparison{State: StateUnverifiable, Reason: "not running: the container state is unknown", Cause: CauseNotRunning}, true
}

// PodTerminated reports whether the pod has finished for good (phase
// Succeeded or Failed): nothing in it reads anything any more.
func PodTerminated(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// initContainerByTime judges a use of an init container that has finished:
// it cannot be read, and what it read (and copied or rendered, e.g. into an
// emptyDir) is fixed for the pod's life. So compare the object's last change
// with when the container ran: changed after it finished is stale, before it
// started is current, in between cannot be told. The last change is the
// object's (any key), to the second.
func initContainerByTime(it Item, obj Object, t *corev1.ContainerStateTerminated) Comparison {
	kind := strings.ToLower(it.Object.Kind)
	last := obj.LastChange
	if last.IsZero() && it.Object.LastChange != nil {
		last = it.Object.LastChange.Time
	}
	started, finished := t.StartedAt.Time, t.FinishedAt.Time
	stamp := func(x time.Time) string { return x.UTC().Format(time.RFC3339) }
	switch {
	case last.IsZero() || finished.IsZero():
		return Comparison{State: StateUnverifiable, Reason: fmt.Sprintf("the init container has finished and cannot be read, and the %s's last change time or the container's run time is unknown", kind)}
	case last.After(finished):
		return Comparison{State: StateStale, Reason: fmt.Sprintf("the %s changed at %s, after the init container finished at %s (judged by time: it cannot be read): what it read, and whatever it copied or rendered, is fixed for the pod's life; restart the workload so that a new pod runs it again",
			kind, stamp(last), stamp(finished))}
	case !started.IsZero() && last.Before(started):
		return Comparison{State: StateCurrent, Reason: fmt.Sprintf("the init container ran at %s, after the %s's last change at %s (judged by time: it cannot be read); it will not see the next change until a new pod runs it",
			stamp(started), kind, stamp(last))}
	}
	return Comparison{State: StateUnverifiable, Reason: fmt.Sprintf("the %s changed at %s, while the init container ran (%s to %s): whether it read the old or the new content cannot be told; restart the workload to be sure",
		kind, stamp(last), stamp(started), stamp(finished))}
}

func containerStatus(pod *corev1.Pod, name string, t ContainerType) (corev1.ContainerStatus, bool) {
	var list []corev1.ContainerStatus
	switch t {
	case ContainerInit, ContainerSidecar:
		list = pod.Status.InitContainerStatuses
	case ContainerEphemeral:
		list = pod.Status.EphemeralContainerStatuses
	default:
		list = pod.Status.ContainerStatuses
	}
	for _, s := range list {
		if s.Name == name {
			return s, true
		}
	}
	return corev1.ContainerStatus{}, false
}

// requestFor says what to read in the container for one use.
func requestFor(it Item, pod *corev1.Pod, in useInputs, lookup func(ObjectKey) Object) ([]PathRequest, bool) {
	pl := in.pl
	switch it.Mode {
	case ModeEnv, ModeEnvFrom:
		return nil, true
	case ModeVolume, ModeItems, ModeProjected:
		pr := PathRequest{Path: it.Volume.MountPath, List: len(it.Items) == 0}
		for _, f := range pl.Files {
			pr.Expect = append(pr.Expect, f.Path)
		}
		for _, kp := range it.Items {
			if ValidPayloadPath(kp.Path) {
				pr.Expect = unionStrings(pr.Expect, []string{path.Clean(kp.Path)})
			}
		}
		return []PathRequest{pr}, false
	case ModeSubPath, ModeSubPathExpr:
		pr := PathRequest{Path: it.Volume.MountPath, Expect: []string{""}}
		sub := it.Volume.SubPath
		if it.Mode == ModeSubPathExpr {
			// Only for the no-shell fallback's list of files to read: the
			// comparison expands it from what the container shows.
			sub, _ = ExpandSubPathExpr(it.Volume.SubPathExpr, specEnv(pod, it.Container.Name, lookup))
		}
		sub = cleanSubPath(sub)
		for _, f := range pl.Files {
			if rel, ok := strings.CutPrefix(f.Path, sub+"/"); ok {
				pr.Expect = append(pr.Expect, rel)
			}
		}
		return []PathRequest{pr}, it.Mode == ModeSubPathExpr
	}
	return nil, false
}

// cleanSubPath normalises a subPath to a payload path: relative, cleaned,
// through the ..data link.
func cleanSubPath(sub string) string {
	sub = path.Clean("/" + sub)[1:]
	if sub == "..data" {
		return ""
	}
	return strings.TrimPrefix(sub, "..data/")
}

// CompareOptions are the inputs of CompareUse besides the use itself.
type CompareOptions struct {
	Now time.Time
	// Object looks up other objects (other sources of a projected volume,
	// other envFrom sources); nil means none are known.
	Object func(ObjectKey) Object
}

// CompareUse decides the state of one use from what its container showed.
// pod is the consuming pod (its spec says which other sources share a
// projected volume and which env entries override others); obj the object
// as the API has it now.
func CompareUse(it Item, pod *corev1.Pod, obj Object, obs *Observation, o CompareOptions) Comparison {
	return compareUse(it, pod, inputsFor(it, obj), obs, o)
}

func compareUse(it Item, pod *corev1.Pod, in useInputs, obs *Observation, o CompareOptions) Comparison {
	obj := in.obj
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	if o.Object == nil {
		// Nothing is known of the other objects.
		o.Object = func(k ObjectKey) Object {
			return Object{Kind: k.Kind, Namespace: k.Namespace, Name: k.Name, Unread: true}
		}
	}
	if obs == nil {
		return Comparison{State: StateUnverifiable, Reason: "the container was not observed"}
	}
	if obs.Err != nil {
		return Comparison{State: StateUnverifiable, Reason: obs.Err.reasonFor(it.Object.Kind), Cause: causeOfObserveError(obs.Err.Reason)}
	}
	if obj.Unread {
		return Comparison{State: StateUnverifiable, Reason: fmt.Sprintf("%s %q was not read (add --secrets)", it.Object.Kind, it.Object.Name), Cause: CauseSecretsNotRead}
	}
	var c Comparison
	switch it.Mode {
	case ModeVolume, ModeItems, ModeProjected:
		c = compareVolume(it, pod, obj, in.pl, in.plErr, obs, o)
	case ModeSubPath, ModeSubPathExpr:
		c = compareSubPath(it, pod, obj, in.pl, in.plErr, obs, o)
	case ModeEnv:
		c = compareEnv(it, pod, obj, obs)
	case ModeEnvFrom:
		c = compareEnvFrom(it, pod, obj, obs, o)
	default:
		c = Comparison{State: StateNA, Reason: "nothing to check"}
	}
	c.Observed = true
	return c
}

func hasFSGroup(pod *corev1.Pod) bool {
	return pod != nil && pod.Spec.SecurityContext != nil && pod.Spec.SecurityContext.FSGroup != nil
}

func noShellNote(obs *Observation) string {
	if obs.NoShell {
		return " (no shell in the container: read file by file)"
	}
	return ""
}

// compareFile compares one expected file with what the container has.
func compareFile(e *ExpectedFile, of *ObservedFile, fsGroup bool) FileComparison {
	fc := FileComparison{Expected: e, Observed: of, ExpectedMode: -1}
	if e != nil {
		fc.Path, fc.Key = e.Path, e.Key
		fc.ExpectedMode = FSGroupMode(e.Mode, fsGroup)
	}
	switch {
	case e == nil:
		fc.Path, fc.Status = of.Path, FileExtra
		return fc
	case of == nil:
		fc.Status = FileMissing
		return fc
	}
	fc.ModeDiffers = of.Mode >= 0 && of.Mode&0o7777 != fc.ExpectedMode&0o7777
	switch {
	case of.HasData:
		fc.Status = FileDiffers
		if bytes.Equal(of.Data, e.Data) {
			fc.Status = FileEqual
		}
	case of.SHA256 != "":
		fc.Status = FileDiffers
		if (of.Size < 0 || of.Size == int64(len(e.Data))) && of.SHA256 == sha256Hex(e.Data) {
			fc.Status = FileEqual
		}
	case of.Size >= 0 && of.Size != int64(len(e.Data)):
		fc.Status = FileDiffers
	default:
		fc.Status = FileNotCompared
	}
	return fc
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// tally summarises file comparisons.
type tally struct {
	equal, differ, notCompared int
	names                      []string
	unread                     []string
}

func tallyFiles(fcs []FileComparison) tally {
	var t tally
	for _, f := range fcs {
		switch f.Status {
		case FileEqual:
			t.equal++
		case FileNotCompared:
			t.notCompared++
			t.unread = append(t.unread, displayPath(f.Path))
		default:
			t.differ++
			n := displayPath(f.Path)
			switch f.Status {
			case FileMissing:
				n += " (not in the container yet)"
			case FileExtra:
				n += " (removed from the API, still in the container)"
			}
			t.names = append(t.names, n)
		}
	}
	return t
}

func displayPath(p string) string {
	if p == "" {
		return "the file"
	}
	return fmt.Sprintf("%q", p)
}

func listNames(names []string, max int) string {
	if len(names) > max {
		return strings.Join(names[:max], ", ") + fmt.Sprintf(" and %d more", len(names)-max)
	}
	return strings.Join(names, ", ")
}

func compareVolume(it Item, pod *corev1.Pod, obj Object, pl Payload, plErr error, obs *Observation, o CompareOptions) Comparison {
	op := obs.Paths[it.Volume.MountPath]
	if op == nil {
		return Comparison{State: StateUnverifiable, Reason: "the mount was not read"}
	}
	if op.Err != "" {
		return Comparison{State: StateUnverifiable, Reason: "no shell: " + op.Err, Cause: CauseNoShell}
	}
	switch op.Kind {
	case PathMissing:
		return Comparison{State: StateUnverifiable, Reason: fmt.Sprintf("mountPath %q does not exist in the container", it.Volume.MountPath)}
	case PathDir, PathFile, PathOther:
		return Comparison{State: StateUnverifiable, Reason: fmt.Sprintf("no ..data link at mountPath %q: what the container sees there is not the kubelet's volume (shadowed by another mount?)", it.Volume.MountPath)}
	}
	if op.Unstable {
		return Comparison{State: StateUnverifiable, Reason: "the kubelet rewrote the volume while it was being read; run again"}
	}
	var c Comparison
	if t, ok := SyncedAt(op.Target); ok {
		c.SyncedAt = &t
	}
	if plErr != nil {
		return Comparison{State: StateUnverifiable, Reason: plErr.Error(), SyncedAt: c.SyncedAt}
	}
	fsGroup := hasFSGroup(pod)
	// A projected volume shares its directory with other sources: a later
	// source that writes the same path wins it, and a file this payload
	// lacks may be another source's.
	ps := otherSources(it, pod, o.Object)
	var unknown []string // paths an unread Secret may hold
	var unreadBy []string
	overridden := 0
	for i := range pl.Files {
		p := pl.Files[i].Path
		known, maybe := ps.overrides(p)
		switch {
		case known:
			overridden++
			continue
		case len(maybe) > 0:
			unknown = append(unknown, displayPath(p))
			unreadBy = unionStrings(unreadBy, maybe)
			continue
		}
		c.Files = append(c.Files, compareFile(&pl.Files[i], op.Files[p], fsGroup))
	}
	extra := func(p string, of *ObservedFile) {
		if _, ok := pl.File(p); ok {
			return
		}
		mine, maybe := ownsExtra(it, ps, p)
		if len(maybe) > 0 {
			unknown = append(unknown, displayPath(p))
			unreadBy = unionStrings(unreadBy, maybe)
		}
		if mine {
			c.Files = append(c.Files, compareFile(nil, of, fsGroup))
		}
	}
	extrasUnknown := false
	switch {
	case op.Listed:
		for _, p := range sortedKeys(op.Files) {
			extra(p, op.Files[p])
		}
	default: // no shell
		seen := map[string]bool{}
		for _, p := range sortedKeys(op.Files) {
			seen[p] = true
			extra(p, op.Files[p])
		}
		if len(it.Items) == 0 {
			if op.Names == nil {
				extrasUnknown = true
			}
			for _, n := range op.Names {
				if strings.HasPrefix(n, "..") || seen[n] {
					continue
				}
				extra(n, &ObservedFile{Path: n, Mode: -1, Size: -1})
			}
		}
	}
	sort.SliceStable(c.Files, func(i, j int) bool { return c.Files[i].Path < c.Files[j].Path })
	t := tallyFiles(c.Files)
	written := ""
	if c.SyncedAt != nil {
		written = fmt.Sprintf("; the kubelet last wrote the volume at %s", c.SyncedAt.UTC().Format(time.RFC3339))
	}
	kind := strings.ToLower(it.Object.Kind)
	note := ""
	if overridden > 0 {
		note = fmt.Sprintf("; %s overwritten by a later source of the projected volume not compared", plural(overridden, "file"))
	}
	if len(unknown) > 0 {
		note += "; not compared: " + unreadNote(listNames(unknown, 3), unreadBy)
	}
	switch {
	case t.differ == 0 && t.notCompared == 0 && !extrasUnknown && len(unknown) == 0:
		c.State = StateInSync
		c.Reason = fmt.Sprintf("matches the API (%s)%s%s%s", plural(t.equal, "file"), written, noShellNote(obs), note)
	case t.differ == 0 && len(unknown) > 0:
		// Never in-sync (a removed key may remain) nor pending (the file
		// may be the Secret's): unknown.
		c.State, c.Cause = StateUnverifiable, CauseSecretsNotRead
		c.Reason = fmt.Sprintf("the files of the %s that could be compared match (%s), but %s", kind, plural(t.equal, "file"),
			unreadNote(listNames(unknown, 3), unreadBy))
	case t.differ == 0:
		c.State = StateUnverifiable
		if t.notCompared > 0 {
			c.Reason = fmt.Sprintf("%s not compared: larger than --max-bytes and the container has no sha256sum, or unreadable (%s); the rest matches", plural(t.notCompared, "file"), listNames(t.unread, 3))
		} else {
			c.Reason, c.Cause = "no shell: every expected file matches, but without sh or ls the container's other files cannot be listed", CauseNoShell
		}
	case it.Object.Immutable || obj.Immutable:
		c.State = StateStale
		c.Reason = fmt.Sprintf("differs from the API (%s), and the %s is immutable: it was deleted and re-created, and the kubelet keeps serving its old copy (even to new pods on this node while any pod there uses it); roll out a new name",
			listNames(t.names, 3), kind)
	default:
		c.State = StatePending
		c.Reason = fmt.Sprintf("differs from the API (%s); %s%s%s", listNames(t.names, 3), pendingTiming(it, obj, o.Now), written, note)
	}
	return c
}

// pendingTiming says how long ago the object changed against the delay
// estimate.
func pendingTiming(it Item, obj Object, now time.Time) string {
	d := Delay{Min: durationOf(0), Max: durationOf(time.Duration(float64(DefaultSyncFrequency) * (1 + syncJitter))), Basis: BasisDefault}
	if it.Delay != nil {
		d = *it.Delay
	}
	kind := strings.ToLower(it.Object.Kind)
	last := obj.LastChange
	if last.IsZero() && it.Object.LastChange != nil {
		last = it.Object.LastChange.Time
	}
	if last.IsZero() {
		return fmt.Sprintf("the kubelet applies changes within %s", formatDelay(d))
	}
	since := now.Sub(last)
	if since < 0 {
		since = 0
	}
	ago := since.Truncate(time.Second).String()
	if since > d.Max.Duration {
		return fmt.Sprintf("the %s changed %s ago, longer than the %s the kubelet should take: it may be failing to sync this pod (see the pod's events); a pod annotation (refresh) makes it re-sync now",
			kind, ago, formatDelay(d))
	}
	return fmt.Sprintf("the %s changed %s ago and the kubelet applies changes within %s", kind, ago, formatDelay(d))
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ownsExtra says whether a file at path p of the volume (relative to its
// root) that this use's payload lacks is this use's to explain (a key
// removed from the object): any file of a whole configMap or secret volume;
// only the listed paths of a source with items; for a whole source of a
// projected volume, a top-level name. A path another source writes is not;
// a path an unread Secret source may write is not either, and unreadBy names
// those sources.
func ownsExtra(it Item, ps projectedSources, p string) (mine bool, unreadBy []string) {
	if len(it.Items) > 0 {
		listed := false
		for _, kp := range it.Items {
			if path.Clean(kp.Path) == p {
				listed = true
				break
			}
		}
		if !listed {
			return false, nil
		}
	} else if !ps.projected {
		return true, nil
	} else if strings.Contains(p, "/") {
		return false, nil
	}
	known, maybe := ps.writes(p)
	if known {
		return false, nil
	}
	if len(maybe) > 0 {
		return false, maybe
	}
	return true, nil
}

func podVolume(pod *corev1.Pod, name string) *corev1.Volume {
	if pod == nil {
		return nil
	}
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == name {
			return &pod.Spec.Volumes[i]
		}
	}
	return nil
}

// projectedSources is what the other sources of a use's projected volume
// write, as far as it is known. The zero value (not a projected volume)
// writes nothing.
type projectedSources struct {
	projected bool
	// claimed holds the paths the other sources write at fixed places
	// (downwardAPI, serviceAccountToken, clusterTrustBundle, podCertificate
	// and items of configMap and secret sources) and every directory above
	// them; whole holds the other whole configMap and secret sources read.
	claimed map[string]bool
	whole   []Object
	// unread names the other whole Secret sources that were not read: any
	// top-level name may be one of their keys.
	unread []string
	// The same for the sources after this use's own: they win a path both
	// write (the kubelet merges the sources in order, a later one
	// overwriting an earlier one's file).
	laterFixed  map[string]bool
	laterWhole  []Object
	laterUnread []string
}

// otherSources describes the other sources of the use's projected volume:
// configMap, secret, downwardAPI, serviceAccountToken, clusterTrustBundle
// and podCertificate. lookup reads the configMap and secret sources.
func otherSources(it Item, pod *corev1.Pod, lookup func(ObjectKey) Object) projectedSources {
	var v *corev1.Volume
	if it.Volume != nil {
		v = podVolume(pod, it.Volume.Name)
	}
	if v == nil || v.Projected == nil {
		return projectedSources{}
	}
	ps := projectedSources{projected: true, claimed: map[string]bool{}, laterFixed: map[string]bool{}}
	self, later := false, false
	for _, s := range v.Projected.Sources {
		var kind, name string
		var items []corev1.KeyToPath
		var fixed []string
		switch {
		case s.ConfigMap != nil:
			kind, name, items = KindConfigMap, s.ConfigMap.Name, s.ConfigMap.Items
		case s.Secret != nil:
			kind, name, items = KindSecret, s.Secret.Name, s.Secret.Items
		case s.DownwardAPI != nil:
			for _, f := range s.DownwardAPI.Items {
				fixed = append(fixed, f.Path)
			}
		case s.ServiceAccountToken != nil:
			fixed = append(fixed, s.ServiceAccountToken.Path)
		case s.ClusterTrustBundle != nil:
			fixed = append(fixed, s.ClusterTrustBundle.Path)
		case s.PodCertificate != nil:
			fixed = append(fixed, s.PodCertificate.CredentialBundlePath, s.PodCertificate.KeyPath, s.PodCertificate.CertificateChainPath)
		}
		if kind == it.Object.Kind && name == it.Object.Name && !self && sameItems(items, it.Items) {
			self, later = true, true
			continue
		}
		for _, kp := range items {
			fixed = append(fixed, kp.Path)
		}
		if kind != "" && len(items) == 0 {
			obj := Object{Kind: kind, Namespace: it.Object.Namespace, Name: name}
			if lookup != nil {
				obj = lookup(ObjectKey{Kind: kind, Namespace: it.Object.Namespace, Name: name})
			} else {
				obj.Unread = true
			}
			switch {
			case obj.Unread:
				what := fmt.Sprintf("%s %q", kind, name)
				ps.unread = append(ps.unread, what)
				if later {
					ps.laterUnread = append(ps.laterUnread, what)
				}
			default:
				ps.whole = append(ps.whole, obj)
				if later {
					ps.laterWhole = append(ps.laterWhole, obj)
				}
			}
		}
		for _, f := range fixed {
			if f == "" {
				continue
			}
			c := path.Clean(f)
			ps.claimed[c] = true
			if later {
				ps.laterFixed[c] = true
			}
			for d := path.Dir(c); d != "." && d != "/"; d = path.Dir(d) {
				ps.claimed[d] = true
			}
		}
	}
	return ps
}

// writes reports whether another source writes the path p (cleaned,
// relative to the volume root) or something below it: known when a source
// that was read (or a fixed path) does, maybe naming the unread Secret
// sources that could (their keys are top-level names).
func (ps projectedSources) writes(p string) (known bool, maybe []string) {
	if !ps.projected {
		return false, nil
	}
	return sourcesWrite(p, ps.claimed, ps.whole, ps.unread)
}

// overrides reports whether a source after this use's own writes the file
// p, so that the container shows that source's file there, not this one's.
func (ps projectedSources) overrides(p string) (known bool, maybe []string) {
	if !ps.projected {
		return false, nil
	}
	return sourcesWrite(p, ps.laterFixed, ps.laterWhole, ps.laterUnread)
}

// sourcesWrite: p is written by a fixed path or a whole source that was
// read (known), or maybe by unread Secrets (their keys are top-level names).
func sourcesWrite(p string, fixed map[string]bool, whole []Object, unread []string) (known bool, maybe []string) {
	if fixed[p] {
		return true, nil
	}
	for _, w := range whole {
		if _, ok := w.Data[p]; ok {
			return true, nil
		}
	}
	if !strings.Contains(p, "/") {
		maybe = unread
	}
	return false, maybe
}

// unreadNote explains files or variables left out because unread Secrets
// may provide them.
func unreadNote(what string, by []string) string {
	verb := "was"
	if len(by) > 1 {
		verb = "were"
	}
	return fmt.Sprintf("%s may come from %s, which %s not read (add --secrets)", what, strings.Join(by, " or "), verb)
}

func sameItems(a []corev1.KeyToPath, b []KeyPath) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key != b[i].Key || a[i].Path != b[i].Path {
			return false
		}
	}
	return true
}

func compareSubPath(it Item, pod *corev1.Pod, obj Object, pl Payload, plErr error, obs *Observation, o CompareOptions) Comparison {
	op := obs.Paths[it.Volume.MountPath]
	if op == nil {
		return Comparison{State: StateUnverifiable, Reason: "the mount was not read"}
	}
	if op.Err != "" {
		return Comparison{State: StateUnverifiable, Reason: "no shell: " + op.Err, Cause: CauseNoShell}
	}
	sub := it.Volume.SubPath
	if it.Mode == ModeSubPathExpr {
		if !obs.EnvRead {
			return Comparison{State: StateUnverifiable, Reason: "cannot resolve subPathExpr: the container's environment could not be read"}
		}
		s, err := ExpandSubPathExpr(it.Volume.SubPathExpr, obs.Env)
		if err != nil {
			return Comparison{State: StateUnverifiable, Reason: "cannot resolve subPathExpr: " + err.Error()}
		}
		sub = s
	}
	sub = cleanSubPath(sub)
	if plErr != nil {
		return Comparison{State: StateUnverifiable, Reason: plErr.Error()}
	}
	shown := subPathShown(it, pod, sub)
	fsGroup := hasFSGroup(pod)
	kind := strings.ToLower(it.Object.Kind)
	restart := "a subPath mount is bound when the container starts and never follows the volume: restart the workload"
	ps := otherSources(it, pod, o.Object)
	if f, ok := pl.File(sub); ok {
		// subPath onto a file.
		if known, maybe := ps.overrides(sub); known {
			return Comparison{State: StateNA, Reason: fmt.Sprintf("subPath %s shows the file of a later source of projected volume %q, which wins over this %s", shown, it.Volume.Name, kind)}
		} else if len(maybe) > 0 {
			return Comparison{State: StateUnverifiable, Reason: fmt.Sprintf("subPath %s %s", shown, unreadNote("", maybe)[1:]), Cause: CauseSecretsNotRead}
		}
		f.Path = ""
		var of *ObservedFile
		switch {
		case op.Kind == PathDir || (op.Kind == PathUnknown && containsString(op.Dirs, "")):
			return Comparison{State: StateStale, Reason: fmt.Sprintf("the container sees a directory at %q: it started before key %q existed; %s", it.Volume.MountPath, f.Key, restart),
				Files: []FileComparison{{Path: "", Key: f.Key, Status: FileMissing, Expected: &f, ExpectedMode: FSGroupMode(f.Mode, fsGroup)}}}
		case op.Kind == PathMissing:
			return Comparison{State: StateUnverifiable, Reason: fmt.Sprintf("mountPath %q does not exist in the container", it.Volume.MountPath)}
		case op.Kind == PathOther:
			return Comparison{State: StateUnverifiable, Reason: fmt.Sprintf("mountPath %q is not a regular file in the container", it.Volume.MountPath)}
		}
		of = op.Files[""]
		fc := compareFile(&f, of, fsGroup)
		c := Comparison{Files: []FileComparison{fc}}
		switch fc.Status {
		case FileEqual:
			c.State = StateCurrent
			c.Reason = fmt.Sprintf("matches the API now; it will keep this content after the next change of the %s until the container restarts%s", kind, noShellNote(obs))
		case FileNotCompared:
			c.State = StateUnverifiable
			c.Reason = "the file was not compared: larger than --max-bytes and the container has no sha256sum, or unreadable"
		case FileMissing:
			c.State = StateUnverifiable
			c.Reason = fmt.Sprintf("the file at mountPath %q could not be read", it.Volume.MountPath)
		default:
			c.State = StateStale
			c.Reason = fmt.Sprintf("differs from the API: %s", restart)
		}
		return c
	}
	prefix := sub + "/"
	if sub == "" {
		prefix = ""
	}
	var expected []ExpectedFile
	var unknown, unreadBy []string
	overridden := 0
	for _, f := range pl.Files {
		rel, ok := strings.CutPrefix(f.Path, prefix)
		if !ok {
			continue
		}
		if known, maybe := ps.overrides(f.Path); known {
			overridden++
			continue
		} else if len(maybe) > 0 {
			unknown = append(unknown, displayPath(rel))
			unreadBy = unionStrings(unreadBy, maybe)
			continue
		}
		f.Path = rel
		expected = append(expected, f)
	}
	if op.Kind == PathFile || (op.Kind == PathUnknown && op.Files[""] != nil) {
		// A file the API no longer has (a removed key) or another
		// source's file.
		known, maybe := ps.writes(sub)
		switch {
		case known || (ps.projected && len(it.Items) > 0):
			return Comparison{State: StateNA, Reason: fmt.Sprintf("subPath %s comes from another source of the projected volume", shown)}
		case len(maybe) > 0:
			return Comparison{State: StateUnverifiable, Reason: fmt.Sprintf("the container has a file at subPath %s, which the %s does not provide: it %s", shown, kind, unreadNote("", maybe)[1:]), Cause: CauseSecretsNotRead}
		}
		return Comparison{State: StateStale, Reason: fmt.Sprintf("the container still has subPath %s, which the %s no longer provides; %s", shown, kind, restart),
			Files: []FileComparison{compareFile(nil, op.Files[""], fsGroup)}}
	}
	if op.Kind == PathMissing {
		return Comparison{State: StateUnverifiable, Reason: fmt.Sprintf("mountPath %q does not exist in the container", it.Volume.MountPath)}
	}
	if op.Kind == PathOther || op.Kind == PathAtomic {
		return Comparison{State: StateUnverifiable, Reason: fmt.Sprintf("mountPath %q is not what a subPath mount of this volume shows", it.Volume.MountPath)}
	}
	// subPath onto a directory (or onto a path the payload lacks, which the
	// kubelet makes an empty directory).
	var c Comparison
	for i := range expected {
		c.Files = append(c.Files, compareFile(&expected[i], op.Files[expected[i].Path], fsGroup))
	}
	extrasUnknown := !op.Listed
	for _, p := range sortedKeys(op.Files) {
		if p == "" {
			continue
		}
		if _, ok := pl.File(prefix + p); ok {
			continue // expected, or another source's that wins
		}
		known, maybe := ps.writes(prefix + p)
		if known {
			continue
		}
		if len(maybe) > 0 {
			unknown = append(unknown, displayPath(p))
			unreadBy = unionStrings(unreadBy, maybe)
			continue
		}
		c.Files = append(c.Files, compareFile(nil, op.Files[p], fsGroup))
	}
	sort.SliceStable(c.Files, func(i, j int) bool { return c.Files[i].Path < c.Files[j].Path })
	t := tallyFiles(c.Files)
	seen := len(op.Files) + len(op.Dirs) + len(op.Others)
	note := ""
	if overridden > 0 {
		note = fmt.Sprintf("; %s overwritten by a later source of the projected volume not compared", plural(overridden, "file"))
	}
	switch {
	case t.differ == 0 && len(unknown) > 0:
		c.State, c.Cause = StateUnverifiable, CauseSecretsNotRead
		c.Reason = fmt.Sprintf("the files of the %s that could be compared match (%s), but %s", kind, plural(t.equal, "file"), unreadNote(listNames(unknown, 3), unreadBy))
	case len(expected) == 0 && t.differ == 0 && overridden == 0:
		c.State = StateCurrent
		c.Reason = fmt.Sprintf("subPath %s is not in the payload; the container sees an empty directory, as the kubelet made it", shown)
	case t.differ == 0 && t.notCompared == 0 && !extrasUnknown:
		c.State = StateCurrent
		c.Reason = fmt.Sprintf("matches the API now (%s); at the next change of the %s the kubelet deletes this directory and the container sees it empty until it restarts%s", plural(t.equal, "file"), kind, note)
	case t.differ == 0:
		c.State = StateUnverifiable
		c.Reason = "the files that could be read match, but not all could be compared (no sha256sum for large files, or no shell to list the directory)"
	case seen == 0 && op.Listed:
		c.State = StateBroken
		c.Reason = fmt.Sprintf("the container sees an empty directory at %q: the kubelet deleted the directory this subPath was bound to when the %s changed; restart the workload (and mount the volume without subPath to get updates)", it.Volume.MountPath, kind)
	case op.Kind == PathUnknown && t.equal == 0 && t.notCompared == 0 && len(expected) > 0 && !containsExtra(c.Files):
		c.State = StateBroken
		c.Reason = fmt.Sprintf("none of the files is at %q any more: the kubelet deleted the directory this subPath was bound to when the %s changed; restart the workload", it.Volume.MountPath, kind)
	default:
		c.State = StateStale
		c.Reason = fmt.Sprintf("differs from the API (%s): %s%s", listNames(t.names, 3), restart, note)
		if len(unknown) > 0 {
			c.Reason += "; not compared: " + unreadNote(listNames(unknown, 3), unreadBy)
		}
	}
	return c
}

func containsExtra(fcs []FileComparison) bool {
	for _, f := range fcs {
		if f.Status == FileExtra {
			return true
		}
	}
	return false
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// ExpandSubPathExpr expands $(VAR) references as the kubelet does
// (third_party/forked/golang/expansion and ExpandContainerVolumeMounts):
// "$$" is a literal "$", an unknown or empty variable is an error. It is the
// one expander of this package: predict gives it the environment the pod
// spec and the snapshot tell (specEnv), compare the container's own.
func ExpandSubPathExpr(expr string, env map[string]string) (string, error) {
	var missing []string
	out := expand(expr, func(name string) (string, bool) {
		v := env[name]
		if v == "" {
			missing = append(missing, name)
		}
		return v, true
	})
	if len(missing) > 0 {
		sort.Strings(missing)
		return "", fmt.Errorf("missing value for %s", strings.Join(unionStrings(missing, nil), ", "))
	}
	return out, nil
}

// expandEnvValue expands the $(VAR) references of an env entry's value
// against the variables defined before it, as the kubelet does: an unknown
// reference stays as it is.
func expandEnvValue(v string, vars map[string]string) string {
	return expand(v, func(name string) (string, bool) {
		s, ok := vars[name]
		return s, ok
	})
}

// expand is the kubelet's expansion.Expand: mapping returns a variable's
// value, or false to keep the reference as written.
func expand(expr string, mapping func(string) (string, bool)) string {
	var b strings.Builder
	for i := 0; i < len(expr); i++ {
		c := expr[i]
		if c != '$' || i+1 >= len(expr) {
			b.WriteByte(c)
			continue
		}
		switch n := expr[i+1]; n {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(expr[i+2:], ')')
			if end < 0 {
				b.WriteString("$(")
				i++
				continue
			}
			name := expr[i+2 : i+2+end]
			if v, ok := mapping(name); ok {
				b.WriteString(v)
			} else {
				b.WriteString("$(" + name + ")")
			}
			i += 2 + end
		default:
			b.WriteByte('$')
			b.WriteByte(n)
			i++
		}
	}
	return b.String()
}

// envValue returns what an env valueFrom reference reads: a ConfigMap's
// data (never binaryData), a Secret's data.
func envValue(obj Object, key string) (string, bool) {
	if !obj.Exists {
		return "", false
	}
	v, ok := obj.Data[key]
	if !ok || (obj.Kind == KindConfigMap && obj.BinaryKeys[key]) {
		return "", false
	}
	return string(v), true
}

func envRefers(e corev1.EnvVar, kind, name, key string) bool {
	if e.ValueFrom == nil {
		return false
	}
	switch kind {
	case KindConfigMap:
		r := e.ValueFrom.ConfigMapKeyRef
		return r != nil && r.Name == name && r.Key == key
	case KindSecret:
		r := e.ValueFrom.SecretKeyRef
		return r != nil && r.Name == name && r.Key == key
	}
	return false
}

func compareEnv(it Item, pod *corev1.Pod, obj Object, obs *Observation) Comparison {
	if !obs.EnvRead {
		return Comparison{State: StateUnverifiable, Reason: "cannot read the container's environment: " + orDefault(obs.EnvErr, "unknown reason")}
	}
	if len(it.Keys) == 0 || it.EnvName == "" {
		return Comparison{State: StateNA, Reason: "no variable recorded for this use"}
	}
	key, name := it.Keys[0], it.EnvName
	if c, ok := findContainer(pod, it.Container.Name); ok {
		env := c.env
		for i := len(env) - 1; i >= 0; i-- {
			if env[i].Name != name {
				continue
			}
			if !envRefers(env[i], it.Object.Kind, it.Object.Name, key) {
				return Comparison{State: StateNA, Reason: fmt.Sprintf("variable %s is set again by a later env entry, which wins", name)}
			}
			break
		}
	}
	want, wantSet := envValue(obj, key)
	got, gotSet := obs.Env[name]
	ec := EnvComparison{Name: name, Key: key, Expected: want, ExpectedSet: wantSet, Observed: got, ObservedSet: gotSet,
		Equal: wantSet == gotSet && want == got}
	c := Comparison{Env: []EnvComparison{ec}}
	kind := strings.ToLower(it.Object.Kind)
	restart := "environment variables are read when the container starts: restart the workload"
	switch {
	case ec.Equal && wantSet:
		c.State = StateCurrent
		c.Reason = fmt.Sprintf("%s matches the API now; it will not follow the next change of the %s until the container restarts", name, kind)
	case ec.Equal:
		c.State = StateCurrent
		c.Reason = fmt.Sprintf("%s is unset, as the API has no key %q (optional)", name, key)
	case !wantSet:
		c.State = StateStale
		c.Reason = fmt.Sprintf("%s is still set, but key %q is no longer in the %s; %s", name, key, kind, restart)
	case !gotSet:
		c.State = StateStale
		c.Reason = fmt.Sprintf("%s is not set in the container, but key %q is in the %s now; %s", name, key, kind, restart)
	default:
		c.State = StateStale
		c.Reason = fmt.Sprintf("%s differs from key %q of the %s; %s", name, key, kind, restart)
	}
	return c
}

// envSources is what else sets the variables of a container besides one
// envFrom use: its env entries (they win over every envFrom source) and its
// other envFrom sources (a later one wins a name over an earlier one).
type envSources struct {
	names  map[string]bool
	others []envFromSource
}

type envFromSource struct {
	prefix string
	obj    Object
	later  bool // after the use's own source: it wins a name both set
}

func (s envFromSource) what() string { return fmt.Sprintf("%s %q", s.obj.Kind, s.obj.Name) }

// sets reports whether the source sets the variable name: known for an
// object that was read, maybe for one that was not (any key could be).
func (s envFromSource) sets(name string) (known, maybe bool) {
	key, ok := strings.CutPrefix(name, s.prefix)
	if !ok {
		return false, false
	}
	if s.obj.Unread {
		return false, true
	}
	_, known = envValue(s.obj, key)
	return known, false
}

func otherEnvSources(it Item, pod *corev1.Pod, lookup func(ObjectKey) Object) envSources {
	es := envSources{names: map[string]bool{}}
	c, ok := findContainer(pod, it.ContainerName())
	if !ok {
		return es
	}
	for _, e := range c.env {
		es.names[e.Name] = true
	}
	self := false
	for _, ef := range c.envFrom {
		if !self && envFromRefers(ef, it.Object.Kind, it.Object.Name) && ef.Prefix == it.EnvPrefix {
			self = true
			continue
		}
		var k ObjectKey
		switch {
		case ef.ConfigMapRef != nil:
			k = ObjectKey{KindConfigMap, it.Object.Namespace, ef.ConfigMapRef.Name}
		case ef.SecretRef != nil:
			k = ObjectKey{KindSecret, it.Object.Namespace, ef.SecretRef.Name}
		default:
			continue
		}
		es.others = append(es.others, envFromSource{prefix: ef.Prefix, obj: lookup(k), later: self})
	}
	return es
}

// overrides reports whether an env entry or a later envFrom source sets
// name, so that the container shows its value, not this use's: known, or
// maybe (naming the unread sources that could).
func (es envSources) overrides(name string) (known bool, maybe []string) {
	return es.setBy(name, true)
}

// setsElsewhere is overrides for any other source, earlier ones included.
func (es envSources) setsElsewhere(name string) (known bool, maybe []string) {
	return es.setBy(name, false)
}

func (es envSources) setBy(name string, laterOnly bool) (known bool, maybe []string) {
	if es.names[name] {
		return true, nil
	}
	for _, s := range es.others {
		if laterOnly && !s.later {
			continue
		}
		k, m := s.sets(name)
		if k {
			return true, nil
		}
		if m {
			maybe = append(maybe, s.what())
		}
	}
	return false, maybe
}

// serviceLinkRe matches the variables the kubelet sets for services
// (enableServiceLinks): FOO_SERVICE_HOST, FOO_PORT_80_TCP_ADDR, ...
var serviceLinkRe = regexp.MustCompile(`_(SERVICE_HOST|SERVICE_PORT(_[A-Z0-9_]+)?|PORT(_[0-9]+_(TCP|UDP|SCTP)(_PROTO|_PORT|_ADDR)?)?)$`)

func serviceLinks(pod *corev1.Pod) bool {
	return pod == nil || pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks
}

func compareEnvFrom(it Item, pod *corev1.Pod, obj Object, obs *Observation, o CompareOptions) Comparison {
	if !obs.EnvRead {
		return Comparison{State: StateUnverifiable, Reason: "cannot read the container's environment: " + orDefault(obs.EnvErr, "unknown reason")}
	}
	kind := strings.ToLower(it.Object.Kind)
	// Variables set by an env entry, or by a later envFrom source, win
	// over this one. An unread Secret source may set any name with its
	// prefix: what the container shows for those is unknown (and may be
	// the Secret's value), so it is neither compared nor kept.
	es := otherEnvSources(it, pod, o.Object)
	var c Comparison
	var unknown, unreadBy []string
	skipped := 0
	for _, key := range obj.Keys() {
		want, ok := envValue(obj, key)
		if !ok {
			continue // binaryData never becomes a variable
		}
		name := it.EnvPrefix + key
		known, maybe := es.overrides(name)
		if known {
			skipped++
			continue
		}
		got, gotSet := obs.Env[name]
		equal := gotSet && got == want
		if len(maybe) > 0 && !equal {
			unknown = append(unknown, name)
			unreadBy = unionStrings(unreadBy, maybe)
			continue
		}
		c.Env = append(c.Env, EnvComparison{Name: name, Key: key, Expected: want, ExpectedSet: true, Observed: got, ObservedSet: gotSet, Equal: equal})
	}
	// Variables with the prefix whose key the object no longer has: the
	// container still has them (a restart drops them) unless another
	// source sets them, or the kubelet (service links). Removed keys are
	// not detected for envFrom without a prefix: any variable of the
	// container (the image's, the runtime's) would match.
	if it.EnvPrefix != "" {
		links := serviceLinks(pod)
		for _, name := range sortedKeys(obs.Env) {
			key, ok := strings.CutPrefix(name, it.EnvPrefix)
			if !ok || key == "" {
				continue
			}
			if _, ok := envValue(obj, key); ok {
				continue
			}
			if links && serviceLinkRe.MatchString(name) {
				continue
			}
			known, maybe := es.setsElsewhere(name)
			if known || len(maybe) > 0 {
				continue // another source's (maybe an unread Secret's): not this use's to explain
			}
			c.Env = append(c.Env, EnvComparison{Name: name, Key: key, Observed: obs.Env[name], ObservedSet: true})
		}
	}
	var differ, removed []string
	for _, e := range c.Env {
		switch {
		case e.Equal:
		case !e.ExpectedSet:
			removed = append(removed, e.Name)
		case !e.ObservedSet:
			differ = append(differ, e.Name+" (not set)")
		default:
			differ = append(differ, e.Name)
		}
	}
	note := ""
	if skipped > 0 {
		note = fmt.Sprintf("; %s set by other entries of the container not compared", plural(skipped, "variable"))
	}
	if len(unknown) > 0 {
		note += "; not compared: " + unreadNote(listNames(unknown, 3), unreadBy)
	}
	compared := len(c.Env) - len(removed)
	restart := "environment variables are read when the container starts; restart the workload"
	switch {
	case len(differ) > 0:
		c.State = StateStale
		c.Reason = fmt.Sprintf("%d of %s differ from the API (%s): %s%s",
			len(differ), plural(compared, "variable"), listNames(differ, 3), restart, note)
		if len(removed) > 0 {
			c.Reason += fmt.Sprintf("; still set though their keys were removed: %s", listNames(removed, 3))
		}
	case len(removed) > 0:
		c.State = StateStale
		c.Reason = fmt.Sprintf("%s still set, but %s no longer in the %s (unless the image sets %s): %s%s",
			listNames(removed, 3), pluralVerb(len(removed), "its key is", "their keys are"), kind, pluralVerb(len(removed), "it", "them"), restart, note)
	case len(unknown) > 0:
		c.State, c.Cause = StateUnverifiable, CauseSecretsNotRead
		c.Reason = fmt.Sprintf("%s match the API, but %s", plural(compared, "variable"), unreadNote(listNames(unknown, 3), unreadBy))
	case !obj.Exists:
		c.State = StateCurrent
		c.Reason = fmt.Sprintf("the %s does not exist (optional): no variables to compare%s", kind, note)
	default:
		c.State = StateCurrent
		c.Reason = fmt.Sprintf("%s match the API now; they will not follow the next change of the %s until the container restarts%s", plural(compared, "variable"), kind, note)
	}
	return c
}

func pluralVerb(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func envFromRefers(ef corev1.EnvFromSource, kind, name string) bool {
	switch kind {
	case KindConfigMap:
		return ef.ConfigMapRef != nil && ef.ConfigMapRef.Name == name
	case KindSecret:
		return ef.SecretRef != nil && ef.SecretRef.Name == name
	}
	return false
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// SecretExposure tells which values a container shows for a use may come
// from a Secret: the use's own object when it is one, else a Secret source
// of the same container (an env secretKeyRef, an envFrom secretRef) or of
// the use's projected volume. A printer shows those values only as
// fingerprints, whatever the comparison decided: a backstop against an
// override the comparison did not know of.
type SecretExposure struct {
	all         bool
	envNames    map[string]bool
	envPrefixes []string
	anyFile     bool
	filePaths   map[string]bool // items paths of Secret sources
	topLevel    bool            // a whole Secret source: any top-level name
}

// SecretExposureOf returns the exposure of a use; with no pod, everything
// may come from a Secret.
func SecretExposureOf(it Item, pod *corev1.Pod) SecretExposure {
	if it.Object.Kind == KindSecret || pod == nil {
		return SecretExposure{all: true}
	}
	e := SecretExposure{envNames: map[string]bool{}, filePaths: map[string]bool{}}
	if c, ok := findContainer(pod, it.ContainerName()); ok {
		for _, v := range c.env {
			if v.ValueFrom != nil && v.ValueFrom.SecretKeyRef != nil {
				e.envNames[v.Name] = true
			}
		}
		for _, ef := range c.envFrom {
			if ef.SecretRef != nil {
				e.envPrefixes = append(e.envPrefixes, ef.Prefix)
			}
		}
	}
	if it.Volume == nil {
		return e
	}
	if v := podVolume(pod, it.Volume.Name); v != nil && v.Projected != nil {
		for _, s := range v.Projected.Sources {
			if s.Secret == nil {
				continue
			}
			if len(s.Secret.Items) == 0 {
				e.topLevel = true
			}
			for _, kp := range s.Secret.Items {
				e.filePaths[path.Clean(kp.Path)] = true
			}
			// A subPath use sees files relative to its subPath.
			e.anyFile = e.anyFile || it.Mode == ModeSubPath || it.Mode == ModeSubPathExpr
		}
	}
	return e
}

// Env reports whether the container's value of the variable may be a
// Secret's.
func (e SecretExposure) Env(name string) bool {
	if e.all || e.envNames[name] {
		return true
	}
	for _, p := range e.envPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// File reports whether the container's file at rel (relative to the use's
// mount, as in FileComparison.Path) may be a Secret's.
func (e SecretExposure) File(rel string) bool {
	return e.all || e.anyFile || e.filePaths[rel] || (e.topLevel && !strings.Contains(rel, "/"))
}

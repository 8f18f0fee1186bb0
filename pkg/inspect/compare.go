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
	State    State
	Reason   string
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
		obj := snap.Object(it.Key())
		if it.Object.Kind == KindSecret && !snap.SecretsListed && it.Container != nil {
			results[i].Comparison = Comparison{State: StateUnverifiable, Reason: "Secrets were not read (--secrets)"}
			continue
		}
		if c, done := precheck(it, pod, obj); done {
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
		prs, env := requestFor(it, pod, obj)
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
			results[i].Comparison = safeCompare(it, pod, snap.Object(it.Key()), g.obs, co)
		}
	}
	for i := range results {
		c := results[i].Comparison
		results[i].Item.State = c.State
		results[i].Item.StateReason = c.Reason
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
func safeCompare(it Item, pod *corev1.Pod, obj Object, obs *Observation, o CompareOptions) (c Comparison) {
	defer func() {
		if r := recover(); r != nil {
			c = Comparison{State: StateUnverifiable, Reason: fmt.Sprint("internal error while comparing: ", r)}
		}
	}()
	return CompareUse(it, pod, obj, obs, o)
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
func precheck(it Item, pod *corev1.Pod, obj Object) (Comparison, bool) {
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
		if _, err := ItemPayload(it, obj); err != nil {
			var pe *PayloadError
			if errors.As(err, &pe) && (pe.ObjectMissing || len(pe.MissingKeys) > 0) {
				return Comparison{State: StateMissing, Reason: pe.Error() + "; the kubelet cannot update the volume, so the container keeps what it had (a new container cannot start)"}, true
			}
			return Comparison{State: StateUnverifiable, Reason: "the kubelet cannot write this volume: " + err.Error()}, true
		}
	}
	if pod == nil {
		return Comparison{State: StateUnverifiable, Reason: "not running: the pod is not in the snapshot"}, true
	}
	if pod.Status.Phase != corev1.PodRunning {
		phase := string(pod.Status.Phase)
		if phase == "" {
			phase = "Unknown"
		}
		return Comparison{State: StateNA, Reason: fmt.Sprintf("the pod is %s: no running container to check", phase)}, true
	}
	if it.Container.Type == ContainerInit {
		return Comparison{State: StateNA, Reason: "init container has completed: nothing to check"}, true
	}
	st, found := containerStatus(pod, it.Container.Name, it.Container.Type)
	switch {
	case !found:
		return Comparison{State: StateUnverifiable, Reason: "not running: the container has no status yet"}, true
	case st.State.Running != nil:
		return Comparison{}, false
	case st.State.Waiting != nil:
		r := st.State.Waiting.Reason
		if r == "" {
			r = "Waiting"
		}
		return Comparison{State: StateUnverifiable, Reason: fmt.Sprintf("not running: the container is waiting (%s)", r)}, true
	case st.State.Terminated != nil:
		r := st.State.Terminated.Reason
		if r == "" {
			r = "Terminated"
		}
		return Comparison{State: StateNA, Reason: fmt.Sprintf("the container has terminated (%s): nothing to check", r)}, true
	}
	return Comparison{State: StateUnverifiable, Reason: "not running: the container state is unknown"}, true
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
func requestFor(it Item, pod *corev1.Pod, obj Object) ([]PathRequest, bool) {
	switch it.Mode {
	case ModeEnv, ModeEnvFrom:
		return nil, true
	case ModeVolume, ModeItems, ModeProjected:
		pl, _ := ItemPayload(it, obj)
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
		if it.Mode == ModeSubPathExpr && pod != nil {
			sub, _ = expandSubPathExpr(it.Volume.SubPathExpr, pod, it.Container.Name)
		}
		sub = cleanSubPath(sub)
		pl, _ := ItemPayload(it, obj)
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
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	if o.Object == nil {
		o.Object = func(k ObjectKey) Object { return Object{Kind: k.Kind, Namespace: k.Namespace, Name: k.Name} }
	}
	if obs == nil {
		return Comparison{State: StateUnverifiable, Reason: "the container was not observed"}
	}
	if obs.Err != nil {
		return Comparison{State: StateUnverifiable, Reason: obs.Err.Error()}
	}
	var c Comparison
	switch it.Mode {
	case ModeVolume, ModeItems, ModeProjected:
		c = compareVolume(it, pod, obj, obs, o)
	case ModeSubPath, ModeSubPathExpr:
		c = compareSubPath(it, pod, obj, obs, o)
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

func compareVolume(it Item, pod *corev1.Pod, obj Object, obs *Observation, o CompareOptions) Comparison {
	op := obs.Paths[it.Volume.MountPath]
	if op == nil {
		return Comparison{State: StateUnverifiable, Reason: "the mount was not read"}
	}
	if op.Err != "" {
		return Comparison{State: StateUnverifiable, Reason: "no shell: " + op.Err}
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
	pl, err := ItemPayload(it, obj)
	if err != nil {
		return Comparison{State: StateUnverifiable, Reason: err.Error(), SyncedAt: c.SyncedAt}
	}
	fsGroup := hasFSGroup(pod)
	for i := range pl.Files {
		c.Files = append(c.Files, compareFile(&pl.Files[i], op.Files[pl.Files[i].Path], fsGroup))
	}
	// Files the container has that the API no longer has: only those this
	// source could have written (a projected volume shares its directory
	// with other sources).
	mine := ownedPath(it, pod, o)
	extrasUnknown := false
	switch {
	case op.Listed:
		for _, p := range sortedKeys(op.Files) {
			if _, ok := pl.File(p); ok || !mine(p) {
				continue
			}
			c.Files = append(c.Files, compareFile(nil, op.Files[p], fsGroup))
		}
	default: // no shell
		seen := map[string]bool{}
		for _, p := range sortedKeys(op.Files) {
			seen[p] = true
			if _, ok := pl.File(p); ok || !mine(p) {
				continue
			}
			c.Files = append(c.Files, compareFile(nil, op.Files[p], fsGroup))
		}
		if len(it.Items) == 0 {
			if op.Names == nil {
				extrasUnknown = true
			}
			for _, n := range op.Names {
				if strings.HasPrefix(n, "..") || seen[n] {
					continue
				}
				if _, ok := pl.File(n); ok || !mine(n) {
					continue
				}
				c.Files = append(c.Files, compareFile(nil, &ObservedFile{Path: n, Mode: -1, Size: -1}, fsGroup))
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
	switch {
	case t.differ == 0 && t.notCompared == 0 && !extrasUnknown:
		c.State = StateInSync
		c.Reason = fmt.Sprintf("matches the API (%s)%s%s", plural(t.equal, "file"), written, noShellNote(obs))
	case t.differ == 0:
		c.State = StateUnverifiable
		if t.notCompared > 0 {
			c.Reason = fmt.Sprintf("%s not compared: larger than --max-bytes and the container has no sha256sum, or unreadable (%s); the rest matches", plural(t.notCompared, "file"), listNames(t.unread, 3))
		} else {
			c.Reason = "no shell: every expected file matches, but without sh or ls the container's other files cannot be listed"
		}
	case it.Object.Immutable || obj.Immutable:
		c.State = StateStale
		c.Reason = fmt.Sprintf("differs from the API (%s), and the %s is immutable: it was deleted and re-created, and the kubelet keeps serving its old copy (even to new pods on this node while any pod there uses it); roll out a new name",
			listNames(t.names, 3), kind)
	default:
		c.State = StatePending
		c.Reason = fmt.Sprintf("differs from the API (%s); %s%s", listNames(t.names, 3), pendingTiming(it, obj, o.Now), written)
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

// ownedPath returns whether a file at a path of the volume (relative to
// its root) is this use's to explain: any file of a whole configMap or
// secret volume; only the listed paths of a source with items; for a whole
// source of a projected volume, a top-level name no other source writes.
func ownedPath(it Item, pod *corev1.Pod, o CompareOptions) func(string) bool {
	if len(it.Items) > 0 {
		paths := map[string]bool{}
		for _, kp := range it.Items {
			paths[path.Clean(kp.Path)] = true
		}
		return func(p string) bool { return paths[p] }
	}
	if it.Mode != ModeProjected && !isProjectedVolume(it, pod) {
		return func(string) bool { return true }
	}
	others := otherSourcePaths(it, pod, o)
	return func(p string) bool {
		if strings.Contains(p, "/") || others(p) {
			return false
		}
		return true
	}
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

func isProjectedVolume(it Item, pod *corev1.Pod) bool {
	if it.Volume == nil {
		return false
	}
	v := podVolume(pod, it.Volume.Name)
	return v != nil && v.Projected != nil
}

// otherSourcePaths returns whether another source of the use's projected
// volume writes a path (or a directory above or below it).
func otherSourcePaths(it Item, pod *corev1.Pod, o CompareOptions) func(string) bool {
	var v *corev1.Volume
	if it.Volume != nil {
		v = podVolume(pod, it.Volume.Name)
	}
	if v == nil || v.Projected == nil {
		return func(string) bool { return false }
	}
	var fixed []string
	var whole []Object
	self := false
	for _, s := range v.Projected.Sources {
		var kind, name string
		var items []corev1.KeyToPath
		switch {
		case s.ConfigMap != nil:
			kind, name, items = KindConfigMap, s.ConfigMap.Name, s.ConfigMap.Items
		case s.Secret != nil:
			kind, name, items = KindSecret, s.Secret.Name, s.Secret.Items
		case s.DownwardAPI != nil:
			for _, f := range s.DownwardAPI.Items {
				fixed = append(fixed, f.Path)
			}
			continue
		case s.ServiceAccountToken != nil:
			fixed = append(fixed, s.ServiceAccountToken.Path)
			continue
		case s.ClusterTrustBundle != nil:
			fixed = append(fixed, s.ClusterTrustBundle.Path)
			continue
		case s.PodCertificate != nil:
			fixed = append(fixed, s.PodCertificate.CredentialBundlePath, s.PodCertificate.KeyPath, s.PodCertificate.CertificateChainPath)
			continue
		default:
			continue
		}
		if kind == it.Object.Kind && name == it.Object.Name && !self && sameItems(items, it.Items) {
			self = true
			continue
		}
		if len(items) > 0 {
			for _, kp := range items {
				fixed = append(fixed, kp.Path)
			}
			continue
		}
		whole = append(whole, o.Object(ObjectKey{Kind: kind, Namespace: it.Object.Namespace, Name: name}))
	}
	claimed := map[string]bool{}
	for _, f := range fixed {
		if f == "" {
			continue
		}
		c := path.Clean(f)
		claimed[c] = true
		for d := path.Dir(c); d != "." && d != "/"; d = path.Dir(d) {
			claimed[d] = true
		}
	}
	return func(p string) bool {
		if claimed[p] {
			return true
		}
		for _, w := range whole {
			if _, ok := w.Data[p]; ok {
				return true
			}
		}
		return false
	}
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

func compareSubPath(it Item, pod *corev1.Pod, obj Object, obs *Observation, o CompareOptions) Comparison {
	op := obs.Paths[it.Volume.MountPath]
	if op == nil {
		return Comparison{State: StateUnverifiable, Reason: "the mount was not read"}
	}
	if op.Err != "" {
		return Comparison{State: StateUnverifiable, Reason: "no shell: " + op.Err}
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
	pl, err := ItemPayload(it, obj)
	if err != nil {
		return Comparison{State: StateUnverifiable, Reason: err.Error()}
	}
	fsGroup := hasFSGroup(pod)
	kind := strings.ToLower(it.Object.Kind)
	restart := "a subPath mount is bound when the container starts and never follows the volume: restart the workload"
	if f, ok := pl.File(sub); ok {
		// subPath onto a file.
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
	for _, f := range pl.Files {
		if rel, ok := strings.CutPrefix(f.Path, prefix); ok {
			f.Path = rel
			expected = append(expected, f)
		}
	}
	if op.Kind == PathFile || (op.Kind == PathUnknown && op.Files[""] != nil) {
		// A file the API no longer has (a removed key) or another
		// source's file.
		if otherSourcePaths(it, pod, o)(sub) || (isProjectedVolume(it, pod) && len(it.Items) > 0) {
			return Comparison{State: StateNA, Reason: fmt.Sprintf("subPath %q comes from another source of the projected volume", sub)}
		}
		return Comparison{State: StateStale, Reason: fmt.Sprintf("the container still has %q, which the %s no longer provides; %s", sub, kind, restart),
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
	others := otherSourcePaths(it, pod, o)
	extrasUnknown := !op.Listed
	for _, p := range sortedKeys(op.Files) {
		if p == "" || others(prefix+p) {
			continue
		}
		found := false
		for _, e := range expected {
			if e.Path == p {
				found = true
				break
			}
		}
		if !found {
			c.Files = append(c.Files, compareFile(nil, op.Files[p], fsGroup))
		}
	}
	sort.SliceStable(c.Files, func(i, j int) bool { return c.Files[i].Path < c.Files[j].Path })
	t := tallyFiles(c.Files)
	seen := len(op.Files) + len(op.Dirs) + len(op.Others)
	switch {
	case len(expected) == 0 && t.differ == 0:
		c.State = StateCurrent
		c.Reason = fmt.Sprintf("subPath %q is not in the payload; the container sees an empty directory, as the kubelet made it", sub)
	case t.differ == 0 && t.notCompared == 0 && !extrasUnknown:
		c.State = StateCurrent
		c.Reason = fmt.Sprintf("matches the API now (%s); at the next change of the %s the kubelet deletes this directory and the container sees it empty until it restarts", plural(t.equal, "file"), kind)
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
		c.Reason = fmt.Sprintf("differs from the API (%s): %s", listNames(t.names, 3), restart)
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
// "$$" is a literal "$", an unknown or empty variable is an error.
func ExpandSubPathExpr(expr string, env map[string]string) (string, error) {
	var b strings.Builder
	var missing []string
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
			v := env[name]
			if v == "" {
				missing = append(missing, name)
			}
			b.WriteString(v)
			i += 2 + end
		default:
			b.WriteByte('$')
			b.WriteByte(n)
			i++
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return "", fmt.Errorf("missing value for %s", strings.Join(missing, ", "))
	}
	return b.String(), nil
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

// specContainer returns the env and envFrom of a container of the pod.
func specContainer(pod *corev1.Pod, name string) ([]corev1.EnvVar, []corev1.EnvFromSource, bool) {
	if pod == nil {
		return nil, nil, false
	}
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			return c.Env, c.EnvFrom, true
		}
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == name {
			return c.Env, c.EnvFrom, true
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.Name == name {
			return c.Env, c.EnvFrom, true
		}
	}
	return nil, nil, false
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
	if env, _, ok := specContainer(pod, it.Container.Name); ok {
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

func compareEnvFrom(it Item, pod *corev1.Pod, obj Object, obs *Observation, o CompareOptions) Comparison {
	if !obs.EnvRead {
		return Comparison{State: StateUnverifiable, Reason: "cannot read the container's environment: " + orDefault(obs.EnvErr, "unknown reason")}
	}
	kind := strings.ToLower(it.Object.Kind)
	if !obj.Exists {
		return Comparison{State: StateCurrent, Reason: fmt.Sprintf("the %s does not exist (optional): no variables to compare", kind)}
	}
	// Variables set by an env entry, or by a later envFrom source, win
	// over this one.
	overridden := map[string]bool{}
	if env, envFrom, ok := specContainer(pod, it.Container.Name); ok {
		for _, e := range env {
			overridden[e.Name] = true
		}
		self := -1
		for i, ef := range envFrom {
			if envFromRefers(ef, it.Object.Kind, it.Object.Name) && ef.Prefix == it.EnvPrefix {
				self = i
				break
			}
		}
		if self >= 0 {
			for _, ef := range envFrom[self+1:] {
				var k ObjectKey
				switch {
				case ef.ConfigMapRef != nil:
					k = ObjectKey{KindConfigMap, it.Object.Namespace, ef.ConfigMapRef.Name}
				case ef.SecretRef != nil:
					k = ObjectKey{KindSecret, it.Object.Namespace, ef.SecretRef.Name}
				default:
					continue
				}
				other := o.Object(k)
				for key := range other.Data {
					if k.Kind == KindConfigMap && other.BinaryKeys[key] {
						continue
					}
					overridden[ef.Prefix+key] = true
				}
			}
		}
	}
	var c Comparison
	skipped := 0
	for _, key := range obj.Keys() {
		want, ok := envValue(obj, key)
		if !ok {
			continue // binaryData never becomes a variable
		}
		name := it.EnvPrefix + key
		if overridden[name] {
			skipped++
			continue
		}
		got, gotSet := obs.Env[name]
		c.Env = append(c.Env, EnvComparison{Name: name, Key: key, Expected: want, ExpectedSet: true, Observed: got, ObservedSet: gotSet,
			Equal: gotSet && got == want})
	}
	var differ []string
	for _, e := range c.Env {
		if !e.Equal {
			n := e.Name
			if !e.ObservedSet {
				n += " (not set)"
			}
			differ = append(differ, n)
		}
	}
	note := ""
	if skipped > 0 {
		note = fmt.Sprintf("; %s set by other entries of the container not compared", plural(skipped, "variable"))
	}
	switch {
	case len(differ) == 0:
		c.State = StateCurrent
		c.Reason = fmt.Sprintf("%s match the API now; they will not follow the next change of the %s until the container restarts%s", plural(len(c.Env), "variable"), kind, note)
	default:
		c.State = StateStale
		c.Reason = fmt.Sprintf("%d of %s differ from the API (%s): environment variables are read when the container starts; restart the workload%s",
			len(differ), plural(len(c.Env), "variable"), listNames(differ, 3), note)
	}
	return c
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

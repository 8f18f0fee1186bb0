package refresh

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// Config is how a refresh runs: the flags of `refresh` (the dashboard sets
// the same, with StrategyAuto).
type Config struct {
	Strategy   Strategy
	RestartVia RestartVia
	// MaxRestarts refuses a plan that restarts (or evicts the pods of)
	// more workloads than this; -1: no limit.
	MaxRestarts int
	// MaxUnavailable is how many pods of a workload are evicted at once.
	MaxUnavailable int
	DryRun         DryRun
	// Selector is the user's -l: a restart that replaces pods beyond it is
	// refused unless Yes.
	Selector string
	// Yes: the person agreed beforehand (--yes): restarts beyond -l go
	// ahead, and pods that need no observation may be annotated while the
	// others are read.
	Yes bool
	// PlanOnly: Plan changes nothing at all (no pod is annotated while the
	// others are read), as when plans of several clusters are checked
	// together before any is applied.
	PlanOnly bool
	Wait     bool
	// Timeout bounds the evictions and the wait together, from Apply.
	Timeout time.Duration
	// HandOver, when set and shorter than Timeout, is the longest the wait
	// polls the restarts and evictions: those not verified by then are
	// left pending (Result.Pending, outcome applied) for the caller to
	// verify with Recheck until Timeout has passed. The annotated pods are
	// waited for as without it (a remount is verified within seconds).
	HandOver time.Duration
	// Concurrency bounds the annotated pods verified at once in the wait.
	Concurrency int
	// Verify are the options of the observation before the plan.
	Verify inspect.VerifyOptions
	Now    func() time.Time
	// Sleep is the wait's and the evictions' pause (nil: the real clock's);
	// PodDelay the pause before an annotated pod's first read (WaitOptions).
	Sleep    func(context.Context, time.Duration)
	PodDelay time.Duration
	// Serial sends the patches one at a time, then waits for the annotated
	// pods one at a time, the pods annotated early last (a simulation on a
	// virtual clock replays);
	// PatchBackoff spaces a patch's retries (nil: Backoff).
	Serial       bool
	PatchBackoff *wait.Backoff
	// HookHostNetwork lets reload hooks go to pods with hostNetwork, whose
	// address is their node's (HookHostNetworkFlag); refused otherwise.
	HookHostNetwork bool
	// GroupWarnings: a cause that leaves several uses unverifiable is one
	// of Plan.Warnings, and the plan's reasons say "see warning N" (the
	// caller prints the warnings; the results' are GroupWarnings). Off
	// (the loop), every reason quotes its cause.
	GroupWarnings bool
}

// Cluster is the refresh's view of the cluster: one small interface per
// concern (see the client_*.go adapters).
type Cluster struct {
	// Executor reads the consumers before the plan.
	Executor  containerread.Executor
	Workloads Workloads
	Patcher   Patcher
	Evictor   Evictor
	Rollouts  RolloutChecker
	Verifier  Verifier
	// Access checks the plan's permissions before anything is sent (nil:
	// no check).
	Access AccessReviewer
	// Annotations reads a workload's annotations, for its reload hook
	// (nil: only the pods' own are read).
	Annotations AnnotationReader
	// Hooks sends the reload hooks (nil: none is sent, each says so).
	Hooks HookSender
}

// AnnotationReader reads the annotations of a Deployment, StatefulSet or
// DaemonSet and of its pod template; ClientWorkloads implements it.
type AnnotationReader interface {
	Annotations(ctx context.Context, kind, namespace, name string) (workload, template map[string]string, err error)
}

// ClientCluster is the Cluster of client-go adapters over one client.
// secrets and selector scope the wait's reads as the command's.
// Its reload hooks go through the API server's pod proxy.
func ClientCluster(c kubernetes.Interface, ex containerread.Executor, vo inspect.VerifyOptions, secrets bool, selector string) Cluster {
	return Cluster{Executor: ex, Workloads: ClientWorkloads{Client: c}, Patcher: ClientPatcher{Client: c},
		Evictor: ClientEvictor{Client: c}, Rollouts: ClusterRollout{Client: c}, Access: SelfAccessReviewer{Client: c},
		Annotations: ClientWorkloads{Client: c}, Hooks: ProxyHookSender{Client: c},
		Verifier: &ClusterVerifier{Client: c, Executor: ex, Verify: vo, Secrets: secrets, PodSelector: selector}}
}

// Refresher runs one refresh: Plan (observe, read the workloads, plan,
// check), then, once the caller has asked whoever must agree, Apply
// (patch or evict, wait, verify). It prints nothing.
type Refresher struct {
	Config
	Cluster
	// Restarting are workloads the caller restarts besides the plan (the
	// continuous refresh's Reloader reload lists): their pods are not
	// annotated before the plan is made, so that the caller can fold their
	// annotations into the restart.
	Restarting map[WorkloadKey]bool
	// ChangedAgain, when set, tells whether the data of an object changed
	// again after the plan (the continuous refresh saw an edit of it):
	// see WaitOptions.ChangedAgain. nil: the wait is for the newest data.
	ChangedAgain func(inspect.ObjectKey) bool
	// HookInSync: a pod with a reload hook whose mounts are already in
	// sync is annotated and hooked all the same (the loop: each of its
	// rounds answers a change, which the kubelet may have written before
	// the plan). Without it (refresh, run by hand) such a pod is left
	// alone: nothing changed that its application should reload.
	HookInSync bool
}

// Plan is a plan with what its Apply needs.
type Plan struct {
	Actions []Action
	// Uses are the uses the plan was made from, observed where the plan
	// needed it and redacted.
	Uses []inspect.Use
	// Restarts counts the workloads restarted or whose pods are evicted.
	Restarts int
	// Beyond says, per restart, the pods it replaces that -l does not
	// select (allowed only with Yes).
	Beyond []string
	// Warnings are the causes that left several of Uses unverifiable, with
	// GroupWarnings: the reasons of the actions point to them by number.
	Warnings []inspect.Warning
	// early returns the results of the pods annotated while the others
	// were observed, once they are in (see annotateEarly); nil when none
	// were.
	early func() []Result
	// nodes run the pods Actions annotate, for the wait's reader to prepare
	nodes    []string
	redactor *inspect.Redactor
	// hooks are the pods' reload hooks, by PodKey
	hooks hookSet
}

// TooManyRestartsError refuses a plan over MaxRestarts.
type TooManyRestartsError struct{ Restarts, Max int }

// Permanent: the same plan is refused again (Transient).
func (e *TooManyRestartsError) Permanent() bool { return true }

func (e *TooManyRestartsError) Error() string {
	return fmt.Sprintf("refused: the plan restarts %d workloads, more than --max-restarts=%d; nothing was changed. Raise --max-restarts, narrow the selection (NAME, -l), or --strategy annotate to restart nothing", e.Restarts, e.Max)
}

// BeyondSelectorError refuses, without Yes, a restart that replaces pods
// -l does not select.
type BeyondSelectorError struct {
	Selector string
	Beyond   []string
}

// Permanent: the same selection is refused again (Transient).
func (e *BeyondSelectorError) Permanent() bool { return true }

func (e *BeyondSelectorError) Error() string {
	return fmt.Sprintf("refused: -l %s selects only some pods of the workloads to restart, and a restart replaces them all: %s; nothing was changed",
		e.Selector, strings.Join(e.Beyond, "; "))
}

// PermissionError refuses a plan the credentials may not apply, before
// anything is sent.
type PermissionError struct {
	Missing []Permission
	// Items are the plan's uses (those that exec was forbidden for say so).
	Items []inspect.Use
}

// Permanent: the same credentials are refused again (Transient).
func (e *PermissionError) Permanent() bool { return true }

func (e *PermissionError) Error() string {
	var ps []string
	for _, p := range e.Missing {
		ps = append(ps, p.Describe())
	}
	return "refused: the credentials lack " + strings.Join(ps, "; ") + "; nothing was changed"
}

func (r *Refresher) defaults() {
	if r.Now == nil {
		r.Now = time.Now
	}
	if r.Strategy == "" {
		r.Strategy = StrategyAuto
	}
	if r.RestartVia == "" {
		r.RestartVia = RestartViaTemplate
	}
	if r.DryRun == "" {
		r.DryRun = DryRunNone
	}
}

// Plan observes the uses of items (those whose action depends on their
// state), reads their workloads and plans their refresh, then checks it:
// MaxRestarts, and unless a client dry run, the permissions and -l. A
// refusal is an error (*TooManyRestartsError, *PermissionError,
// *BeyondSelectorError) with the plan still returned, so that it can be
// shown; nothing has been changed then except by the early annotation,
// whose results Abandon returns.
func (r *Refresher) Plan(ctx context.Context, snap *inspect.Snapshot, items []inspect.Use) (*Plan, error) {
	r.defaults()
	sel, err := labels.Parse(r.Selector)
	if err != nil {
		return nil, &PermanentError{fmt.Errorf("invalid -l %q: %v", r.Selector, err)}
	}
	// The output edge: reasons derived from Secret data are redacted
	// before they reach the plan, and again in the results.
	p := &Plan{redactor: inspect.NewRedactor(snap)}
	pods := podsByKey(snap)
	p.hooks = r.resolveHooks(ctx, items, pods)
	obs := r.verifyFirst(ctx, p, snap, items, sel, pods)
	p.Uses = p.redactor.Items(obs.items)
	if r.GroupWarnings {
		p.Warnings = inspect.GroupWarnings(p.Uses)
	}
	var workloads map[WorkloadKey]WorkloadInfo
	if r.Strategy != StrategyAnnotate { // annotate restarts nothing
		if workloads, err = LoadWorkloads(ctx, r.Workloads, obs.restartable); err != nil {
			return p, err
		}
	}
	p.Actions = PlanActions(PlanInput{Items: p.Uses, Pods: pods, Workload: workloads, Strategy: r.Strategy, Verified: obs.observed, NotVerified: obs.notVerified,
		Selector: sel, RestartVia: r.RestartVia, MaxUnavailable: r.MaxUnavailable})
	if r.HookInSync {
		p.hooks.inSync(p.Actions)
		sort.SliceStable(p.Actions, func(i, j int) bool { return Precedes(p.Actions[i], p.Actions[j]) })
	}
	p.hooks.attach(p.Actions)
	counts := Counts(p.Actions)
	p.Restarts = counts[ActionRestart] + counts[ActionEvict] // an eviction restarts a workload's pods too
	p.Beyond = BeyondSelector(p.Actions)
	p.nodes = nodesOf(p.Actions, pods)
	return p, r.check(ctx, p)
}

// check refuses what the CLI refuses, in its order.
func (r *Refresher) check(ctx context.Context, p *Plan) error {
	if r.MaxRestarts >= 0 && p.Restarts > r.MaxRestarts {
		return &TooManyRestartsError{Restarts: p.Restarts, Max: r.MaxRestarts}
	}
	if r.DryRun == DryRunClient {
		return nil // sends nothing
	}
	if r.Access != nil {
		if missing := Missing(ctx, r.Access, r.permissions(p.Actions)); len(missing) > 0 {
			return &PermissionError{Missing: missing, Items: p.Uses}
		}
	}
	if len(p.Beyond) > 0 && r.DryRun == DryRunNone && !r.Yes {
		return &BeyondSelectorError{Selector: r.Selector, Beyond: p.Beyond}
	}
	return nil
}

// BeyondSelector lists, per restart, the pods it replaces beyond -l.
func BeyondSelector(plan []Action) []string {
	var out []string
	for _, a := range plan {
		if a.Action == ActionRestart && len(a.OutsideSelector) > 0 {
			out = append(out, fmt.Sprintf("%s replaces %s", a.Target, strings.Join(a.OutsideSelector, ", ")))
		}
	}
	return out
}

// verifiedState is what the plan knows of the uses' states.
type verifiedState struct {
	items []inspect.Use
	// observed: the items carry states (see PlanInput.Verified)
	observed    bool
	notVerified map[string]bool
	// restartable are the items whose workloads a restart may concern
	restartable []inspect.Use
}

// verifyFirst reads by exec the uses whose action depends on their state. A
// client dry run of --strategy restart reads nothing (no exec at all);
// --strategy restart reads every use; otherwise only the pods
// NeedsVerify picks are read, and (a real run, see annotateEarly)
// the others may be annotated meanwhile.
func (r *Refresher) verifyFirst(ctx context.Context, p *Plan, snap *inspect.Snapshot, items []inspect.Use, sel labels.Selector, pods map[string]*corev1.Pod) verifiedState {
	switch {
	case r.DryRun == DryRunClient && r.Strategy == StrategyRestart:
		return verifiedState{items: items, restartable: items}
	case r.Strategy == StrategyRestart:
		items = inspect.Verify(ctx, items, snap, r.Executor, r.Verify)
		return verifiedState{items: items, observed: true, restartable: items}
	}
	need := NeedsVerify(items)
	if r.DryRun == DryRunNone {
		items, p.early = r.annotateEarly(ctx, items, need, sel, pods, p.redactor, p.hooks)
	}
	items, notVerified := verifyPods(ctx, items, need, snap, r.Executor, r.Verify)
	// pods annotated without observing are never restarted: their
	// workloads need not be read
	var restartable []inspect.Use
	for _, it := range items {
		if need[PodKey(it.Object.Namespace, it.Pod.Name)] {
			restartable = append(restartable, it)
		}
	}
	return verifiedState{items: items, observed: true, notVerified: notVerified, restartable: restartable}
}

// Apply sends the plan: patches, then the evictions, then (Wait, a real
// run) verifies what it changed until current or Timeout. progress gets
// each eviction event (Progress.Event) and each poll of the wait. Every
// action gets a redacted Result, the early annotations' included.
func (r *Refresher) Apply(ctx context.Context, p *Plan, progress func(Progress)) []Result {
	r.defaults()
	if progress == nil {
		progress = func(Progress) {}
	}
	progress = serialized(progress) // the pods' waits and the evictions report at once
	deadline := r.Now().Add(r.Timeout)
	r.prepare(ctx, p.nodes)
	w, then := r.podWaits(ctx, deadline, progress, p.Actions)
	results := ApplyWith(ctx, r.Patcher, p.Actions, ApplyOptions{DryRun: r.DryRun, Now: r.Now, Then: then, Sleep: r.Sleep, Backoff: r.PatchBackoff, Serial: r.Serial})
	if Counts(p.Actions)[ActionEvict] > 0 {
		results = ApplyEvictions(ctx, r.Evictor, results, EvictOptions{MaxUnavailable: r.MaxUnavailable, DryRun: r.DryRun,
			Deadline: deadline, Now: r.Now, Sleep: r.Sleep, Progress: func(s string) { progress(Progress{Event: s}) }})
	}
	if w != nil {
		results = w.Finish(results, r.Rollouts)
	}
	if p.early != nil {
		results = append(results, p.early()...)
		p.early = nil
		sort.SliceStable(results, func(i, j int) bool { return Precedes(results[i].Action, results[j].Action) })
	}
	return p.redact(finishHooks(results))
}

// serialized calls f one call at a time.
func serialized(f func(Progress)) func(Progress) {
	var mu sync.Mutex
	return func(p Progress) {
		mu.Lock()
		defer mu.Unlock()
		f(p)
	}
}

// podWaits returns, in a real run that waits, the wait that verifies each
// annotated pod of actions as soon as its patch is answered (the callback
// for ApplyThen), sends its reload hook once it is current, and then
// polls the restarts and evictions (Finish); Timeout bounds the evictions
// and the wait together. A real run that does not wait still waits for
// the pods with a reload hook, within Timeout, since a hook must follow
// the remount, and for nothing else. Otherwise nil, nil.
func (r *Refresher) podWaits(ctx context.Context, deadline time.Time, progress func(Progress), actions []Action) (*PodWaits, func(*Result)) {
	hooked := 0
	for _, a := range actions {
		if a.Action == ActionAnnotate && a.Hook.sendable() {
			hooked++
		}
	}
	if r.DryRun != DryRunNone || !r.Wait && (hooked == 0 || r.Timeout <= 0) {
		return nil, nil // no Timeout: no time to wait for the hooked pods
	}
	w := NewPodWaits(ctx, r.Verifier, WaitOptions{Timeout: max(deadline.Sub(r.Now()), time.Millisecond), Now: r.Now, Sleep: r.Sleep, PodDelay: r.PodDelay, Serial: r.Serial, Concurrency: r.Concurrency,
		Progress: progress, ChangedAgain: r.ChangedAgain, Hooks: r.Hooks})
	w.hookedOnly = !r.Wait
	if r.HandOver > 0 && r.HandOver < r.Timeout {
		w.handOver = w.start.Add(r.HandOver)
	}
	if w.hookedOnly {
		w.Expect(hooked)
	} else {
		w.Expect(Counts(actions)[ActionAnnotate])
	}
	return w, w.Add
}

// Abandon is for a plan that is not applied (refused, declined): it
// returns the results of the pods annotated early, once they are in
// (none when nothing was started).
func (p *Plan) Abandon() []Result {
	if p == nil || p.early == nil {
		return nil
	}
	res := p.early()
	p.early = nil
	return p.redact(finishHooks(res))
}

// redact is the output edge of the results.
func (p *Plan) redact(results []Result) []Result {
	for i := range results {
		r := &results[i]
		r.Reason, r.Detail, r.Error, r.Warnings = p.redactor.String(r.Reason), p.redactor.String(r.Detail), p.redactor.String(r.Error), p.redactor.Strings(r.Warnings)
		if r.unverifiable != nil {
			r.unverifiable = &p.redactor.Items([]inspect.Use{*r.unverifiable})[0]
		}
	}
	return results
}

// verifyPods observes the uses of the pods in need (by PodKey) and returns
// every item, the others without a state, and the pods left unobserved.
func verifyPods(ctx context.Context, items []inspect.Use, need map[string]bool, snap *inspect.Snapshot, ex containerread.Executor, vo inspect.VerifyOptions) ([]inspect.Use, map[string]bool) {
	var picked []inspect.Use
	var at []int
	notVerified := map[string]bool{}
	for i, it := range items {
		k := PodKey(it.Object.Namespace, it.Pod.Name)
		if need[k] {
			picked, at = append(picked, it), append(at, i)
		} else if it.Pod.Name != "" {
			notVerified[k] = true
		}
	}
	if len(picked) > 0 {
		for j, it := range inspect.Verify(ctx, picked, snap, ex, vo) {
			items[at[j]] = it
		}
	}
	return items, notVerified
}

// nodesOf lists, once each, the nodes of the pods the actions annotate
// (the new pods of a restart or an eviction may land elsewhere).
func nodesOf(actions []Action, pods map[string]*corev1.Pod) []string {
	var out []string
	seen := map[string]bool{}
	for _, a := range actions {
		if a.Action != ActionAnnotate {
			continue
		}
		for _, name := range a.Pods {
			p := pods[PodKey(a.Target.Namespace, name)]
			if p != nil && p.Spec.NodeName != "" && !seen[p.Spec.NodeName] {
				seen[p.Spec.NodeName] = true
				out = append(out, p.Spec.NodeName)
			}
		}
	}
	return out
}

// prepare lets the wait's reader get ready for nodes while the patches go
// out (containerread.Preparer), in a real run that waits.
func (r *Refresher) prepare(ctx context.Context, nodes []string) {
	if pr, ok := r.Verify.Reader.(containerread.Preparer); ok && r.Wait && r.DryRun == DryRunNone && len(nodes) > 0 {
		pr.Prepare(ctx, nodes)
	}
}

// podsByKey indexes the snapshot's pods by PodKey, as the planner reads
// them.
func podsByKey(snap *inspect.Snapshot) map[string]*corev1.Pod {
	pods := make(map[string]*corev1.Pod, len(snap.Pods))
	for i := range snap.Pods {
		p := &snap.Pods[i]
		pods[PodKey(p.Namespace, p.Name)] = p
	}
	return pods
}

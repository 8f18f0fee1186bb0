package refresh

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// RestartVia is --restart-via: how a workload's stale env or subPath
// consumers are restarted.
type RestartVia string

const (
	// RestartViaTemplate sets kubectl.kubernetes.io/restartedAt on the pod
	// template, as `kubectl rollout restart` does.
	RestartViaTemplate RestartVia = "template"
	// RestartViaEvict evicts the consumers' pods through the Eviction API,
	// a batch at a time, honouring PodDisruptionBudgets; the template is
	// never changed, so GitOps tools see no drift.
	RestartViaEvict RestartVia = "evict"
)

// RestartVias lists the valid values of --restart-via.
var RestartVias = []RestartVia{RestartViaTemplate, RestartViaEvict}

// ActionEvict evicts the pods of a workload (Target) in the order of Pods.
const ActionEvict ActionKind = "evict"

// Evictable are the workload kinds whose evicted pods are re-created by
// their controller.
var Evictable = map[string]bool{"Deployment": true, "StatefulSet": true, "DaemonSet": true, "ReplicaSet": true, RolloutKind: true}

// notEvictable says why evicting the pod of this use would not refresh it,
// or "" when it would.
func notEvictable(it inspect.Use, in PlanInput) string {
	w := it.Workload
	if !w.Builtin() && !IsRollout(w.GroupKind()) { // a Rollout's ReplicaSets re-create its evicted pods
		return foreignOwnerReason(it)
	}
	switch w.Kind {
	case "Pod":
		return notRestartable(it, in) // the bare pod's manual hint
	case "CronJob", "Job":
		return jobReason(it)
	}
	if !Evictable[w.GroupKind()] {
		return fmt.Sprintf("%s %q is not a Deployment, StatefulSet, DaemonSet or ReplicaSet: restart it with its own controller's tooling", w.Kind, w.Name)
	}
	info, ok := in.Workload[workloadKey(it)]
	if ok && !info.Exists {
		return fmt.Sprintf("%s %q was not found; restart the pod's owner by hand", w.Kind, w.Name)
	}
	if info.OnDelete {
		return fmt.Sprintf("%s %q uses the OnDelete update strategy: its controller would re-create an evicted pod from the current template, and when to do that is left to you; delete pod %s to replace it",
			w.Kind, w.Name, it.Pod.Name)
	}
	return ""
}

// EvictionOrder is the order in which a workload's pods are evicted: pods
// that are not Ready first (evicting them costs no availability), then a
// StatefulSet's pods from the highest ordinal down (as its rolling update
// does), other workloads' by name. It is pure.
func EvictionOrder(kind, workload string, pods []string, ready map[string]bool) []string {
	out := append([]string(nil), pods...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if ready[a] != ready[b] {
			return !ready[a]
		}
		if kind == "StatefulSet" {
			oa, okA := ordinal(a, workload)
			ob, okB := ordinal(b, workload)
			if okA && okB && oa != ob {
				return oa > ob
			}
		}
		return a < b
	})
	return out
}

// Batches splits pods into groups of at most n (n < 1 counts as 1),
// keeping their order. It is pure.
func Batches(pods []string, n int) [][]string {
	if n < 1 {
		n = 1
	}
	var out [][]string
	for len(pods) > 0 {
		k := n
		if k > len(pods) {
			k = len(pods)
		}
		out = append(out, pods[:k:k])
		pods = pods[k:]
	}
	return out
}

// evictionPlan orders the pods of an evict action and says so in its
// reason: which pods, in which order, how many at a time.
func (a *Action) evictionPlan(in PlanInput) {
	ready := map[string]bool{}
	for _, p := range a.Pods {
		if pod := in.Pods[PodKey(a.Target.Namespace, p)]; pod != nil {
			ready[p] = podReady(pod)
		}
	}
	a.Pods = EvictionOrder(a.Target.Kind, a.Target.Name, a.Pods, ready)
	n := in.MaxUnavailable
	if n < 1 {
		n = 1
	}
	var steps []string
	for _, b := range Batches(a.Pods, n) {
		steps = append(steps, strings.Join(b, " + "))
	}
	a.Reason += fmt.Sprintf("; evicts %s in this order: %s (%d at a time, each replacement Ready before the next; PodDisruptionBudgets honoured; the template is not changed)",
		map[bool]string{true: "pod", false: "pods"}[len(a.Pods) == 1], strings.Join(steps, ", then "), n)
}

func podReady(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Evictor is the I/O edge of an eviction: evict one pod, list a workload's
// pods.
type Evictor interface {
	// Evict asks the Eviction API to evict the pod with this UID. A 429
	// means a PodDisruptionBudget (or API priority and fairness) refuses it
	// now. dryRun asks the server not to persist it.
	Evict(ctx context.Context, namespace, name, uid string, dryRun bool) error
	// WorkloadPods lists the live pods the workload controls (a
	// Deployment's through its ReplicaSets), Succeeded and Failed ones left
	// out.
	WorkloadPods(ctx context.Context, kind, namespace, name string) ([]WorkloadPod, error)
}

// EvictOptions bound and report the eviction loop.
type EvictOptions struct {
	// MaxUnavailable is how many pods of a workload are evicted at once
	// (default 1).
	MaxUnavailable int
	DryRun         DryRun
	// Deadline bounds the whole loop (--timeout): retries of refused
	// evictions and waits for replacements.
	Deadline time.Time
	Now      func() time.Time
	// Sleep pauses between tries and polls (default: the real clock's).
	Sleep func(context.Context, time.Duration)
	// Progress gets one line per event (eviction, refusal and retry,
	// replacement Ready).
	Progress func(string)
	// RetryFirst and RetryMax bound the backoff after a 429 (default 500ms
	// doubling up to 5s); Poll is the interval of the replacement check
	// (default 500ms).
	RetryFirst, RetryMax, Poll time.Duration

	// window: Deadline is an action's NotAfter (its restart window
	// closes), not --timeout
	window bool
}

func (o *EvictOptions) defaults() {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Sleep == nil {
		o.Sleep = Pause
	}
	if o.MaxUnavailable < 1 {
		o.MaxUnavailable = 1
	}
	if o.RetryFirst <= 0 {
		o.RetryFirst = 500 * time.Millisecond
	}
	if o.RetryMax < o.RetryFirst {
		o.RetryMax = 10 * o.RetryFirst
	}
	if o.Poll <= 0 {
		o.Poll = 500 * time.Millisecond
	}
	if o.Progress == nil {
		o.Progress = func(string) {}
	}
}

// ApplyEvictions runs the evict actions among results, one workload after
// another, each in batches of MaxUnavailable pods: evict the batch, then
// wait until as many new pods of the workload are Ready before the next.
// With DryRunClient nothing is sent; with DryRunServer every eviction is
// sent with dryRun=All and nothing is waited for. Each result says which
// pods were evicted and which not; after an error the remaining evict
// actions are not started (Transient: nothing of theirs failed, a caller
// that runs again may send them).
func ApplyEvictions(ctx context.Context, ev Evictor, results []Result, o EvictOptions) []Result {
	o.defaults()
	stopped := ""
	for i := range results {
		r := &results[i]
		if r.Action.Action != ActionEvict || o.DryRun == DryRunClient {
			continue
		}
		if stopped != "" {
			r.NotEvicted = append([]string(nil), r.Pods...)
			r.Error, r.Transient = "not started: "+stopped, true
			continue
		}
		evictWorkload(ctx, ev, r, o)
		if r.Outcome == OutcomeFailed {
			stopped = fmt.Sprintf("evicting the pods of %s failed", r.Target)
		}
	}
	return results
}

// evictWorkload evicts the pods of one action, batch by batch. A failure
// is Transient when its cause may pass (a cut connection, a 5xx, a LIST
// that failed, a refusal that outlasted the deadline); an interruption or
// replacements not Ready by the deadline are not.
func evictWorkload(ctx context.Context, ev Evictor, r *Result, o EvictOptions) {
	ns := r.Target.Namespace
	dry := o.DryRun == DryRunServer
	fail := func(i int, msg string, transient bool) {
		r.Outcome, r.Error, r.Transient = OutcomeFailed, msg, transient
		r.NotEvicted = append([]string(nil), r.Pods[i:]...)
	}
	known := map[string]bool{}
	if !dry {
		pods, err := ev.WorkloadPods(ctx, r.Target.Kind, ns, r.Target.Name)
		if err != nil {
			fail(0, fmt.Sprintf("listing the pods of %s: %v; no pod was evicted", r.Target, err), Transient(err))
			return
		}
		for _, p := range pods {
			known[p.UID] = true
		}
	}
	var notes []string
	done := 0
	po := o
	if na := r.Action.NotAfter; !na.IsZero() && (po.Deadline.IsZero() || na.Before(po.Deadline)) {
		po.Deadline, po.window = na, true
	}
	for _, batch := range Batches(r.Pods, o.MaxUnavailable) {
		expect := 0
		for _, pod := range batch {
			if ctx.Err() != nil {
				fail(done, "interrupted: "+ctx.Err().Error(), false)
				return
			}
			if po.window && !o.Now().Before(po.Deadline) {
				fail(done, fmt.Sprintf("the restart window of %s closed at %s before pod %s was evicted; the rest is evicted when it opens again", r.Target, po.Deadline.UTC().Format(time.RFC3339), pod), true)
				return
			}
			done++
			o.Progress(fmt.Sprintf("evicting pod %s/%s (%d of %d, %s)", ns, pod, done, len(r.Pods), r.Target))
			gone, note, err := evictOne(ctx, ev, r.Target, pod, r.podUIDs[pod], po)
			if note != "" {
				notes = append(notes, note)
			}
			if err != nil {
				fail(done-1, err.Error(), Transient(err))
				return
			}
			r.Evicted = append(r.Evicted, pod)
			if r.AppliedAt == nil {
				at := metav1.NewTime(o.Now())
				r.AppliedAt = &at
			}
			if !gone {
				expect++
			}
		}
		if dry || expect == 0 {
			continue
		}
		o.Progress(fmt.Sprintf("waiting for %d new %s of %s to be Ready", expect, map[bool]string{true: "pod", false: "pods"}[expect == 1], r.Target))
		fresh, err := waitReplacements(ctx, ev, r.Target, known, expect, o)
		if err != nil {
			fail(done, fmt.Sprintf("evicted %s, but %v", strings.Join(batch, ", "), err), false)
			return
		}
		for _, p := range fresh {
			known[p.UID] = true
			r.Replacements = append(r.Replacements, p.Name)
			if r.replacementUIDs == nil {
				r.replacementUIDs = map[string]bool{}
			}
			r.replacementUIDs[p.UID] = true
		}
		o.Progress(fmt.Sprintf("ready: %s", strings.Join(podNames(fresh), ", ")))
	}
	if dry {
		r.Outcome = OutcomeDryRun
	} else {
		r.Outcome = OutcomeApplied
	}
	r.Detail = strings.Join(notes, "; ")
}

func podNames(ps []WorkloadPod) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

// evictOne evicts one pod of t, retrying a refusal (429: a
// PodDisruptionBudget allows no disruption now, or the API server is busy)
// and transient errors with backoff until the deadline. gone: the pod was
// already gone or re-created (404, or a UID precondition that no longer
// holds: a 409 while no pod of its name has its UID), so no replacement is
// owed by this eviction; a 409 while the pod is still there (modified
// while the API server evicted it) evicted nothing, and is an error that
// may pass. In a server dry run a refusal is not retried: it is a note, as
// a real run would wait.
func evictOne(ctx context.Context, ev Evictor, t Target, pod, uid string, o EvictOptions) (gone bool, note string, err error) {
	ns := t.Namespace
	delay := o.RetryFirst
	start := o.Now()
	for attempt := 1; ; attempt++ {
		err := ev.Evict(ctx, ns, pod, uid, o.DryRun == DryRunServer)
		switch {
		case err == nil:
			return false, "", nil
		case apierrors.IsNotFound(err):
			o.Progress(fmt.Sprintf("pod %s/%s is already gone", ns, pod))
			return true, fmt.Sprintf("pod %s was already gone", pod), nil
		case apierrors.IsConflict(err) && uid != "" && !stillThere(ctx, ev, t, pod, uid):
			o.Progress(fmt.Sprintf("pod %s/%s was re-created since the plan (its UID changed): not evicted again", ns, pod))
			return true, fmt.Sprintf("pod %s was re-created since the plan", pod), nil
		case !apierrors.IsTooManyRequests(err) && !Retriable(err):
			return false, "", fmt.Errorf("evicting pod %s: %w", pod, err)
		}
		why := refusal(err)
		if o.DryRun == DryRunServer {
			return false, fmt.Sprintf("pod %s: %s now; a real run waits and retries", pod, why), nil
		}
		if d, ok := apierrors.SuggestsClientDelay(err); ok && time.Duration(d)*time.Second > delay {
			delay = time.Duration(d) * time.Second
			if delay > o.RetryMax {
				delay = o.RetryMax
			}
		}
		if o.window && !o.Now().Add(delay).Before(o.Deadline) {
			return false, "", fmt.Errorf("evicting pod %s: %s; refused %d times in %s, and the restart window closes before the next try", pod, why, attempt, o.Now().Sub(start).Round(100*time.Millisecond))
		}
		if !o.Deadline.IsZero() && o.Now().Add(delay).After(o.Deadline) {
			return false, "", fmt.Errorf("evicting pod %s: %s; refused %d times in %s, and --timeout ends before the next try", pod, why, attempt, o.Now().Sub(start).Round(100*time.Millisecond))
		}
		o.Progress(fmt.Sprintf("pod %s/%s: %s; retrying in %s (attempt %d)", ns, pod, why, delay.Round(10*time.Millisecond), attempt))
		if o.Sleep(ctx, delay); ctx.Err() != nil {
			return false, "", fmt.Errorf("evicting pod %s: interrupted: %w", pod, ctx.Err())
		}
		if delay *= 2; delay > o.RetryMax {
			delay = o.RetryMax
		}
	}
}

// stillThere tells whether t still has pod with this UID (or whether that
// cannot be told: the listing failed).
func stillThere(ctx context.Context, ev Evictor, t Target, pod, uid string) bool {
	pods, err := ev.WorkloadPods(ctx, t.Kind, t.Namespace, t.Name)
	return err != nil || slices.ContainsFunc(pods, func(p WorkloadPod) bool { return p.Name == pod && p.UID == uid })
}

// refusal says why the Eviction API refused: a 429 with the
// DisruptionBudget cause (or its message) is a PodDisruptionBudget.
func refusal(err error) string {
	if apierrors.IsTooManyRequests(err) {
		if apierrors.HasStatusCause(err, policyv1.DisruptionBudgetCause) || strings.Contains(err.Error(), "disruption budget") {
			msg := err.Error()
			if c, ok := apierrors.StatusCause(err, policyv1.DisruptionBudgetCause); ok && c.Message != "" {
				msg += " " + c.Message
			}
			return "the eviction is refused by a PodDisruptionBudget (429: " + msg + ")"
		}
		return "the API server asks to retry later (429: " + err.Error() + ")"
	}
	return "transient error: " + err.Error()
}

// waitReplacements polls the workload's pods until n pods it had not seen
// are Ready (and not terminating), or the deadline passes.
func waitReplacements(ctx context.Context, ev Evictor, t Target, known map[string]bool, n int, o EvictOptions) ([]WorkloadPod, error) {
	start := o.Now()
	last := ""
	for {
		pods, err := ev.WorkloadPods(ctx, t.Kind, t.Namespace, t.Name)
		var fresh []WorkloadPod
		if err != nil {
			last = err.Error()
		} else {
			notReady := 0
			for _, p := range pods {
				if known[p.UID] || p.Terminating {
					continue
				}
				if p.Ready {
					fresh = append(fresh, p)
				} else {
					notReady++
				}
			}
			if len(fresh) >= n {
				return fresh, nil
			}
			last = fmt.Sprintf("%d of %d new pods Ready, %d not Ready yet", len(fresh), n, notReady)
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("interrupted while waiting for the replacements (%s)", last)
		}
		if !o.Deadline.IsZero() && !o.Now().Before(o.Deadline) {
			return nil, fmt.Errorf("--timeout passed %s after the eviction while waiting for the replacements to be Ready (%s)", o.Now().Sub(start).Round(100*time.Millisecond), last)
		}
		o.Sleep(ctx, o.Poll)
	}
}

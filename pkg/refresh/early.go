package refresh

import (
	"context"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// annotateEarly starts, while the other pods are observed, the annotation
// and the wait of the pods that need no observation and whose workloads
// have no pod that does (such a workload may be restarted, which would
// replace them). Only when nothing that follows can refuse the plan: Yes,
// no MaxRestarts, and every permission the whole plan may need (patch on
// these pods; patch on the other pods and their workloads, or create
// pods/eviction) granted; otherwise everything is planned after the
// observation. It returns the items left to plan and what returns the
// early results once they are in (nil when nothing was started). With
// Serial the patches are sent before it returns and the waits run when
// the results are asked for, so that only one goroutine moves a virtual
// clock.
func (r *Refresher) annotateEarly(ctx context.Context, items []inspect.Use, need map[string]bool, sel labels.Selector, pods map[string]*corev1.Pod, redactor *inspect.Redactor, hooks hookSet) ([]inspect.Use, func() []Result) {
	if !r.Yes || r.PlanOnly || r.MaxRestarts >= 0 || len(need) == 0 {
		return items, nil
	}
	busy := maps.Clone(r.Restarting) // workloads with a pod observed first, or restarted besides the plan
	if busy == nil {
		busy = map[WorkloadKey]bool{}
	}
	for _, it := range items {
		if need[PodKey(it.Object.Namespace, it.Pod.Name)] {
			busy[workloadKey(it)] = true
		}
	}
	var now, rest []inspect.Use
	notVerified := map[string]bool{}
	for _, it := range items {
		k := PodKey(it.Object.Namespace, it.Pod.Name)
		if it.Pod.Name != "" && !need[k] && !busy[workloadKey(it)] {
			now = append(now, it)
			notVerified[k] = true
		} else {
			rest = append(rest, it)
		}
	}
	if len(now) == 0 {
		return items, nil
	}
	plan := PlanActions(PlanInput{Items: redactor.Items(now), Pods: pods, Strategy: r.Strategy, Verified: true, NotVerified: notVerified, Selector: sel})
	hooks.attach(plan)
	worst := r.worstCase(plan, rest, pods)
	hooks.attach(worst)
	if r.Access != nil && len(Missing(ctx, r.Access, r.permissions(worst))) > 0 {
		return items, nil // planned after the observation, and refused then if it must be
	}
	deadline := r.Now().Add(r.Timeout)
	r.prepare(ctx, nodesOf(plan, pods))
	apply := func() (*PodWaits, []Result) {
		w, then := r.podWaits(ctx, deadline, nil, plan)
		return w, ApplyWith(ctx, r.Patcher, plan, ApplyOptions{DryRun: DryRunNone, Now: r.Now, Then: then, Sleep: r.Sleep, Backoff: r.PatchBackoff, Serial: r.Serial})
	}
	finish := func(w *PodWaits, results []Result) []Result {
		if w != nil {
			results = w.Finish(results, r.Rollouts)
		}
		return results
	}
	if r.Serial {
		// one goroutine on the clock: the patches now, the waits when the
		// results are asked for (after the plan's own waits)
		w, results := apply()
		return rest, func() []Result { return finish(w, results) }
	}
	done := make(chan []Result, 1)
	go func() { done <- finish(apply()) }()
	return rest, func() []Result { return <-done }
}

// worstCase is plan plus the most the rest may need, as the planner
// itself decides it (so that no owner shape is missed: a bare ReplicaSet
// is evicted under --restart-via=evict but not restarted): every pod
// annotated, and every use stale, each workload taken to exist, so that
// each is restarted or its pods evicted wherever the planner would.
func (r *Refresher) worstCase(plan []Action, rest []inspect.Use, pods map[string]*corev1.Pod) []Action {
	worst := append([]Action{}, plan...)
	stale := make([]inspect.Use, 0, len(rest))
	workloads := map[WorkloadKey]WorkloadInfo{}
	for _, it := range rest {
		if it.Pod.Name == "" {
			continue
		}
		worst = append(worst, Action{Action: ActionAnnotate, Target: Target{Kind: "Pod", Namespace: it.Object.Namespace, Name: it.Pod.Name}})
		it.State = inspect.StateStale
		stale = append(stale, it)
		workloads[workloadKey(it)] = WorkloadInfo{Exists: true}
	}
	return append(worst, PlanActions(PlanInput{Items: stale, Pods: pods, Workload: workloads, Strategy: r.Strategy, Verified: true,
		RestartVia: r.RestartVia, MaxUnavailable: r.MaxUnavailable})...)
}

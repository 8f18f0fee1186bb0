package inspect

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WorkloadKey names one workload of a namespace by group, kind and name:
// its Workload's GroupKind (the kind, qualified by its API group unless it
// is a Pod or a built-in controller) and Name.
type WorkloadKey struct {
	Namespace string
	Workload  WorkloadRef
}

// String is kind/name as kubectl writes it ("deployment/web",
// "rollout.argoproj.io/web").
func (k WorkloadKey) String() string { return k.Workload.String() }

// SelectedWorkload is a workload a report is narrowed to, with the pod
// template it was read with (nil: not read): what its pods would read when
// none runs.
type SelectedWorkload struct {
	Key      WorkloadKey
	Template *WorkloadTemplate
}

// Selects tells whether the workload runs the pod: it is one step of the
// pod's OwnerChain (the pod itself, its ReplicaSet, Job or StatefulSet, or
// their Deployment, CronJob or Rollout), matched by group, kind and name.
func (k WorkloadKey) Selects(pod *corev1.Pod, snap *Snapshot) bool {
	if pod.Namespace != k.Namespace {
		return false
	}
	chain, n := ownerChain(pod, snap)
	return k.selectsChain(chain[:n])
}

func (k WorkloadKey) selectsChain(chain []WorkloadRef) bool {
	gk := k.Workload.GroupKind()
	for _, w := range chain {
		if w.Name == k.Workload.Name && w.GroupKind() == gk {
			return true
		}
	}
	return false
}

// selectPod tells whether the report keeps the pod: always when it is not
// narrowed to workloads, else when one of them runs it (marked running
// unless the pod is done).
func (b *Builder) selectPod(pod *corev1.Pod) (keep bool) {
	if len(b.o.Workloads) == 0 {
		return true
	}
	chain, n := ownerChain(pod, b.snap)
	for i, w := range b.o.Workloads {
		if w.Key.Namespace == pod.Namespace && w.Key.selectsChain(chain[:n]) {
			keep = true
			if !PodTerminated(pod) {
				b.running[i] = true
			}
		}
	}
	return keep
}

// idleRows are the rows of the selected workloads that run no pod now
// (scaled to zero, a CronJob between runs, a Job done): from the pod
// template each was read with, one no-pods row per object it reads that
// exists, and the uses of an object it reads that does not exist, missing
// as they would be for a pod (without one).
func (b *Builder) idleRows(items []Use) []Use {
	for i, w := range b.o.Workloads {
		if b.running[i] || w.Template == nil {
			continue
		}
		items = append(items, templateRows(b.snap, w, b.keep)...)
	}
	return items
}

// templateRows are idleRows of one workload.
func templateRows(snap *Snapshot, w SelectedWorkload, keep func(ObjectKey) bool) []Use {
	t := w.Template
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: w.Key.Namespace, Name: t.Name}, Spec: t.Spec}
	var out []Use
	modes := map[ObjectKey][]string{}
	var order []ObjectKey
	for _, it := range Uses(pod) {
		k := it.Key()
		if it.Mode == ModeUnmounted || !keep(k) {
			continue
		}
		obj := snap.Object(k)
		if !obj.Exists {
			Predict(&it, pod, obj, snap)
			it.Pod = PodRef{}
			it.Workload = w.Key.Workload
			out = append(out, it)
			continue
		}
		if _, ok := modes[k]; !ok {
			order = append(order, k)
		}
		modes[k] = appendOnce(modes[k], string(it.Mode))
	}
	state := ""
	if t.State != "" {
		state = ", " + t.State
	}
	for _, k := range order {
		obj := snap.Object(k)
		it := Use{Object: ObjectRef{Kind: k.Kind, Namespace: k.Namespace, Name: k.Name, Exists: true, Immutable: obj.Immutable,
			LastChange: timePtr(obj.LastChange.UTC())}, Workload: w.Key.Workload, Verdict: VerdictNoPods}
		it.Reason = fmt.Sprintf("no pod runs now (%s%s), but its pod template consumes this %s (%s): its next pods read the current content",
			w.Key, state, strings.ToLower(k.Kind), strings.Join(modes[k], ", "))
		out = append(out, it)
	}
	return out
}

// Idle is the selected workloads that run no pod now, in the order
// given; call it after the last Add.
func (b *Builder) Idle() []SelectedWorkload {
	var out []SelectedWorkload
	for i, w := range b.o.Workloads {
		if !b.running[i] {
			out = append(out, w)
		}
	}
	return out
}

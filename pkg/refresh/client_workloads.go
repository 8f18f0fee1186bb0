package refresh

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// Workloads is the I/O edge of the workload reads: what the planner needs
// to know of an owning workload, and the pods it runs now.
type Workloads interface {
	// Workload reads one Deployment, StatefulSet or DaemonSet with its live
	// pods (Exists false when it is gone).
	Workload(ctx context.Context, k WorkloadKey) (WorkloadInfo, error)
	// WorkloadPods lists the pods the workload controls (a Deployment's
	// through its ReplicaSets), Succeeded and Failed ones left out,
	// terminating ones flagged.
	WorkloadPods(ctx context.Context, kind, namespace, name string) ([]WorkloadPod, error)
}

// CallError is a failed call on one object, kept apart so that a
// Forbidden answer can name the Role rule that grants the call.
type CallError struct {
	Verb, Resource, Namespace, Name string
	Err                             error
}

func (e *CallError) Error() string {
	if e.Name == "" {
		return fmt.Sprintf("cannot %s %s in namespace %q: %v", e.Verb, e.Resource, e.Namespace, e.Err)
	}
	return fmt.Sprintf("cannot %s %s %s/%s: %v", e.Verb, e.Resource, e.Namespace, e.Name, e.Err)
}

func (e *CallError) Unwrap() error { return e.Err }

// ClientWorkloads reads workloads and lists their pods through client-go.
type ClientWorkloads struct{ Client kubernetes.Interface }

// workload is what both reads need of a workload object.
type workload struct {
	info     WorkloadInfo
	uid      types.UID
	selector *metav1.LabelSelector
	// annotations of the object and of its pod template
	annotations, template map[string]string
}

// get reads one workload of kind (Deployment, StatefulSet, DaemonSet,
// ReplicaSet or Argo Rollout).
func (c ClientWorkloads) get(ctx context.Context, kind, namespace, name string) (workload, error) {
	var w workload
	var err error
	if IsRollout(kind) {
		r, err := getRollout(ctx, c.Client, namespace, name)
		if err != nil {
			return w, &CallError{Verb: "get", Resource: "rollouts", Namespace: namespace, Name: name, Err: err}
		}
		return workload{WorkloadInfo{Exists: true, Rollout: r.info()}, r.UID, r.Spec.Selector, r.Annotations, r.templateAnnotations()}, nil
	}
	apps := c.Client.AppsV1()
	gk, ok := BuiltinKind(kind) // by group and kind: another group's StatefulSet is not read as apps/v1's
	if !ok || gk.Group != "apps" {
		return w, fmt.Errorf("cannot list the pods of a %s", gk)
	}
	switch gk.Kind {
	case "Deployment":
		d, e := apps.Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
		if err = e; e == nil {
			w = workload{WorkloadInfo{Exists: true, Paused: d.Spec.Paused}, d.UID, d.Spec.Selector, d.Annotations, d.Spec.Template.Annotations}
		}
	case "StatefulSet":
		s, e := apps.StatefulSets(namespace).Get(ctx, name, metav1.GetOptions{})
		if err = e; e == nil {
			w = workload{WorkloadInfo{Exists: true, OnDelete: s.Spec.UpdateStrategy.Type == "OnDelete"}, s.UID, s.Spec.Selector, s.Annotations, s.Spec.Template.Annotations}
			if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
				w.info.Partition = *ru.Partition
			}
			if s.Spec.Ordinals != nil {
				w.info.OrdinalsStart = s.Spec.Ordinals.Start
			}
		}
	case "DaemonSet":
		d, e := apps.DaemonSets(namespace).Get(ctx, name, metav1.GetOptions{})
		if err = e; e == nil {
			w = workload{WorkloadInfo{Exists: true, OnDelete: d.Spec.UpdateStrategy.Type == "OnDelete"}, d.UID, d.Spec.Selector, d.Annotations, d.Spec.Template.Annotations}
		}
	case "ReplicaSet":
		rs, e := apps.ReplicaSets(namespace).Get(ctx, name, metav1.GetOptions{})
		if err = e; e == nil {
			w = workload{WorkloadInfo{Exists: true}, rs.UID, rs.Spec.Selector, rs.Annotations, rs.Spec.Template.Annotations}
		}
	default:
		return w, fmt.Errorf("cannot list the pods of a %s", kind)
	}
	if err != nil {
		return w, &CallError{Verb: "get", Resource: strings.ToLower(kind) + "s", Namespace: namespace, Name: name, Err: err}
	}
	return w, nil
}

// Annotations reads the annotations of a workload and of its pod template
// (where Reloader's may be), by group and kind: the continuous refresh's
// selection reads them.
func (c ClientWorkloads) Annotations(ctx context.Context, kind, namespace, name string) (map[string]string, map[string]string, error) {
	w, err := c.get(ctx, kind, namespace, name)
	return w.annotations, w.template, err
}

// Workload implements Workloads. Its Pods leave terminating pods out: the
// pods a rollout restart replaces.
func (c ClientWorkloads) Workload(ctx context.Context, k WorkloadKey) (WorkloadInfo, error) {
	w, err := c.get(ctx, k.Kind, k.Namespace, k.Name)
	if apierrors.IsNotFound(err) {
		return WorkloadInfo{}, nil
	}
	if err != nil || w.selector == nil {
		return w.info, err // no selector: the plan falls back to the consumers' pods
	}
	pods, err := c.pods(ctx, k.Kind, k.Namespace, k.Name, w)
	if err != nil {
		return w.info, err
	}
	w.info.Pods = []WorkloadPod{}
	for _, p := range pods {
		if !p.Terminating {
			w.info.Pods = append(w.info.Pods, p)
		}
	}
	return w.info, nil
}

// WorkloadPods implements Workloads.
func (c ClientWorkloads) WorkloadPods(ctx context.Context, kind, namespace, name string) ([]WorkloadPod, error) {
	w, err := c.get(ctx, kind, namespace, name)
	if err != nil {
		return nil, err
	}
	return c.pods(ctx, kind, namespace, name, w)
}

// pods lists the pods of w by its selector (not the user's -l), then keeps
// those it controls: a Deployment's pods belong to its ReplicaSets.
func (c ClientWorkloads) pods(ctx context.Context, kind, namespace, name string, w workload) ([]WorkloadPod, error) {
	sel, err := metav1.LabelSelectorAsSelector(w.selector)
	if err != nil {
		return nil, fmt.Errorf("%s/%s has an invalid selector: %w", strings.ToLower(kind), name, err)
	}
	owners := map[types.UID]bool{w.uid: true}
	if kind == "Deployment" || IsRollout(kind) { // a Rollout's pods belong to its ReplicaSets too
		rss, err := c.Client.AppsV1().ReplicaSets(namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
		if err != nil {
			return nil, &CallError{Verb: "list", Resource: "replicasets", Namespace: namespace, Err: err}
		}
		for i := range rss.Items {
			if ref := metav1.GetControllerOf(&rss.Items[i]); ref != nil && ref.UID == w.uid {
				owners[rss.Items[i].UID] = true
			}
		}
	}
	pods, err := c.Client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, &CallError{Verb: "list", Resource: "pods", Namespace: namespace, Err: err}
	}
	out := []WorkloadPod{}
	for i := range pods.Items {
		p := &pods.Items[i]
		ref := metav1.GetControllerOf(p)
		if ref == nil || !owners[ref.UID] || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		out = append(out, WorkloadPod{Name: p.Name, UID: string(p.UID), Labels: p.Labels, Ready: podReady(p), Terminating: p.DeletionTimestamp != nil})
	}
	return out, nil
}

// LoadWorkloads reads each Deployment, StatefulSet and DaemonSet that owns
// a consumer of items: one read per workload, not per pod.
func LoadWorkloads(ctx context.Context, w Workloads, items []inspect.Use) (map[WorkloadKey]WorkloadInfo, error) {
	out := map[WorkloadKey]WorkloadInfo{}
	for _, it := range items {
		k := workloadKey(it)
		if !Restartable[k.Kind] {
			continue
		}
		if _, done := out[k]; done {
			continue
		}
		info, err := w.Workload(ctx, k)
		if err != nil {
			return nil, err
		}
		out[k] = info
	}
	return out, nil
}

// AnnotatedWorkload is a Deployment, StatefulSet or DaemonSet with its
// annotations, its pod template's, its pod template's labels and spec, and
// what keeps a restart from replacing its pods.
type AnnotatedWorkload struct {
	Kind, Name            string
	Annotations, Template map[string]string
	Labels                map[string]string
	Spec                  corev1.PodSpec
	// Paused Deployment; OnDelete strategy; a StatefulSet's partition.
	Paused, OnDelete bool
	Partition        int32
}

// Annotated lists the Deployments, StatefulSets and DaemonSets of a
// namespace whose annotations or pod template annotations have one of keys.
func (c ClientWorkloads) Annotated(ctx context.Context, namespace string, keys ...string) ([]AnnotatedWorkload, error) {
	var out []AnnotatedWorkload
	add := func(w AnnotatedWorkload, ann map[string]string, t corev1.PodTemplateSpec) {
		for _, k := range keys {
			_, onWorkload := ann[k]
			_, onTemplate := t.Annotations[k]
			if onWorkload || onTemplate {
				w.Annotations, w.Template, w.Labels, w.Spec = ann, t.Annotations, t.Labels, t.Spec
				out = append(out, w)
				return
			}
		}
	}
	apps := c.Client.AppsV1()
	ds, err := apps.Deployments(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, &CallError{Verb: "list", Resource: "deployments", Namespace: namespace, Err: err}
	}
	for _, d := range ds.Items {
		add(AnnotatedWorkload{Kind: "Deployment", Name: d.Name, Paused: d.Spec.Paused}, d.Annotations, d.Spec.Template)
	}
	ss, err := apps.StatefulSets(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, &CallError{Verb: "list", Resource: "statefulsets", Namespace: namespace, Err: err}
	}
	for _, s := range ss.Items {
		w := AnnotatedWorkload{Kind: "StatefulSet", Name: s.Name, OnDelete: s.Spec.UpdateStrategy.Type == "OnDelete"}
		if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
			w.Partition = *ru.Partition
		}
		add(w, s.Annotations, s.Spec.Template)
	}
	dss, err := apps.DaemonSets(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, &CallError{Verb: "list", Resource: "daemonsets", Namespace: namespace, Err: err}
	}
	for _, d := range dss.Items {
		add(AnnotatedWorkload{Kind: "DaemonSet", Name: d.Name, OnDelete: d.Spec.UpdateStrategy.Type == "OnDelete"}, d.Annotations, d.Spec.Template)
	}
	return out, nil
}

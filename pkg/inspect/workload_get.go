package inspect

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// TemplateReader reads one workload's pod template by group, kind and name:
// whether it exists, and what its pods read. ClientTemplates implements it.
type TemplateReader interface {
	Template(ctx context.Context, k WorkloadKey) (WorkloadTemplate, error)
}

// ClientTemplates reads workloads through client-go: one GET each.
type ClientTemplates struct{ Client kubernetes.Interface }

// RolloutResource is the resource of Argo Rollouts, in the version its CRD
// serves.
var RolloutResource = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "rollouts"}

// Template implements TemplateReader. The kind is matched by group and
// kind (WorkloadRef.GroupKind): the built-in workloads, Pod, and Argo's
// Rollout; any other is an error.
func (c ClientTemplates) Template(ctx context.Context, k WorkloadKey) (WorkloadTemplate, error) {
	ns, name := k.Namespace, k.Workload.Name
	t := WorkloadTemplate{Kind: k.Workload.Kind, Namespace: ns, Name: name}
	get := metav1.GetOptions{}
	var err error
	switch k.Workload.GroupKind() {
	case "Deployment":
		d, e := c.Client.AppsV1().Deployments(ns).Get(ctx, name, get)
		if err = e; e == nil {
			t.State, t.Spec = replicas(d.Spec.Replicas), d.Spec.Template.Spec
		}
	case "StatefulSet":
		d, e := c.Client.AppsV1().StatefulSets(ns).Get(ctx, name, get)
		if err = e; e == nil {
			t.State, t.Spec = replicas(d.Spec.Replicas), d.Spec.Template.Spec
		}
	case "DaemonSet":
		d, e := c.Client.AppsV1().DaemonSets(ns).Get(ctx, name, get)
		if err = e; e == nil {
			t.State, t.Spec = "no node runs it now", d.Spec.Template.Spec
		}
	case "ReplicaSet":
		d, e := c.Client.AppsV1().ReplicaSets(ns).Get(ctx, name, get)
		if err = e; e == nil {
			t.State, t.Spec = replicas(d.Spec.Replicas), d.Spec.Template.Spec
		}
	case "Job":
		j, e := c.Client.BatchV1().Jobs(ns).Get(ctx, name, get)
		if err = e; e == nil {
			t.State, t.Spec = "no pod running now", j.Spec.Template.Spec
			if j.Status.CompletionTime != nil || jobFailed(j) {
				t.State = "finished"
			}
		}
	case "CronJob":
		cj, e := c.Client.BatchV1().CronJobs(ns).Get(ctx, name, get)
		if err = e; e == nil {
			t.State, t.Spec = "between runs (schedule "+cj.Spec.Schedule+")", cj.Spec.JobTemplate.Spec.Template.Spec
			if cj.Spec.Suspend != nil && *cj.Spec.Suspend {
				t.State = "suspended"
			}
		}
	case "Pod":
		p, e := c.Client.CoreV1().Pods(ns).Get(ctx, name, get)
		if err = e; e == nil {
			t.State, t.Spec = "pod "+string(p.Status.Phase), p.Spec
		}
	case "Rollout.argoproj.io":
		return c.rollout(ctx, t)
	default:
		return t, fmt.Errorf("cannot read the pod template of a %s", k.Workload.GroupKind())
	}
	return t, err
}

// rollout reads an Argo Rollout through a dynamic client over the
// clientset's own REST client (cmsync imports no Argo type). A Rollout
// whose pods come from another workload (spec.workloadRef) has no
// template of its own: none is read.
func (c ClientTemplates) rollout(ctx context.Context, t WorkloadTemplate) (WorkloadTemplate, error) {
	u, err := dynamic.New(c.Client.Discovery().RESTClient()).Resource(RolloutResource).Namespace(t.Namespace).Get(ctx, t.Name, metav1.GetOptions{})
	if err != nil {
		return t, err
	}
	var r struct {
		Spec struct {
			Replicas *int32 `json:"replicas"`
			Template struct {
				Spec corev1.PodSpec `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &r); err != nil {
		return t, fmt.Errorf("rollout %s/%s: %w", t.Namespace, t.Name, err)
	}
	t.State, t.Spec = replicas(r.Spec.Replicas), r.Spec.Template.Spec
	return t, nil
}

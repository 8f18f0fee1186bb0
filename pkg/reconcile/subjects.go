package reconcile

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/watch"
)

// WorkloadAnnotations reads the annotations of a Deployment, StatefulSet or
// DaemonSet and of its pod template (where Reloader's may be).
type WorkloadAnnotations interface {
	Annotations(ctx context.Context, kind, namespace, name string) (workload, template map[string]string, err error)
}

// ClientAnnotations is WorkloadAnnotations over client-go.
type ClientAnnotations struct{ Client kubernetes.Interface }

// Annotations GETs the workload by group and kind.
func (c ClientAnnotations) Annotations(ctx context.Context, kind, namespace, name string) (map[string]string, map[string]string, error) {
	gk, ok := refresh.BuiltinKind(kind)
	if !ok || gk.Group != "apps" {
		return nil, nil, fmt.Errorf("no annotations read for a %s", kind)
	}
	apps := c.Client.AppsV1()
	switch gk.Kind {
	case "Deployment":
		d, err := apps.Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, nil, err
		}
		return d.Annotations, d.Spec.Template.Annotations, nil
	case "StatefulSet":
		s, err := apps.StatefulSets(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, nil, err
		}
		return s.Annotations, s.Spec.Template.Annotations, nil
	case "DaemonSet":
		d, err := apps.DaemonSets(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, nil, err
		}
		return d.Annotations, d.Spec.Template.Annotations, nil
	}
	return nil, nil, fmt.Errorf("no annotations read for a %s", kind)
}

type subjectKey struct {
	workload inspect.WorkloadRef
	object   inspect.ObjectKey
}

// selected keeps the uses of the workloads a change may be acted on
// (watch.Select), and reports each workload left alone, once per object.
func (l *Loop) selected(ctx context.Context, snap *inspect.Snapshot, items []inspect.Item) []inspect.Item {
	decisions := map[subjectKey]watch.Decision{}
	meta := map[inspect.WorkloadRef][2]map[string]string{}
	var kept []inspect.Item
	for _, it := range items {
		sk := subjectKey{workload: it.Workload, object: it.Key()}
		d, seen := decisions[sk]
		if !seen {
			ann, ok := meta[it.Workload]
			if !ok {
				ann = l.subjectAnnotations(ctx, snap, it)
				meta[it.Workload] = ann
			}
			d = watch.Select(l.RequireOptIn, watch.Subject{Annotations: ann[0], TemplateAnnotations: ann[1], Consumes: true},
				watch.Changed{Kind: it.Object.Kind, Name: it.Object.Name, Annotations: objectAnnotations(snap, it.Key())})
			decisions[sk] = d
			if d.Selection == watch.Skip {
				k := it.Key()
				l.emit(Event{Kind: EventSkip, Object: &k, Target: &refresh.Target{Kind: it.Workload.Kind, Namespace: k.Namespace, Name: it.Workload.Name},
					Message: d.Reason})
			}
		}
		if d.Selection != watch.Skip {
			kept = append(kept, it)
		}
	}
	return kept
}

// subjectAnnotations are the annotations of the item's workload and its
// pod template: a built-in workload's own, read once a round; for a bare
// pod (or an owner cmsync does not read) the pod's, for both.
func (l *Loop) subjectAnnotations(ctx context.Context, snap *inspect.Snapshot, it inspect.Item) [2]map[string]string {
	if it.Workload.APIVersion == "" && it.Workload.Kind != "Pod" && l.Annotations != nil {
		if w, t, err := l.Annotations.Annotations(ctx, it.Workload.Kind, it.Object.Namespace, it.Workload.Name); err == nil {
			return [2]map[string]string{w, t}
		}
	}
	for i := range snap.Pods {
		if p := &snap.Pods[i]; p.Name == it.Pod.Name && p.Namespace == it.Object.Namespace {
			return [2]map[string]string{p.Annotations, p.Annotations}
		}
	}
	return [2]map[string]string{}
}

func objectAnnotations(snap *inspect.Snapshot, k inspect.ObjectKey) map[string]string {
	if cm := snap.ConfigMaps[k]; cm != nil {
		return cm.Annotations
	}
	if s := snap.Secrets[k]; s != nil {
		return s.Annotations
	}
	return nil
}

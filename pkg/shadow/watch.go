package shadow

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// view is what the watch reads of one version of a workload: its pod
// template, an Argo Rollout's spec.restartAt, and the pods it runs by its
// spec.
type view struct {
	Workload  Workload
	Template  *corev1.PodTemplateSpec
	RestartAt string
	Pods      int
}

// viewMarkers are the peer's restarts that tell old from cur, two versions
// of one workload: the template's markers (Markers), and a Rollout's
// spec.restartAt moved (Reloader's restart strategy for Rollouts), which
// names no object. At is the caller's.
func viewMarkers(old, cur view) []Marker {
	ms := Markers(old.Template, cur.Template)
	if cur.RestartAt != "" && cur.RestartAt != old.RestartAt {
		ms = append(ms, Marker{Strategy: StrategyRestartAt})
	}
	for i := range ms {
		ms[i].Workload, ms[i].Pods = cur.Workload, cur.Pods
	}
	return ms
}

// The views of the built-in kinds.
func deploymentView(obj any) (view, bool) {
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return view{}, false
	}
	return view{Workload: Workload{Kind: "Deployment", Namespace: d.Namespace, Name: d.Name}, Template: &d.Spec.Template, Pods: int(ptrOr(d.Spec.Replicas, 1))}, true
}

func statefulSetView(obj any) (view, bool) {
	s, ok := obj.(*appsv1.StatefulSet)
	if !ok {
		return view{}, false
	}
	return view{Workload: Workload{Kind: "StatefulSet", Namespace: s.Namespace, Name: s.Name}, Template: &s.Spec.Template, Pods: int(ptrOr(s.Spec.Replicas, 1))}, true
}

func daemonSetView(obj any) (view, bool) {
	d, ok := obj.(*appsv1.DaemonSet)
	if !ok {
		return view{}, false
	}
	return view{Workload: Workload{Kind: "DaemonSet", Namespace: d.Namespace, Name: d.Name}, Template: &d.Spec.Template, Pods: int(d.Status.DesiredNumberScheduled)}, true
}

// rolloutView reads an Argo Rollout (unstructured: cmsync imports no Argo
// type); its kind is qualified by its group, as cmsync's actions name it.
func rolloutView(obj any) (view, bool) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return view{}, false
	}
	var r struct {
		Spec struct {
			Replicas  *int32                 `json:"replicas"`
			RestartAt string                 `json:"restartAt"`
			Template  corev1.PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &r); err != nil {
		return view{}, false
	}
	return view{Workload: Workload{Kind: refresh.RolloutKind, Namespace: u.GetNamespace(), Name: u.GetName()},
		Template: &r.Spec.Template, RestartAt: r.Spec.RestartAt, Pods: int(ptrOr(r.Spec.Replicas, 1))}, true
}

// workloadWatch is the informers of the workloads a peer restarts:
// Deployments, StatefulSets, DaemonSets, and Argo Rollouts where their CRD
// is served. It is also the Sizes of the workloads it caches.
type workloadWatch struct {
	factory  informers.SharedInformerFactory
	rollouts dynamicinformer.DynamicSharedInformerFactory // nil: Rollouts not watched
	kinds    map[string]watchedKind                       // by Workload.Kind
}

type watchedKind struct {
	store cache.Store
	read  func(any) (view, bool)
}

// watchWorkloads makes the informers of namespace ns ("" for all): each
// update's markers, their Workload and Pods set, are handed to found.
// Rollouts are read through dyn (nil: through client) and watched when one
// LIST of them succeeds; note says why not
// when their CRD is served but the LIST failed (RBAC, say). The caller
// starts it.
func watchWorkloads(ctx context.Context, client kubernetes.Interface, dyn dynamic.Interface, ns string, found func([]Marker)) (w *workloadWatch, note string) {
	w = &workloadWatch{factory: informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns)), kinds: map[string]watchedKind{}}
	apps := w.factory.Apps().V1()
	w.add("Deployment", apps.Deployments().Informer(), deploymentView, found)
	w.add("StatefulSet", apps.StatefulSets().Informer(), statefulSetView, found)
	w.add("DaemonSet", apps.DaemonSets().Informer(), daemonSetView, found)
	if dyn == nil {
		rest := client.Discovery().RESTClient()
		if rest == nil { // a fake client
			return w, ""
		}
		dyn = dynamic.New(rest) // the clientset's own connection: the paths are absolute
	}
	probe, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err := dyn.Resource(refresh.RolloutResource).Namespace(ns).List(probe, metav1.ListOptions{Limit: 1})
	switch {
	case apierrors.IsNotFound(err):
		return w, "" // no Argo Rollouts in this cluster
	case err != nil:
		return w, fmt.Sprintf("Argo Rollouts are not watched for a peer's restarts (spec.restartAt, their pod templates): listing them: %v", err)
	}
	w.rollouts = dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, ns, nil)
	w.add(refresh.RolloutKind, w.rollouts.ForResource(refresh.RolloutResource).Informer(), rolloutView, found)
	return w, ""
}

// add watches one kind: the markers of each update go to found.
func (w *workloadWatch) add(kind string, inf cache.SharedIndexInformer, read func(any) (view, bool), found func([]Marker)) {
	w.kinds[kind] = watchedKind{store: inf.GetStore(), read: read}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(old, cur any) {
		before, ok1 := read(old)
		after, ok2 := read(cur)
		if !ok1 || !ok2 {
			return
		}
		if ms := viewMarkers(before, after); len(ms) > 0 {
			found(ms)
		}
	}})
}

// start starts the informers; sync waits for their caches.
func (w *workloadWatch) start(stop <-chan struct{}) {
	w.factory.Start(stop)
	if w.rollouts != nil {
		w.rollouts.Start(stop)
	}
}

func (w *workloadWatch) sync(stop <-chan struct{}) {
	w.factory.WaitForCacheSync(stop)
	if w.rollouts != nil {
		w.rollouts.WaitForCacheSync(stop)
	}
}

func (w *workloadWatch) shutdown() {
	w.factory.Shutdown()
	if w.rollouts != nil {
		w.rollouts.Shutdown()
	}
}

// Desired is the pods a workload runs by its spec, from the informers'
// caches.
func (w *workloadWatch) Desired(wl Workload) (int, bool) {
	k, ok := w.kinds[wl.Kind]
	if !ok {
		return 0, false
	}
	obj, ok, err := k.store.GetByKey(wl.Namespace + "/" + wl.Name)
	if err != nil || !ok {
		return 0, false
	}
	v, ok := k.read(obj)
	return v.Pods, ok && v.Pods > 0
}

func ptrOr(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}

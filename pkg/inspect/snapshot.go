package inspect

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/pager"
)

// Snapshot holds everything the pure functions of this package read: the
// result of one paginated LIST per kind.
type Snapshot struct {
	Pods        []corev1.Pod
	ConfigMaps  map[ObjectKey]*corev1.ConfigMap
	Secrets     map[ObjectKey]*corev1.Secret
	ReplicaSets map[NamespacedName]*appsv1.ReplicaSet
	Jobs        map[NamespacedName]*batchv1.Job
	// Nodes is nil when nodes could not be read (no RBAC): defaults apply.
	Nodes map[string]*corev1.Node
	// KubeletConfigs holds what /configz said per node (--kubelet-config).
	KubeletConfigs map[string]KubeletTiming
	// SecretsListed tells whether Secrets were loaded (--secrets).
	SecretsListed bool

	// objects caches Object per key (see Object); mu guards it, as
	// Object may be called from concurrent goroutines.
	mu      sync.Mutex
	objects map[ObjectKey]Object
}

// NamespacedName identifies a namespaced object of a known kind.
type NamespacedName struct{ Namespace, Name string }

// Object is the content of a ConfigMap or Secret, independent of its kind.
type Object struct {
	Kind, Namespace, Name string
	Exists                bool
	Immutable             bool
	// Data is what a volume writes: a ConfigMap's data and binaryData, a
	// Secret's data.
	Data map[string][]byte
	// BinaryKeys marks the ConfigMap keys that come from binaryData (they
	// never become environment variables).
	BinaryKeys map[string]bool
	// LastChange is the newest managedFields time, else the creation time.
	LastChange      time.Time
	ResourceVersion string
	UID             string
	// Unread: the object was not read (a Secret while Secrets were not
	// listed), so nothing is known of it: Exists and Data say nothing.
	// What it could provide must be treated as unknown, never as absent.
	Unread bool
}

// Object returns the object named by k, with Exists false when the snapshot
// does not hold it, and Unread set for a Secret when Secrets were not
// listed. The result is converted once per key and cached: it is shared,
// so callers must not modify its maps. Safe for concurrent use; the
// snapshot's ConfigMaps and Secrets must not change once Object was called.
func (s *Snapshot) Object(k ObjectKey) Object {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o, ok := s.objects[k]; ok {
		return o
	}
	if s.objects == nil {
		s.objects = map[ObjectKey]Object{}
	}
	o := s.convert(k)
	s.objects[k] = o
	return o
}

func (s *Snapshot) convert(k ObjectKey) Object {
	o := Object{Kind: k.Kind, Namespace: k.Namespace, Name: k.Name}
	switch k.Kind {
	case KindConfigMap:
		if cm, ok := s.ConfigMaps[k]; ok {
			return ConfigMapObject(cm)
		}
	case KindSecret:
		if sec, ok := s.Secrets[k]; ok {
			return SecretObject(sec)
		}
		o.Unread = !s.SecretsListed
	}
	return o
}

// ConfigMapObject converts a ConfigMap.
func ConfigMapObject(cm *corev1.ConfigMap) Object {
	o := Object{Kind: KindConfigMap, Namespace: cm.Namespace, Name: cm.Name, Exists: true,
		Immutable: cm.Immutable != nil && *cm.Immutable, Data: map[string][]byte{}, BinaryKeys: map[string]bool{},
		LastChange: lastChange(cm.ObjectMeta), ResourceVersion: cm.ResourceVersion, UID: string(cm.UID)}
	for k, v := range cm.Data {
		o.Data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		o.Data[k] = v
		o.BinaryKeys[k] = true
	}
	return o
}

// SecretObject converts a Secret.
func SecretObject(s *corev1.Secret) Object {
	o := Object{Kind: KindSecret, Namespace: s.Namespace, Name: s.Name, Exists: true,
		Immutable: s.Immutable != nil && *s.Immutable, Data: map[string][]byte{}, BinaryKeys: map[string]bool{},
		LastChange: lastChange(s.ObjectMeta), ResourceVersion: s.ResourceVersion, UID: string(s.UID)}
	for k, v := range s.Data {
		o.Data[k] = v
	}
	return o
}

func lastChange(m metav1.ObjectMeta) time.Time {
	t := m.CreationTimestamp.Time
	for _, f := range m.ManagedFields {
		if f.Time != nil && f.Time.After(t) {
			t = f.Time.Time
		}
	}
	return t
}

// Keys returns the object's keys in order.
func (o Object) Keys() []string {
	keys := make([]string, 0, len(o.Data))
	for k := range o.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// LoadOptions selects what Load reads.
type LoadOptions struct {
	// Namespace to read; empty means all namespaces.
	Namespace string
	// PodSelector is a label selector on pods.
	PodSelector string
	// Secrets loads Secrets too.
	Secrets bool
	// Nodes reads nodes for the TTL annotation; a Forbidden answer is not
	// an error (the defaults apply).
	Nodes bool
	// PageSize is the LIST page size (default 500).
	PageSize int64
}

// Load reads a Snapshot with one paginated LIST per kind.
func Load(ctx context.Context, c kubernetes.Interface, o LoadOptions) (*Snapshot, error) {
	s := &Snapshot{ConfigMaps: map[ObjectKey]*corev1.ConfigMap{}, Secrets: map[ObjectKey]*corev1.Secret{},
		ReplicaSets: map[NamespacedName]*appsv1.ReplicaSet{}, Jobs: map[NamespacedName]*batchv1.Job{}, SecretsListed: o.Secrets}
	ps := o.PageSize
	if ps == 0 {
		ps = 500
	}
	list := func(resource string, selector string, fn func(context.Context, metav1.ListOptions) (runtime.Object, error), each func(runtime.Object) error) error {
		p := pager.New(pager.ListPageFunc(fn))
		p.PageSize = ps
		err := p.EachListItem(ctx, metav1.ListOptions{LabelSelector: selector}, each)
		if err != nil {
			return &ListError{Resource: resource, Namespace: o.Namespace, Err: err}
		}
		return nil
	}
	ns := o.Namespace
	if err := list("pods", o.PodSelector, func(ctx context.Context, lo metav1.ListOptions) (runtime.Object, error) {
		return c.CoreV1().Pods(ns).List(ctx, lo)
	}, func(obj runtime.Object) error {
		s.Pods = append(s.Pods, *obj.(*corev1.Pod))
		return nil
	}); err != nil {
		return nil, err
	}
	if err := list("configmaps", "", func(ctx context.Context, lo metav1.ListOptions) (runtime.Object, error) {
		return c.CoreV1().ConfigMaps(ns).List(ctx, lo)
	}, func(obj runtime.Object) error {
		cm := obj.(*corev1.ConfigMap)
		s.ConfigMaps[ObjectKey{KindConfigMap, cm.Namespace, cm.Name}] = cm
		return nil
	}); err != nil {
		return nil, err
	}
	if o.Secrets {
		if err := list("secrets", "", func(ctx context.Context, lo metav1.ListOptions) (runtime.Object, error) {
			return c.CoreV1().Secrets(ns).List(ctx, lo)
		}, func(obj runtime.Object) error {
			sec := obj.(*corev1.Secret)
			s.Secrets[ObjectKey{KindSecret, sec.Namespace, sec.Name}] = sec
			return nil
		}); err != nil {
			return nil, err
		}
	}
	needRS, needJobs := false, false
	for i := range s.Pods {
		if ref := metav1.GetControllerOf(&s.Pods[i]); ref != nil {
			switch ref.Kind {
			case "ReplicaSet":
				needRS = true
			case "Job":
				needJobs = true
			}
		}
	}
	if needRS {
		if err := list("replicasets", "", func(ctx context.Context, lo metav1.ListOptions) (runtime.Object, error) {
			return c.AppsV1().ReplicaSets(ns).List(ctx, lo)
		}, func(obj runtime.Object) error {
			rs := obj.(*appsv1.ReplicaSet)
			s.ReplicaSets[NamespacedName{rs.Namespace, rs.Name}] = rs
			return nil
		}); err != nil && !apierrors.IsForbidden(err) {
			// Forbidden: the owner walk stops at the ReplicaSet
			return nil, err
		}
	}
	if needJobs {
		if err := list("jobs", "", func(ctx context.Context, lo metav1.ListOptions) (runtime.Object, error) {
			return c.BatchV1().Jobs(ns).List(ctx, lo)
		}, func(obj runtime.Object) error {
			j := obj.(*batchv1.Job)
			s.Jobs[NamespacedName{j.Namespace, j.Name}] = j
			return nil
		}); err != nil && !apierrors.IsForbidden(err) {
			// Forbidden: the owner walk stops at the Job
			return nil, err
		}
	}
	if o.Nodes && len(s.Pods) > 0 {
		nodes := map[string]*corev1.Node{}
		err := list("nodes", "", func(ctx context.Context, lo metav1.ListOptions) (runtime.Object, error) {
			return c.CoreV1().Nodes().List(ctx, lo)
		}, func(obj runtime.Object) error {
			n := obj.(*corev1.Node)
			nodes[n.Name] = n
			return nil
		})
		if err == nil {
			s.Nodes = nodes
		}
		// nodes are optional: without them the default timing applies.
	}
	return s, nil
}

// ListError is a failed LIST, kept apart so the command can turn a
// Forbidden answer into the RBAC rule that grants it.
type ListError struct {
	Resource  string
	Namespace string
	Err       error
}

func (e *ListError) Error() string {
	return fmt.Sprintf("listing %s: %v", e.Resource, e.Err)
}

func (e *ListError) Unwrap() error { return e.Err }

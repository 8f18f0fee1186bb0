package tui

import (
	"bytes"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// Transform trims objects before the informers cache them, so that memory
// stays small with many pods: managedFields go (a ConfigMap or Secret keeps
// the times of the entries that touched its data, which is what its
// last-change time is read from), and so does everything the core never
// reads: a pod keeps what inspect.TrimPod keeps (status, diff and refresh
// keep the same), ReplicaSets and Jobs their owner metadata. It is an
// informer transform function: it may modify obj.
func Transform(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Pod:
		*o = inspect.TrimPod(*o)
	case *corev1.ConfigMap:
		o.ManagedFields = dataFieldTimes(o.ManagedFields)
		delete(o.Annotations, inspect.LastAppliedAnnotation)
	case *corev1.Secret:
		o.ManagedFields = dataFieldTimes(o.ManagedFields)
		delete(o.Annotations, inspect.LastAppliedAnnotation)
	case *appsv1.ReplicaSet:
		return &appsv1.ReplicaSet{TypeMeta: o.TypeMeta, ObjectMeta: ownerMeta(o.ObjectMeta)}, nil
	case *batchv1.Job:
		return &batchv1.Job{TypeMeta: o.TypeMeta, ObjectMeta: ownerMeta(o.ObjectMeta)}, nil
	}
	return obj, nil
}

// ownerMeta keeps what the owner walk and the cache need.
func ownerMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		OwnerReferences: m.OwnerReferences, DeletionTimestamp: m.DeletionTimestamp}
}

// dataFieldTimes keeps, of the managedFields entries, only the time of those
// that set data, binaryData or stringData (without the field sets).
func dataFieldTimes(in []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
	var out []metav1.ManagedFieldsEntry
	for _, e := range in {
		if e.FieldsV1 == nil || e.Time == nil {
			continue
		}
		raw := e.FieldsV1.Raw
		if bytes.Contains(raw, []byte(`"f:data"`)) || bytes.Contains(raw, []byte(`"f:binaryData"`)) || bytes.Contains(raw, []byte(`"f:stringData"`)) {
			out = append(out, metav1.ManagedFieldsEntry{Manager: e.Manager, Operation: e.Operation, Time: e.Time})
		}
	}
	return out
}

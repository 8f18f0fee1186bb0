package inspect

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A terminating pod stays terminating through the trim of the CLI and of
// the dashboard's informers: the STATE column says "terminating" from its
// deletionTimestamp (read as the phase Terminating), and the refresh plan
// and the wait leave it out for it.
func TestTrimKeepsDeletionTimestamp(t *testing.T) {
	del := metav1.Now()
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-old", Namespace: "shop", DeletionTimestamp: &del,
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	trimmed := TrimPod(pod)
	if trimmed.DeletionTimestamp == nil || trimmed.ManagedFields != nil {
		t.Errorf("TrimPod: deletionTimestamp %v, managedFields %v; want kept, dropped", trimmed.DeletionTimestamp, trimmed.ManagedFields)
	}
	if got := podPhase(&trimmed); got != "Terminating" {
		t.Errorf("phase of the trimmed pod = %q, want Terminating", got)
	}
	out, err := Trim(&pod)
	if err != nil || out.(*corev1.Pod).DeletionTimestamp == nil {
		t.Errorf("Trim(pod) = %v, %v: deletionTimestamp lost", out, err)
	}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-1", DeletionTimestamp: &del, Labels: map[string]string{"a": "b"}}}
	out, _ = Trim(rs)
	if got := out.(*appsv1.ReplicaSet); got.DeletionTimestamp == nil || got.Labels != nil {
		t.Errorf("Trim(ReplicaSet) = %+v: want the deletionTimestamp kept and the labels dropped", got.ObjectMeta)
	}
}

// TestTrimKeepsHostNetwork: a reload hook is refused to a pod on the
// node's network, so the trimmed pod still says whether it is.
func TestTrimKeepsHostNetwork(t *testing.T) {
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "agent-1"}, Spec: corev1.PodSpec{HostNetwork: true}}
	if got := TrimPod(pod); !got.Spec.HostNetwork {
		t.Errorf("TrimPod dropped hostNetwork: %+v", got.Spec)
	}
}

package inspect

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestOwner walks every kind of owner of the fixture pods of namespace
// owners (testdata/status/owners.yaml).
func TestOwner(t *testing.T) {
	snap := statusSnapshot(t)
	cases := []struct {
		pod  string
		want WorkloadRef
	}{
		{"web-5d8f-abcde", WorkloadRef{Kind: "Deployment", Name: "web"}},                                     // ReplicaSet -> Deployment
		{"lonely-77-xyz", WorkloadRef{Kind: "ReplicaSet", Name: "lonely-77"}},                                // ReplicaSet without owner
		{"gone-rs-9-pod", WorkloadRef{Kind: "ReplicaSet", Name: "gone-rs-9"}},                                // ReplicaSet not in the snapshot
		{"db-0", WorkloadRef{Kind: "StatefulSet", Name: "db"}},                                               // StatefulSet
		{"agent-q2w", WorkloadRef{Kind: "DaemonSet", Name: "agent"}},                                         // DaemonSet
		{"backup-28610-k9", WorkloadRef{Kind: "CronJob", Name: "backup"}},                                    // Job -> CronJob
		{"migrate-p4", WorkloadRef{Kind: "Job", Name: "migrate"}},                                            // Job alone
		{"rc-pod", WorkloadRef{Kind: "ReplicationController", Name: "rc"}},                                   // core/v1
		{"bare", WorkloadRef{Kind: "Pod", Name: "bare"}},                                                     // no owner
		{"adopted", WorkloadRef{Kind: "Pod", Name: "adopted"}},                                               // an owner that is not the controller
		{"canary-6c9-aaa", WorkloadRef{Kind: "Rollout", Name: "canary", APIVersion: "argoproj.io/v1alpha1"}}, // ReplicaSet -> custom resource
		{"clone-x", WorkloadRef{Kind: "CloneSet", Name: "clone", APIVersion: "apps.kruise.io/v1alpha1"}},     // custom controller of the pod
	}
	for _, tc := range cases {
		t.Run(tc.pod, func(t *testing.T) {
			if got := Owner(statusPod(t, snap, "owners", tc.pod), snap); got != tc.want {
				t.Errorf("Owner = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestOwnerEdgeCases: a custom kind named like a built-in one keeps
// its apiVersion, and owners are looked up in the pod's own namespace.
func TestOwnerEdgeCases(t *testing.T) {
	snap := statusSnapshot(t)
	ctrl := true
	pod := func(ns, api, kind, name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns, OwnerReferences: []metav1.OwnerReference{
			{APIVersion: api, Kind: kind, Name: name, Controller: &ctrl}}}}
	}
	cases := []struct {
		name string
		pod  *corev1.Pod
		want WorkloadRef
	}{
		{"Deployment of another group", pod("owners", "example.com/v1", "Deployment", "x"),
			WorkloadRef{Kind: "Deployment", Name: "x", APIVersion: "example.com/v1"}},
		{"ReplicaSet looked up in the pod's namespace", pod("shop", "apps/v1", "ReplicaSet", "web-5d8f"),
			WorkloadRef{Kind: "ReplicaSet", Name: "web-5d8f"}},
		{"Job looked up in the pod's namespace", pod("shop", "batch/v1", "Job", "backup-28610"),
			WorkloadRef{Kind: "Job", Name: "backup-28610"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Owner(tc.pod, snap); got != tc.want {
				t.Errorf("Owner = %+v, want %+v", got, tc.want)
			}
		})
	}
	// An empty snapshot (owners not listed) ends the walk at the first step.
	empty := &Snapshot{}
	if got, want := Owner(statusPod(t, snap, "owners", "web-5d8f-abcde"), empty), (WorkloadRef{Kind: "ReplicaSet", Name: "web-5d8f"}); got != want {
		t.Errorf("Owner without ReplicaSets = %+v, want %+v", got, want)
	}
}

package inspect

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Owners are matched by API group and kind: a controller of another group
// that shares a built-in kind's name is reported with its apiVersion and
// never walked through the built-in objects of the same name.
func TestOwnerMatchesGroupAndKind(t *testing.T) {
	ctrl := true
	owned := func(api, kind, name string, uid types.UID) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: api, Kind: kind, Name: name, UID: uid, Controller: &ctrl}}
	}
	snap := &Snapshot{
		ReplicaSets: map[NamespacedName]*appsv1.ReplicaSet{
			{"ns", "web-1"}: {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-1", UID: "rs-web-1", OwnerReferences: owned("apps/v1", "Deployment", "web", "dep")}},
		},
		Jobs: map[NamespacedName]*batchv1.Job{
			{"ns", "j"}: {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "j", UID: "job-j", OwnerReferences: owned("batch/v1", "CronJob", "cj", "cj")}},
		},
	}
	pod := func(refs []metav1.OwnerReference) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", OwnerReferences: refs}}
	}
	cases := []struct {
		name     string
		refs     []metav1.OwnerReference
		want     WorkloadRef
		builtin  bool
		rendered string
	}{
		{"Advanced StatefulSet", owned("apps.kruise.io/v1beta1", "StatefulSet", "db", "x"),
			WorkloadRef{Kind: "StatefulSet", Name: "db", APIVersion: "apps.kruise.io/v1beta1"}, false, "statefulset.apps.kruise.io/db"},
		{"apps/v1 StatefulSet", owned("apps/v1", "StatefulSet", "db", "y"), WorkloadRef{Kind: "StatefulSet", Name: "db"}, true, "statefulset/db"},
		{"another version of the apps group", owned("apps/v1beta2", "DaemonSet", "d", "y"), WorkloadRef{Kind: "DaemonSet", Name: "d"}, true, "daemonset/d"},
		{"a ReplicaSet of another group is not walked", owned("example.com/v1", "ReplicaSet", "web-1", "other"),
			WorkloadRef{Kind: "ReplicaSet", Name: "web-1", APIVersion: "example.com/v1"}, false, "replicaset.example.com/web-1"},
		{"a Job of another group is not walked", owned("example.com/v1", "Job", "j", "other"),
			WorkloadRef{Kind: "Job", Name: "j", APIVersion: "example.com/v1"}, false, "job.example.com/j"},
		{"apps/v1 ReplicaSet is walked", owned("apps/v1", "ReplicaSet", "web-1", "rs-web-1"), WorkloadRef{Kind: "Deployment", Name: "web"}, true, "deployment/web"},
		{"a same-named ReplicaSet with another UID is not walked", owned("apps/v1", "ReplicaSet", "web-1", "re-created"),
			WorkloadRef{Kind: "ReplicaSet", Name: "web-1"}, true, "replicaset/web-1"},
		{"batch/v1 Job is walked", owned("batch/v1", "Job", "j", "job-j"), WorkloadRef{Kind: "CronJob", Name: "cj"}, true, "cronjob/cj"},
		{"a custom kind of the core group", owned("v1", "StatefulSet", "s", "z"),
			WorkloadRef{Kind: "StatefulSet", Name: "s", APIVersion: "v1"}, false, "statefulset.core/s"},
		{"Argo Rollout", owned("argoproj.io/v1alpha1", "Rollout", "r", "z"),
			WorkloadRef{Kind: "Rollout", Name: "r", APIVersion: "argoproj.io/v1alpha1"}, false, "rollout.argoproj.io/r"},
		{"bare pod", nil, WorkloadRef{Kind: "Pod", Name: "p"}, true, "pod/p"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Owner(pod(c.refs), snap)
			if got != c.want || got.Builtin() != c.builtin || got.String() != c.rendered {
				t.Errorf("Owner = %#v (builtin %v, %s), want %#v (builtin %v, %s)", got, got.Builtin(), got.String(), c.want, c.builtin, c.rendered)
			}
		})
	}
}

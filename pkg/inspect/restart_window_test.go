package inspect

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/restartwindow"
)

// TestRestartWindowOnUsesThatNeedARestart: an env use of a pod whose
// template, or whose Deployment (through its ReplicaSet), has a restart
// window says when the window opens; a volume use of the same pod, which
// needs no restart, says nothing of it.
func TestRestartWindowOnUsesThatNeedARestart(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC) // a Friday
	ctrl := true
	for _, tc := range []struct {
		name          string
		pod, rs       map[string]string
		want, wantVol string
	}{
		{"on the template", map[string]string{restartwindow.Annotation: "Mon-Fri 02:00-05:00 Europe/Berlin"}, nil,
			`; watch and the controller restart it only in its kubectl-cmsync.io/restart-window "Mon-Fri 02:00-05:00 Europe/Berlin", which opens at 2026-11-30T01:00:00Z`, ""},
		{"on the Deployment", nil, map[string]string{restartwindow.Annotation: "11:00-13:00"},
			`; its kubectl-cmsync.io/restart-window "11:00-13:00" is open now`, ""},
		{"unreadable", map[string]string{restartwindow.Annotation: "soon"}, nil,
			`; its restart window cannot be read, so watch and the controller do not restart it: kubectl-cmsync.io/restart-window "soon": unknown day "soon" (Mon, Tue, Wed, Thu, Fri, Sat, Sun, or a range such as Mon-Fri); write it as "Mon-Fri 02:00-05:00 Europe/Berlin" (days and zone optional, windows separated by ";")`, ""},
		{"none", nil, nil, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := runningPod("p", corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "c",
				Env:          []corev1.EnvVar{{Name: "K", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "k"}}}},
				VolumeMounts: []corev1.VolumeMount{{Name: "v", MountPath: "/etc/cfg"}}}},
				Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}}})
			pod.Annotations = tc.pod
			pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1", Controller: &ctrl}}
			snap := snapOf(pod, cmNamed("cfg", map[string]string{"k": "v"}))
			snap.ReplicaSets = map[NamespacedName]*appsv1.ReplicaSet{{"ns", "web-1"}: {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-1", Annotations: tc.rs}}}
			items, err := Build(snap, BuildOptions{})
			if err != nil {
				t.Fatal(err)
			}
			NoteRestartWindows(items, now)
			for _, it := range items {
				want := tc.wantVol
				if it.Mode == ModeEnv {
					want = tc.want
				}
				if !strings.HasSuffix(it.Reason, want) || (want == "" && strings.Contains(it.Reason, "restart window")) {
					t.Errorf("%s use: reason %q, want it to end %q", it.Mode, it.Reason, want)
				}
				if (it.RestartWindow != nil) != (want != "") {
					t.Errorf("%s use: restartWindow %+v", it.Mode, it.RestartWindow)
				}
			}
		})
	}
}

func TestKeptOwnerAnnotations(t *testing.T) {
	got := keptOwnerAnnotations(map[string]string{restartwindow.Annotation: "02:00-03:00", "deployment.kubernetes.io/revision": "3"})
	if len(got) != 1 || got[restartwindow.Annotation] != "02:00-03:00" {
		t.Errorf("kept %v, want the restart window only", got)
	}
	if keptOwnerAnnotations(map[string]string{"a": "b"}) != nil {
		t.Error("kept annotations of an owner with no restart window")
	}
}

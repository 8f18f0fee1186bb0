package tui_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/render"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/tui"
)

func TestTransformKeepsWhatTheCoreReads(t *testing.T) {
	t0 := metav1.NewTime(testNow.Add(-time.Hour))
	t1 := metav1.NewTime(testNow.Add(-time.Minute))
	t2 := metav1.NewTime(testNow)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: ns, CreationTimestamp: t0,
		Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{big}", "keep": "me"},
		ManagedFields: []metav1.ManagedFieldsEntry{
			{Manager: "kubectl-edit", Time: &t1, FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{"f:a":{}}}`)}},
			{Manager: "labeler", Time: &t2, FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{}}}`)}},
		}}, Data: map[string]string{"a": "1"}}
	out, err := inspect.Trim(cm)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.ConfigMap)
	if len(got.ManagedFields) != 1 || got.ManagedFields[0].FieldsV1 != nil {
		t.Fatalf("managedFields = %+v, want only the data entry, without its field set", got.ManagedFields)
	}
	// the last change is the data edit, not the later label change
	if lc := inspect.ConfigMapObject(got).LastChange; !lc.Equal(t1.Time) {
		t.Errorf("last change = %s, want %s", lc, t1.Time)
	}
	if _, ok := got.Annotations["kubectl.kubernetes.io/last-applied-configuration"]; ok || got.Annotations["keep"] != "me" {
		t.Errorf("annotations = %v", got.Annotations)
	}

	always := corev1.ContainerRestartPolicyAlways
	fsGroup := int64(2000)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "x"}}},
		Spec: corev1.PodSpec{NodeName: "n1", ServiceAccountName: "sa",
			SecurityContext: &corev1.PodSecurityContext{FSGroup: &fsGroup, RunAsUser: &fsGroup},
			Tolerations:     []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Volumes:         []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}}}}},
			InitContainers:  []corev1.Container{{Name: "side", Image: "busybox", RestartPolicy: &always, VolumeMounts: []corev1.VolumeMount{{Name: "cfg", MountPath: "/cfg"}}}},
			Containers: []corev1.Container{{Name: "app", Image: "busybox", Command: []string{"sh"}, Env: []corev1.EnvVar{{Name: "A", Value: "1"}},
				EnvFrom:      []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}}}},
				VolumeMounts: []corev1.VolumeMount{{Name: "cfg", MountPath: "/etc/c", SubPath: "a"}}}},
			EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "dbg", Image: "busybox",
				VolumeMounts: []corev1.VolumeMount{{Name: "cfg", MountPath: "/x"}}}, TargetContainerName: "app"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, Message: "m"},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, Reason: "r", Message: "m"}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Image: "busybox", RestartCount: 2, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}}
	out, _ = inspect.Trim(pod)
	gp := out.(*corev1.Pod)
	if gp.ManagedFields != nil || gp.Status.ContainerStatuses[0].Image != "" {
		t.Errorf("pod not trimmed: %+v", gp)
	}
	// of the conditions only Ready stays (the eviction order reads it)
	if c := gp.Status.Conditions; len(c) != 1 || c[0] != (corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue}) {
		t.Errorf("conditions = %+v, want only Ready=True", c)
	}
	if c := gp.Spec.Containers[0]; c.Image != "" || c.Command != nil || gp.Spec.Tolerations != nil || gp.Spec.SecurityContext.RunAsUser != nil ||
		gp.Spec.InitContainers[0].Image != "" || gp.Spec.EphemeralContainers[0].Image != "" {
		t.Errorf("pod spec not trimmed: %+v", gp.Spec)
	}
	if c := gp.Spec.Containers[0]; c.Name != "app" || len(c.Env) != 1 || len(c.EnvFrom) != 1 || c.VolumeMounts[0].SubPath != "a" ||
		gp.Spec.InitContainers[0].RestartPolicy == nil || gp.Spec.InitContainers[0].VolumeMounts[0].MountPath != "/cfg" ||
		gp.Spec.EphemeralContainers[0].VolumeMounts[0].MountPath != "/x" || gp.Spec.EphemeralContainers[0].TargetContainerName != "app" ||
		*gp.Spec.SecurityContext.FSGroup != 2000 || gp.Spec.NodeName != "n1" || gp.Spec.ServiceAccountName != "sa" || len(gp.Spec.Volumes) != 1 {
		t.Errorf("pod spec lost what the core reads: %+v", gp.Spec)
	}
	if gp.Status.Phase != corev1.PodRunning || gp.Status.ContainerStatuses[0].State.Running == nil || gp.Status.ContainerStatuses[0].RestartCount != 2 {
		t.Errorf("pod lost what the core reads: %+v", gp.Status)
	}

	yes := true
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "rs", OwnerReferences: []metav1.OwnerReference{{Kind: "Deployment", Name: "d", Controller: &yes}}},
		Spec: appsv1.ReplicaSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}}}
	out, _ = inspect.Trim(rs)
	grs := out.(*appsv1.ReplicaSet)
	if len(grs.Spec.Template.Spec.Containers) != 0 || metav1.GetControllerOf(grs) == nil {
		t.Errorf("replicaset: %+v", grs)
	}
}

func TestFreshness(t *testing.T) {
	for _, c := range []struct {
		good, pending, bad, unknown int
		want                        string
	}{
		{0, 0, 0, 0, ""},
		{3, 2, 1, 0, "███▒▒░ 3/6"},
		{1, 0, 0, 1, "█? 1/2"},
		{12, 0, 12, 0, "███░░░ 12/24"},
		{99, 1, 0, 0, "█████▒ 99/100"},
	} {
		if got := tui.Freshness(c.good, c.pending, c.bad, c.unknown); got != c.want {
			t.Errorf("Freshness(%d,%d,%d,%d) = %q, want %q", c.good, c.pending, c.bad, c.unknown, got, c.want)
		}
	}
}

func TestResultLine(t *testing.T) {
	after := metav1.Duration{Duration: 420 * time.Millisecond}
	res := []refresh.Result{
		{Action: refresh.Action{Action: refresh.ActionAnnotate}, Outcome: refresh.OutcomeCurrent, CurrentAfter: &after},
		{Action: refresh.Action{Action: refresh.ActionNone}, Outcome: refresh.OutcomeNotApplied},
		{Action: refresh.Action{Action: refresh.ActionManual}, Outcome: refresh.OutcomeNotApplied},
	}
	line, bad := render.ResultLine(res)
	if want := "refresh: 1 annotated current, 1 already current, 1 manual (not changed) (all current after 420ms)"; line != want || !bad {
		t.Errorf("ResultLine = %q, %v; want %q, true", line, bad, want)
	}
	line, bad = render.ResultLine(res[:2])
	if bad || line != "refresh: 1 annotated current, 1 already current (all current after 420ms)" {
		t.Errorf("ResultLine = %q, %v", line, bad)
	}
	// nothing left to do, but not proven current: refresh exits 3 for it
	unverifiable := refresh.Result{Action: refresh.Action{Action: refresh.ActionNone,
		Consumers: []refresh.Consumer{{State: inspect.StateUnverifiable}}}, Outcome: refresh.OutcomeNotApplied}
	line, bad = render.ResultLine([]refresh.Result{res[0], unverifiable})
	if !bad || line != "refresh: 1 annotated current, 1 unverifiable (not changed) (all current after 420ms)" {
		t.Errorf("ResultLine = %q, %v", line, bad)
	}
}

// A burst of informer events reaches the model as at most one snapshot
// per tui.MinRedraw.
func TestSourceCoalescesEvents(t *testing.T) {
	client := fake.NewClientset(cluster()...)
	src := tui.NewFeed(client, tui.Scope{Namespace: ns}, nil)
	src.Start()
	defer src.Stop()
	msgs := make(chan struct{}, 1000)
	go func() {
		for {
			if src.Next()() == nil {
				return
			}
			msgs <- struct{}{}
		}
	}()
	start := time.Now()
	const events = 300
	for i := range events {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("burst-%d", i), Namespace: ns}}
		if _, err := client.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(3 * MinRedrawFor(t))
	elapsed := time.Since(start)
	n := len(msgs)
	if n == 0 {
		t.Fatal("no snapshot after the events")
	}
	if limit := int(elapsed/tui.MinRedraw) + 1; n > limit {
		t.Errorf("%d snapshots for %d events in %s: more than one per %s (limit %d)", n, events, elapsed, tui.MinRedraw, limit)
	}
	if n >= events {
		t.Errorf("events were not coalesced: %d snapshots for %d events", n, events)
	}
}

// MinRedrawFor is how long to let the last snapshot come.
func MinRedrawFor(*testing.T) time.Duration { return tui.MinRedraw }

package inspect

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
)

// TestUnusedConsultsTemplates: with --unused, an object no running pod
// consumes is not "unused" when a workload's pod template consumes it
// (scaled to zero, a CronJob between runs) or only completed pods did; an
// object nothing consumes may still be read through the API.
func TestUnusedConsultsTemplates(t *testing.T) {
	cm := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Data: map[string]string{"k": "v"}}
	}
	envFrom := func(name string) corev1.PodSpec {
		return corev1.PodSpec{Containers: []corev1.Container{{Name: "c", EnvFrom: []corev1.EnvFromSource{
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}}}}}
	}
	volume := func(name string) corev1.PodSpec {
		return corev1.PodSpec{Containers: []corev1.Container{{Name: "c", VolumeMounts: []corev1.VolumeMount{{Name: "v", MountPath: "/etc/v"}}}},
			Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: name}}}}}}
	}
	zero, yes := int32(0), true
	objs := []runtime.Object{
		cm("dep-cfg"), cm("cron-cfg"), cm("done-cfg"), cm("api-cfg"), cm("live-cfg"),
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"},
			Spec: appsv1.DeploymentSpec{Replicas: &zero, Template: corev1.PodTemplateSpec{Spec: envFrom("dep-cfg")}}},
		&batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "nightly"},
			Spec: batchv1.CronJobSpec{Schedule: "0 3 * * *", Suspend: &yes, JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
				Template: corev1.PodTemplateSpec{Spec: volume("cron-cfg")}}}}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "once"}, Spec: volume("done-cfg"), Status: corev1.PodStatus{Phase: corev1.PodSucceeded}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "live"}, Spec: volume("live-cfg"), Status: corev1.PodStatus{Phase: corev1.PodRunning}},
	}
	snap, err := Load(context.Background(), fake.NewClientset(objs...), LoadOptions{Namespace: "ns", Workloads: true})
	if err != nil {
		t.Fatal(err)
	}
	items, err := Build(snap, BuildOptions{Unused: true})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Use{}
	for _, it := range items {
		if it.Pod.Name == "" {
			got[it.Object.Name] = it
		}
	}
	for _, c := range []struct {
		name     string
		verdict  Verdict
		workload string
		reason   string
	}{
		{"dep-cfg", VerdictNoPods, "Deployment/web", "no pod runs now (deployment/web, scaled to 0 replicas), but its pod template consumes this configmap (envFrom)"},
		{"cron-cfg", VerdictNoPods, "CronJob/nightly", "(cronjob/nightly, suspended)"},
		{"done-cfg", VerdictNoPods, "/", "only pods that have completed consume this configmap (pod once (Succeeded))"},
		{"api-cfg", VerdictUnused, "/", "no pod consumes it (it may be read through the API)"},
	} {
		it, ok := got[c.name]
		if !ok {
			t.Errorf("%s: no row", c.name)
			continue
		}
		if it.Verdict != c.verdict || it.Workload.Kind+"/"+it.Workload.Name != c.workload || !strings.Contains(it.Reason, c.reason) {
			t.Errorf("%s: %s %s/%s %q, want %s %s with %q", c.name, it.Verdict, it.Workload.Kind, it.Workload.Name, it.Reason, c.verdict, c.workload, c.reason)
		}
	}
	if _, ok := got["live-cfg"]; ok {
		t.Error("live-cfg has a running consumer: no unused row")
	}
}

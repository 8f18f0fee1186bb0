package migrate

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func volumeSpec(cm string) corev1.PodSpec {
	return corev1.PodSpec{
		Volumes: []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: cm}}}}},
		Containers: []corev1.Container{{Name: "app", VolumeMounts: []corev1.VolumeMount{{Name: "cfg", MountPath: "/etc/app"}}}},
	}
}

func envSpec(cm string) corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{{Name: "app", EnvFrom: []corev1.EnvFromSource{{
		ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm}}}}}}}
}

// TestRows: each Reloader-annotated workload, with what cmsync does for it
// (from reconcile's Select, OnChange and RestartsOnRollout), exactly.
func TestRows(t *testing.T) {
	custom := Map(Reloader{Args: []string{"--auto-annotation=example.com/auto"}})
	standard := Map(Reloader{})
	tests := []struct {
		name string
		m    Mapping
		w    Workload
		want []Row
	}{
		{name: "not annotated", m: standard, w: Workload{Kind: "Deployment", Namespace: "shop", Name: "plain", Spec: volumeSpec("app")}},
		{name: "volume-only, auto", m: standard,
			w: Workload{Kind: "Deployment", Namespace: "shop", Name: "web", Annotations: map[string]string{"reloader.stakater.com/auto": "true"}, Spec: volumeSpec("app")},
			want: []Row{{Namespace: "shop", Workload: "deployment/web", Annotations: []string{"reloader.stakater.com/auto=true"}, Lines: []Line{
				{false, "configmap/app: restarted on every edit, as with Reloader (opted in through reloader.stakater.com/auto, which restarts on every change; kubectl-cmsync.io/on-change=remount remounts instead)"}}}}},
		{name: "volume-only, auto, on-change remount", m: standard,
			w: Workload{Kind: "StatefulSet", Namespace: "shop", Name: "db", Annotations: map[string]string{"reloader.stakater.com/auto": "true"},
				TemplateAnnotations: map[string]string{"kubectl-cmsync.io/on-change": "remount"}, Spec: volumeSpec("app")},
			want: []Row{{Namespace: "shop", Workload: "statefulset/db", Annotations: []string{"reloader.stakater.com/auto=true"}, Lines: []Line{
				{true, "configmap/app: volume-only: remounted, not restarted (kubectl-cmsync.io/on-change=remount)"}}}}},
		{name: "env, reload list naming another object", m: standard,
			w: Workload{Kind: "Deployment", Namespace: "shop", Name: "api", TemplateAnnotations: map[string]string{"configmap.reloader.stakater.com/reload": "other"}, Spec: envSpec("app")},
			want: []Row{{Namespace: "shop", Workload: "deployment/api", Annotations: []string{"configmap.reloader.stakater.com/reload=other"}, Lines: []Line{
				{false, "configmap/app: left alone: not named in configmap.reloader.stakater.com/reload"}}}}},
		{name: "Job", m: standard,
			w: Workload{Kind: "Job", Namespace: "shop", Name: "migrate", Annotations: map[string]string{"reloader.stakater.com/auto": "true"}, Spec: envSpec("app")},
			want: []Row{{Namespace: "shop", Workload: "job/migrate", Annotations: []string{"reloader.stakater.com/auto=true"}, Lines: []Line{
				{true, "configmap/app: Job not re-run: env and subPath uses reach its next run only (Reloader re-runs it)"}}}}},
		{name: "CronJob annotated on itself", m: standard,
			w: Workload{Kind: "CronJob", Namespace: "shop", Name: "report", Annotations: map[string]string{"reloader.stakater.com/auto": "true"}, Spec: volumeSpec("app")},
			want: []Row{{Namespace: "shop", Workload: "cronjob/report", Annotations: []string{"reloader.stakater.com/auto=true"}, Lines: []Line{
				{true, "its Reloader annotations are on the CronJob itself: cmsync reads those of its pods (jobTemplate's pod template); move them there"},
				{false, "configmap/app: left alone: not opted in: --require-opt-in is set; annotate the workload with kubectl-cmsync.io/watch=true"}}}}},
		{name: "SecretProviderClass", m: standard,
			w: Workload{Kind: "DaemonSet", Namespace: "shop", Name: "agent", Annotations: map[string]string{"secretproviderclass.reloader.stakater.com/auto": "true"}},
			want: []Row{{Namespace: "shop", Workload: "daemonset/agent", Annotations: []string{"secretproviderclass.reloader.stakater.com/auto=true"}, Lines: []Line{
				{true, "SecretProviderClass not watched: sync the driver's secrets into Kubernetes Secrets (secretObjects), which cmsync handles like any Secret"}}}}},
		{name: "custom annotation", m: custom,
			w: Workload{Kind: "Deployment", Namespace: "shop", Name: "legacy", Annotations: map[string]string{"example.com/auto": "true"}, Spec: volumeSpec("app")},
			want: []Row{{Namespace: "shop", Workload: "deployment/legacy", Annotations: []string{"example.com/auto=true"}, Custom: true, Lines: []Line{
				{true, "carries example.com/auto, which cmsync does not read: rename it to reloader.stakater.com/auto"},
				{false, "configmap/app: left alone: not opted in: --require-opt-in is set; annotate the workload with kubectl-cmsync.io/watch=true"}}}}},
		{name: "only Reloader's own record", m: standard,
			w: Workload{Kind: "Deployment", Namespace: "shop", Name: "old", TemplateAnnotations: map[string]string{"reloader.stakater.com/last-reloaded-from": "{}"}, Spec: volumeSpec("app")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Rows([]Workload{tc.w}, tc.m)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Rows:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestRowsAutoReloadAll: with --auto-reload-all, a workload opted in by a
// custom name (which cmsync does not read) is still selected, and its
// volume-only uses are remounted: the policy of a workload with none of
// Reloader's standard annotations.
func TestRowsAutoReloadAll(t *testing.T) {
	m := Map(Reloader{Args: []string{"--auto-reload-all", "--auto-annotation=example.com/auto"}})
	rows := Rows([]Workload{{Kind: "Deployment", Namespace: "shop", Name: "legacy", Annotations: map[string]string{"example.com/auto": "true"}, Spec: volumeSpec("app")}}, m)
	want := []Line{
		{true, "carries example.com/auto, which cmsync does not read: rename it to reloader.stakater.com/auto"},
		{true, "configmap/app: volume-only: remounted, not restarted (volumes are remounted without a restart; kubectl-cmsync.io/on-change=restart restarts instead)"},
	}
	if len(rows) != 1 || !reflect.DeepEqual(rows[0].Lines, want) || !rows[0].Differs() {
		t.Errorf("rows = %+v, want one with lines %+v", rows, want)
	}
}

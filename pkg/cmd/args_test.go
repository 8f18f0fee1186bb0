package cmd

import (
	"context"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// TestParseTargets: every accepted spelling of each kind, mixed arguments
// in their order and once each, and the exact usage errors.
func TestParseTargets(t *testing.T) {
	cm := func(n string) inspect.ObjectKey {
		return inspect.ObjectKey{Kind: inspect.KindConfigMap, Namespace: "shop", Name: n}
	}
	sec := func(n string) inspect.ObjectKey {
		return inspect.ObjectKey{Kind: inspect.KindSecret, Namespace: "shop", Name: n}
	}
	wl := func(kind, name string) inspect.WorkloadKey {
		w := inspect.WorkloadRef{Kind: kind, Name: name}
		if kind == "Rollout" {
			w.APIVersion = "argoproj.io/v1alpha1"
		}
		return inspect.WorkloadKey{Namespace: "shop", Workload: w}
	}
	const hint = "use NAME (a ConfigMap) or TYPE/NAME, TYPE one of configmap (cm), secret, deployment (deploy), statefulset (sts), daemonset (ds), replicaset (rs), job, cronjob (cj), pod (po), rollout (ro), or their plurals"
	cases := []struct {
		args []string
		want Targets
		err  string
	}{
		{args: []string{"app-config"}, want: Targets{Objects: []inspect.ObjectKey{cm("app-config")}}},
		{args: []string{"cm/a", "configmaps/b", "ConfigMap/c", "secret/s", "secrets/t"},
			want: Targets{Objects: []inspect.ObjectKey{cm("a"), cm("b"), cm("c"), sec("s"), sec("t")}}},
		{args: []string{"deployment/web", "deployments/web", "deploy/web", "Deployment.apps/web", "deployments.v1.apps/web"},
			want: Targets{Workloads: []inspect.WorkloadKey{wl("Deployment", "web")}}},
		{args: []string{"sts/db", "statefulset/db2", "statefulsets.apps/db3"},
			want: Targets{Workloads: []inspect.WorkloadKey{wl("StatefulSet", "db"), wl("StatefulSet", "db2"), wl("StatefulSet", "db3")}}},
		{args: []string{"ds/a", "daemonsets/b", "rs/c", "replicaset/d", "job/e", "jobs.batch/f", "cj/g", "cronjobs/h", "po/i", "pods/j", "pod/k", "ro/l", "rollouts.argoproj.io/m", "rollout/n"},
			want: Targets{Workloads: []inspect.WorkloadKey{wl("DaemonSet", "a"), wl("DaemonSet", "b"), wl("ReplicaSet", "c"), wl("ReplicaSet", "d"),
				wl("Job", "e"), wl("Job", "f"), wl("CronJob", "g"), wl("CronJob", "h"), wl("Pod", "i"), wl("Pod", "j"), wl("Pod", "k"),
				wl("Rollout", "l"), wl("Rollout", "m"), wl("Rollout", "n")}}},
		{args: []string{"deploy/web", "app-config", "sts/db", "secret/creds", "cm/app-config"},
			want: Targets{Objects: []inspect.ObjectKey{cm("app-config"), sec("creds")}, Workloads: []inspect.WorkloadKey{wl("Deployment", "web"), wl("StatefulSet", "db")}}},
		{args: []string{"service/web"}, err: `unsupported resource type "service" in "service/web": ` + hint},
		{args: []string{"deploy/web", "svc/x"}, err: `unsupported resource type "svc" in "svc/x": ` + hint},
		{args: []string{"deployment.extensions/web"}, err: `unsupported resource type "deployment.extensions" in "deployment.extensions/web": ` + hint},
		{args: []string{"rollout.apps/web"}, err: `unsupported resource type "rollout.apps" in "rollout.apps/web": ` + hint},
		{args: []string{"deployments.v1beta1.apps/web"}, err: `unsupported resource type "deployments.v1beta1.apps" in "deployments.v1beta1.apps/web": ` + hint},
		{args: []string{"deploy/"}, err: `invalid name "deploy/": ` + hint},
		{args: []string{"deploy/a/b"}, err: `invalid name "deploy/a/b": ` + hint},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			got, err := parseTargets(tc.args, "shop")
			if tc.err != "" {
				if err == nil || err.Error() != tc.err || ExitCode(err) != ExitUsage {
					t.Fatalf("error = %v (exit %d)\nwant    %s (exit %d)", err, ExitCode(err), tc.err, ExitUsage)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, %v\nwant %+v", got, err, tc.want)
			}
		})
	}
}

// TestResolveWorkloads reads workloads through the fake clientset: the
// template and its state, and kubectl's NotFound for one that is not there.
func TestResolveWorkloads(t *testing.T) {
	zero := int32(0)
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "app", EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}}}}}}}
	c := fake.NewClientset(
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}, Spec: appsv1.DeploymentSpec{Replicas: &zero, Template: corev1.PodTemplateSpec{Spec: spec}}},
		&batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "nightly"}, Spec: batchv1.CronJobSpec{Schedule: "0 1 * * *",
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: spec}}}}},
	)
	targets, err := parseTargets([]string{"deploy/web", "cj/nightly"}, "shop")
	if err != nil {
		t.Fatal(err)
	}
	got, err := resolveWorkloads(context.Background(), inspect.ClientTemplates{Client: c}, targets.Workloads, "https://api")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Template.State != "scaled to 0 replicas" || got[1].Template.State != "between runs (schedule 0 1 * * *)" ||
		!reflect.DeepEqual(got[0].Template.Spec, spec) || !reflect.DeepEqual(got[1].Template.Spec, spec) {
		t.Errorf("templates = %+v", got)
	}
	targets, _ = parseTargets([]string{"sts/db"}, "shop")
	_, err = resolveWorkloads(context.Background(), inspect.ClientTemplates{Client: c}, targets.Workloads, "https://api")
	want := `statefulsets.apps "db" not found in namespace "shop": check the name and the namespace (-n), or list them with 'kubectl get statefulsets -n shop'`
	if err == nil || err.Error() != want {
		t.Errorf("error = %v\nwant    %s", err, want)
	}
}

//go:build e2e

package e2e

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestMigrateReloader: `migrate reloader` reads a Reloader Deployment as
// its chart writes it (replicas 0: nothing is pulled or run) and the
// workloads its annotations opt in, from the real API server: the chart's
// values on stdout, the custom annotation with the workload that carries
// it, each workload with what cmsync does for it, and exit 3.
func TestMigrateReloader(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	labels := map[string]string{"app": "reloader-reloader"}
	reloader := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "reloader-reloader", Labels: labels,
		Annotations: map[string]string{"meta.helm.sh/release-name": "reloader"}},
		Spec: appsv1.DeploymentSpec{Replicas: ptr(int32(0)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "reloader-reloader", Image: "ghcr.io/stakater/reloader:v1.4.2",
				Args: []string{"--reload-strategy=annotations", "--namespaces-to-ignore=kube-system", "--resource-label-selector=team=a",
					"--auto-reload-all=true", "--auto-annotation=example.com/auto"}}}}}}}
	f.createMigrateDeployment(reloader)
	f.createMigrateDeployment(migrateAnnotated("legacy", map[string]string{"example.com/auto": "true"}))
	f.createMigrateDeployment(migrateAnnotated("web", map[string]string{"reloader.stakater.com/auto": "true"}))
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "seed", Annotations: map[string]string{"reloader.stakater.com/auto": "true"}},
		Spec: batchv1.JobSpec{Suspend: ptr(true), Template: corev1.PodTemplateSpec{Spec: withVolumes(podSpec(withMounts(busybox("app"), mount("cfg", "/etc/app"))), cmVolume("cfg", "app"))}}}
	job.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	if _, err := f.cs.BatchV1().Jobs(f.ns).Create(f.ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating job: %v", err)
	}

	stdout, stderr, code := runPlugin(f, true, "migrate", "reloader", "-n", f.ns, "--deployment", f.ns+"/reloader-reloader")
	if code != 3 {
		t.Errorf("exit %d, want 3 (a custom annotation in use)", code)
	}
	if want := "ignoreNamespaces:\n- kube-system\nrequireOptIn: false\nresourceLabelSelector: team=a\nsecrets: true\nwatchGlobally: true\n"; stdout != want {
		t.Errorf("values:\n%s\nwant:\n%s", stdout, want)
	}
	for _, want := range []string{
		"Reloader " + f.ns + "/reloader-reloader (ghcr.io/stakater/reloader:v1.4.2)\n",
		"Needs a person (1):\n  --auto-annotation=example.com/auto: cmsync reads only reloader.stakater.com/auto",
		"  change example.com/auto to reloader.stakater.com/auto in:\n    " + f.ns + "/deployment/legacy\n",
		"Workloads with Reloader's annotations (3):\n",
		"  " + f.ns + "/deployment/legacy  example.com/auto=true\n    differs carries example.com/auto, which cmsync does not read",
		"  " + f.ns + "/deployment/web  reloader.stakater.com/auto=true\n    same    configmap/app: restarted on every edit, as with Reloader",
		"  " + f.ns + "/job/seed  reloader.stakater.com/auto=true\n    differs configmap/app: Job not re-run",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
	// it only reads: the Reloader Deployment is as created
	d, err := f.cs.AppsV1().Deployments(f.ns).Get(f.ctx, "reloader-reloader", metav1.GetOptions{})
	if err != nil || d.Generation != 1 {
		t.Errorf("reloader Deployment changed: generation %d, %v", d.Generation, err)
	}
}

// migrateAnnotated is a Deployment of no replicas with annotations whose pod
// mounts ConfigMap "app" as a volume, and nothing else.
func migrateAnnotated(name string, ann map[string]string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: ann},
		Spec: appsv1.DeploymentSpec{Replicas: ptr(int32(0)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: withVolumes(podSpec(withMounts(busybox("app"), mount("cfg", "/etc/app"))), cmVolume("cfg", "app"))}}}
}

func (f *fx) createMigrateDeployment(d *appsv1.Deployment) {
	f.t.Helper()
	if _, err := f.cs.AppsV1().Deployments(f.ns).Create(f.ctx, d, metav1.CreateOptions{}); err != nil {
		f.t.Fatalf("creating deployment %s: %v", d.Name, err)
	}
}

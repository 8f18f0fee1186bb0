package cmd

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/migrate"
)

func reloaderDeployment(ns, name string, args ...string) *appsv1.Deployment {
	zero := int32(0)
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Labels:      map[string]string{"helm.sh/chart": "reloader-2.1.3"},
		Annotations: map[string]string{"meta.helm.sh/release-name": "reloader"}},
		Spec: appsv1.DeploymentSpec{Replicas: &zero, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "reloader", Image: "ghcr.io/stakater/reloader:v1.4.2", Args: args}}}}}}
}

func annotatedDeployment(name, cm string, ann map[string]string) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Annotations: ann},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Volumes:    []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm}}}}},
			Containers: []corev1.Container{{Name: "app", Image: "app", VolumeMounts: []corev1.VolumeMount{{Name: "cfg", MountPath: "/etc/app"}}}}}}}}
}

// runMigrate runs `migrate reloader` against objs, returns stdout, stderr
// and the exit code.
func runMigrate(t *testing.T, objs []runtime.Object, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	o := &MigrateReloaderOptions{Connection: newConnection(genericclioptions.NewConfigFlags(false)),
		IOStreams: genericiooptions.IOStreams{Out: &out, ErrOut: &errOut}, Output: "values",
		Cluster: migrate.ClientCluster{Client: fake.NewClientset(objs...)}}
	for i := 0; i+1 < len(args); i += 2 {
		switch args[i] {
		case "-o":
			o.Output = args[i+1]
		case "--deployment":
			o.Deployment = args[i+1]
		}
	}
	cmd := &cobra.Command{}
	cmd.SetContext(t.Context())
	err := runOptions(o)(cmd, nil)
	if err != nil {
		errOut.WriteString(ErrorText(err))
	}
	return out.String(), errOut.String(), ExitCode(err)
}

// TestMigrateReloader: the values on stdout, the report on stderr, and
// exit 3 for a custom annotation in use, 0 when everything maps.
func TestMigrateReloader(t *testing.T) {
	web := annotatedDeployment("web", "app", map[string]string{"reloader.stakater.com/auto": "true"})
	legacy := annotatedDeployment("legacy", "app", map[string]string{"example.com/auto": "true"})
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "seed", Annotations: map[string]string{"reloader.stakater.com/auto": "true"}},
		Spec: batchv1.JobSpec{Template: web.Spec.Template}}
	objs := []runtime.Object{reloaderDeployment("reloader", "reloader-reloader", "--reload-strategy=annotations", "--namespaces-to-ignore=kube-system",
		"--resource-label-selector=team=a", "--auto-reload-all=true", "--auto-annotation=example.com/auto"), web, legacy, job}

	out, errOut, code := runMigrate(t, objs)
	if code != ExitCheck {
		t.Errorf("exit %d, want 3; stderr:\n%s", code, errOut)
	}
	wantValues := "ignoreNamespaces:\n- kube-system\nrequireOptIn: false\nresourceLabelSelector: team=a\nsecrets: true\nwatchGlobally: true\n"
	if out != wantValues {
		t.Errorf("stdout:\n%s\nwant:\n%s", out, wantValues)
	}
	for _, want := range []string{
		"Reloader reloader/reloader-reloader (ghcr.io/stakater/reloader:v1.4.2)\n",
		"  Helm release reloader in namespace reloader (chart reloader-2.1.3): uninstall it with 'helm uninstall reloader -n reloader'\n",
		"Needs a person (1):\n  --auto-annotation=example.com/auto: cmsync reads only reloader.stakater.com/auto",
		"  change example.com/auto to reloader.stakater.com/auto in:\n    shop/deployment/legacy\n",
		"Workloads with Reloader's annotations (3):\n",
		"  shop/deployment/web  reloader.stakater.com/auto=true\n    same    configmap/app: restarted on every edit, as with Reloader",
		"  shop/deployment/legacy  example.com/auto=true\n    differs carries example.com/auto, which cmsync does not read: rename it to reloader.stakater.com/auto\n" +
			"    differs configmap/app: volume-only: remounted, not restarted",
		"  shop/job/seed  reloader.stakater.com/auto=true\n    differs configmap/app: Job not re-run",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}

	out, _, _ = runMigrate(t, objs, "-o", "flags")
	if want := "--all-namespaces\n--ignore-namespaces=kube-system\n--resource-label-selector=team=a\n--secrets\n--require-opt-in=false\n"; out != want {
		t.Errorf("-o flags:\n%s\nwant:\n%s", out, want)
	}
	out, _, _ = runMigrate(t, objs, "-o", "json")
	var r migrate.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil || len(r.Carriers) != 1 || len(r.Carriers[0].Workloads) != 1 || r.Values.RequireOptIn {
		t.Errorf("-o json: %v\n%s", err, out)
	}

	// the same Reloader without the custom annotation: everything maps
	objs[0] = reloaderDeployment("reloader", "reloader-reloader", "--reload-strategy=annotations", "--auto-reload-all=true")
	if _, errOut, code := runMigrate(t, objs); code != ExitOK {
		t.Errorf("exit %d, want 0; stderr:\n%s", code, errOut)
	}
}

// TestMigrateReloaderFinds: several Reloaders are listed and --deployment
// asked for; none is an error that says how to name it; bad flags are
// usage errors.
func TestMigrateReloaderFinds(t *testing.T) {
	two := []runtime.Object{reloaderDeployment("a", "reloader"), reloaderDeployment("b", "reloader")}
	tests := []struct {
		objs   []runtime.Object
		args   []string
		code   int
		stderr string
	}{
		{objs: two, code: ExitFailure, stderr: "error: 2 Reloader Deployments found in the cluster: a/reloader, b/reloader; choose one with --deployment NAMESPACE/NAME\n"},
		{objs: two, args: []string{"--deployment", "b/reloader"}, code: ExitOK, stderr: "Reloader b/reloader"},
		{code: ExitFailure, stderr: "error: no Reloader Deployment found in the cluster (by the image stakater/reloader or the labels app.kubernetes.io/name=reloader, app=reloader-reloader): name it with --deployment NAMESPACE/NAME\n"},
		{objs: two, args: []string{"--deployment", "c/reloader"}, code: ExitFailure,
			stderr: `error: deployment "c/reloader" not found: check --deployment NAMESPACE/NAME, or leave it out to find Reloader by its image and labels` + "\n"},
		{args: []string{"--deployment", "reloader"}, code: ExitUsage, stderr: `error: invalid --deployment "reloader": use NAMESPACE/NAME, e.g. --deployment reloader/reloader-reloader` + "\n"},
		{args: []string{"-o", "yaml"}, code: ExitUsage, stderr: `error: invalid -o "yaml": must be one of values, flags, json` + "\n"},
	}
	for _, tc := range tests {
		_, errOut, code := runMigrate(t, tc.objs, tc.args...)
		if code != tc.code || !strings.HasPrefix(errOut, tc.stderr) {
			t.Errorf("%v: exit %d, stderr:\n%s\nwant exit %d, stderr starting %q", tc.args, code, errOut, tc.code, tc.stderr)
		}
	}
}

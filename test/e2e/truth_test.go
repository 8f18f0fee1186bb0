//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// TestInitContainerCopyIsStale: an init container copies a ConfigMap into an
// emptyDir (the kubernetes.io mysql tutorial's pattern). The kubelet decides:
// after a later change (and a pod re-sync) the copy keeps the old content.
// The plugin must predict restart-needed, report the use stale once the
// ConfigMap changed after the init container finished, fail --check
// --verify, and diff must exit 3.
func TestInitContainerCopyIsStale(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	f.createConfigMap(configMap("cfg", map[string]string{"my.cnf": "v1"}))
	// The ConfigMap's change times are to the second: let the init
	// container start in a later second than the creation.
	time.Sleep(1100 * time.Millisecond)
	copier := withMounts(corev1.Container{Name: "copy", Image: imageBusybox, ImagePullPolicy: corev1.PullNever,
		Command: []string{"cp", "/src/my.cnf", "/work/my.cnf"}}, mount("cfg", "/src"), mount("work", "/work"))
	spec := withVolumes(podSpec(withMounts(busybox(app), mount("work", "/work"))), cmVolume("cfg", "cfg"),
		corev1.Volume{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	spec.InitContainers = []corev1.Container{copier}
	f.createPod(pod("db", spec))
	f.waitPodReady("db")
	f.expectFile("db", app, "/work/my.cnf", "v1")
	initUse := want{object: "cfg", pod: "db", container: "copy", mode: inspect.ModeVolume}
	if rep, ok := f.status("--verify"); ok {
		w := initUse
		w.verdict, w.ctype = inspect.VerdictRestartNeeded, inspect.ContainerInit
		f.checkReport(rep, []want{w})
		f.checkStates(rep, []wantState{{want: initUse, states: []inspect.State{inspect.StateCurrent}, reason: "judged by time"}})
	}
	// Change it in a later second than the init container finished.
	time.Sleep(1100 * time.Millisecond)
	f.patchConfigMapData("cfg", map[string]string{"my.cnf": "v2"})
	f.bumpPod("db")
	time.Sleep(settle)
	f.expectFile("db", app, "/work/my.cnf", "v1") // the kubelet: the copy never follows
	if rep, ok := f.status("--verify"); ok {
		f.checkStates(rep, []wantState{{want: initUse, states: []inspect.State{inspect.StateStale}, reason: "after the init container finished"}})
	}
	if _, errOut, code := f.pluginRun("status", "-n", f.ns, "--verify", "--check"); code != 3 || !strings.Contains(errOut, "copy volume") {
		t.Errorf("status --verify --check: exit %d, want 3 naming the init container's use\n%s", code, errOut)
	}
	out, _, code := f.pluginRun("diff", "-n", f.ns, "cfg")
	if code != 3 || !strings.Contains(out, "container copy volume /src configmap/cfg (stale)") {
		t.Errorf("diff: exit %d, want 3 with the stale init container\n%s", code, out)
	}
}

// e2eSentinel is a Secret value no output may contain.
const e2eSentinel = "S3CRET-e2e-9c4d1"

// e2eSentinel2 is the Secret's value after the change.
const e2eSentinel2 = "S3CRET-e2e-7b2e8"

// TestNoSecretDataInAnyOutput: a Secret read every way (a subPathExpr
// expanded from a secretKeyRef, directly and through a literal; a mounted
// secret volume; env; envFrom; a projected volume beside a ConfigMap), then
// changed so that diff has values to show. Every command and format, with
// and without --secrets and --verify, is scanned for the Secret's values on
// stdout and stderr; so are the attempts to raise client-go's log level
// (-v=9 would log response bodies, Secret lists included), which the plugin
// refuses as an unknown flag. diff --show-secret-values, which asks for
// them, must show them: the scan can see them.
func TestNoSecretDataInAnyOutput(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	f.createSecret(secret("tenant", map[string]string{"id": e2eSentinel}))
	f.createConfigMap(configMap("cfg", map[string]string{"app.conf": "v1"}))
	c := withEnv(busybox(app), secretEnv("TENANT", "tenant", "id"), corev1.EnvVar{Name: "DERIVED", Value: "x-$(TENANT)"})
	c.EnvFrom = []corev1.EnvFromSource{{Prefix: "T_", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "tenant"}}}}
	c = withMounts(c, corev1.VolumeMount{Name: "cfg", MountPath: "/etc/t", SubPathExpr: "$(TENANT)-conf"},
		corev1.VolumeMount{Name: "cfg", MountPath: "/etc/d", SubPathExpr: "$(DERIVED)"}, mount("cfg", "/etc/cfg"),
		mount("sec", "/etc/sec"), mount("proj", "/etc/proj"))
	proj := corev1.Volume{Name: "proj", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
		{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}},
		{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "tenant"}}},
	}}}}
	f.createPod(pod("p", withVolumes(podSpec(c), cmVolume("cfg", "cfg"), secretVolume("sec", "tenant"), proj)))
	f.waitPodReady("p")
	f.patchConfigMapData("cfg", map[string]string{"app.conf": "v2"})
	f.patchSecretData("tenant", map[string]string{"id": e2eSentinel2})
	runs := [][]string{}
	for _, format := range []string{"", "wide", "json", "yaml"} {
		for _, extra := range [][]string{nil, {"--secrets"}, {"--verify"}, {"--secrets", "--verify"}, {"secret/tenant", "--verify"}} {
			args := append([]string{"status", "-n", f.ns}, extra...)
			if format != "" {
				args = append(args, "-o", format)
			}
			runs = append(runs, args)
		}
	}
	runs = append(runs,
		[]string{"diff", "-n", f.ns, "cfg"},
		[]string{"diff", "-n", f.ns, "cfg", "--secrets"},
		[]string{"diff", "-n", f.ns, "secret/tenant"},
		[]string{"refresh", "-n", f.ns, "--dry-run=client"},
		[]string{"refresh", "-n", f.ns, "--dry-run=client", "--secrets", "-o", "json"},
		[]string{"refresh", "-n", f.ns, "--dry-run=client", "--strategy", "restart", "--secrets", "-o", "yaml"},
		[]string{"diff", "-n", f.ns, "secret/tenant", "--secrets"},
	)
	// client-go logs response bodies at -v=9: the plugin has no -v, whatever the spelling
	for _, v := range [][]string{{"-v=9"}, {"--v=9"}, {"-v", "9"}} {
		for _, cmd := range [][]string{{"status", "-n", f.ns, "--secrets", "--verify"}, {"diff", "-n", f.ns, "secret/tenant"}, {"refresh", "-n", f.ns, "--dry-run=client", "--secrets"}} {
			args := append(append([]string{}, cmd...), v...)
			_, errOut, code := f.pluginRun(args...)
			if code != 2 || !strings.Contains(errOut, "unknown") {
				t.Errorf("kubectl cmsync %s: exit %d, want 2 (no such flag: client-go must not log bodies)\n%s", strings.Join(args, " "), code, errOut)
			}
			runs = append(runs, args)
		}
	}
	shown := false
	for _, args := range runs {
		out, errOut, _ := f.pluginRun(args...)
		if strings.Contains(out+errOut, e2eSentinel) || strings.Contains(out+errOut, e2eSentinel2) {
			t.Errorf("kubectl cmsync %s prints the Secret's value", strings.Join(args, " "))
		}
		if strings.Contains(out+errOut, "expanded from Secret data: not shown") {
			shown = true
		}
	}
	if !shown {
		t.Error("no output named the subPathExpr built from Secret data: the scan did not reach the reasons it guards")
	}
	// asked for explicitly, the values are shown: the scan above could see them
	out, errOut, code := f.pluginRun("diff", "-n", f.ns, "secret/tenant", "--show-secret-values")
	if code != 3 || !strings.Contains(out+errOut, e2eSentinel2) {
		t.Errorf("diff --show-secret-values: exit %d, want 3 showing the Secret's new value", code)
	}
}

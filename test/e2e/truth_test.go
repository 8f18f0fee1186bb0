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

// TestNoSecretDataInAnyOutput: a subPathExpr expanded from a secretKeyRef
// (directly and through a literal). Every command and format, with and
// without --secrets and --verify, is scanned for the Secret's value.
func TestNoSecretDataInAnyOutput(t *testing.T) {
	f := newFx(t)
	f.createSecret(secret("tenant", map[string]string{"id": e2eSentinel}))
	f.createConfigMap(configMap("cfg", map[string]string{"app.conf": "v1"}))
	c := withEnv(busybox(app), secretEnv("TENANT", "tenant", "id"), corev1.EnvVar{Name: "DERIVED", Value: "x-$(TENANT)"})
	c = withMounts(c, corev1.VolumeMount{Name: "cfg", MountPath: "/etc/t", SubPathExpr: "$(TENANT)-conf"},
		corev1.VolumeMount{Name: "cfg", MountPath: "/etc/d", SubPathExpr: "$(DERIVED)"}, mount("cfg", "/etc/cfg"))
	f.createPod(pod("p", withVolumes(podSpec(c), cmVolume("cfg", "cfg"))))
	f.waitPodReady("p")
	f.patchConfigMapData("cfg", map[string]string{"app.conf": "v2"})
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
	)
	shown := false
	for _, args := range runs {
		out, errOut, _ := f.pluginRun(args...)
		if strings.Contains(out+errOut, e2eSentinel) {
			t.Errorf("kubectl cmsync %s prints the Secret's value", strings.Join(args, " "))
		}
		if strings.Contains(out+errOut, "expanded from Secret data: not shown") {
			shown = true
		}
	}
	if !shown {
		t.Error("no output named the subPathExpr built from Secret data: the scan did not reach the reasons it guards")
	}
}

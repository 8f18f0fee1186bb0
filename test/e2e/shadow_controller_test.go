//go:build e2e

package e2e

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/shadow"
)

// createDaemonSet creates a DaemonSet that surges its updates (the new pod
// Ready before the old one goes), as a Deployment's rollout does.
func (f *fx) createDaemonSet(name string, spec corev1.PodSpec) {
	f.t.Helper()
	labels := map[string]string{"app": name}
	one, zero := intstr.FromInt32(1), intstr.FromInt32(0)
	d := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns}, Spec: appsv1.DaemonSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxSurge: &one, MaxUnavailable: &zero}},
	}}
	if _, err := f.cs.AppsV1().DaemonSets(f.ns).Create(f.ctx, d, metav1.CreateOptions{}); err != nil {
		f.t.Fatalf("creating daemonset %s: %v", name, err)
	}
}

// waitDaemonSetSettled waits until every scheduled pod of the DaemonSet is
// updated and available.
func (f *fx) waitDaemonSetSettled(name string) {
	f.t.Helper()
	f.poll("daemonset "+name+" settled", podReadyTimeout, func() (bool, error) {
		d, err := f.cs.AppsV1().DaemonSets(f.ns).Get(f.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s := d.Status
		return s.ObservedGeneration == d.Generation && s.DesiredNumberScheduled > 0 && s.UpdatedNumberScheduled == s.DesiredNumberScheduled &&
			s.NumberAvailable == s.DesiredNumberScheduled && s.CurrentNumberScheduled == s.DesiredNumberScheduled, nil
	})
}

// TestShadowController: the chart installed with shadow: true (one
// replica, a release and a namespace of its own, watching the test's
// namespace) beside the stand-in for Reloader. The controller pod pairs
// each change with the peer's restarts and classifies it: a volume-only
// Deployment and a volume-only DaemonSet the peer restarted (spared), an
// env Deployment and an env StatefulSet both restart (agree), a stale env
// consumer the peer did not restart (peer-missed). `shadow report` reads
// the record, as a table and as JSON, with credentials that may only get
// that ConfigMap. No workload and no pod has a field of cmsync's.
func TestShadowController(t *testing.T) {
	t.Parallel()
	start := time.Now()
	f := newFx(t)   // the workloads, watched
	ctl := newFx(t) // the release: the controller and its record
	helm := helmBin(t)
	loadImage(t)
	t.Logf("image %s loaded after %s", cmsyncImage, time.Since(start).Round(time.Second))

	for _, cm := range []string{"vol-cfg", "env-cfg", "stale-cfg", "sts-cfg", "ds-cfg"} {
		f.createConfigMap(configMap(cm, map[string]string{"K": "v0"}))
	}
	volume := func(cm string) corev1.PodSpec {
		return withVolumes(podSpec(withMounts(busybox("c"), mount("v", "/etc/cfg"))), cmVolume("v", cm))
	}
	env := func(cm string) corev1.PodSpec { return podSpec(withEnv(busybox("c"), cmEnv("K", cm, "K", nil))) }
	f.createAnnotatedDeployment("volapp", 2, volume("vol-cfg"), nil)
	f.createAnnotatedDeployment("envapp", 1, env("env-cfg"), nil)
	f.createAnnotatedDeployment("staleapp", 1, env("stale-cfg"), nil)
	f.createStatefulSet("stsapp", 2, env("sts-cfg"))
	f.createDaemonSet("dsapp", volume("ds-cfg"))
	for _, d := range []string{"volapp", "envapp", "staleapp"} {
		f.waitDeploymentSettled(d)
	}
	f.settledStatefulSetVersions("stsapp", 2)
	f.waitDaemonSetSettled("dsapp")
	stalePods, _ := f.deploymentPods("staleapp")
	t.Logf("workloads settled after %s", time.Since(start).Round(time.Second))

	// the report, read as a user who may get the record and nothing else
	reader := ctl.saKubeconfigReady("report-reader", []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"},
		ResourceNames: []string{shadow.DefaultRecordName}, Verbs: []string{"get"}}}, "", func(path string) bool {
		_, stderr, _ := runPlugin(ctl, false, "shadow", "report", "--kubeconfig", path, "--record-namespace", ctl.ns)
		return strings.Contains(stderr, "no shadow record") // not found: allowed to get it
	})

	window := 20 * time.Second
	release := "shadow-" + ctl.ns
	repo, tag, _ := strings.Cut(cmsyncImage, ":")
	t.Cleanup(func() { _ = exec.Command(helm, "uninstall", release, "--namespace", ctl.ns).Run() })
	install := exec.Command(helm, "install", release, filepath.Join(repoRoot, "charts", "kubectl-cmsync"), "--namespace", ctl.ns,
		"--set", "image.repository="+repo, "--set", "image.tag="+tag, "--set", "image.pullPolicy=Never",
		"--set", "watchGlobally=false", "--set", "namespaces={"+f.ns+"}", "--set", "shadow=true", "--set", "requireOptIn=false",
		"--set", "replicas=1", "--set", "podDisruptionBudget.enabled=false",
		"--set", "extraArgs={--debounce=1s,--max-wait=5s,--shadow-window="+window.String()+"}",
		"--wait", "--timeout", podReadyTimeout.String())
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	pods, err := ctl.cs.CoreV1().Pods(ctl.ns).List(ctl.ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + release})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("controller pods: %v (%v), want 1", pods, err)
	}
	controller := pods.Items[0]
	t.Cleanup(func() {
		if t.Failed() {
			for _, previous := range []bool{true, false} {
				b, err := ctl.cs.CoreV1().Pods(ctl.ns).GetLogs(controller.Name, &corev1.PodLogOptions{Previous: previous}).DoRaw(ctl.ctx)
				t.Logf("the controller's log (previous container: %v; %v):\n%s", previous, err, b)
			}
		}
	})
	if c := controller.Spec.Containers[0]; c.Image != cmsyncImage || !slices.Contains(c.Args, "--shadow") {
		t.Fatalf("controller runs %s %v, want %s with --shadow", c.Image, c.Args, cmsyncImage)
	}
	t.Logf("controller %s ready after %s", controller.Name, time.Since(start).Round(time.Second))

	edited := time.Now()
	for _, cm := range []string{"vol-cfg", "env-cfg", "stale-cfg", "sts-cfg", "ds-cfg"} {
		f.patchConfigMapData(cm, map[string]string{"K": "v1"})
	}
	// the peer, as Reloader does it at once: not staleapp
	f.reloadAnnotations("deployment/volapp", "ConfigMap", "vol-cfg")
	f.reloadEnvVars("deployment/envapp", "ConfigMap", "env-cfg")
	f.reloadEnvVars("statefulset/stsapp", "ConfigMap", "sts-cfg")
	f.reloadAnnotations("daemonset/dsapp", "ConfigMap", "ds-cfg")

	report := func(output string) (string, int) {
		t.Helper()
		out, _, code := runPlugin(f, output != "json", "shadow", "report", "--kubeconfig", reader, "-n", f.ns, "--record-namespace", ctl.ns, "-o", output)
		return out, code
	}
	want := map[string]shadow.Class{
		"configmap/vol-cfg": shadow.ClassSpared, "configmap/env-cfg": shadow.ClassAgree, "configmap/stale-cfg": shadow.ClassPeerMissed,
		"configmap/sts-cfg": shadow.ClassAgree, "configmap/ds-cfg": shadow.ClassSpared,
	}
	var rep shadow.Report
	f.poll("the five rows in the shadow record", window+90*time.Second, func() (bool, error) {
		out, code := report("json")
		if code != 0 {
			return false, nil // the record is written at the first row
		}
		rep = shadow.Report{}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			return false, err
		}
		return len(rep.Items) >= len(want), nil
	})
	t.Logf("the record complete %s after the edits", time.Since(edited).Round(time.Second))
	got := map[string]shadow.Row{}
	for _, r := range rep.Items {
		b, _ := json.Marshal(r)
		t.Logf("row: %s", b)
		if _, dup := got[r.Object.String()]; dup {
			t.Errorf("two rows for %s", r.Object)
		}
		got[r.Object.String()] = r
	}
	if len(rep.Items) != len(want) {
		t.Errorf("%d rows, want %d", len(rep.Items), len(want))
	}
	for obj, class := range want {
		if got[obj].Class != class {
			t.Errorf("%s: class %q, want %q", obj, got[obj].Class, class)
		}
	}
	checks := []struct {
		obj      string
		workload shadow.Workload
		peer     shadow.Strategy
		cmsync   shadow.Action
		pods     int // the peer's (restarted) or cmsync's (restart)
	}{
		{"configmap/vol-cfg", shadow.Workload{Kind: "Deployment", Name: "volapp"}, shadow.StrategyAnnotations, shadow.ActRemount, 2},
		{"configmap/env-cfg", shadow.Workload{Kind: "Deployment", Name: "envapp"}, shadow.StrategyEnvVars, shadow.ActRestart, 1},
		{"configmap/stale-cfg", shadow.Workload{Kind: "Deployment", Name: "staleapp"}, "", shadow.ActRestart, 1},
		{"configmap/sts-cfg", shadow.Workload{Kind: "StatefulSet", Name: "stsapp"}, shadow.StrategyEnvVars, shadow.ActRestart, 2},
		{"configmap/ds-cfg", shadow.Workload{Kind: "DaemonSet", Name: "dsapp"}, shadow.StrategyAnnotations, shadow.ActRemount, 1},
	}
	for _, c := range checks {
		c.workload.Namespace = f.ns
		r := got[c.obj]
		i := slices.IndexFunc(r.Workloads, func(w shadow.WorkloadRow) bool { return w.Workload == c.workload })
		if i < 0 || len(r.Workloads) != 1 {
			t.Errorf("%s: workloads %+v, want %s alone", c.obj, r.Workloads, c.workload)
			continue
		}
		wr := r.Workloads[i]
		if c.cmsync == shadow.ActRestart && c.peer != "" && wr.Cmsync == shadow.ActDeferred {
			wr.Cmsync = shadow.ActRestart // held for the peer's rollout under way: restarted after it
		}
		if wr.Peer != c.peer || wr.Cmsync != c.cmsync {
			t.Errorf("%s %s: peer %q cmsync %q, want peer %q cmsync %q", c.obj, c.workload, wr.Peer, wr.Cmsync, c.peer, c.cmsync)
		}
		switch {
		case c.peer != "" && wr.PeerPods != c.pods:
			t.Errorf("%s: the peer restarted %d pods, want %d", c.obj, wr.PeerPods, c.pods)
		case c.cmsync == shadow.ActRemount && (wr.Remounted != c.pods || r.Spared != c.pods):
			t.Errorf("%s: %d pods remounted, %d spared, want %d and %d (the workload's, not the peer's rollout's too)", c.obj, wr.Remounted, r.Spared, c.pods, c.pods)
		case c.cmsync == shadow.ActRestart && wr.CmsyncPods > c.pods:
			t.Errorf("%s: cmsync would restart %d pods, want at most the workload's %d", c.obj, wr.CmsyncPods, c.pods)
		case c.peer == "" && wr.CmsyncPods != c.pods:
			t.Errorf("%s: cmsync would restart %d pods, want %d", c.obj, wr.CmsyncPods, c.pods)
		}
	}
	s := rep.Summary
	if s.Changes != 5 || s.PeerRestarts != 4 || s.PeerMissed != 1 || s.PodsSpared != 3 || s.Disagreements != 3 {
		t.Errorf("summary %+v, want 5 changes, 4 peer restarts, 1 missed, 3 pods spared, 3 disagreements", s)
	}
	table, code := report("table")
	if code != 0 {
		t.Errorf("shadow report (table): exit %d", code)
	}
	for _, s := range []string{"Changes seen: 5.", "Pods spared: 3.", "Changes the peer missed: 1.", "Disagreements: 3.",
		"restarted statefulset/stsapp (env-vars)", "restarted daemonset/dsapp (annotations)", "remount 1 pods of daemonset/dsapp",
		"restart deployment/staleapp"} {
		if !strings.Contains(table, s) {
			t.Errorf("the table does not say %q", s)
		}
	}
	if out, _, code := runPlugin(f, true, "shadow", "report", "--kubeconfig", reader, "-n", f.ns, "--record-namespace", f.ns); code != 1 {
		t.Errorf("shadow report of a record the user may not read: exit %d, want 1\n%s", code, out)
	}

	t.Log("the shadow controller wrote to no workload and no pod")
	for _, w := range []string{"deployment/volapp", "deployment/envapp", "deployment/staleapp", "statefulset/stsapp", "daemonset/dsapp"} {
		kind, name, _ := strings.Cut(w, "/")
		var m metav1.Object
		switch kind {
		case "deployment":
			m, err = f.cs.AppsV1().Deployments(f.ns).Get(f.ctx, name, metav1.GetOptions{})
		case "statefulset":
			m, err = f.cs.AppsV1().StatefulSets(f.ns).Get(f.ctx, name, metav1.GetOptions{})
		case "daemonset":
			m, err = f.cs.AppsV1().DaemonSets(f.ns).Get(f.ctx, name, metav1.GetOptions{})
		}
		if err != nil {
			t.Fatalf("getting %s: %v", w, err)
		}
		f.noCmsyncManager(w, m)
	}
	f.shadowLeftPodsAlone(stalePods)
	t.Logf("wall time %s", time.Since(start).Round(time.Second))
}

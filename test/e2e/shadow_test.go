//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/restartwindow"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/reconcile"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/shadow"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/version"
)

// reloaderManager is the field manager the stand-in for Reloader writes
// under.
const reloaderManager = "reloader-stand-in"

// reloaderHash is Reloader's hash of an object's data, read from the API
// server.
func (f *fx) reloaderHash(kind, name string) string {
	f.t.Helper()
	if kind == "Secret" {
		s, err := f.cs.CoreV1().Secrets(f.ns).Get(f.ctx, name, metav1.GetOptions{})
		if err != nil {
			f.t.Fatalf("getting secret %s: %v", name, err)
		}
		return shadow.SecretHash(s.Data)
	}
	cm, err := f.cs.CoreV1().ConfigMaps(f.ns).Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatalf("getting configmap %s: %v", name, err)
	}
	return shadow.ConfigMapHash(cm.Data, cm.BinaryData)
}

// reloadEnvVars does what Reloader's env-vars strategy does for a change
// of kind/name: it sets STAKATER_<NAME>_CONFIGMAP (or _SECRET) to the
// hash of the object's data in each container of the workload's pod
// template (workload: "deployment/NAME", "statefulset/NAME" or
// "daemonset/NAME").
func (f *fx) reloadEnvVars(workload, kind, name string) {
	f.t.Helper()
	hash := f.reloaderHash(kind, name)
	var cs []map[string]any
	for _, c := range f.podTemplate(workload).Spec.Containers {
		cs = append(cs, map[string]any{"name": c.Name, "env": []map[string]string{{"name": shadow.EnvVar(kind, name), "value": hash}}})
	}
	f.patchTemplate(workload, map[string]any{"spec": map[string]any{"containers": cs}})
}

// reloadAnnotations does what Reloader's annotations strategy does: the
// pod template's reloader.stakater.com/last-reloaded-from names the
// object and its hash.
func (f *fx) reloadAnnotations(workload, kind, name string) {
	f.t.Helper()
	var refs []string
	for _, c := range f.podTemplate(workload).Spec.Containers {
		refs = append(refs, c.Name)
	}
	v, err := json.Marshal(map[string]any{"type": strings.ToUpper(kind), "name": name, "namespace": f.ns,
		"hash": f.reloaderHash(kind, name), "containerRefs": refs, "observedAt": time.Now().Unix()})
	if err != nil {
		f.t.Fatal(err)
	}
	f.patchTemplate(workload, map[string]any{"metadata": map[string]any{"annotations": map[string]string{shadow.LastReloadedFrom: string(v)}}})
}

// podTemplate is the pod template of a Deployment, StatefulSet or
// DaemonSet named "kind/name".
func (f *fx) podTemplate(workload string) *corev1.PodTemplateSpec {
	f.t.Helper()
	kind, name, _ := strings.Cut(workload, "/")
	apps := f.cs.AppsV1()
	var t *corev1.PodTemplateSpec
	var err error
	switch kind {
	case "deployment":
		var d *appsv1.Deployment
		if d, err = apps.Deployments(f.ns).Get(f.ctx, name, metav1.GetOptions{}); err == nil {
			t = &d.Spec.Template
		}
	case "statefulset":
		var s *appsv1.StatefulSet
		if s, err = apps.StatefulSets(f.ns).Get(f.ctx, name, metav1.GetOptions{}); err == nil {
			t = &s.Spec.Template
		}
	case "daemonset":
		var d *appsv1.DaemonSet
		if d, err = apps.DaemonSets(f.ns).Get(f.ctx, name, metav1.GetOptions{}); err == nil {
			t = &d.Spec.Template
		}
	default:
		f.t.Fatalf("no pod template for %q: want deployment/, statefulset/ or daemonset/NAME", workload)
	}
	if err != nil {
		f.t.Fatalf("getting %s: %v", workload, err)
	}
	return t
}

// patchTemplate patches the pod template of "kind/name" as Reloader does
// (a strategic merge patch, under the stand-in's field manager).
func (f *fx) patchTemplate(workload string, template map[string]any) {
	f.t.Helper()
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"template": template}})
	if err != nil {
		f.t.Fatal(err)
	}
	kind, name, _ := strings.Cut(workload, "/")
	opts := metav1.PatchOptions{FieldManager: reloaderManager}
	apps := f.cs.AppsV1()
	switch kind {
	case "deployment":
		_, err = apps.Deployments(f.ns).Patch(f.ctx, name, types.StrategicMergePatchType, patch, opts)
	case "statefulset":
		_, err = apps.StatefulSets(f.ns).Patch(f.ctx, name, types.StrategicMergePatchType, patch, opts)
	case "daemonset":
		_, err = apps.DaemonSets(f.ns).Patch(f.ctx, name, types.StrategicMergePatchType, patch, opts)
	default:
		err = fmt.Errorf("not a deployment, statefulset or daemonset")
	}
	if err != nil {
		f.t.Fatalf("patching the template of %s as Reloader: %v", workload, err)
	}
}

// shadowReport runs `kubectl cmsync shadow report` over this namespace's
// record.
func (f *fx) shadowReport(output string) (string, int) {
	f.t.Helper()
	out, _, code := runPlugin(f, output != "json", "shadow", "report", "-n", f.ns, "--record-namespace", f.ns, "-o", output)
	return out, code
}

// noCmsyncManager fails when cmsync wrote any field of the object.
func (f *fx) noCmsyncManager(what string, m metav1.Object) {
	f.t.Helper()
	for _, e := range m.GetManagedFields() {
		if e.Manager == version.FieldManager || contains(version.OtherFieldManagers, e.Manager) {
			f.t.Errorf("%s: a field manager %q (%s at %v): a shadow wrote to it", what, e.Manager, e.Operation, e.Time)
		}
	}
}

// TestShadow: `watch --shadow` beside a stand-in for Reloader that
// patches pod templates as Reloader's two strategies do. Five changes
// made together, each paired and classified in the record, read through
// `shadow report`: a volume-only workload the peer restarted (spared), an
// env workload both restart (agree), a key no container reads (unread-key),
// a stale env consumer the peer did not restart (peer-missed), a restart
// by the peer while the workload's restart window is closed
// (outside-window). cmsync writes no workload and no pod.
func TestShadow(t *testing.T) {
	t.Parallel()
	start := time.Now()
	f := newFx(t)
	f.createConfigMap(configMap("vol-cfg", map[string]string{"greeting": "v0"}))
	f.createSecret(secret("env.sec", map[string]string{"TOKEN": "t0"}))
	f.createConfigMap(configMap("items-cfg", map[string]string{"a": "a0", "b": "b0"}))
	f.createConfigMap(configMap("stale-cfg", map[string]string{"S": "s0"}))
	f.createConfigMap(configMap("win-cfg", map[string]string{"W": "w0"}))
	// the restart window opens in three hours: closed now
	opens := time.Now().UTC().Add(3 * time.Hour)
	closed := map[string]string{restartwindow.Annotation: opens.Format("15:04") + "-" + opens.Add(time.Hour).Format("15:04")}
	f.createAnnotatedDeployment("volapp", 2, withVolumes(podSpec(withMounts(busybox("c"), mount("v", "/etc/vol"))), cmVolume("v", "vol-cfg")), nil)
	f.createAnnotatedDeployment("envapp", 1, podSpec(withEnv(busybox("c"), secretEnv("TOKEN", "env.sec", "TOKEN"))), nil)
	f.createAnnotatedDeployment("itemsapp", 1, withVolumes(podSpec(withMounts(busybox("c"), mount("i", "/etc/items"))),
		cmItemsVolume("i", "items-cfg", corev1.KeyToPath{Key: "a", Path: "a"})), nil)
	f.createAnnotatedDeployment("staleapp", 1, podSpec(withEnv(busybox("c"), cmEnv("S", "stale-cfg", "S", nil))), nil)
	f.createAnnotatedDeployment("winapp", 1, podSpec(withEnv(busybox("c"), cmEnv("W", "win-cfg", "W", nil))), closed)
	apps := []string{"volapp", "envapp", "itemsapp", "staleapp", "winapp"}
	for _, d := range apps {
		f.waitDeploymentSettled(d)
	}
	stalePods, _ := f.deploymentPods("staleapp")
	t.Logf("set up in %s", time.Since(start).Round(time.Second))

	window := 20 * time.Second
	w := f.startWatch("--shadow", "--shadow-window", window.String(), "--shadow-namespace", f.ns, "--secrets",
		"--debounce", "1s", "--max-wait", "5s")
	edited := time.Now()
	f.patchConfigMapData("vol-cfg", map[string]string{"greeting": "v1"})
	f.patchSecretData("env.sec", map[string]string{"TOKEN": "t1"})
	f.patchConfigMapData("items-cfg", map[string]string{"b": "b1"})
	f.patchConfigMapData("stale-cfg", map[string]string{"S": "s1"})
	f.patchConfigMapData("win-cfg", map[string]string{"W": "w1"})
	// the peer, as Reloader does it at once: not staleapp
	f.reloadAnnotations("deployment/volapp", "ConfigMap", "vol-cfg")
	f.reloadEnvVars("deployment/envapp", "Secret", "env.sec")
	f.reloadAnnotations("deployment/itemsapp", "ConfigMap", "items-cfg")
	f.reloadEnvVars("deployment/winapp", "ConfigMap", "win-cfg")

	want := map[string]shadow.Class{
		"configmap/vol-cfg": shadow.ClassSpared, "secret/env.sec": shadow.ClassAgree, "configmap/items-cfg": shadow.ClassUnreadKey,
		"configmap/stale-cfg": shadow.ClassPeerMissed, "configmap/win-cfg": shadow.ClassOutsideWindow,
	}
	var rep shadow.Report
	f.poll("the five rows in the shadow record", window+90*time.Second, func() (bool, error) {
		out, code := f.shadowReport("json")
		if code != 0 {
			return false, fmt.Errorf("shadow report: exit %d", code)
		}
		rep = shadow.Report{}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			return false, err
		}
		return len(rep.Items) >= len(want), nil
	})
	t.Logf("the record complete %s after the edits", time.Since(edited).Round(time.Second))
	for _, r := range rep.Items {
		b, _ := json.Marshal(r)
		t.Logf("row: %s", b)
	}
	got := map[string]shadow.Row{}
	for _, r := range rep.Items {
		if _, dup := got[r.Object.String()]; dup {
			t.Errorf("two rows for %s", r.Object)
		}
		got[r.Object.String()] = r
	}
	if len(rep.Items) != len(want) {
		t.Errorf("%d rows, want %d", len(rep.Items), len(want))
	}
	workload := func(r shadow.Row, name string) shadow.WorkloadRow {
		for _, wr := range r.Workloads {
			if wr.Workload.Name == name {
				return wr
			}
		}
		t.Errorf("%s: no workload %s in %+v", r.Object, name, r.Workloads)
		return shadow.WorkloadRow{}
	}
	for obj, class := range want {
		if got[obj].Class != class {
			t.Errorf("%s: class %q, want %q", obj, got[obj].Class, class)
		}
	}
	checks := []struct {
		obj, app string
		peer     shadow.Strategy
		cmsync   shadow.Action
	}{
		{"configmap/vol-cfg", "volapp", shadow.StrategyAnnotations, shadow.ActRemount},
		{"secret/env.sec", "envapp", shadow.StrategyEnvVars, shadow.ActRestart},
		{"configmap/items-cfg", "itemsapp", shadow.StrategyAnnotations, shadow.ActNone},
		{"configmap/stale-cfg", "staleapp", "", shadow.ActRestart},
		{"configmap/win-cfg", "winapp", shadow.StrategyEnvVars, shadow.ActWindow},
	}
	for _, c := range checks {
		wr := workload(got[c.obj], c.app)
		if c.cmsync == shadow.ActRestart && c.peer != "" && wr.Cmsync == shadow.ActDeferred {
			wr.Cmsync = shadow.ActRestart // held for the peer's rollout under way: restarted after it
		}
		if wr.Peer != c.peer || wr.Cmsync != c.cmsync {
			t.Errorf("%s %s: peer %q cmsync %q, want peer %q cmsync %q", c.obj, c.app, wr.Peer, wr.Cmsync, c.peer, c.cmsync)
		}
	}
	// the peer's rollout may have started a pod by the time cmsync decides: the workload's 2 pods are counted, not 3
	if r := got["configmap/vol-cfg"]; r.Spared != 2 || workload(r, "volapp").Remounted != 2 {
		t.Errorf("vol-cfg: %d pods spared, %d remounted, want 2 and 2", r.Spared, workload(r, "volapp").Remounted)
	}
	if r := got["configmap/items-cfg"]; strings.Join(r.Keys, ",") != "b" || r.Spared != 1 {
		t.Errorf("items-cfg: keys %v, %d pods spared, want [b] and 1", r.Keys, r.Spared)
	}
	s := rep.Summary
	if s.Changes != 5 || s.PeerMissed != 1 || s.UnreadRestarts != 1 || s.PodsSpared != 3 || s.PeerRestarts != 4 || s.Disagreements != 4 {
		t.Errorf("summary %+v, want 5 changes, 4 peer restarts, 1 missed, 1 unread, 3 pods spared, 4 disagreements", s)
	}

	table, code := f.shadowReport("table")
	if code != 0 {
		t.Errorf("shadow report (table): exit %d", code)
	}
	for _, s := range []string{"Changes seen: 5.", "Pods spared: 3.", "Changes the peer missed: 1.",
		"spared", "agree", "unread-key", "peer-missed", "outside-window", "restarted deployment/winapp (env-vars)"} {
		if !strings.Contains(table, s) {
			t.Errorf("the table does not say %q", s)
		}
	}

	t.Log("cmsync wrote to no workload and no pod")
	for _, d := range apps {
		f.noCmsyncManager("deployment/"+d, f.getDeployment(d))
	}
	f.shadowLeftPodsAlone(stalePods)

	t.Log("the record's own writes are no change to compare: no row for it a window after it was written")
	time.Sleep(time.Until(edited.Add(2*window + 5*time.Second)))
	out, _ := f.shadowReport("json")
	rep = shadow.Report{}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Items {
		if r.Object.Name == shadow.DefaultRecordName {
			t.Errorf("a row for the record itself: %+v", r)
		}
	}
	w.stop()
	t.Logf("wall time %s", time.Since(start).Round(time.Second))
}

// TestShadowDoubleRestart: an acting `watch` restarts an env consumer for
// a change and the stand-in for Reloader restarts it too: the watch says
// so, an error on the workload naming --shadow.
func TestShadowDoubleRestart(t *testing.T) {
	t.Parallel()
	start := time.Now()
	f := newFx(t)
	f.createConfigMap(configMap("app-cfg", map[string]string{"A": "a0"}))
	f.createConfigMap(configMap("solo-cfg", map[string]string{"B": "b0"}))
	f.createAnnotatedDeployment("both", 1, podSpec(withEnv(busybox("c"), cmEnv("A", "app-cfg", "A", nil))), nil)
	f.createAnnotatedDeployment("solo", 1, podSpec(withEnv(busybox("c"), cmEnv("B", "solo-cfg", "B", nil))), nil)
	f.waitDeploymentSettled("both")
	f.waitDeploymentSettled("solo")
	w := f.startWatch("--debounce", "1s", "--max-wait", "5s", "--shadow-window", "30s")
	f.patchConfigMapData("app-cfg", map[string]string{"A": "a1"})
	f.patchConfigMapData("solo-cfg", map[string]string{"B": "b1"})
	w.waitFor("both restarted by cmsync", isAction(refresh.ActionRestart, "deployment/both"))
	w.waitFor("solo restarted by cmsync", isAction(refresh.ActionRestart, "deployment/solo"))
	f.reloadEnvVars("deployment/both", "ConfigMap", "app-cfg") // the peer, a little later than cmsync
	isDouble := func(name string) func(reconcile.Event) bool {
		return func(e reconcile.Event) bool {
			return e.Kind == reconcile.EventError && e.Target != nil && e.Target.String() == "deployment/"+name
		}
	}
	e := w.waitFor("the double restart of both reported", isDouble("both"))
	for _, s := range []string{"restarted twice", "env-vars", "--shadow"} {
		if !strings.Contains(e.Message, s) {
			t.Errorf("the warning %q does not say %q", e.Message, s)
		}
	}
	f.waitDeploymentSettled("both")
	f.waitDeploymentSettled("solo")
	time.Sleep(2 * time.Second) // a late report would show by now
	if n := w.count(isDouble("both")); n != 1 {
		t.Errorf("%d reports of both, want 1", n)
	}
	if n := w.count(isDouble("solo")); n != 0 {
		t.Errorf("%d reports of solo (only cmsync restarted it), want 0", n)
	}
	w.stop()
	t.Logf("wall time %s", time.Since(start).Round(time.Second))
}

// shadowLeftPodsAlone checks that no pod of the namespace has a field
// managed by cmsync, and that staleapp, which the peer did not restart,
// still runs the pods stalePods it ran before the change.
func (f *fx) shadowLeftPodsAlone(stalePods map[string]string) {
	f.t.Helper()
	pods, err := f.cs.CoreV1().Pods(f.ns).List(f.ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	for i := range pods.Items {
		f.noCmsyncManager("pod/"+pods.Items[i].Name, &pods.Items[i])
	}
	if after, _ := f.deploymentPods("staleapp"); fmt.Sprint(after) != fmt.Sprint(stalePods) {
		f.t.Errorf("pods of staleapp (the peer did not restart it): %v, want the same pods %v", after, stalePods)
	}
}

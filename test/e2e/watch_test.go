//go:build e2e

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/reconcile"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// watcher is a running `kubectl cmsync watch -o json`: its events as they
// come, and its stderr.
type watcher struct {
	f      *fx
	cmd    *exec.Cmd
	stderr strings.Builder
	mu     sync.Mutex
	events []reconcile.Event
	bad    []string
	done   chan struct{}
}

func (f *fx) startWatch(args ...string) *watcher {
	f.t.Helper()
	return f.startWatchIn(append([]string{"-n", f.ns}, args...)...)
}

// startWatchIn starts the watch with args as they are (the namespace flags
// among them).
func (f *fx) startWatchIn(args ...string) *watcher {
	f.t.Helper()
	if pluginBuildErr != nil {
		f.t.Fatalf("plugin not built: %v", pluginBuildErr)
	}
	w := &watcher{f: f, done: make(chan struct{})}
	w.cmd = exec.Command("kubectl", append([]string{"cmsync", "watch", "-o", "json"}, args...)...)
	w.cmd.Stderr = &w.stderr
	out, err := w.cmd.StdoutPipe()
	if err != nil {
		f.t.Fatal(err)
	}
	if err := w.cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { _ = w.cmd.Process.Kill(); <-w.done })
	go func() {
		defer close(w.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var e reconcile.Event
			w.mu.Lock()
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				w.bad = append(w.bad, sc.Text())
			} else {
				w.events = append(w.events, e)
			}
			w.mu.Unlock()
			f.t.Logf("watch: %s", sc.Text())
		}
	}()
	w.waitFor("the ready event", func(e reconcile.Event) bool { return e.Kind == reconcile.EventReady })
	return w
}

// waitFor waits until an event matches and returns it.
func (w *watcher) waitFor(what string, match func(reconcile.Event) bool) reconcile.Event {
	w.f.t.Helper()
	var found reconcile.Event
	w.f.poll("watch: "+what, podReadyTimeout, func() (bool, error) {
		for _, e := range w.all() {
			if match(e) {
				found = e
				return true, nil
			}
		}
		select {
		case <-w.done:
			return false, fmt.Errorf("watch ended: %s", w.stderr.String())
		default:
		}
		return false, nil
	})
	return found
}

func (w *watcher) all() []reconcile.Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]reconcile.Event(nil), w.events...)
}

func (w *watcher) count(match func(reconcile.Event) bool) int {
	n := 0
	for _, e := range w.all() {
		if match(e) {
			n++
		}
	}
	return n
}

// stop interrupts the watch and checks that it ended cleanly.
func (w *watcher) stop() {
	w.f.t.Helper()
	_ = w.cmd.Process.Signal(syscall.SIGINT)
	<-w.done
	if err := w.cmd.Wait(); err != nil {
		w.f.t.Errorf("watch after SIGINT: %v (want exit 0)\nstderr: %s", err, w.stderr.String())
	}
	if len(w.bad) > 0 {
		w.f.t.Errorf("watch printed lines that are not JSON events: %q", w.bad)
	}
}

// expectOneRestart waits for the restart of a Deployment to be verified
// current, for its rollout to settle and for another debounce, and checks
// that it was restarted exactly once.
func (w *watcher) expectOneRestart(name string) {
	w.f.t.Helper()
	e := w.waitFor(name+" restarted", isResult(refresh.ActionRestart, "deployment/"+name))
	if e.Outcome != refresh.OutcomeCurrent {
		w.f.t.Errorf("restart deployment/%s: outcome %s (%s), want current", name, e.Outcome, e.Message)
	}
	w.f.waitDeploymentSettled(name)
	time.Sleep(4 * time.Second) // past another debounce: a second round would show now
	if n := w.count(isAction(refresh.ActionRestart, "deployment/"+name)); n != 1 {
		w.f.t.Errorf("%d restarts of deployment/%s, want exactly 1", n, name)
	}
}

func isResult(kind refresh.ActionKind, target string) func(reconcile.Event) bool {
	return func(e reconcile.Event) bool {
		return e.Kind == reconcile.EventResult && e.Action != nil && e.Action.Action == kind && e.Action.Target.String() == target
	}
}

func isAction(kind refresh.ActionKind, target string) func(reconcile.Event) bool {
	return func(e reconcile.Event) bool {
		return e.Kind == reconcile.EventAction && e.Action != nil && e.Action.Action == kind && e.Action.Target.String() == target
	}
}

func (f *fx) createAnnotatedDeployment(name string, replicas int32, spec corev1.PodSpec, ann map[string]string) {
	f.t.Helper()
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns, Annotations: ann}, Spec: appsv1.DeploymentSpec{
		Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
	}}
	if _, err := f.cs.AppsV1().Deployments(f.ns).Create(f.ctx, d, metav1.CreateOptions{}); err != nil {
		f.t.Fatalf("creating deployment %s: %v", name, err)
	}
}

// deploymentPods returns the running pods of a Deployment by name -> UID
// and their restart counts summed.
func (f *fx) deploymentPods(app string) (map[string]string, int32) {
	f.t.Helper()
	pods, err := f.cs.CoreV1().Pods(f.ns).List(f.ctx, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		f.t.Fatalf("listing pods of %s: %v", app, err)
	}
	uids := map[string]string{}
	var restarts int32
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		uids[p.Name] = string(p.UID)
		for _, s := range p.Status.ContainerStatuses {
			restarts += s.RestartCount
		}
	}
	return uids, restarts
}

// watch in a namespace, --require-opt-in: a volume edit refreshes the pods
// without a restart; ten env edits in five seconds make one rollout; an
// edit of a key nobody reads does nothing; a Deployment annotated for
// Reloader is restarted and one that did not opt in is left alone.
func TestWatch(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	optIn := map[string]string{reconcile.AnnotationWatch: "true"}
	f.createConfigMap(configMap("vol", map[string]string{"greeting": "v0"}))
	f.createConfigMap(configMap("env", map[string]string{"A": "a0"}))
	f.createConfigMap(configMap("items", map[string]string{"a": "a0", "b": "b0"}))
	f.createConfigMap(configMap("rl", map[string]string{"X": "x0"}))
	f.createAnnotatedDeployment("vol", 2, withVolumes(podSpec(withMounts(busybox("c"), mount("v", "/etc/vol"))), cmVolume("v", "vol")), optIn)
	f.createAnnotatedDeployment("envapp", 1, podSpec(withEnv(busybox("c"), cmEnv("A", "env", "A", nil))), optIn)
	f.createAnnotatedDeployment("itemsapp", 1, withVolumes(podSpec(withMounts(busybox("c"), mount("i", "/etc/items"))),
		cmItemsVolume("i", "items", corev1.KeyToPath{Key: "a", Path: "a"})), optIn)
	f.createAnnotatedDeployment("reloaded", 1, podSpec(withEnv(busybox("c"), cmEnv("X", "rl", "X", nil))), map[string]string{reconcile.ReloaderAuto: "true"})
	f.createAnnotatedDeployment("plain", 1, podSpec(withEnv(busybox("c"), cmEnv("X", "rl", "X", nil))), nil)
	// names rl in Reloader's reload list and reads it some other way (its pod spec does not)
	f.createAnnotatedDeployment("named", 1, podSpec(busybox("c")), map[string]string{reconcile.ReloaderConfigMapReload: "rl"})
	for _, d := range []string{"vol", "envapp", "itemsapp", "reloaded", "plain", "named"} {
		f.waitDeploymentSettled(d)
	}
	// --debounce 3s: ten edits 0.4 s apart are one burst even when a patch
	// is slow on a loaded machine
	w := f.startWatch("--require-opt-in", "--debounce", "3s")

	t.Log("a volume edit: the pods are annotated and verified, nothing restarts")
	{
		before, _ := f.deploymentPods("vol")
		f.patchConfigMapData("vol", map[string]string{"greeting": "v1"})
		for name := range before {
			e := w.waitFor("pod "+name+" refreshed", isResult(refresh.ActionAnnotate, "pod/"+name))
			if e.Outcome != refresh.OutcomeCurrent {
				t.Errorf("annotate pod/%s: outcome %s (%s), want current", name, e.Outcome, e.Message)
			}
			if e.SinceChange != nil {
				t.Logf("pod %s verified current %s after the edit", name, *e.SinceChange)
			}
			f.expectFile(name, "c", "/etc/vol/greeting", "v1")
		}
		after, restarts := f.deploymentPods("vol")
		if fmt.Sprint(after) != fmt.Sprint(before) || restarts != 0 {
			t.Errorf("pods of vol: %v with %d restarts, want the same pods %v with 0", after, restarts, before)
		}
	}

	t.Log("ten edits of an env key in four seconds: one rollout")
	{
		for i := 1; i <= 10; i++ {
			f.patchConfigMapData("env", map[string]string{"A": fmt.Sprintf("a%d", i)})
			time.Sleep(400 * time.Millisecond)
		}
		w.expectOneRestart("envapp")
		rss, err := f.cs.AppsV1().ReplicaSets(f.ns).List(f.ctx, metav1.ListOptions{LabelSelector: "app=envapp"})
		if err != nil || len(rss.Items) != 2 {
			t.Errorf("ReplicaSets of envapp: %d (%v), want 2 (the first and one rollout)", len(rss.Items), err)
		}
		pods, _ := f.deploymentPods("envapp")
		for name := range pods {
			f.expectEnv(name, "c", "A", "a10")
		}
	}

	t.Log("an edit of a key no consumer reads: no action")
	{
		actions := w.count(func(e reconcile.Event) bool { return e.Kind == reconcile.EventAction })
		f.patchConfigMapData("items", map[string]string{"b": "b1"})
		e := w.waitFor("the change of items ignored", func(e reconcile.Event) bool {
			return e.Kind == reconcile.EventIgnored && e.Object != nil && e.Object.Name == "items"
		})
		if !strings.Contains(e.Message, "no consumer reads the changed keys") || strings.Join(e.Keys, ",") != "b" {
			t.Errorf("ignored event %+v, want keys [b] and no consumer reads them", e)
		}
		time.Sleep(time.Second)
		if n := w.count(func(e reconcile.Event) bool { return e.Kind == reconcile.EventAction }); n != actions {
			t.Errorf("%d actions after the edit of an unread key, want none", n-actions)
		}
	}

	t.Log("Reloader's annotations: restarted, also where only the reload list names the object; a workload that did not opt in: left alone")
	{
		namedPods, _ := f.deploymentPods("named")
		f.patchConfigMapData("rl", map[string]string{"X": "x1"})
		e := w.waitFor("reloaded restarted", isResult(refresh.ActionRestart, "deployment/reloaded"))
		if e.Outcome != refresh.OutcomeCurrent {
			t.Errorf("restart deployment/reloaded: outcome %s (%s), want current", e.Outcome, e.Message)
		}
		e = w.waitFor("named restarted", isResult(refresh.ActionRestart, "deployment/named"))
		if e.Outcome != refresh.OutcomeCurrent || !strings.Contains(e.Message, "does not read") {
			t.Errorf("restart deployment/named: outcome %s (%s), want current, its rollout verified", e.Outcome, e.Message)
		}
		f.waitDeploymentSettled("named")
		if after, _ := f.deploymentPods("named"); len(after) != 1 || fmt.Sprint(after) == fmt.Sprint(namedPods) {
			t.Errorf("pods of named: %v, want one new pod (was %v)", after, namedPods)
		}
		skip := w.waitFor("plain skipped", func(e reconcile.Event) bool {
			return e.Kind == reconcile.EventSkip && e.Target != nil && e.Target.Name == "plain"
		})
		if !strings.Contains(skip.Message, "not opted in") {
			t.Errorf("skip of plain: %q, want not opted in", skip.Message)
		}
		if d := f.getDeployment("plain"); d.Spec.Template.Annotations[refresh.RestartedAtAnnotation] != "" {
			t.Errorf("deployment plain was restarted: %v", d.Spec.Template.Annotations)
		}
	}
	w.stop()
}

// watch --sync-existing and --dry-run, a release, and a held restart:
// a dry run logs the restart of what was stale before it started and
// changes nothing; --sync-existing then makes it current; two objects one
// workload reads, edited a second apart, restart it once; and an edit
// during a rollout someone else started is deferred until that rollout
// completes, then applied once.
func TestWatchExistingDryRunReleaseAndHeld(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	optIn := map[string]string{reconcile.AnnotationWatch: "true"}
	f.createConfigMap(configMap("env", map[string]string{"A": "a0"}))
	f.createConfigMap(configMap("r1", map[string]string{"X": "x0"}))
	f.createConfigMap(configMap("r2", map[string]string{"Y": "y0"}))
	f.createConfigMap(configMap("held", map[string]string{"B": "b0"}))
	f.createAnnotatedDeployment("old", 1, podSpec(withEnv(busybox("c"), cmEnv("A", "env", "A", nil))), optIn)
	f.createAnnotatedDeployment("multi", 1, podSpec(withEnv(busybox("c"), cmEnv("X", "r1", "X", nil), cmEnv("Y", "r2", "Y", nil))), optIn)
	// slow's pods are Ready 20 s after they start: a rollout of it lasts that
	// long, past the edit's debounce and round on a loaded machine
	slow := withEnv(busybox("c"), cmEnv("B", "held", "B", nil))
	slow.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}},
		InitialDelaySeconds: 20, PeriodSeconds: 1}
	f.createAnnotatedDeployment("slow", 1, podSpec(slow), optIn)
	for _, d := range []string{"old", "multi", "slow"} {
		f.waitDeploymentSettled(d)
	}
	f.patchConfigMapData("env", map[string]string{"A": "a1"}) // stale before any watch starts

	t.Log("--dry-run --sync-existing: the restart is logged, nothing is patched")
	{
		w := f.startWatch("--require-opt-in", "--sync-existing", "--dry-run", "--debounce", "1s")
		w.waitFor("the dry run's restart of old", isAction(refresh.ActionRestart, "deployment/old"))
		f.patchConfigMapData("env", map[string]string{"A": "a2"})
		w.waitFor("the edit seen", func(e reconcile.Event) bool {
			return e.Kind == reconcile.EventChange && e.Object != nil && e.Object.Name == "env"
		})
		f.poll("the dry run's restart of old for the edit", podReadyTimeout, func() (bool, error) {
			return w.count(isAction(refresh.ActionRestart, "deployment/old")) >= 2, nil
		})
		time.Sleep(2 * time.Second) // a patch, or a third action, would show by now
		if n := w.count(isAction(refresh.ActionRestart, "deployment/old")); n != 2 {
			t.Errorf("%d restart actions of deployment/old logged, want 2 (the existing state, then the edit)", n)
		}
		if d := f.getDeployment("old"); d.Spec.Template.Annotations[refresh.RestartedAtAnnotation] != "" || d.Generation != 1 {
			t.Errorf("deployment old after a dry run: generation %d, template annotations %v, want untouched", d.Generation, d.Spec.Template.Annotations)
		}
		w.stop()
	}

	// --debounce 3s: two edits a second apart are one burst even when a
	// patch is slow on a loaded machine
	w := f.startWatch("--require-opt-in", "--sync-existing", "--debounce", "3s")
	t.Log("--sync-existing: what was stale before the start is made current")
	{
		e := w.waitFor("old restarted", isResult(refresh.ActionRestart, "deployment/old"))
		if e.Outcome != refresh.OutcomeCurrent {
			t.Errorf("restart deployment/old: outcome %s (%s), want current", e.Outcome, e.Message)
		}
		f.waitDeploymentSettled("old")
		pods, _ := f.deploymentPods("old")
		for name := range pods {
			f.expectEnv(name, "c", "A", "a2")
		}
	}

	t.Log("a release: two objects multi reads, edited a second apart, restart it once")
	{
		f.patchConfigMapData("r1", map[string]string{"X": "x1"})
		time.Sleep(time.Second)
		f.patchConfigMapData("r2", map[string]string{"Y": "y1"})
		w.expectOneRestart("multi")
		pods, _ := f.deploymentPods("multi")
		for name := range pods {
			f.expectEnv(name, "c", "X", "x1")
			f.expectEnv(name, "c", "Y", "y1")
		}
	}

	t.Log("an edit during a rollout started by someone else: deferred, then applied once")
	{
		before, _ := f.deploymentPods("slow")
		f.restartDeployment("slow", "by-hand")
		// the rollout's new pod runs (with B=b0) before the edit, so it is stale too
		f.poll("slow's new pod running", podReadyTimeout, func() (bool, error) {
			pods, err := f.cs.CoreV1().Pods(f.ns).List(f.ctx, metav1.ListOptions{LabelSelector: "app=slow"})
			if err != nil {
				return false, err
			}
			for _, p := range pods.Items {
				if _, old := before[p.Name]; !old && p.Status.Phase == corev1.PodRunning {
					return true, nil
				}
			}
			return false, nil
		})
		f.patchConfigMapData("held", map[string]string{"B": "b1"})
		d := w.waitFor("slow's restart deferred", func(e reconcile.Event) bool {
			return e.Kind == reconcile.EventDeferred && e.Action != nil && e.Action.Target.String() == "deployment/slow"
		})
		if !strings.Contains(d.Message, "rollout of deployment/slow is not complete") {
			t.Errorf("deferred: %q, want the rollout under way", d.Message)
		}
		w.expectOneRestart("slow")
		if n := w.count(func(e reconcile.Event) bool { return e.Kind == reconcile.EventDeferred }); n != 1 {
			t.Errorf("%d deferred events, want 1 (said once, not at every retry)", n)
		}
		pods, _ := f.deploymentPods("slow")
		for name := range pods {
			f.expectEnv(name, "c", "B", "b1")
		}
	}
	w.stop()
}

// restartDeployment starts a rollout as `kubectl rollout restart` does.
func (f *fx) restartDeployment(name, value string) {
	f.t.Helper()
	patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{%q:%q}}}}}`, refresh.RestartedAtAnnotation, value)
	if _, err := f.cs.AppsV1().Deployments(f.ns).Patch(f.ctx, name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		f.t.Fatalf("restarting deployment %s: %v", name, err)
	}
}

// TestWatchOnChangePolicy: a volume-only consumer opted in through
// Reloader's annotation is restarted once for a change, as Reloader does;
// the same workload with on-change: remount is remounted, with no restart.
func TestWatchOnChangePolicy(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	f.createConfigMap(configMap("cfg", map[string]string{"greeting": "v0"}))
	spec := withVolumes(podSpec(withMounts(busybox("c"), mount("v", "/etc/cfg"))), cmVolume("v", "cfg"))
	f.createAnnotatedDeployment("reloaded", 1, spec, map[string]string{reconcile.ReloaderAuto: "true"})
	f.createAnnotatedDeployment("remounted", 1, spec, map[string]string{reconcile.ReloaderAuto: "true", reconcile.AnnotationOnChange: reconcile.OnChangeRemount})
	f.waitDeploymentSettled("reloaded")
	f.waitDeploymentSettled("remounted")
	before, _ := f.deploymentPods("remounted")
	w := f.startWatch("--require-opt-in", "--debounce", "2s")
	f.patchConfigMapData("cfg", map[string]string{"greeting": "v1"})

	w.expectOneRestart("reloaded")
	if a := w.waitFor("the restart of reloaded", isAction(refresh.ActionRestart, "deployment/reloaded")); !strings.Contains(a.Message, "on-change: restart") {
		t.Errorf("restart reason %q does not say the policy", a.Message)
	}
	pods, _ := f.deploymentPods("reloaded")
	for name := range pods {
		f.expectFile(name, "c", "/etc/cfg/greeting", "v1")
	}
	for name := range before {
		if e := w.waitFor("pod "+name+" remounted", isResult(refresh.ActionAnnotate, "pod/"+name)); e.Outcome != refresh.OutcomeCurrent {
			t.Errorf("annotate pod/%s: %s (%s), want current", name, e.Outcome, e.Message)
		}
		f.expectFile(name, "c", "/etc/cfg/greeting", "v1")
	}
	if after, restarts := f.deploymentPods("remounted"); fmt.Sprint(after) != fmt.Sprint(before) || restarts != 0 {
		t.Errorf("pods of remounted: %v with %d restarts, want the same pods %v with 0", after, restarts, before)
	}
	if n := w.count(isAction(refresh.ActionRestart, "deployment/remounted")); n != 0 {
		t.Errorf("%d restarts of remounted (on-change: remount), want 0", n)
	}
}

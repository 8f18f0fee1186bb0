//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/nodereader"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/reconcile"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

const (
	ctlName = "kubectl-cmsync-controller"
	ctlPods = "app.kubernetes.io/name=kubectl-cmsync,app.kubernetes.io/component=controller"
)

// deployNamespaces are the namespaces deploy/'s manifests name: the
// controller's own and the node readers'. A test installs its controller
// in namespaces of its own in their place (movedNS).
var deployNamespaces = []string{"cmsync-system", "cmsync-readers"}

// movedNS is the test's own namespace in place of ns, one of
// deployNamespaces: made at the first call, deleted at the end of the
// test. Each controller test installs its controller there (its pods, its
// Lease and key Secret), with a ClusterRole and ClusterRoleBinding named
// after it (clusterName) and the test's namespaces as its scope (-n): the
// controller tests share nothing and run side by side.
func (f *fx) movedNS(ns string) string {
	f.t.Helper()
	if !slices.Contains(deployNamespaces, ns) {
		f.t.Fatalf("namespace %s is not one deploy/ names (%v)", ns, deployNamespaces)
	}
	if f.moved[ns] == "" {
		if f.moved == nil {
			f.moved = map[string]string{}
		}
		f.moved[ns] = newFx(f.t).ns
		f.t.Logf("namespace %s in place of %s", f.moved[ns], ns)
	}
	return f.moved[ns]
}

// ctlNS is the namespace of the test's controller.
func (f *fx) ctlNS() string {
	f.t.Helper()
	return f.movedNS("cmsync-system")
}

// clusterName is the name of the test's copy of a cluster-scoped object of
// deploy/ (a ClusterRole, a ClusterRoleBinding): unique, as its namespace.
func (f *fx) clusterName(name string) string {
	f.t.Helper()
	return name + "-" + f.ctlNS()
}

// relocate moves an object of deploy/'s manifests to the test's own
// namespaces: its namespace, a Namespace's name, the subjects of a binding,
// the names of a ClusterRole and a ClusterRoleBinding and the role it binds,
// and arguments that name a namespace of deploy/ (--reader-namespace=).
func (f *fx) relocate(u *unstructured.Unstructured) {
	f.t.Helper()
	move := func(ns string) string {
		if slices.Contains(deployNamespaces, ns) {
			return f.movedNS(ns)
		}
		return ns
	}
	switch u.GetKind() {
	case "Namespace":
		u.SetName(move(u.GetName()))
	case "ClusterRole":
		u.SetName(f.clusterName(u.GetName()))
	case "ClusterRoleBinding":
		u.SetName(f.clusterName(u.GetName()))
		if role, _, _ := unstructured.NestedString(u.Object, "roleRef", "name"); role != "" {
			_ = unstructured.SetNestedField(u.Object, f.clusterName(role), "roleRef", "name")
		}
	case "Deployment":
		c := controllerContainer(u)
		var args []any
		for _, a := range c["args"].([]any) {
			if flag, ns, ok := strings.Cut(a.(string), "="); ok && slices.Contains(deployNamespaces, ns) {
				a = flag + "=" + move(ns)
			}
			args = append(args, a)
		}
		c["args"] = args
	}
	if ns := u.GetNamespace(); ns != "" {
		u.SetNamespace(move(ns))
	}
	if subjects, ok := u.Object["subjects"].([]any); ok {
		for _, s := range subjects {
			if m, ok := s.(map[string]any); ok {
				if ns, ok := m["namespace"].(string); ok {
					m["namespace"] = move(ns)
				}
			}
		}
	}
}

// controllerContainer is the container of deploy/'s Deployment.
func controllerContainer(u *unstructured.Unstructured) map[string]any {
	return u.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
}

// applyController renders deploy/NAME with the cluster's kubectl
// kustomize, moves each object to the test's own namespaces (relocate),
// lets edit change it, and applies the lot; the controller is removed at
// the end of the test. It returns the manifests applied.
func (f *fx) applyController(kustomization string, edit func(u *unstructured.Unstructured)) string {
	f.t.Helper()
	kubectl := kubectlPath(f.t)
	out, err := exec.Command(kubectl, "kustomize", filepath.Join(repoRoot, "deploy", kustomization)).Output()
	if err != nil {
		f.t.Fatalf("kubectl kustomize deploy/%s: %v", kustomization, err)
	}
	var docs []string
	for _, doc := range strings.Split(string(out), "\n---\n") {
		var u unstructured.Unstructured
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			f.t.Fatalf("deploy/%s: %v", kustomization, err)
		}
		edit(&u)
		f.relocate(&u)
		b, _ := yaml.Marshal(u.Object)
		docs = append(docs, string(b))
	}
	manifests := strings.Join(docs, "\n---\n")
	for _, ns := range deployNamespaces {
		if strings.Contains(manifests, ns) {
			f.t.Fatalf("deploy/%s still names %s after the move to the test's namespaces:\n%s", kustomization, ns, manifests)
		}
	}
	f.t.Cleanup(f.removeController)
	apply := exec.Command(kubectl, "apply", "-f", "-")
	apply.Stdin = strings.NewReader(manifests)
	if out, err := apply.CombinedOutput(); err != nil {
		f.t.Fatalf("kubectl apply of deploy/%s: %v\n%s", kustomization, err, out)
	}
	return manifests
}

// deployController applies deploy/controller, rendered by the cluster's
// kubectl kustomize, with the e2e image and args, in the test's own
// namespaces, and removes it all at the end of the test.
func (f *fx) deployController(args ...string) {
	f.t.Helper()
	f.deployControllerFrom("controller", func([]string) []string { return args })
}

// deployControllerFrom applies a kustomization of deploy/ with the test's
// image (pulled never) in place of the published one, the arguments args
// makes of the kustomization's, and each edit made to its container.
func (f *fx) deployControllerFrom(kustomization string, args func([]string) []string, edits ...func(container map[string]any)) {
	f.t.Helper()
	f.applyController(kustomization, func(u *unstructured.Unstructured) {
		if u.GetKind() != "Deployment" {
			return
		}
		c := controllerContainer(u)
		// the published image at the release's version, replaced below by the suite's own build:
		// the tests never pull
		if img, _ := c["image"].(string); !strings.HasPrefix(img, "ghcr.io/kubectl-cmsync/kubectl-cmsync:v") {
			f.t.Fatalf("deploy/%s's image is %v, want ghcr.io/kubectl-cmsync/kubectl-cmsync:vX.Y.Z (the release's)", kustomization, c["image"])
		}
		var base []string
		for _, a := range c["args"].([]any) {
			base = append(base, a.(string))
		}
		c["image"], c["imagePullPolicy"] = cmsyncImage, "Never"
		var out []any
		for _, a := range args(base) {
			out = append(out, a)
		}
		c["args"] = out
		for _, edit := range edits {
			edit(c)
		}
	})
}

// removeController deletes the test's controller: its namespace (the
// leader releases its Lease on SIGTERM) and its ClusterRoleBinding and
// ClusterRole, and waits until no pod of it runs.
func (f *fx) removeController() {
	if f.t.Failed() {
		for _, p := range f.controllerPods() {
			f.t.Logf("log of %s:\n%s", p.Name, f.controllerLog(p.Name))
			f.logRestartedController(p)
		}
	}
	ns := f.ctlNS()
	_ = f.cs.CoreV1().Namespaces().Delete(f.ctx, ns, metav1.DeleteOptions{})
	_ = f.cs.RbacV1().ClusterRoleBindings().Delete(f.ctx, f.clusterName(ctlName), metav1.DeleteOptions{})
	_ = f.cs.RbacV1().ClusterRoles().Delete(f.ctx, f.clusterName(ctlName), metav1.DeleteOptions{})
	f.poll("no pod of the controller in "+ns, 2*time.Minute, func() (bool, error) {
		pods, err := f.cs.CoreV1().Pods(ns).List(f.ctx, metav1.ListOptions{LabelSelector: ctlPods})
		return err == nil && len(pods.Items) == 0, err
	})
}

func (f *fx) controllerPods() []corev1.Pod {
	pods, err := f.cs.CoreV1().Pods(f.ctlNS()).List(f.ctx, metav1.ListOptions{LabelSelector: ctlPods})
	if err != nil {
		f.t.Fatalf("listing the controller's pods: %v", err)
	}
	var out []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

func (f *fx) controllerLog(pod string) string {
	b, err := f.cs.CoreV1().Pods(f.ctlNS()).GetLogs(pod, &corev1.PodLogOptions{}).DoRaw(f.ctx)
	if err != nil {
		return fmt.Sprintf("(log of %s: %v)", pod, err)
	}
	return string(b)
}

// logRestartedController logs, for a controller container that was
// restarted, why its last run ended (exit code, reason: OOMKilled, a
// failed liveness probe shows as Error with 137 and the probe's events)
// and that run's log: a leader that dies mid-test hands its Lease over,
// and its successor's log alone does not say why.
func (f *fx) logRestartedController(p corev1.Pod) {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.RestartCount == 0 {
			continue
		}
		if t := cs.LastTerminationState.Terminated; t != nil {
			f.t.Logf("%s/%s restarted %d times; its last run ended %s: exit %d, %s %s", p.Name, cs.Name, cs.RestartCount,
				t.FinishedAt.UTC().Format(time.RFC3339), t.ExitCode, t.Reason, t.Message)
		}
		b, err := f.cs.CoreV1().Pods(f.ctlNS()).GetLogs(p.Name, &corev1.PodLogOptions{Container: cs.Name, Previous: true}).DoRaw(f.ctx)
		f.t.Logf("log of %s/%s's previous run (%v):\n%s", p.Name, cs.Name, err, b)
	}
	evs, err := f.cs.CoreV1().Events(f.ctlNS()).List(f.ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + p.Name})
	if err == nil {
		for _, e := range evs.Items {
			if e.Type != corev1.EventTypeNormal {
				f.t.Logf("event %s %s: %s (%d times)", p.Name, e.Reason, e.Message, e.Count)
			}
		}
	}
}

// controllerEvents are the JSON lines of a controller pod's log (client-go's
// own lines on stderr are left out).
func (f *fx) controllerEvents(pod string) []reconcile.Event {
	var out []reconcile.Event
	for _, line := range strings.Split(f.controllerLog(pod), "\n") {
		var e reconcile.Event
		if strings.HasPrefix(line, "{") && json.Unmarshal([]byte(line), &e) == nil {
			out = append(out, e)
		}
	}
	return out
}

// waitControllerEvent waits for an event in pod's log and returns it.
func (f *fx) waitControllerEvent(pod, what string, match func(reconcile.Event) bool) reconcile.Event {
	f.t.Helper()
	var found reconcile.Event
	f.poll(pod+": "+what, podReadyTimeout, func() (bool, error) {
		for _, e := range f.controllerEvents(pod) {
			if match(e) {
				found = e
				return true, nil
			}
		}
		return false, nil
	})
	return found
}

// waitAnyControllerEvent waits for a matching event with an outcome of
// current in the log of any controller pod (the Lease may change hands on
// a loaded machine: the new leader resumes and finishes the work) and
// returns it, else the last matching one.
func (f *fx) waitAnyControllerEvent(what string, match func(reconcile.Event) bool) reconcile.Event {
	f.t.Helper()
	var found reconcile.Event
	f.poll("a controller: "+what, podReadyTimeout, func() (bool, error) {
		for _, p := range f.controllerPods() {
			for _, e := range f.controllerEvents(p.Name) {
				if match(e) {
					found = e
					if e.Outcome == refresh.OutcomeCurrent {
						return true, nil
					}
				}
			}
		}
		return false, nil
	})
	return found
}

// leader waits for the holder of the Lease to be a running pod other than
// the ones in not, all pods Ready, and returns it.
func (f *fx) leader(not ...string) string {
	f.t.Helper()
	var holder string
	f.poll("a controller leads", podReadyTimeout, func() (bool, error) {
		l, err := f.cs.CoordinationV1().Leases(f.ctlNS()).Get(f.ctx, ctlName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
			return false, nil
		}
		holder = *l.Spec.HolderIdentity
		pods := f.controllerPods()
		ready, found := 0, false
		for i := range pods {
			if podReady(&pods[i]) {
				ready++
			}
			found = found || pods[i].Name == holder
		}
		for _, n := range not {
			if holder == n {
				return false, nil
			}
		}
		return found && ready == 2 && len(pods) == 2, nil
	})
	return holder
}

func (f *fx) appliedRecord(deployment string) string {
	f.t.Helper()
	d, err := f.cs.AppsV1().Deployments(f.ns).Get(f.ctx, deployment, metav1.GetOptions{})
	if err != nil {
		f.t.Fatalf("deployment %s: %v", deployment, err)
	}
	return d.Annotations[reconcile.AnnotationApplied]
}

func isResume(e reconcile.Event) bool { return e.Kind == reconcile.EventResume }

// The controller as it is installed (deploy/controller: two replicas, its
// RBAC and nothing else), in the cluster: a volume edit is verified with no
// restart; an unread key does nothing; the leader SIGKILLed between the
// restart of an env consumer and its record is replaced (by the other
// replica, or by itself restarted), and the next leader finishes it
// without a second restart (the Reloader-annotated Deployment works as
// is); restarted with nothing changed it does nothing. Metrics and Events
// are checked on the way.
func TestController(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	loadImage(t)
	f.createConfigMap(configMap("app", map[string]string{"greeting": "v0", "level": "l0", "unread": "u0"}))
	f.createAnnotatedDeployment("vol", 2, withVolumes(podSpec(withMounts(busybox("c"), mount("v", "/etc/app"))),
		cmItemsVolume("v", "app", corev1.KeyToPath{Key: "greeting", Path: "greeting"})), map[string]string{reconcile.AnnotationWatch: "true"})
	// env's pods are Ready 5 s after they start: a rollout of it lasts that long, and the leader is
	// deleted while its wait for that rollout is under way
	slow := withEnv(busybox("c"), cmEnv("LEVEL", "app", "level", nil))
	slow.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}},
		InitialDelaySeconds: 5, PeriodSeconds: 1}
	f.createAnnotatedDeployment("env", 1, podSpec(slow), map[string]string{reconcile.ReloaderAuto: "true"})
	f.waitDeploymentSettled("vol")
	f.waitDeploymentSettled("env")
	// the default Lease timing: a graceful delete releases the Lease at once
	f.deployController("controller", "-n", f.ns, "--secrets", "--debounce=1s", "--max-wait=5s", "--min-restart-interval=20s")
	first := f.leader()
	e := f.waitControllerEvent(first, "resumed", isResume)
	if !strings.HasPrefix(e.Message, "0 consumers current by their record, 2 recorded for the first time") {
		t.Errorf("first start: %s, want both Deployments recorded", e.Message)
	}
	if f.appliedRecord("vol") == "" || f.appliedRecord("env") == "" {
		t.Fatalf("no record on the Deployments after the first start")
	}

	t.Log("a volume edit: the pods are verified current, nothing restarts")
	before, _ := f.deploymentPods("vol")
	f.patchConfigMapData("app", map[string]string{"greeting": "v1"})
	for name := range before {
		e := f.waitControllerEvent(first, "pod "+name+" refreshed", isResult(refresh.ActionAnnotate, "pod/"+name))
		if e.Outcome != refresh.OutcomeCurrent {
			t.Errorf("annotate pod/%s: %s (%s), want current", name, e.Outcome, e.Message)
		}
		if e.SinceChange != nil {
			t.Logf("pod %s verified current %s after the edit", name, *e.SinceChange)
		}
		f.expectFile(name, "c", "/etc/app/greeting", "v1")
	}
	if after, restarts := f.deploymentPods("vol"); fmt.Sprint(after) != fmt.Sprint(before) || restarts != 0 {
		t.Errorf("pods of vol: %v with %d restarts, want the same pods %v with 0", after, restarts, before)
	}
	f.checkMetrics(first, `cmsync_leader 1`, `cmsync_results_total{action="annotate",outcome="current"} 2`)
	f.checkUsedMetrics(first, "cmsync_changes_total", "cmsync_actions_total", "cmsync_results_total")
	f.checkKubeEvent("Pod", "Refreshed")

	t.Log("an edit of a key no consumer reads: no action")
	actions := func(pod string) int {
		n := 0
		for _, e := range f.controllerEvents(pod) {
			if e.Kind == reconcile.EventAction {
				n++
			}
		}
		return n
	}
	n := actions(first)
	f.patchConfigMapData("app", map[string]string{"unread": "u1"})
	f.waitControllerEvent(first, "the unread key ignored", func(e reconcile.Event) bool {
		return e.Kind == reconcile.EventIgnored && strings.Join(e.Keys, ",") == "unread"
	})
	time.Sleep(2 * time.Second)
	if got := actions(first); got != n {
		t.Errorf("%d actions after an unread key changed, want none", got-n)
	}

	t.Log("the leader SIGKILLed between its restart and its record: the next leader finishes it, one restart")
	d0, err := f.cs.AppsV1().Deployments(f.ns).Get(f.ctx, "env", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec0 := d0.Annotations[reconcile.AnnotationApplied]
	f.patchConfigMapData("app", map[string]string{"level": "l1"})
	var restartedAt string
	f.poll("the rollout of env started", podReadyTimeout, func() (bool, error) {
		d, err := f.cs.AppsV1().Deployments(f.ns).Get(f.ctx, "env", metav1.GetOptions{})
		if err == nil {
			restartedAt = d.Spec.Template.Annotations[refresh.RestartedAtAnnotation]
		}
		return restartedAt != "", err
	})
	killed := f.sigkill(first)
	second, e := f.resumedAfter(killed)
	t.Logf("%s resumed after the leader %s was killed: %s", second, first, e.Message)
	if !strings.Contains(e.Message, "1 changed since their record (checked)") {
		t.Errorf("the new leader's resume: %q, want env changed since its record (the old leader was killed before it recorded); its log:\n%s",
			e.Message, f.controllerLog(second))
	}
	f.poll("env's record updated by "+second, podReadyTimeout, func() (bool, error) { return f.appliedRecord("env") != rec0, nil })
	f.waitDeploymentSettled("env")
	// one restart: the restartedAt the first leader set is the one there now, two ReplicaSets, one Refreshing
	// Event (the generation says nothing: the API server bumps a Deployment's for an annotation too)
	d1, _ := f.cs.AppsV1().Deployments(f.ns).Get(f.ctx, "env", metav1.GetOptions{})
	rss, err := f.cs.AppsV1().ReplicaSets(f.ns).List(f.ctx, metav1.ListOptions{LabelSelector: "app=env"})
	if got := d1.Spec.Template.Annotations[refresh.RestartedAtAnnotation]; got != restartedAt || err != nil || len(rss.Items) != 2 {
		t.Errorf("env: restartedAt %q -> %q, %d ReplicaSets (%v); want one restart (the same restartedAt, 2 ReplicaSets)", restartedAt, got, len(rss.Items), err)
	}
	if n := f.kubeEventCount("Deployment", "env", "Refreshing"); n != 1 {
		t.Errorf("%d Refreshing Events on deployment/env, want 1", n)
	}
	pods, _ := f.deploymentPods("env")
	for name := range pods {
		f.expectEnv(name, "c", "LEVEL", "l1")
	}

	t.Log("both replicas restarted with nothing changed: no action")
	for _, p := range f.controllerPods() {
		if err := f.cs.CoreV1().Pods(f.ctlNS()).Delete(f.ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	third := f.leader(first, second)
	e = f.waitControllerEvent(third, "resumed", isResume)
	if want := "2 consumers current by their record, 0 recorded for the first time (left alone), 0 changed since their record (checked)"; e.Message != want {
		t.Errorf("restart with nothing changed: %q, want %q", e.Message, want)
	}
	time.Sleep(3 * time.Second) // past a debounce
	if got := actions(third); got != 0 {
		t.Errorf("%d actions after a restart with nothing changed, want 0", got)
	}
	for _, p := range f.controllerPods() {
		for _, s := range p.Status.ContainerStatuses {
			if s.RestartCount != 0 {
				t.Errorf("controller pod %s restarted %d times:\n%s", p.Name, s.RestartCount, f.controllerLog(p.Name))
			}
		}
	}
	f.flap(60*time.Second, 20*time.Second)
}

// flap edits app's level every 200 ms for d: env (its rollouts last 5 s)
// is restarted at most d / interval + 1 times (--min-restart-interval;
// every round, at most --max-wait 5s apart, finds it stale), and its pods
// have the last value at the end.
func (f *fx) flap(d, interval time.Duration) {
	f.t.Helper()
	f.t.Logf("level edited every 200 ms for %s", d)
	replicaSets := func() int {
		rss, err := f.cs.AppsV1().ReplicaSets(f.ns).List(f.ctx, metav1.ListOptions{LabelSelector: "app=env"})
		if err != nil {
			f.t.Fatal(err)
		}
		return len(rss.Items)
	}
	before := replicaSets()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var last string
	for i, end := 0, time.Now().Add(d); time.Now().Before(end); i++ {
		last = fmt.Sprintf("flap-%d", i)
		f.patchConfigMapData("app", map[string]string{"level": last})
		<-tick.C
	}
	f.poll("env's pods have level "+last, podReadyTimeout, func() (bool, error) {
		pods, _ := f.deploymentPods("env")
		for name := range pods {
			out, _, err := f.execIn(name, "c", "cat", "/proc/1/environ")
			if err != nil || !strings.Contains(out, "LEVEL="+last+"\x00") {
				return false, nil
			}
		}
		return len(pods) == 1, nil
	})
	restarts := replicaSets() - before
	if most := int(d/interval) + 1; restarts > most {
		f.t.Errorf("env restarted %d times in %s of edits with --min-restart-interval %s, want at most %d", restarts, d, interval, most)
	}
	f.t.Logf("env restarted %d times in %s of edits, and current", restarts, d)
}

// sigkill kills the controller's process in pod with SIGKILL from the node
// (hack/cluster's node is this machine): no SIGTERM, no Lease released,
// nothing finished. It returns the time just before.
func (f *fx) sigkill(pod string) time.Time {
	f.t.Helper()
	p, err := f.cs.CoreV1().Pods(f.ctlNS()).Get(f.ctx, pod, metav1.GetOptions{})
	if err != nil || len(p.Status.ContainerStatuses) == 0 {
		f.t.Fatalf("controller pod %s: %v", pod, err)
	}
	id := p.Status.ContainerStatuses[0].ContainerID
	_, id, _ = strings.Cut(id, "://")
	pids := containerPIDs(id)
	if id == "" || len(pids) == 0 {
		f.t.Fatalf("no process of container %q (pod %s) in /proc/*/cgroup: the e2e suite runs on hack/cluster's node, as root", id, pod)
	}
	at := time.Now()
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			f.t.Fatalf("kill -9 %d (pod %s): %v", pid, pod, err)
		}
	}
	f.t.Logf("SIGKILL to %v, the processes of pod %s", pids, pod)
	return at
}

// containerPIDs are the processes whose cgroup path names container id.
func containerPIDs(id string) []int {
	var out []int
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cgroup")); err == nil && bytes.Contains(b, []byte(id)) {
			out = append(out, pid)
		}
	}
	return out
}

// resumedAfter waits for a controller process started after t to lead and
// resume, and returns its pod and the resume's event.
func (f *fx) resumedAfter(t time.Time) (string, reconcile.Event) {
	f.t.Helper()
	var pod string
	var found reconcile.Event
	f.poll("a controller resumed after "+t.Format(time.RFC3339), podReadyTimeout, func() (bool, error) {
		for _, p := range f.controllerPods() {
			for _, e := range f.controllerEvents(p.Name) {
				if isResume(e) && e.Time.After(t) {
					pod, found = p.Name, e
					return true, nil
				}
			}
		}
		return false, nil
	})
	return pod, found
}

// checkMetrics reads /metrics of a controller pod as Prometheus would,
// from another pod (busybox's wget; the API server has no route to pods).
func (f *fx) checkMetrics(ctl string, want ...string) {
	f.t.Helper()
	b := f.scrape(ctl)
	for _, w := range want {
		if !bytes.Contains(b, []byte(w)) {
			f.t.Errorf("/metrics of %s lacks %q", ctl, w)
		}
	}
}

// scrape is /metrics of a controller pod, read from the pod scraper of the
// test's namespace (created first when there is none).
func (f *fx) scrape(ctl string) []byte {
	f.t.Helper()
	if _, err := f.cs.CoreV1().Pods(f.ns).Get(f.ctx, "scraper", metav1.GetOptions{}); apierrors.IsNotFound(err) {
		f.createPod(pod("scraper", podSpec(busybox("c"))))
	}
	f.waitPodReady("scraper")
	p, err := f.cs.CoreV1().Pods(f.ctlNS()).Get(f.ctx, ctl, metav1.GetOptions{})
	if err != nil || p.Status.PodIP == "" {
		f.t.Fatalf("controller pod %s: %v", ctl, err)
	}
	return []byte(f.mustExec("scraper", "c", "wget", "-qO-", "http://"+p.Status.PodIP+":8080/metrics"))
}

// checkKubeEvent waits for an Event of the controller on an object of kind
// in the test's namespace.
func (f *fx) checkKubeEvent(kind, reason string) {
	f.t.Helper()
	f.poll("a "+reason+" Event on a "+kind, 30*time.Second, func() (bool, error) {
		evs, err := f.cs.CoreV1().Events(f.ns).List(f.ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Source.Component == "kubectl-cmsync-controller" && e.InvolvedObject.Kind == kind && e.Reason == reason {
				return true, nil
			}
		}
		return false, nil
	})
}

// kubeEventCount counts the controller's Events of reason on one object
// (an Event repeated is one object with a count).
func (f *fx) kubeEventCount(kind, name, reason string) int32 {
	f.t.Helper()
	evs, err := f.cs.CoreV1().Events(f.ns).List(f.ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatalf("events: %v", err)
	}
	var n int32
	for _, e := range evs.Items {
		if e.Source.Component == "kubectl-cmsync-controller" && e.InvolvedObject.Kind == kind && e.InvolvedObject.Name == name && e.Reason == reason {
			n += max(e.Count, 1)
		}
	}
	return n
}

// deploy/controller-node-reader in the cluster: the controller reads a
// container with no shell through a reader pod in the readers' namespace
// (cmsync-readers, the test's own in its place) and verifies its volume
// current after an edit; idle past --reader-idle-timeout, it leaves no
// reader pod (deleted while running, not before the timeout), and the next
// edit is read on a new one; when the controller is removed, its reader
// pods go with it.
func TestControllerNodeReader(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	loadImage(t)
	const idle = 10 * time.Second
	readers := f.movedNS("cmsync-readers")
	f.createConfigMap(configMap("app", map[string]string{"greeting": "v0", "level": "l0"}))
	optIn := map[string]string{reconcile.AnnotationWatch: "true"}
	f.createAnnotatedDeployment("noshell", 1, withVolumes(podSpec(withMounts(noShell("c"), mount("v", "/etc/app"))), cmVolume("v", "app")), optIn)
	f.createAnnotatedDeployment("noshellenv", 1, podSpec(withEnv(noShell("c"), cmEnv("LEVEL", "app", "level", nil))), optIn)
	f.waitDeploymentSettled("noshell")
	f.waitDeploymentSettled("noshellenv")
	f.deployControllerFrom("controller-node-reader", func(base []string) []string {
		if !slices.Contains(base, "--reader=node") || !slices.Contains(base, "--reader-namespace=cmsync-readers") || !slices.Contains(base, "--reader-idle-timeout=1m") {
			t.Fatalf("deploy/controller-node-reader's args %v, want --reader=node, --reader-namespace=cmsync-readers and --reader-idle-timeout=1m", base)
		}
		var out []string
		for _, a := range base {
			switch a {
			case "--all-namespaces":
				a = "--namespace=" + f.ns
			case "--reader-idle-timeout=1m":
				a = "--reader-idle-timeout=" + idle.String()
			}
			out = append(out, a)
		}
		return append(out, "--reader-image="+imageBusybox, "--debounce=1s")
	})
	seen := f.watchReaderPods(readers)
	f.waitControllerEvent(f.leader(), "resumed", isResume)

	before, _ := f.deploymentPods("noshell")
	f.patchConfigMapData("app", map[string]string{"greeting": "v1"})
	var verified time.Time
	for name := range before {
		e := f.waitAnyControllerEvent("pod "+name+" refreshed", isResult(refresh.ActionAnnotate, "pod/"+name))
		if e.Outcome != refresh.OutcomeCurrent {
			t.Errorf("annotate pod/%s: %s (%s), want current: read by the node reader, shell or not", name, e.Outcome, e.Message)
		}
		if e.SinceChange != nil {
			t.Logf("pod %s verified current %s after the edit", name, *e.SinceChange)
		}
		if e.Time.After(verified) {
			verified = e.Time
		}
	}
	first := seen.names()
	if len(first) == 0 {
		t.Errorf("no reader pod in %s after the verification, want the leader's", readers)
	}
	if after, restarts := f.deploymentPods("noshell"); fmt.Sprint(after) != fmt.Sprint(before) || restarts != 0 {
		t.Errorf("pods of noshell: %v with %d restarts, want the same pods %v with 0", after, restarts, before)
	}

	t.Logf("idle past --reader-idle-timeout=%s: no reader pod is left", idle)
	f.poll("no reader pod left in "+readers+" once idle", idle+30*time.Second, func() (bool, error) {
		return len(f.readerPodsIn(readers)) == 0 && seen.allGone(), nil
	})
	for _, name := range first {
		p := seen.get(name)
		switch gone := p.gone.Sub(verified); {
		case p.phase != corev1.PodRunning:
			t.Errorf("reader pod %s was %s before it was gone, want deleted while running (by the idle timeout, not ended by its deadline)", name, p.phase)
		case gone < idle-2*time.Second: // the last read ends a moment before its event
			t.Errorf("reader pod %s gone %s after the last verification, want no sooner than --reader-idle-timeout=%s", name, gone, idle)
		default:
			t.Logf("reader pod %s deleted %s after the last verification", name, gone.Round(time.Second))
		}
	}

	t.Log("an env edit after that is read on a new reader pod and restarts its consumer")
	f.patchConfigMapData("app", map[string]string{"level": "l1"})
	e := f.waitAnyControllerEvent("noshellenv restarted", isResult(refresh.ActionRestart, "deployment/noshellenv"))
	if e.Outcome != refresh.OutcomeCurrent {
		t.Errorf("restart deployment/noshellenv: %s (%s), want current", e.Outcome, e.Message)
	}
	if later := seen.names(); len(later) <= len(first) {
		t.Errorf("reader pods seen %v, the first %v: want a new one for the env edit", later, first)
	}

	t.Log("the controller removed: its reader pods are deleted with it")
	f.removeController()
	f.poll("no reader pod left in "+readers, time.Minute, func() (bool, error) {
		return len(f.readerPodsIn(readers)) == 0, nil
	})
}

// readerSelector selects the node reader pods of every run.
var readerSelector = labels.SelectorFromSet(labels.Set{nodereader.LabelManagedBy: nodereader.ManagedBy, nodereader.LabelComponent: nodereader.Component}).String()

// readerPodsIn lists the node reader pods in ns.
func (f *fx) readerPodsIn(ns string) []corev1.Pod {
	f.t.Helper()
	l, err := f.cs.CoreV1().Pods(ns).List(f.ctx, metav1.ListOptions{LabelSelector: readerSelector})
	if err != nil {
		f.t.Fatalf("listing the reader pods of %s: %v", ns, err)
	}
	return l.Items
}

// seenPod is a reader pod as readerPodsSeen saw it: its last phase, and
// when it was first seen gone.
type seenPod struct {
	phase corev1.PodPhase
	gone  time.Time
}

// readerPodsSeen records every reader pod of a namespace, listed every
// pollInterval until the test ends (a reader pod lives for seconds at
// least: none is missed).
type readerPodsSeen struct {
	mu    sync.Mutex
	pods  map[string]*seenPod
	order []string
}

func (f *fx) watchReaderPods(ns string) *readerPodsSeen {
	s := &readerPodsSeen{pods: map[string]*seenPod{}}
	done := make(chan struct{})
	stopped := make(chan struct{})
	f.t.Cleanup(func() { close(done); <-stopped })
	go func() {
		defer close(stopped)
		tick := time.NewTicker(pollInterval)
		defer tick.Stop()
		for {
			if l, err := f.cs.CoreV1().Pods(ns).List(f.ctx, metav1.ListOptions{LabelSelector: readerSelector}); err == nil {
				s.update(l.Items, time.Now())
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

func (s *readerPodsSeen) update(pods []corev1.Pod, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	listed := map[string]bool{}
	for _, p := range pods {
		listed[p.Name] = true
		if s.pods[p.Name] == nil {
			s.pods[p.Name] = &seenPod{}
			s.order = append(s.order, p.Name)
		}
		if p.DeletionTimestamp == nil {
			s.pods[p.Name].phase = p.Status.Phase
		} else if s.pods[p.Name].gone.IsZero() {
			s.pods[p.Name].gone = now
		}
	}
	for name, p := range s.pods {
		if !listed[name] && p.gone.IsZero() {
			p.gone = now
		}
	}
}

// names are the reader pods seen so far, in the order they appeared.
func (s *readerPodsSeen) names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.order)
}

// allGone tells whether every reader pod seen is gone.
func (s *readerPodsSeen) allGone() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.pods {
		if p.gone.IsZero() {
			return false
		}
	}
	return true
}

func (s *readerPodsSeen) get(name string) seenPod {
	s.mu.Lock()
	defer s.mu.Unlock()
	return *s.pods[name]
}

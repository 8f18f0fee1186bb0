//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/rbacaudit"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/nodereader"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/reconcile"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// readerFlags run the node reader in the test's namespace with the
// cluster's local busybox (nothing can be pulled here).
func (f *fx) readerFlags(extra ...string) []string {
	return append([]string{"--reader=node", "--reader-image=" + imageBusybox, "--reader-namespace=" + f.ns}, extra...)
}

// readerPods lists the node reader pods in the namespace (any run).
func (f *fx) readerPods() []corev1.Pod {
	f.t.Helper()
	sel := labels.SelectorFromSet(labels.Set{nodereader.LabelManagedBy: nodereader.ManagedBy, nodereader.LabelComponent: nodereader.Component}).String()
	l, err := f.cs.CoreV1().Pods(f.ns).List(f.ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		f.t.Fatalf("listing reader pods: %v", err)
	}
	return l.Items
}

// expectNoReaderPods fails when a reader pod is left after a command.
func (f *fx) expectNoReaderPods(after string) {
	f.t.Helper()
	if left := f.readerPods(); len(left) > 0 {
		var names []string
		for _, p := range left {
			names = append(names, p.Name+" ("+string(p.Status.Phase)+")")
		}
		f.t.Errorf("after %s: reader pods left: %s", after, strings.Join(names, ", "))
	}
}

// consumerSpec is a pod consuming ConfigMap cfg by volume, subPath and env.
func consumerSpec(c corev1.Container) corev1.PodSpec {
	c = withMounts(c, mount("cfg", "/etc/cfg"), subPathMount("cfg", "/etc/app.conf", "app.conf"))
	c = withEnv(c, cmEnv("A", "cfg", "a", nil))
	return withVolumes(podSpec(c), cmVolume("cfg", "cfg"))
}

func noShell(name string) corev1.Container {
	return corev1.Container{Name: name, Image: imageNoShell, ImagePullPolicy: corev1.PullNever}
}

// stateOf is the state of pod's use in mode.
func stateOf(t *testing.T, rep inspect.Report, pod string, mode inspect.Mode) inspect.Use {
	t.Helper()
	for _, it := range rep.Items {
		if it.Pod.Name == pod && it.Mode == mode {
			return it
		}
	}
	t.Fatalf("no %s use of pod %s in the report", mode, pod)
	return inspect.Use{}
}

func expectStates(t *testing.T, rep inspect.Report, pod string, want map[inspect.Mode][]inspect.State) {
	t.Helper()
	for mode, states := range want {
		it := stateOf(t, rep, pod, mode)
		ok := false
		for _, s := range states {
			ok = ok || it.State == s
		}
		if !ok {
			t.Errorf("%s %s: state %s (%s), want one of %v", pod, mode, it.State, it.StateReason, states)
		}
	}
}

// TestNodeReaderShellless: a container without a shell (the pause image)
// consuming one ConfigMap by volume, subPath and env is verified by the
// node reader before and after a change; refresh --reader=node makes the
// volume in-sync without a restart and leaves the env and subPath uses
// stale with a manual action. No reader pod outlives a command.
func TestNodeReaderShellless(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	f.createConfigMap(configMap("cfg", map[string]string{"a": "1", "app.conf": "x=1\n"}))
	f.createPod(pod("noshell", consumerSpec(noShell("c"))))
	f.waitPodReady("noshell")

	rep, ok := f.status(append([]string{"cfg", "--verify"}, f.readerFlags()...)...)
	if !ok {
		t.FailNow()
	}
	expectStates(t, rep, "noshell", map[inspect.Mode][]inspect.State{
		inspect.ModeVolume: {inspect.StateInSync}, inspect.ModeSubPath: {inspect.StateCurrent}, inspect.ModeEnv: {inspect.StateCurrent}})
	f.expectNoReaderPods("status --verify --reader=node")

	// the exec reader cannot read it: that is what the node reader is for
	rep, _ = f.status("cfg", "--verify")
	if it := stateOf(t, rep, "noshell", inspect.ModeVolume); it.State != inspect.StateUnverifiable {
		t.Errorf("exec reader on a shell-less container: %s, want unverifiable", it.State)
	}

	f.patchConfigMapData("cfg", map[string]string{"a": "2", "app.conf": "x=2\n"})
	rep, _ = f.status(append([]string{"cfg", "--verify"}, f.readerFlags()...)...)
	expectStates(t, rep, "noshell", map[inspect.Mode][]inspect.State{
		inspect.ModeVolume: {inspect.StatePending, inspect.StateInSync}, inspect.ModeSubPath: {inspect.StateStale}, inspect.ModeEnv: {inspect.StateStale}})
	f.expectNoReaderPods("status --verify --reader=node after the change")

	doc, errOut, code := f.refreshJSON(append([]string{"cfg", "--yes"}, f.readerFlags()...)...)
	if code != 3 {
		t.Fatalf("refresh exit %d, want 3 (env and subPath stay stale)\n%s", code, errOut)
	}
	f.expectNoReaderPods("refresh --reader=node")
	var annotated, manual int
	for _, r := range doc.Items {
		switch r.Action.Action {
		case refresh.ActionAnnotate:
			annotated++
			if r.Outcome != refresh.OutcomeCurrent {
				t.Errorf("annotate %s: outcome %s (%s), want current", r.Target, r.Outcome, r.Detail)
			}
		case refresh.ActionManual:
			manual++
			for _, c := range r.Consumers {
				if c.Mode != inspect.ModeEnv && c.Mode != inspect.ModeSubPath || c.State != inspect.StateStale {
					t.Errorf("manual consumer %s %s: state %s, want a stale env or subPath use", c.Mode, c.MountPath+c.Env, c.State)
				}
			}
		}
	}
	if annotated != 1 || manual == 0 {
		t.Errorf("actions: %s; want one annotate and manual for env and subPath", actionsOf(doc))
	}
	p := f.getPod("noshell")
	if _, restarts := containerID(p, "c"); restarts != 0 {
		t.Errorf("the container restarted %d times", restarts)
	}
	rep, _ = f.status(append([]string{"cfg", "--verify"}, f.readerFlags()...)...)
	expectStates(t, rep, "noshell", map[inspect.Mode][]inspect.State{
		inspect.ModeVolume: {inspect.StateInSync}, inspect.ModeSubPath: {inspect.StateStale}, inspect.ModeEnv: {inspect.StateStale}})
	f.expectNoReaderPods("the last status")
}

// TestNodeReaderSameAsExec: on pods with a shell, both readers give the
// same state, reason and cause for every use, before and after a change.
func TestNodeReaderSameAsExec(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	f.createConfigMap(configMap("cfg", map[string]string{"a": "1", "app.conf": "x=1\n"}))
	const n = 12
	for i := range n {
		c := busybox("c")
		spec := consumerSpec(c)
		spec.Containers[0].EnvFrom = []corev1.EnvFromSource{cmEnvFrom("cfg", "P_")}
		f.createPod(pod(fmt.Sprintf("p%02d", i), spec))
	}
	f.waitPodsReady(n)
	compare := func(when string) {
		t.Helper()
		byExec, ok1 := f.status("cfg", "--verify")
		byNode, ok2 := f.status(append([]string{"cfg", "--verify"}, f.readerFlags()...)...)
		if !ok1 || !ok2 {
			t.FailNow()
		}
		a, b := itemStates(byExec), itemStates(byNode)
		if len(a) != n*4 {
			t.Fatalf("%s: %d uses verified, want %d", when, len(a), n*4)
		}
		if strings.Join(a, "\n") != strings.Join(b, "\n") {
			t.Errorf("%s: the readers differ:\nexec:\n%s\nnode:\n%s", when, strings.Join(a, "\n"), strings.Join(b, "\n"))
		}
	}
	compare("before the change")
	f.patchConfigMapData("cfg", map[string]string{"a": "2", "app.conf": "x=2\n"})
	f.bumpPods()
	time.Sleep(settle)
	compare("after the change")
	f.expectNoReaderPods("the comparisons")
}

// TestEnvAsTheRuntimeSetIt: an entrypoint that changes a variable before
// it execs its program does not make the use stale. Both readers compare
// the environment the runtime configured (the exec reader's process gets
// it; the node reader reads the OCI spec in containerd's state directory,
// which this cluster moves away from the default), not the program's
// /proc/PID/environ: current before the edit, stale after it.
func TestEnvAsTheRuntimeSetIt(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	f.createConfigMap(configMap("cfg", map[string]string{"v": "1"}))
	c := busybox("c")
	c.Command = []string{"sh", "-c", `export V=changed-$V; exec sleep 1000000`}
	f.createPod(pod("wrapped", podSpec(withEnv(c, cmEnv("V", "cfg", "v", nil)))))
	f.waitPodReady("wrapped")
	both := func(when string, want inspect.State) {
		t.Helper()
		for _, reader := range [][]string{nil, f.readerFlags()} {
			rep, ok := f.status(append([]string{"cfg", "--verify"}, reader...)...)
			if !ok {
				t.FailNow()
			}
			if it := stateOf(t, rep, "wrapped", inspect.ModeEnv); it.State != want {
				t.Errorf("%s, reader %v: %s (%s), want %s", when, reader, it.State, it.StateReason, want)
			}
		}
	}
	both("before the edit", inspect.StateCurrent)
	f.patchConfigMapData("cfg", map[string]string{"v": "2"})
	both("after the edit", inspect.StateStale)
	f.expectNoReaderPods("the comparisons")
}

// itemStates is one sorted line per use: pod, mode, path, state, reason,
// cause, syncedAt.
func itemStates(rep inspect.Report) []string {
	var out []string
	for _, it := range rep.Items {
		path, synced := "", ""
		if it.Volume != nil {
			path = it.Volume.MountPath
		}
		if it.SyncedAt != nil {
			synced = it.SyncedAt.UTC().Format(time.RFC3339)
		}
		out = append(out, strings.Join([]string{it.Pod.Name, string(it.Mode), path, it.EnvName, it.EnvPrefix, string(it.State), it.StateReason, string(it.StateCause), synced}, " | "))
	}
	sort.Strings(out)
	return out
}

// TestNodeReaderCleanup: Ctrl-C deletes the run's reader; after SIGKILL the
// reader ends by its deadline and the next run deletes it; a reader of
// another run that is still live is never touched.
func TestNodeReaderCleanup(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	f.createConfigMap(configMap("cfg", map[string]string{"a": "1", "app.conf": "x=1\n"}))
	f.createPod(pod("noshell", consumerSpec(noShell("c"))))
	f.waitPodReady("noshell")
	// another run's live reader (same labels, another run id)
	live := nodereader.ReaderPod(f.ns, f.getPod("noshell").Spec.NodeName, imageBusybox, "live-other-run", 5*time.Minute)
	live.GenerateName, live.Name = "", "other-run-reader"
	live.Spec.Containers[0].ImagePullPolicy = corev1.PullNever
	if _, err := f.cs.CoreV1().Pods(f.ns).Create(f.ctx, live, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitPodReady(live.Name)
	// the security context the API server kept and the kubelet ran: AppArmor
	// unconfined and SELinux type spc_t (this node has neither: they must
	// not keep the pod from running), seccomp's default, two capabilities
	sc := f.getPod(live.Name).Spec.Containers[0].SecurityContext
	if sc == nil || sc.AppArmorProfile == nil || sc.AppArmorProfile.Type != corev1.AppArmorProfileTypeUnconfined ||
		sc.SELinuxOptions == nil || sc.SELinuxOptions.Type != "spc_t" || sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault ||
		fmt.Sprint(sc.Capabilities.Add) != "[SYS_PTRACE DAC_READ_SEARCH]" {
		t.Errorf("the running reader pod's security context %+v, want AppArmor Unconfined, SELinux spc_t, RuntimeDefault seccomp, SYS_PTRACE and DAC_READ_SEARCH", sc)
	}
	t.Cleanup(func() {
		_ = f.cs.CoreV1().Pods(f.ns).Delete(context.Background(), live.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))})
	})
	others := func() []string {
		var names []string
		for _, p := range f.readerPods() {
			if p.Name != live.Name {
				names = append(names, p.Name)
			}
		}
		return names
	}

	// Ctrl-C once the reader exists: the run deletes it on the way out
	f.killWhenReaderStarts(syscall.SIGINT, "10m")
	f.poll("the interrupted run's reader deleted", 20*time.Second, func() (bool, error) { return len(others()) == 0, nil })

	// SIGKILL: the reader stays until its deadline (5 s) ends it
	f.killWhenReaderStarts(syscall.SIGKILL, "5s")
	if len(others()) != 1 {
		t.Fatalf("after SIGKILL: reader pods %v, want the killed run's one", others())
	}
	f.poll("the killed run's reader ended by its deadline", 90*time.Second, func() (bool, error) {
		for _, p := range f.readerPods() {
			if p.Name != live.Name && p.Status.Phase == corev1.PodFailed {
				return true, nil
			}
		}
		return false, nil
	})
	if _, ok := f.status(append([]string{"cfg", "--verify"}, f.readerFlags()...)...); !ok {
		t.FailNow()
	}
	if left := others(); len(left) != 0 {
		t.Errorf("the next run left reader pods: %v", left)
	}
	if p := f.getPod(live.Name); p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		t.Errorf("another run's live reader was touched: phase %s, deleting %v", p.Status.Phase, p.DeletionTimestamp != nil)
	}
}

// killWhenReaderStarts runs status --verify --reader=node and sends sig to
// it as soon as its reader pod exists, then waits for it to exit.
func (f *fx) killWhenReaderStarts(sig syscall.Signal, lifetime string) {
	f.t.Helper()
	if pluginBuildErr != nil {
		f.t.Fatalf("plugin not built: %v", pluginBuildErr)
	}
	args := append([]string{"cmsync", "status", "-n", f.ns, "cfg", "--verify"}, f.readerFlags("--reader-lifetime="+lifetime)...)
	cmd := exec.Command("kubectl", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	before := map[string]bool{}
	for _, p := range f.readerPods() {
		before[p.Name] = true
	}
	if err := cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		started := false
		for _, p := range f.readerPods() {
			started = started || !before[p.Name]
		}
		if started {
			break
		}
		select {
		case err := <-exited:
			f.t.Fatalf("the run ended (%v) before its reader pod was seen: %s", err, stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			f.t.Fatalf("no reader pod within 60s: %s", stderr.String())
		}
	}
	// kubectl execs the plugin in its own process: the signal reaches it
	if err := cmd.Process.Signal(sig); err != nil {
		f.t.Fatalf("signalling the run: %v", err)
	}
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		f.t.Fatalf("the run did not exit within 30s of %s", sig)
	}
	f.t.Logf("run ended by %s; stderr: %s", sig, stderr.String())
}

// TestNodeReaderImagePullError: a reader image the node cannot pull makes
// the node's uses unverifiable with the kubelet's reason, within the start
// timeout, and leaves no reader pod; a reader namespace that does not
// exist makes them unverifiable with the commands that create it.
func TestNodeReaderImagePullError(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	f.createConfigMap(configMap("cfg", map[string]string{"a": "1", "app.conf": "x=1\n"}))
	f.createPod(pod("noshell", consumerSpec(noShell("c"))))
	f.waitPodReady("noshell")
	// localhost is the registry: the pull fails at once on loopback
	args := []string{"cfg", "--verify", "--reader=node", "--reader-image=localhost/cmsync-no-such-image:0", "--reader-namespace=" + f.ns}
	rep, ok := f.status(args...)
	if !ok {
		t.FailNow()
	}
	it := stateOf(t, rep, "noshell", inspect.ModeVolume)
	if it.State != inspect.StateUnverifiable || !strings.Contains(it.StateReason, "cannot start") || !strings.Contains(it.StateReason, "--reader-image") {
		t.Errorf("state %s (%s), want unverifiable naming the pull failure and --reader-image", it.State, it.StateReason)
	}
	f.expectNoReaderPods("a reader whose image cannot be pulled")

	missing := f.ns + "-readers"
	rep, ok = f.status("cfg", "--verify", "--reader=node", "--reader-image="+imageBusybox, "--reader-namespace="+missing)
	if !ok {
		t.FailNow()
	}
	it = stateOf(t, rep, "noshell", inspect.ModeVolume)
	for _, want := range []string{"namespace " + missing + ", where the node reader pods run, does not exist", "`kubectl create namespace " + missing + "`",
		"`kubectl label namespace " + missing + " pod-security.kubernetes.io/enforce=privileged`"} {
		if it.State != inspect.StateUnverifiable || !strings.Contains(it.StateReason, want) {
			t.Errorf("a missing reader namespace: state %s (%s), want unverifiable saying %q", it.State, it.StateReason, want)
		}
	}
}

// TestNodeReaderAutoFallsBackToExec: with --reader=auto in a namespace whose
// Pod Security level forbids the reader pod (hostPID), the consumers are
// read by exec instead: verified, with no unverifiable use and no reader
// pod left.
func TestNodeReaderAutoFallsBackToExec(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	patch := []byte(`{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"baseline"}}}`)
	if _, err := f.cs.CoreV1().Namespaces().Patch(f.ctx, f.ns, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("labelling the namespace baseline: %v", err)
	}
	f.createConfigMap(configMap("cfg", map[string]string{"a": "1", "app.conf": "x=1\n"}))
	f.createPod(pod("web", consumerSpec(busybox("c"))))
	f.waitPodReady("web")
	// the node reader alone is refused here
	rep, ok := f.status(append([]string{"cfg", "--verify"}, f.readerFlags()...)...)
	if !ok {
		t.FailNow()
	}
	if it := stateOf(t, rep, "web", inspect.ModeVolume); it.State != inspect.StateUnverifiable || !strings.Contains(it.StateReason, "Pod Security") {
		t.Fatalf("--reader=node in a baseline namespace: state %s (%s), want unverifiable naming Pod Security", it.State, it.StateReason)
	}
	rep, ok = f.status("cfg", "--verify", "--reader=auto", "--reader-image="+imageBusybox, "--reader-namespace="+f.ns)
	if !ok {
		t.FailNow()
	}
	expectStates(t, rep, "web", map[inspect.Mode][]inspect.State{
		inspect.ModeVolume: {inspect.StateInSync}, inspect.ModeSubPath: {inspect.StateCurrent}, inspect.ModeEnv: {inspect.StateCurrent}})
	f.expectNoReaderPods("--reader=auto in a baseline namespace")
}

// TestNodeReaderOneExecPerReaderPod: the node reader makes every read of a
// node through one exec into its reader pod, kept open (a session): a
// watch verifies an edit, which opens the session, then a second edit,
// whose reads (before and after its refresh) add no exec to the API
// server's audit log; each edit's pods are verified current with that
// edit's value.
func TestNodeReaderOneExecPerReaderPod(t *testing.T) {
	t.Parallel()
	logPath := auditLogPath(t)
	f := newFx(t)
	f.createConfigMap(configMap("cfg", map[string]string{"a": "1"}))
	const n = 3
	for i := range n {
		f.createPod(pod(fmt.Sprintf("p%d", i), withVolumes(podSpec(withMounts(busybox("c"), mount("cfg", "/etc/cfg"))), cmVolume("cfg", "cfg"))))
	}
	f.waitPodsReady(n)
	kc := f.saKubeconfig("sessions", nil, "admin")
	t0 := time.Now()
	// execs counts the exec requests of the watch's ServiceAccount (the
	// probe's, refused by the kubelet while the reader starts, among them:
	// the API server logs every proxied upgrade as 101)
	execs := func() int {
		k := 0
		for _, e := range auditEvents(t, logPath, rbacaudit.Username(f.ns, "sessions"), t0) {
			if r := e.ObjectRef; r != nil && r.Resource == "pods" && r.Subresource == "exec" {
				if !strings.HasPrefix(r.Name, "cmsync-reader-") {
					t.Errorf("an exec into %s/%s, not a reader pod", r.Namespace, r.Name)
				}
				k++
			}
		}
		return k
	}
	w := f.startWatch(append([]string{"--kubeconfig", kc, "--debounce", "1s"}, f.readerFlags()...)...)
	current := func(e reconcile.Event) bool {
		return e.Kind == reconcile.EventResult && e.Action != nil && e.Action.Action == refresh.ActionAnnotate && e.Outcome == refresh.OutcomeCurrent
	}
	var after []int
	for round, v := range []string{"2", "3"} {
		f.patchConfigMapData("cfg", map[string]string{"a": v})
		f.poll("edit "+v+": every pod verified current", podReadyTimeout, func() (bool, error) {
			return w.count(current) >= n*(round+1), nil
		})
		for i := range n {
			if got, err := f.readFile(fmt.Sprintf("p%d", i), "c", "/etc/cfg/a"); err != nil || got != v {
				t.Fatalf("p%d was verified current with a=%q in the container (%v), want %q", i, got, err, v)
			}
		}
		after = append(after, execs())
	}
	w.stop()
	if after[0] == 0 {
		t.Fatal("no exec into a reader pod in the audit log")
	}
	if after[1] != after[0] {
		t.Errorf("the second edit's reads made %d execs, want none: they go through the session the first opened", after[1]-after[0])
	}
	f.expectNoReaderPods("the watch")
}

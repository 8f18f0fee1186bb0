//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// hostileText is what a hostile spec puts in every name and path the API
// allows: command substitutions, backticks, a command separator, quotes,
// spaces, a tab and non-ASCII, each of which would create canary if any of
// it reached a shell as script text.
func hostileText(canary string) string {
	return "$(touch " + canary + ") `touch " + canary + "`; touch " + canary + " ; 'q\" ü✓\tx"
}

// framingImitation is content that imitates the observation script's
// records (pkg/inspect/observe.go: NUL-terminated fields, a final Z record
// with the nonce): a file that holds it must be read as bytes, never as
// records.
const framingImitation = "\x00Q\x00\x00P\x000\x00K\x00f\x00F\x00\x00-rw-r--r--\x001\x00C\x00x" +
	"cmsync-00000000000000000000000000000000\x00Z\x00cmsync-00000000000000000000000000000000\x00"

// checkCanary fails the test when canary exists on the host (the kubelet,
// the runtime and the plugin run here) or in the container.
func (f *fx) checkCanary(canary, pod, container, after string) {
	f.t.Helper()
	if _, err := os.Stat(canary); !errors.Is(err, os.ErrNotExist) {
		f.t.Errorf("after %s: %s exists on the host (or cannot be checked: %v): something ran a hostile name as shell text", after, canary, err)
	}
	if pod == "" {
		return
	}
	out, errOut, err := f.execIn(pod, container, "ls", "-la", "/tmp")
	if err != nil {
		f.t.Errorf("after %s: listing /tmp in %s/%s: %v (%s)", after, pod, container, err, errOut)
	} else if strings.Contains(out, canary[len("/tmp/"):]) {
		f.t.Errorf("after %s: %s exists in container %s/%s: the observation ran a hostile name as shell text\n%s", after, canary, pod, container, out)
	}
}

// TestHostileSpecs: mount paths, subPaths and item paths with shell
// metacharacters, quotes, spaces, tabs, newlines and non-ASCII; keys that
// look like flags; file content and binaryData that imitate the exec output
// framing; a ConfigMap near the 1 MiB limit; 1,000 keys; a container without
// a shell. status --verify, diff and refresh --wait must report every use
// with the right state, and nothing may ever run a name as shell text.
// (Volume names and keys cannot carry any of this: the API allows DNS labels
// and [-._a-zA-Z0-9] only.)
func TestHostileSpecs(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	canary := "/tmp/cmsync-canary-" + f.ns
	h := hostileText(canary)
	f.checkCanary(canary, "", "", "start")

	hostileData := func(v string) map[string]string {
		return map[string]string{"-n": framingImitation + v, ".hidden": h + "\n" + v, "--help": v}
	}
	cm := configMap("hostile", hostileData("v1"))
	cm.BinaryData = map[string][]byte{"bin": append([]byte(framingImitation), 0xff, 0xfe, 0, 1, 2, 'v', '1')}
	f.createConfigMap(cm)
	big := strings.Repeat("0123456789abcdef", (1<<20-8<<10)/16) // 1 MiB less 8 KiB: under the API's limit
	f.createConfigMap(configMap("big", map[string]string{"big": big + "v1"}))
	many := map[string]string{}
	for i := range 1000 {
		many[fmt.Sprintf("k%04d", i)] = fmt.Sprintf("v1-%d", i)
	}
	f.createConfigMap(configMap("many", many))

	mountPath := "/etc/h\n" + h
	itemPath := "d\n" + h + "/f"
	itemsMount := "/etc/i " + h
	subPathMount := "/etc/s\n" + h
	appC := withEnv(withMounts(busybox(app),
		mount("whole", mountPath),
		mount("items", itemsMount),
		corev1.VolumeMount{Name: "items", MountPath: subPathMount, SubPath: itemPath},
		mount("big", "/etc/big"),
		mount("many", "/etc/many")),
		cmEnv("HOSTILE", "hostile", ".hidden", nil))
	spec := withVolumes(podSpec(appC),
		cmVolume("whole", "hostile"),
		cmItemsVolume("items", "hostile", corev1.KeyToPath{Key: "-n", Path: itemPath}, corev1.KeyToPath{Key: ".hidden", Path: "-e"},
			corev1.KeyToPath{Key: "bin", Path: h + "/bin"}),
		cmVolume("big", "big"), cmVolume("many", "many"))
	f.createDeployment("hostile", 1, spec, false)
	noShell := corev1.Container{Name: "noshell", Image: imageNoShell, ImagePullPolicy: corev1.PullNever,
		VolumeMounts: []corev1.VolumeMount{mount("whole", mountPath), mount("items", itemsMount)}}
	f.createPod(pod("noshell", withVolumes(podSpec(noShell), cmVolume("whole", "hostile"),
		cmItemsVolume("items", "hostile", corev1.KeyToPath{Key: "-n", Path: itemPath}))))
	f.waitPodsReady(2)
	f.waitDeploymentSettled("hostile")
	appPod := func() string {
		l, err := f.cs.CoreV1().Pods(f.ns).List(f.ctx, metav1.ListOptions{LabelSelector: "app=hostile"})
		if err != nil || len(l.Items) == 0 {
			t.Fatalf("the hostile Deployment has no pod: %v", err)
		}
		for _, p := range l.Items {
			if p.DeletionTimestamp == nil {
				return p.Name
			}
		}
		t.Fatal("every pod of the hostile Deployment is terminating")
		return ""
	}
	// the kubelet wrote the hostile names as they are
	p := appPod()
	f.expectFile(p, "app", mountPath+"/.hidden", h+"\nv1")
	f.expectFile(p, "app", subPathMount, framingImitation+"v1")
	f.expectFile(p, "app", itemsMount+"/-e", h+"\nv1")
	f.expectEnv(p, "app", "HOSTILE", h+"\nv1")

	uses := func(state ...inspect.State) []wantState {
		return []wantState{
			{want{object: "hostile", pod: "hostile-*", container: "app", mode: inspect.ModeVolume, volume: "whole"}, state, ""},
			{want{object: "hostile", pod: "hostile-*", container: "app", mode: inspect.ModeItems, volume: "items"}, state, ""},
			{want{object: "big", pod: "hostile-*", container: "app", mode: inspect.ModeVolume}, state, ""},
			{want{object: "many", pod: "hostile-*", container: "app", mode: inspect.ModeVolume}, state, ""},
		}
	}
	restartUses := func(state ...inspect.State) []wantState {
		return []wantState{
			{want{object: "hostile", pod: "hostile-*", container: "app", mode: inspect.ModeSubPath, volume: "items"}, state, ""},
			{want{object: "hostile", pod: "hostile-*", container: "app", mode: inspect.ModeEnv}, state, ""},
		}
	}
	noShellUses := []wantState{
		{want{object: "hostile", pod: "noshell", container: "noshell", mode: inspect.ModeVolume, volume: "whole"}, []inspect.State{inspect.StateUnverifiable}, "no shell"},
		{want{object: "hostile", pod: "noshell", container: "noshell", mode: inspect.ModeItems, volume: "items"}, []inspect.State{inspect.StateUnverifiable}, "no shell"},
	}
	check := func(after string, st []inspect.State, rst []inspect.State, args ...string) {
		t.Helper()
		rep, ok := f.status(append([]string{"--verify"}, args...)...)
		if !ok {
			return
		}
		f.checkStates(rep, append(append(uses(st...), restartUses(rst...)...), noShellUses...))
		// every use is reported, its mount path as the API has it
		for _, w := range []want{
			{object: "hostile", pod: "hostile-*", container: "app", mode: inspect.ModeVolume, volume: "whole"},
			{object: "hostile", pod: "noshell", container: "noshell", mode: inspect.ModeVolume, volume: "whole"},
		} {
			if got := w.in(rep); len(got) == 1 && (got[0].Volume == nil || got[0].Volume.MountPath != mountPath) {
				t.Errorf("%s: %s: volume %+v, want mountPath %q", after, w, got[0].Volume, mountPath)
			}
		}
		f.checkCanary(canary, appPod(), "app", after)
	}
	check("status --verify", []inspect.State{inspect.StateInSync}, []inspect.State{inspect.StateCurrent})
	// files over --max-bytes are compared by size and sha256
	check("status --verify --max-bytes 100", []inspect.State{inspect.StateInSync}, []inspect.State{inspect.StateCurrent}, "--max-bytes", "100")
	for _, obj := range []string{"hostile", "big", "many"} {
		if out, errOut, code := f.pluginRun("diff", "-n", f.ns, "-l", "app=hostile", obj); code != 0 {
			t.Errorf("diff %s: exit %d, want 0 (no differences)\n%s\n%s", obj, code, out, errOut)
		}
	}
	// the table keeps one line per use: a newline of a mount path is escaped
	out, _, code := f.pluginRun("status", "-n", f.ns, "-l", "app=hostile", "--verify", "--no-headers")
	if code != 0 || strings.Count(out, "\n") != 6 || !strings.Contains(out, `/etc/h\n$(touch`) {
		t.Errorf("status table: exit %d, want 0 and 6 lines (one per use) with the newline of the mount path escaped\n%s", code, out)
	}

	// change everything; diff sees it; refresh --wait makes every use current
	f.mergePatchConfigMap("hostile", map[string]any{"data": hostileData("v2"),
		"binaryData": map[string][]byte{"bin": append([]byte(framingImitation), 0xff, 0xfe, 0, 1, 2, 'v', '2')}})
	f.patchConfigMapData("big", map[string]string{"big": big + "v2"})
	f.patchConfigMapData("many", map[string]string{"k0999": "v2"})
	if out, errOut, code := f.pluginRun("diff", "-n", f.ns, "-l", "app=hostile", "hostile"); code != 3 ||
		!strings.Contains(out, `$(touch`) || strings.Contains(out, "\x00") {
		t.Errorf("diff after the change: exit %d, want 3 naming the hostile paths escaped\n%s\n%s", code, out, errOut)
	}
	check("status --verify after the change", []inspect.State{inspect.StatePending, inspect.StateInSync}, []inspect.State{inspect.StateStale})
	doc, errOut, code := f.refreshJSON("-l", "app=hostile", "--yes", "--wait", "--timeout", "3m")
	if code != 0 {
		t.Errorf("refresh --wait: exit %d, want 0 (%s)\n%s", code, actionsOf(doc), errOut)
	}
	for _, r := range doc.Items {
		if r.Outcome != refresh.OutcomeCurrent && !alreadyInSync(r) {
			t.Errorf("refresh --wait: %s %s: outcome %q (%s%s), want current", r.Action.Action, r.Target, r.Outcome, r.Detail, r.Error)
		}
	}
	f.waitDeploymentSettled("hostile")
	f.waitPodsReady(2) // the replaced pod is gone
	p = appPod()
	f.expectFile(p, "app", mountPath+"/.hidden", h+"\nv2")
	f.expectEnv(p, "app", "HOSTILE", h+"\nv2")
	check("refresh --wait", []inspect.State{inspect.StateInSync}, []inspect.State{inspect.StateCurrent})
	for _, obj := range []string{"hostile", "big", "many"} {
		if out, errOut, code := f.pluginRun("diff", "-n", f.ns, "-l", "app=hostile", obj); code != 0 {
			t.Errorf("diff %s after refresh --wait: exit %d, want 0\n%s\n%s", obj, code, out, errOut)
		}
	}
	// a second run restarts nothing (a volume-only pod may be annotated
	// again without a prior exec: harmless, and verified current)
	doc, errOut, code = f.refreshJSON("-l", "app=hostile", "--yes", "--wait", "--timeout", "1m")
	if code != 0 {
		t.Errorf("second refresh --wait: exit %d, want 0\n%s", code, errOut)
	}
	for _, r := range doc.Items {
		if r.Action.Action != refresh.ActionNone && !(r.Action.Action == refresh.ActionAnnotate && r.Outcome == refresh.OutcomeCurrent) {
			t.Errorf("second refresh: %s %s (%s), want none, or an annotate verified current", r.Action.Action, r.Target, r.Outcome)
		}
	}
	f.checkCanary(canary, appPod(), "app", "every command")
}

// slowShPod is a pod whose container finds, first on its PATH, an `sh` that
// runs hook (a shell command line of the test, not of the cluster), sleeps,
// then runs the real sh: the runtime resolves the exec's argv[0] with the
// container's PATH, so the test knows when the observation exec is under way
// and can act while it lasts.
func slowShPod(name, hook string) *corev1.Pod {
	script := "#!/bin/sh\n" + hook + "\nsleep 20\nexec /bin/sh \"$@\"\n"
	c := busybox(app)
	c.Command = []string{"/bin/sh", "-c", `printf '%s' "$SLOW_SH" >/slow/sh && chmod +x /slow/sh && trap 'exit 0' TERM && while :; do sleep 1; done`}
	c = withEnv(c, corev1.EnvVar{Name: "SLOW_SH", Value: script},
		corev1.EnvVar{Name: "PATH", Value: "/slow:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"})
	c = withMounts(c, mount("cfg", "/etc/cfg"), mount("slow", "/slow"))
	return pod(name, withVolumes(podSpec(c), cmVolume("cfg", "cfg"),
		corev1.Volume{Name: "slow", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}))
}

// runPlugin starts `kubectl cmsync ARGS`; the channel gets its exit code and
// output (bounded by the test's context and a 2-minute limit).
func (f *fx) runPlugin(args ...string) <-chan string {
	done := make(chan string, 1)
	go func() {
		ctx, cancel := context.WithTimeout(f.ctx, 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "kubectl", append([]string{"cmsync"}, args...)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if ctx.Err() != nil {
			done <- fmt.Sprintf("HUNG: killed after 2m\nstdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
			return
		}
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			code = -1
		}
		done <- fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}()
	return done
}

// TestVerifyWhileContainerExitsOrPodIsDeleted: the container exits while
// the observation exec runs in it, and a pod is deleted while it runs. Each
// is reported unverifiable (not a hang, not a crash, not a wrong state), and
// the run ends by itself.
func TestVerifyWhileContainerExitsOrPodIsDeleted(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	f.createConfigMap(configMap("cfg", map[string]string{"k": "v1"}))
	f.createPod(slowShPod("exits", "kill 1"))
	f.createPod(slowShPod("deleted", ": >/slow/started"))
	f.waitPodsReady(2)

	// the container exits during the exec (its ls kills PID 1)
	res := <-f.runPlugin("status", "-n", f.ns, "-l", "app=exits", "--verify", "--exec-timeout", "1m", "-o", "json")
	t.Logf("status --verify, container exits:\n%s", res)
	if !strings.HasPrefix(res, "exit 0\n") || !strings.Contains(res, `"state": "unverifiable"`) || !strings.Contains(res, `"stateCause": "not-running"`) {
		t.Errorf("status --verify while the container exits: want exit 0 and state unverifiable, cause not-running\n%s", res)
	}

	// the pod is deleted during the exec
	run := f.runPlugin("status", "-n", f.ns, "-l", "app=deleted", "--verify", "--exec-timeout", "1m", "-o", "json")
	f.poll("the observation exec to be under way", time.Minute, func() (bool, error) {
		_, _, err := f.execIn("deleted", app, "cat", "/slow/started")
		return err == nil, nil
	})
	if err := f.cs.CoreV1().Pods(f.ns).Delete(f.ctx, "deleted", metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))}); err != nil {
		t.Fatalf("deleting the pod: %v", err)
	}
	res = <-run
	t.Logf("status --verify, pod deleted:\n%s", res)
	if !strings.HasPrefix(res, "exit 0\n") || !strings.Contains(res, `"state": "unverifiable"`) || !strings.Contains(res, `"stateCause": "not-running"`) ||
		!strings.Contains(res, "the pod was deleted") {
		t.Errorf("status --verify while the pod is deleted: want exit 0 and state unverifiable, cause not-running, saying the pod was deleted\n%s", res)
	}
	// refresh --wait over a consumer whose container keeps exiting ends by itself with a summary
	res = <-f.runPlugin("refresh", "-n", f.ns, "-l", "app=exits", "--wait", "--timeout", "45s", "--exec-timeout", "1m", "-o", "json")
	t.Logf("refresh --wait, container exits:\n%s", res)
	if strings.HasPrefix(res, "HUNG") || !strings.Contains(res, `"outcome"`) {
		t.Errorf("refresh --wait while the container exits: want a per-consumer result\n%s", res)
	}
	// its container is never read successfully: never current (a terminated
	// container's n/a was once taken for current)
	if strings.Contains(res, `"outcome": "current"`) || strings.Contains(res, `"currentAfter"`) {
		t.Errorf("refresh --wait while the container exits: reported current without a successful read\n%s", res)
	}
}

// alreadyInSync tells a result that needed nothing: the kubelet's periodic
// sync can land between the edit and the refresh's read (any moment of its
// 60-90 s), and then a pod's volume uses are in-sync before any action.
func alreadyInSync(r refresh.Result) bool {
	if r.Action.Action != refresh.ActionNone || r.Outcome != refresh.OutcomeNotApplied {
		return false
	}
	for _, c := range r.Consumers {
		if c.State != inspect.StateInSync && c.State != inspect.StateCurrent {
			return false
		}
	}
	return len(r.Consumers) > 0
}

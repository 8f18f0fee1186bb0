//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// Bounds of the waits. They are generous on purpose: they bound a failure,
// they are not measurements (an annotation bump normally propagates in < 1 s).
const (
	podReadyTimeout   = 240 * time.Second
	propagationWait   = 60 * time.Second  // hot-update after an annotation bump
	kubeletRetryWait  = 150 * time.Second // a container or mount the kubelet retries with back-off
	settle            = 2 * time.Second   // after the kubelet provably re-synced the pod
	pollInterval      = 250 * time.Millisecond
	refreshAnnotation = "kubectl-cmsync.io/refreshed-at"
	e2eLabel          = "kubectl-cmsync.io/e2e"
)

// fx is the per-test fixture: a fresh namespace, deleted at the end.
type fx struct {
	t   *testing.T
	ctx context.Context
	cs  *kubernetes.Clientset
	ns  string
	// moved maps the namespaces deploy/'s manifests name to the test's own
	// (movedNS)
	moved map[string]string
}

func newFx(t *testing.T) *fx {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	cs := clientset
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "cmsync-e2e-", Labels: map[string]string{e2eLabel: "true"},
	}}, metav1.CreateOptions{})
	if err != nil {
		cancel()
		t.Fatalf("creating namespace: %v", err)
	}
	f := &fx{t: t, ctx: ctx, cs: cs, ns: ns.Name}
	t.Logf("namespace %s", f.ns)
	t.Cleanup(func() {
		defer cancel()
		if t.Failed() {
			f.dump()
		}
		if os.Getenv("E2E_KEEP_NAMESPACES") == "1" {
			t.Logf("E2E_KEEP_NAMESPACES=1: keeping namespace %s", f.ns)
			return
		}
		dctx, dcancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer dcancel()
		bg := metav1.DeletePropagationBackground
		if err := cs.CoreV1().Namespaces().Delete(dctx, f.ns, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting namespace %s: %v", f.ns, err)
		}
	})
	// the default ServiceAccount must exist before pods that mount its token can be created
	f.poll("default ServiceAccount", 60*time.Second, func() (bool, error) {
		_, err := cs.CoreV1().ServiceAccounts(f.ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	return f
}

// dump logs the pods and events of the namespace (on failure).
func (f *fx) dump() {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pods, err := f.cs.CoreV1().Pods(f.ns).List(ctx, metav1.ListOptions{})
	if err == nil {
		for _, p := range pods.Items {
			var cs []string
			for _, s := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), append(p.Status.ContainerStatuses, p.Status.EphemeralContainerStatuses...)...) {
				st := "?"
				switch {
				case s.State.Running != nil:
					st = "running"
				case s.State.Waiting != nil:
					st = "waiting:" + s.State.Waiting.Reason + " " + s.State.Waiting.Message
				case s.State.Terminated != nil:
					st = fmt.Sprintf("terminated:%s(%d)", s.State.Terminated.Reason, s.State.Terminated.ExitCode)
				}
				cs = append(cs, fmt.Sprintf("%s=%s restarts=%d", s.Name, st, s.RestartCount))
			}
			f.t.Logf("dump: pod %s phase=%s containers: %s", p.Name, p.Status.Phase, strings.Join(cs, "; "))
		}
	}
	evs, err := f.cs.CoreV1().Events(f.ns).List(ctx, metav1.ListOptions{})
	if err == nil {
		for _, e := range evs.Items {
			f.t.Logf("dump: event %s %s/%s %s: %s", e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
}

func (f *fx) poll(what string, timeout time.Duration, cond func() (bool, error)) {
	f.t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(f.ctx, pollInterval, timeout, true, func(context.Context) (bool, error) {
		ok, err := cond()
		if err != nil {
			last = err
			return false, nil
		}
		return ok, nil
	})
	if err != nil {
		f.t.Fatalf("timed out after %v waiting for %s (last error: %v)", timeout, what, last)
	}
}

// ---- objects ----

func (f *fx) createConfigMap(cm *corev1.ConfigMap) {
	f.t.Helper()
	cm.Namespace = f.ns
	if _, err := f.cs.CoreV1().ConfigMaps(f.ns).Create(f.ctx, cm, metav1.CreateOptions{}); err != nil {
		f.t.Fatalf("creating ConfigMap %s: %v", cm.Name, err)
	}
}

func (f *fx) createSecret(s *corev1.Secret) {
	f.t.Helper()
	s.Namespace = f.ns
	if _, err := f.cs.CoreV1().Secrets(f.ns).Create(f.ctx, s, metav1.CreateOptions{}); err != nil {
		f.t.Fatalf("creating Secret %s: %v", s.Name, err)
	}
}

// patchConfigMapData merges data keys into a ConfigMap (a JSON merge patch).
func (f *fx) patchConfigMapData(name string, data map[string]string) {
	f.t.Helper()
	f.mergePatchConfigMap(name, map[string]any{"data": data})
}

func (f *fx) mergePatchConfigMap(name string, patch map[string]any) {
	f.t.Helper()
	b, _ := json.Marshal(patch)
	if _, err := f.cs.CoreV1().ConfigMaps(f.ns).Patch(f.ctx, name, types.MergePatchType, b, metav1.PatchOptions{}); err != nil {
		f.t.Fatalf("patching ConfigMap %s: %v", name, err)
	}
}

func (f *fx) patchSecretData(name string, stringData map[string]string) {
	f.t.Helper()
	b, _ := json.Marshal(map[string]any{"stringData": stringData})
	if _, err := f.cs.CoreV1().Secrets(f.ns).Patch(f.ctx, name, types.MergePatchType, b, metav1.PatchOptions{}); err != nil {
		f.t.Fatalf("patching Secret %s: %v", name, err)
	}
}

func (f *fx) createPod(p *corev1.Pod) *corev1.Pod {
	f.t.Helper()
	p.Namespace = f.ns
	out, err := f.cs.CoreV1().Pods(f.ns).Create(f.ctx, p, metav1.CreateOptions{})
	if err != nil {
		f.t.Fatalf("creating pod %s: %v", p.Name, err)
	}
	return out
}

func (f *fx) getPod(name string) *corev1.Pod {
	f.t.Helper()
	p, err := f.cs.CoreV1().Pods(f.ns).Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatalf("getting pod %s: %v", name, err)
	}
	return p
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func (f *fx) waitPodReady(name string) *corev1.Pod {
	f.t.Helper()
	var pod *corev1.Pod
	f.poll("pod "+name+" Ready", podReadyTimeout, func() (bool, error) {
		p, err := f.cs.CoreV1().Pods(f.ns).Get(f.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pod = p
		return podReady(p), nil
	})
	return pod
}

// waitPodsReady waits until n pods of the namespace exist and are all Ready,
// and returns them.
func (f *fx) waitPodsReady(n int) []corev1.Pod {
	f.t.Helper()
	var pods []corev1.Pod
	f.poll(fmt.Sprintf("%d Ready pods", n), podReadyTimeout, func() (bool, error) {
		l, err := f.cs.CoreV1().Pods(f.ns).List(f.ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		ready := 0
		for i := range l.Items {
			if l.Items[i].DeletionTimestamp == nil && podReady(&l.Items[i]) {
				ready++
			}
		}
		pods = l.Items
		return ready == n && len(l.Items) == n, nil
	})
	return pods
}

// waitContainerWaiting waits until the container waits with the given reason
// (e.g. CreateContainerConfigError).
func (f *fx) waitContainerWaiting(pod, container, reason string) {
	f.t.Helper()
	f.poll(fmt.Sprintf("container %s/%s waiting with %s", pod, container, reason), podReadyTimeout, func() (bool, error) {
		p, err := f.cs.CoreV1().Pods(f.ns).Get(f.ctx, pod, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, s := range p.Status.ContainerStatuses {
			if s.Name == container && s.State.Waiting != nil && s.State.Waiting.Reason == reason {
				return true, nil
			}
		}
		return false, nil
	})
}

// waitFailedMount waits until the kubelet has reported a FailedMount event
// of the pod for each named volume (or, with no volume named, for any).
func (f *fx) waitFailedMount(pod string, volumes ...string) {
	f.t.Helper()
	f.poll(fmt.Sprintf("FailedMount events of pod %s for volumes %v", pod, volumes), kubeletRetryWait, func() (bool, error) {
		evs, err := f.cs.CoreV1().Events(f.ns).List(f.ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		seen := 0
		for _, e := range evs.Items {
			if e.InvolvedObject.Name != pod || e.Reason != "FailedMount" {
				continue
			}
			seen++
			for i, v := range volumes {
				if strings.Contains(e.Message, fmt.Sprintf("volume %q", v)) {
					volumes = append(volumes[:i:i], volumes[i+1:]...)
					break
				}
			}
		}
		return seen > 0 && len(volumes) == 0, nil
	})
}

// bumpPods sets the refresh annotation on every pod of the namespace (a JSON
// merge patch, as `kubectl cmsync refresh` does): the kubelet re-syncs them.
func (f *fx) bumpPods() {
	f.t.Helper()
	pods, err := f.cs.CoreV1().Pods(f.ns).List(f.ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatalf("listing pods: %v", err)
	}
	for _, p := range pods.Items {
		f.bumpPod(p.Name)
	}
}

func (f *fx) bumpPod(name string) {
	f.t.Helper()
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		refreshAnnotation: time.Now().UTC().Format(time.RFC3339Nano)}}})
	if _, err := f.cs.CoreV1().Pods(f.ns).Patch(f.ctx, name, types.MergePatchType, b, metav1.PatchOptions{}); err != nil {
		f.t.Fatalf("annotating pod %s: %v", name, err)
	}
}

// ---- exec: argv only, nothing is ever interpolated into a shell string ----

// execIn runs argv in a container and returns its stdout and stderr.
func (f *fx) execIn(pod, container string, argv ...string) (string, string, error) {
	req := f.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(f.ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: argv, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ex, err := remotecommand.NewSPDYExecutor(restConfig, "POST", req.URL())
	if err != nil {
		return "", "", err
	}
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(f.ctx, 30*time.Second)
	defer cancel()
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})
	return stdout.String(), stderr.String(), err
}

func (f *fx) mustExec(pod, container string, argv ...string) string {
	f.t.Helper()
	out, errOut, err := f.execIn(pod, container, argv...)
	if err != nil {
		f.t.Fatalf("exec %s/%s %q: %v (stderr %q)", pod, container, argv, err, errOut)
	}
	return out
}

// readFile returns the content of a file in the container.
func (f *fx) readFile(pod, container, path string) (string, error) {
	out, errOut, err := f.execIn(pod, container, "cat", path)
	if err != nil {
		return "", fmt.Errorf("cat %s: %v (stderr %q)", path, err, errOut)
	}
	return out, nil
}

// waitFile waits (bounded) until the file holds want: what a hot-updating
// volume must do after an annotation bump.
func (f *fx) waitFile(pod, container, path, want string) {
	f.t.Helper()
	var got string
	err := wait.PollUntilContextTimeout(f.ctx, pollInterval, propagationWait, true, func(context.Context) (bool, error) {
		s, err := f.readFile(pod, container, path)
		if err == nil {
			got = s
		}
		return err == nil && s == want, nil
	})
	if err != nil {
		f.t.Errorf("pod %s container %s: %s is %q, want %q within %v of the change and annotation bump", pod, container, path, got, want, propagationWait)
	}
}

// expectFile checks the file holds want now.
func (f *fx) expectFile(pod, container, path, want string) {
	f.t.Helper()
	got, err := f.readFile(pod, container, path)
	if err != nil {
		f.t.Errorf("pod %s container %s: %v", pod, container, err)
		return
	}
	if got != want {
		f.t.Errorf("pod %s container %s: %s is %q, want %q", pod, container, path, got, want)
	}
}

// listDir returns the names in a directory (ls -A, one per line).
func (f *fx) listDir(pod, container, dir string) []string {
	f.t.Helper()
	out := f.mustExec(pod, container, "ls", "-A", dir)
	return strings.Fields(out)
}

// environ reads the environment the container was created with, from its
// PID 1 (no shell involved: a shell would drop names with '-' or '.').
func (f *fx) environ(pod, container string) map[string]string {
	f.t.Helper()
	out := f.mustExec(pod, container, "cat", "/proc/1/environ")
	env := map[string]string{}
	for _, kv := range strings.Split(out, "\x00") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env
}

func (f *fx) expectEnv(pod, container, name, want string) {
	f.t.Helper()
	env := f.environ(pod, container)
	got, ok := env[name]
	if !ok {
		f.t.Errorf("pod %s container %s: $%s is unset, want %q", pod, container, name, want)
	} else if got != want {
		f.t.Errorf("pod %s container %s: $%s is %q, want %q", pod, container, name, got, want)
	}
}

func (f *fx) expectEnvUnset(pod, container, name string) {
	f.t.Helper()
	if v, ok := f.environ(pod, container)[name]; ok {
		f.t.Errorf("pod %s container %s: $%s is %q, want it unset", pod, container, name, v)
	}
}

// ---- the plugin ----

// status runs `kubectl cmsync status -n NS -o json [args]` the way users do
// and decodes the report. Failures are reported with Errorf (so that the
// kubelet-side checks of the test still run) and return ok=false.
func (f *fx) status(args ...string) (inspect.Report, bool) {
	f.t.Helper()
	var rep inspect.Report
	if pluginBuildErr != nil {
		f.t.Errorf("status: plugin not built: %v", pluginBuildErr)
		return rep, false
	}
	argv := append([]string{"cmsync", "status", "-n", f.ns, "-o", "json"}, args...)
	ctx, cancel := context.WithTimeout(f.ctx, 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kubectl", argv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		f.t.Errorf("kubectl %s: %v\nstderr: %s\nstdout: %s", strings.Join(argv, " "), err, stderr.String(), stdout.String())
		return rep, false
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		f.t.Errorf("kubectl %s: output is not a report: %v\n%s", strings.Join(argv, " "), err, stdout.String())
		return rep, false
	}
	if rep.APIVersion != inspect.APIVersion || rep.Kind != inspect.KindStatusReport {
		f.t.Errorf("kubectl %s: apiVersion/kind %q/%q, want %q/%q", strings.Join(argv, " "), rep.APIVersion, rep.Kind, inspect.APIVersion, inspect.KindStatusReport)
	}
	return rep, true
}

// want selects the report items of one use and states what they must say.
// Empty selector fields match anything.
type want struct {
	// selector
	kind      string // ConfigMap (default) or Secret
	object    string
	pod       string // pod name, or a prefix ending in '*' (workload pods)
	container string // "" also matches items without a container (mode unmounted)
	mode      inspect.Mode
	volume    string // volume name
	// expectations
	verdict      inspect.Verdict
	optional     *bool
	exists       *bool
	immutable    *bool
	ctype        inspect.ContainerType
	workloadKind string
	workloadName string
	count        int // how many items must match (default 1)
}

func ptr[T any](v T) *T { return &v }

func (w want) String() string {
	k := w.kind
	if k == "" {
		k = inspect.KindConfigMap
	}
	s := fmt.Sprintf("%s/%s", k, w.object)
	if w.pod != "" {
		s += " pod=" + w.pod
	}
	if w.container != "" {
		s += " container=" + w.container
	}
	if w.mode != "" {
		s += " mode=" + string(w.mode)
	}
	if w.volume != "" {
		s += " volume=" + w.volume
	}
	return s
}

func (w want) matches(it inspect.Use) bool {
	k := w.kind
	if k == "" {
		k = inspect.KindConfigMap
	}
	if it.Object.Kind != k || it.Object.Name != w.object {
		return false
	}
	if w.pod != "" {
		if p, ok := strings.CutSuffix(w.pod, "*"); ok {
			if !strings.HasPrefix(it.Pod.Name, p) {
				return false
			}
		} else if it.Pod.Name != w.pod {
			return false
		}
	}
	if w.container != "" && it.ContainerName() != w.container {
		return false
	}
	if w.mode != "" && it.Mode != w.mode {
		return false
	}
	if w.volume != "" && (it.Volume == nil || it.Volume.Name != w.volume) {
		return false
	}
	return true
}

// in returns the report items the want selects.
func (w want) in(rep inspect.Report) []inspect.Use {
	var got []inspect.Use
	for _, it := range rep.Items {
		if w.matches(it) {
			got = append(got, it)
		}
	}
	return got
}

// checkReport asserts every want against the report; on a mismatch it logs
// the whole report.
func (f *fx) checkReport(rep inspect.Report, wants []want) {
	f.t.Helper()
	bad := false
	for _, w := range wants {
		got := w.in(rep)
		n := w.count
		if n == 0 {
			n = 1
		}
		if len(got) != n {
			f.t.Errorf("status: %d item(s) for %s, want %d", len(got), w, n)
			bad = true
			continue
		}
		for _, it := range got {
			var errs []string
			if w.verdict != "" && it.Verdict != w.verdict {
				errs = append(errs, fmt.Sprintf("verdict %q, want %q (reason %q)", it.Verdict, w.verdict, it.Reason))
			}
			if w.optional != nil && it.Optional != *w.optional {
				errs = append(errs, fmt.Sprintf("optional %v, want %v", it.Optional, *w.optional))
			}
			if w.exists != nil && it.Object.Exists != *w.exists {
				errs = append(errs, fmt.Sprintf("object.exists %v, want %v", it.Object.Exists, *w.exists))
			}
			if w.immutable != nil && it.Object.Immutable != *w.immutable {
				errs = append(errs, fmt.Sprintf("object.immutable %v, want %v", it.Object.Immutable, *w.immutable))
			}
			if w.ctype != "" && (it.Container == nil || it.Container.Type != w.ctype) {
				errs = append(errs, fmt.Sprintf("container %+v, want type %q", it.Container, w.ctype))
			}
			if w.workloadKind != "" && it.Workload.Kind != w.workloadKind {
				errs = append(errs, fmt.Sprintf("workload.kind %q, want %q", it.Workload.Kind, w.workloadKind))
			}
			if w.workloadName != "" && it.Workload.Name != w.workloadName {
				errs = append(errs, fmt.Sprintf("workload.name %q, want %q", it.Workload.Name, w.workloadName))
			}
			if it.Verdict == inspect.VerdictHotUpdate && it.Delay == nil {
				errs = append(errs, "hot-update without delay")
			}
			if len(errs) > 0 {
				f.t.Errorf("status: %s (pod %s): %s", w, it.Pod.Name, strings.Join(errs, "; "))
				bad = true
			}
		}
	}
	if bad {
		b, _ := json.MarshalIndent(rep, "", "  ")
		f.t.Logf("the report was:\n%s", b)
	}
}

// waitDeploymentSettled waits until the Deployment controller has observed the
// current generation and reports every replica updated and available: only
// then does the Deployment's resourceVersion stop moving (status updates).
func (f *fx) waitDeploymentSettled(name string) {
	f.t.Helper()
	f.poll("deployment "+name+" settled", podReadyTimeout, func() (bool, error) {
		d, err := f.cs.AppsV1().Deployments(f.ns).Get(f.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		s := d.Status
		return s.ObservedGeneration == d.Generation && s.Replicas == want && s.UpdatedReplicas == want &&
			s.AvailableReplicas == want && s.ReadyReplicas == want, nil
	})
}

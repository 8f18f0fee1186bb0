//go:build e2e

package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// pluginRun runs `kubectl cmsync ARGS` with stdin not a terminal and returns
// stdout, stderr and the exit code.
func (f *fx) pluginRun(args ...string) (string, string, int) {
	f.t.Helper()
	return runPlugin(f, true, args...)
}

// refreshDoc is the RefreshPlan / RefreshResult document.
type refreshDoc struct {
	APIVersion string           `json:"apiVersion"`
	Kind       string           `json:"kind"`
	Items      []refresh.Result `json:"items"`
}

func (f *fx) refreshJSON(args ...string) (refreshDoc, string, int) {
	f.t.Helper()
	out, errOut, code := f.pluginRun(append([]string{"refresh", "-n", f.ns, "-o", "json"}, args...)...)
	var doc refreshDoc
	if code == 0 || code == 3 || code == 4 {
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			f.t.Fatalf("refresh output is not a document: %v\n%s", err, out)
		}
	}
	return doc, errOut, code
}

func actionsOf(doc refreshDoc) string {
	var s []string
	for _, r := range doc.Items {
		s = append(s, string(r.Action.Action)+" "+r.Target.String())
	}
	return strings.Join(s, "; ")
}

func (f *fx) createDeployment(name string, replicas int32, spec corev1.PodSpec, paused bool) {
	f.t.Helper()
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns}, Spec: appsv1.DeploymentSpec{
		Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels}, Paused: paused,
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
	}}
	if _, err := f.cs.AppsV1().Deployments(f.ns).Create(f.ctx, d, metav1.CreateOptions{}); err != nil {
		f.t.Fatalf("creating deployment %s: %v", name, err)
	}
}

func (f *fx) getDeployment(name string) *appsv1.Deployment {
	f.t.Helper()
	d, err := f.cs.AppsV1().Deployments(f.ns).Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatalf("getting deployment %s: %v", name, err)
	}
	return d
}

func containerID(p *corev1.Pod, name string) (string, int32) {
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == name {
			return s.ContainerID, s.RestartCount
		}
	}
	return "", -1
}

// A volume-only pod is annotated at once, without a prior exec (its state
// is not observed before: the plan says so), then verified current by its
// own read after the patch, and nothing restarts. A second run annotates it
// again (harmless: the kubelet does not rewrite identical payloads) and
// reports it honestly, restarting nothing.
func TestRefreshAnnotatesPendingVolume(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	f.createConfigMap(configMap("app", map[string]string{"greeting": "v0"}))
	f.createPod(pod("web", withVolumes(podSpec(withMounts(busybox("c"), mount("cfg", "/etc/app"))), cmVolume("cfg", "app"))))
	before := f.waitPodReady("web")
	id0, rc0 := containerID(before, "c")
	f.patchConfigMapData("app", map[string]string{"greeting": "v1"})
	plan, _, code := f.refreshJSON("app", "--dry-run=client")
	if code != 0 || actionsOf(plan) != "annotate pod/web" || !strings.Contains(plan.Items[0].Reason, "state not observed") || plan.Items[0].Consumers[0].State != "" {
		t.Fatalf("dry run: exit %d plan %q, want annotate pod/web saying the state was not observed (and no state claimed): %+v", code, actionsOf(plan), plan.Items)
	}
	doc, _, code := f.refreshJSON("app", "--timeout", "60s")
	if code != 0 || actionsOf(doc) != "annotate pod/web" {
		t.Fatalf("refresh exit %d plan %q, want 0 and annotate pod/web", code, actionsOf(doc))
	}
	if doc.Kind != "RefreshResult" || doc.Items[0].Outcome != refresh.OutcomeCurrent || doc.Items[0].CurrentAfter == nil {
		t.Fatalf("want a verified current annotate result, got %+v", doc.Items[0])
	}
	f.expectFile("web", "c", "/etc/app/greeting", "v1")
	t.Logf("annotate: current after %s", doc.Items[0].CurrentAfter.Duration)
	out, _, code := f.pluginRun("refresh", "-n", f.ns, "app")
	if code != 0 || !strings.Contains(out, "annotated (state not observed before)") {
		t.Errorf("table: exit %d, want 0 and the row saying the state was not observed before\n%s", code, out)
	}
	after := f.getPod("web")
	if ann := after.Annotations[refresh.RefreshedAtAnnotation]; ann == "" {
		t.Errorf("annotation %s not set", refresh.RefreshedAtAnnotation)
	}
	if id, rc := containerID(after, "c"); id != id0 || rc != rc0 {
		t.Errorf("container restarted: id %s -> %s, restarts %d -> %d", id0, id, rc0, rc)
	}
	// a second run re-annotates (harmless), is current at once, restarts
	// nothing, and the kubelet does not rewrite the identical payload
	target0, _, err := f.execIn("web", "c", "readlink", "/etc/app/..data")
	if err != nil {
		t.Fatalf("readlink ..data: %v", err)
	}
	doc, _, code = f.refreshJSON("app")
	if code != 0 || actionsOf(doc) != "annotate pod/web" || doc.Items[0].Outcome != refresh.OutcomeCurrent {
		t.Errorf("second run: exit %d plan %q, want 0 and annotate pod/web current", code, actionsOf(doc))
	}
	if id, rc := containerID(f.getPod("web"), "c"); id != id0 || rc != rc0 {
		t.Errorf("second run restarted the container: id %s -> %s, restarts %d -> %d", id0, id, rc0, rc)
	}
	// past the kubelet's answer to an annotation: it rewrote pending volumes
	// 0.2-0.6 s after one (hack/bench/propagation.sh, n=12; docs/performance.md)
	time.Sleep(2 * time.Second)
	if target, _, err := f.execIn("web", "c", "readlink", "/etc/app/..data"); err != nil || target != target0 {
		t.Errorf("the annotation of a current volume rewrote it: ..data %q -> %q (%v)", target0, target, err)
	}
}

// A pod with an env use is observed before the plan (its action depends
// on its state) while a volume-only pod beside it is not: the env pod,
// current, is left alone (none, no restart; were it annotated, its row
// would say what was seen), the volume-only pod is annotated "state not
// observed before".
func TestRefreshVerifiesOnlyPodsWhoseActionDependsOnIt(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	f.createConfigMap(configMap("app", map[string]string{"greeting": "v0"}))
	f.createPod(pod("vol", withVolumes(podSpec(withMounts(busybox("c"), mount("cfg", "/etc/app"))), cmVolume("cfg", "app"))))
	mixed := withEnv(withMounts(busybox("c"), mount("cfg", "/etc/app")), corev1.EnvVar{Name: "GREETING", ValueFrom: &corev1.EnvVarSource{
		ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}, Key: "greeting"}}})
	f.createPod(pod("mixed", withVolumes(podSpec(mixed), cmVolume("cfg", "app"))))
	f.waitPodsReady(2)
	id0, rc0 := containerID(f.getPod("mixed"), "c")
	doc, errOut, code := f.refreshJSON("app", "--timeout", "60s")
	if code != 0 {
		t.Fatalf("refresh: exit %d: %s", code, errOut)
	}
	got := map[string]refresh.Result{}
	for _, r := range doc.Items {
		got[string(r.Action.Action)+" "+r.Target.String()] = r
	}
	vol, ok := got["annotate pod/vol"]
	if !ok || vol.Outcome != refresh.OutcomeCurrent || vol.Before() != "state not observed before" {
		t.Errorf("volume-only pod: %+v, want annotate, current, state not observed before (plan %s)", vol, actionsOf(doc))
	}
	none, ok := got["none pod/mixed"]
	if !ok {
		t.Errorf("pod mixed: want none, its uses being current (plan %s)", actionsOf(doc))
	}
	for _, c := range none.Consumers {
		if c.State != "current" && c.State != "in-sync" {
			t.Errorf("pod mixed %s use: state %q, want the observed state (current or in-sync)", c.Mode, c.State)
		}
	}
	if a, ok := got["annotate pod/mixed"]; ok && a.Before() == "state not observed before" {
		t.Errorf("pod mixed was observed first: its annotate must say what was seen, got %q", a.Before())
	}
	if _, ok := got["restart pod/mixed"]; ok {
		t.Errorf("a current env use was restarted")
	}
	if id, rc := containerID(f.getPod("mixed"), "c"); id != id0 || rc != rc0 {
		t.Errorf("pod mixed restarted: id %s -> %s, restarts %d -> %d", id0, id, rc0, rc)
	}
}

// An env consumer in a Deployment: refused without --yes (no terminal), then
// rolled out and verified; two ConfigMaps give one restart.
func TestRefreshRestartsStaleEnvOnce(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	f.createConfigMap(configMap("one", map[string]string{"A": "a0"}))
	f.createConfigMap(configMap("two", map[string]string{"B": "b0"}))
	c := busybox("c")
	c.EnvFrom = []corev1.EnvFromSource{cmEnvFrom("one", ""), cmEnvFrom("two", "")}
	f.createDeployment("api", 2, podSpec(c), false)
	f.waitPodsReady(2)
	f.patchConfigMapData("one", map[string]string{"A": "a1"})
	f.patchConfigMapData("two", map[string]string{"B": "b1"})

	doc, errOut, code := f.refreshJSON("one", "two")
	if code != 4 || !strings.Contains(errOut, "add --yes") {
		t.Fatalf("without --yes and a terminal: exit %d (%s), want 4 with a hint", code, errOut)
	}
	if got := actionsOf(doc); got != "restart deployment/api" {
		t.Fatalf("refused plan %q, want exactly one restart", got)
	}
	if ann := f.getDeployment("api").Spec.Template.Annotations[refresh.RestartedAtAnnotation]; ann != "" {
		t.Fatalf("a refused plan restarted the deployment (%s)", ann)
	}

	doc, _, code = f.refreshJSON("one", "two", "--yes", "--timeout", "120s")
	if code != 0 || actionsOf(doc) != "restart deployment/api" || doc.Items[0].Outcome != refresh.OutcomeCurrent {
		t.Fatalf("exit %d plan %q outcome %+v, want one verified restart", code, actionsOf(doc), doc.Items)
	}
	pods := f.waitPodsReady(2)
	for _, p := range pods {
		f.expectEnv(p.Name, "c", "A", "a1")
		f.expectEnv(p.Name, "c", "B", "b1")
	}
	doc, _, code = f.refreshJSON("one", "two")
	if code != 0 || strings.Contains(actionsOf(doc), "restart") {
		t.Errorf("second run: exit %d plan %q, want nothing to restart", code, actionsOf(doc))
	}
}

// A bare pod with a stale env is reported as manual and left alone; a
// paused Deployment is refused with the hint to resume it.
func TestRefreshManualCases(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	f.createConfigMap(configMap("cfg", map[string]string{"K": "v0"}))
	f.createPod(pod("solo", podSpec(withEnv(busybox("c"), cmEnv("K", "cfg", "K", nil)))))
	c := busybox("c")
	c.Env = []corev1.EnvVar{cmEnv("K", "cfg", "K", nil)}
	f.createDeployment("held", 1, podSpec(c), false)
	f.waitPodsReady(2)
	// paused after its first rollout: a Deployment created paused has no pods
	if _, err := f.cs.AppsV1().Deployments(f.ns).Patch(f.ctx, "held", types.MergePatchType, []byte(`{"spec":{"paused":true}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("pausing deployment held: %v", err)
	}
	solo0 := f.getPod("solo")
	f.patchConfigMapData("cfg", map[string]string{"K": "v1"})

	doc, errOut, code := f.refreshJSON("cfg", "--yes", "--timeout", "30s")
	if code != 3 {
		t.Fatalf("exit %d, want 3 (consumers left not current): %s", code, errOut)
	}
	got := actionsOf(doc)
	if got != "manual deployment/held; manual pod/solo" {
		t.Fatalf("plan %q, want manual for the paused deployment and the bare pod", got)
	}
	for _, r := range doc.Items {
		switch r.Target.Name {
		case "held":
			if !strings.Contains(r.Reason, "paused") || !strings.Contains(r.Reason, "kubectl rollout resume deployment/held") {
				t.Errorf("paused deployment reason %q", r.Reason)
			}
		case "solo":
			if !strings.Contains(r.Reason, "bare pod") {
				t.Errorf("bare pod reason %q", r.Reason)
			}
		}
	}
	solo := f.getPod("solo")
	if solo.UID != solo0.UID || solo.ResourceVersion != solo0.ResourceVersion {
		t.Errorf("the bare pod was touched: uid %s -> %s, rv %s -> %s", solo0.UID, solo.UID, solo0.ResourceVersion, solo.ResourceVersion)
	}
	if ann := f.getDeployment("held").Spec.Template.Annotations[refresh.RestartedAtAnnotation]; ann != "" {
		t.Errorf("the paused deployment was restarted (%s)", ann)
	}
	f.expectEnv("solo", "c", "K", "v0")
}

// Dry runs (client and server) change no object.
func TestRefreshDryRunChangesNothing(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	f.createConfigMap(configMap("cfg", map[string]string{"K": "v0"}))
	c := withMounts(busybox("c"), mount("cfg", "/etc/cfg"))
	c.Env = []corev1.EnvVar{cmEnv("K", "cfg", "K", nil)}
	f.createDeployment("web", 1, withVolumes(podSpec(c), cmVolume("cfg", "cfg")), false)
	pods := f.waitPodsReady(1)
	// the controller's last status update must not be taken for a change
	f.waitDeploymentSettled("web")
	f.patchConfigMapData("cfg", map[string]string{"K": "v1"})
	rv := func() (string, string) {
		return f.getDeployment("web").ResourceVersion, f.getPod(pods[0].Name).ResourceVersion
	}
	d0, p0 := rv()
	for _, mode := range []string{"client", "server"} {
		doc, errOut, code := f.refreshJSON("cfg", "--dry-run="+mode)
		if code != 0 {
			t.Fatalf("--dry-run=%s: exit %d: %s", mode, code, errOut)
		}
		if !strings.Contains(actionsOf(doc), "restart deployment/web") {
			t.Errorf("--dry-run=%s plan %q, want a restart of deployment/web", mode, actionsOf(doc))
		}
		if d, p := rv(); d != d0 || p != p0 {
			t.Errorf("--dry-run=%s changed objects: deployment rv %s -> %s, pod rv %s -> %s", mode, d0, d, p0, p)
		}
	}
}

// A --wait that cannot be satisfied ends with a clear timeout and exit 3:
// the restarted pods read the new value, fail their readiness probe, and the
// rollout never finishes.
func TestRefreshWaitTimeout(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	f.createConfigMap(configMap("cfg", map[string]string{"K": "v0"}))
	c := busybox("c")
	c.Env = []corev1.EnvVar{cmEnv("K", "cfg", "K", nil)}
	c.ReadinessProbe = &corev1.Probe{PeriodSeconds: 1, ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{
		Command: []string{"sh", "-c", `test "$K" = v0`}}}}
	f.createDeployment("stuck", 1, podSpec(c), false)
	f.waitPodsReady(1)
	f.patchConfigMapData("cfg", map[string]string{"K": "v1"})
	start := time.Now()
	doc, errOut, code := f.refreshJSON("cfg", "--yes", "--timeout", "10s")
	if code != 3 {
		t.Fatalf("exit %d, want 3: %s", code, errOut)
	}
	if len(doc.Items) != 1 || doc.Items[0].Action.Action != refresh.ActionRestart || doc.Items[0].Outcome != refresh.OutcomeTimeout {
		t.Fatalf("want one restart that timed out, got %+v", doc.Items)
	}
	if !strings.Contains(doc.Items[0].Detail, "rollout") || !strings.Contains(errOut, "deployment/stuck: timed out") {
		t.Errorf("the timeout must say what is not current: detail %q, stderr %q", doc.Items[0].Detail, errOut)
	}
	if time.Since(start) > 90*time.Second {
		t.Errorf("--timeout 10s took %s", time.Since(start))
	}
}

// A container without a shell cannot be verified: the annotation is sent,
// and the result says so at once instead of waiting for the timeout.
func TestRefreshUnverifiable(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	f.createConfigMap(configMap("cfg", map[string]string{"K": "v0"}))
	c := corev1.Container{Name: "c", Image: imageNoShell, ImagePullPolicy: corev1.PullNever, VolumeMounts: []corev1.VolumeMount{mount("cfg", "/etc/cfg")}}
	f.createPod(pod("mute", withVolumes(podSpec(c), cmVolume("cfg", "cfg"))))
	f.waitPodReady("mute")
	f.patchConfigMapData("cfg", map[string]string{"K": "v1"})
	start := time.Now()
	doc, errOut, code := f.refreshJSON("cfg", "--timeout", "120s")
	if code != 3 {
		t.Fatalf("exit %d, want 3: %s", code, errOut)
	}
	if len(doc.Items) != 1 || doc.Items[0].Action.Action != refresh.ActionAnnotate || doc.Items[0].Outcome != refresh.OutcomeUnverifiable {
		t.Fatalf("want one annotate, unverifiable, got %+v", doc.Items)
	}
	if !strings.Contains(doc.Items[0].Detail, "no shell") {
		t.Errorf("detail %q must name the reason", doc.Items[0].Detail)
	}
	if f.getPod("mute").Annotations[refresh.RefreshedAtAnnotation] == "" {
		t.Errorf("the pod was not annotated")
	}
	if time.Since(start) > 60*time.Second {
		t.Errorf("an unverifiable consumer must not wait out --timeout 120s (took %s)", time.Since(start))
	}
}

// Without exec permission a volume-only pod is still annotated (no exec is
// needed before acting), but the wait cannot read it: the result is
// unverifiable (exec-forbidden, at once), exit 3, never current.
func TestRefreshWithoutExecIsUnverifiable(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	f.createConfigMap(configMap("cfg", map[string]string{"K": "v0"}))
	f.createPod(pod("web", withVolumes(podSpec(withMounts(busybox("c"), mount("cfg", "/etc/cfg"))), cmVolume("cfg", "cfg"))))
	f.waitPodReady("web")
	kc := f.saKubeconfig("noexec", []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods", "configmaps"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"patch"}},
	}, "")
	f.patchConfigMapData("cfg", map[string]string{"K": "v1"})
	doc, errOut, code := f.refreshJSON("--kubeconfig", kc, "cfg", "--timeout", "60s")
	if code != 3 {
		t.Fatalf("exit %d, want 3 (annotated but not proven current): %s", code, errOut)
	}
	if len(doc.Items) != 1 || doc.Items[0].Action.Action != refresh.ActionAnnotate || doc.Items[0].Outcome != refresh.OutcomeUnverifiable || doc.Items[0].CurrentAfter != nil {
		t.Fatalf("want one annotate, unverifiable, got %+v", doc.Items)
	}
	if !strings.Contains(doc.Items[0].Detail, "forbidden") {
		t.Errorf("detail %q must say exec is forbidden", doc.Items[0].Detail)
	}
	if f.getPod("web").Annotations[refresh.RefreshedAtAnnotation] == "" {
		t.Errorf("the pod was not annotated")
	}
}

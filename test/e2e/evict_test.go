//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// readyCount counts the Ready pods of the namespace that are not
// terminating.
func (f *fx) readyCount() (int, error) {
	l, err := f.cs.CoreV1().Pods(f.ns).List(f.ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	n := 0
	for i := range l.Items {
		if l.Items[i].DeletionTimestamp == nil && podReady(&l.Items[i]) {
			n++
		}
	}
	return n, nil
}

// --restart-via=evict on a Deployment of 3 with a PodDisruptionBudget of
// minAvailable 2 and a stale env use: the pods are evicted one at a time
// through the Eviction API, the Ready count never drops below 2 (sampled
// every ~200 ms while it runs), the Deployment's spec and template are
// never written (only the controller's status), and every consumer ends
// current. The client dry run names the pods in order and changes nothing;
// the server dry run sends the evictions with dryRun=All.
func TestRefreshEvictHonoursPDBWithoutDrift(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	f.createConfigMap(configMap("app", map[string]string{"LEVEL": "v0"}))
	f.createDeployment("web", 3, podSpec(withEnv(busybox("c"), cmEnv("LEVEL", "app", "LEVEL", nil))), false)
	minAvailable := intstr.FromInt32(2)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: f.ns}, Spec: policyv1.PodDisruptionBudgetSpec{
		MinAvailable: &minAvailable, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	if _, err := f.cs.PolicyV1().PodDisruptionBudgets(f.ns).Create(f.ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the PodDisruptionBudget: %v", err)
	}
	before := f.waitPodsReady(3)
	f.poll("the PodDisruptionBudget allows 1 disruption", podReadyTimeout, func() (bool, error) {
		p, err := f.cs.PolicyV1().PodDisruptionBudgets(f.ns).Get(f.ctx, "web", metav1.GetOptions{})
		return err == nil && p.Status.CurrentHealthy == 3 && p.Status.DisruptionsAllowed == 1, err
	})
	f.patchConfigMapData("app", map[string]string{"LEVEL": "v1"})
	dep0 := f.getDeployment("web")
	tmpl0, _ := json.Marshal(dep0.Spec.Template)
	oldUIDs := map[string]bool{}
	for _, p := range before {
		oldUIDs[string(p.UID)] = true
		f.expectEnv(p.Name, "c", "LEVEL", "v0")
	}

	// the plan: one evict action, every pod, in order; nothing changes
	doc, _, code := f.refreshJSON("app", "--restart-via=evict", "--dry-run=client")
	if code != 0 || actionsOf(doc) != "evict deployment/web" || len(doc.Items[0].Pods) != 3 || !strings.Contains(doc.Items[0].Reason, "evicts pods in this order: ") {
		t.Fatalf("client dry run: exit %d plan %q %+v, want one evict of 3 pods in order", code, actionsOf(doc), doc.Items)
	}
	doc, _, code = f.refreshJSON("app", "--restart-via=evict", "--dry-run=server")
	if code != 0 || actionsOf(doc) != "evict deployment/web" || doc.Items[0].Outcome != refresh.OutcomeDryRun || len(doc.Items[0].Evicted) != 3 {
		t.Fatalf("server dry run: exit %d %+v, want 3 dry-run evictions", code, doc.Items)
	}
	if n, err := f.readyCount(); err != nil || n != 3 {
		t.Fatalf("after the dry runs %d Ready pods (%v), want the 3 pods untouched", n, err)
	}

	// sample the Ready pods while the real run runs
	var mu sync.Mutex
	minReady, samples := 3, 0
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			n, err := f.readyCount()
			if err != nil {
				continue // a restart of the API server by another test: the next sample counts
			}
			mu.Lock()
			samples++
			if n < minReady {
				minReady = n
			}
			mu.Unlock()
		}
	}()
	start := time.Now()
	doc, errOut, code := f.refreshJSON("app", "--restart-via=evict", "--yes", "--wait", "--timeout", "240s")
	close(stop)
	wg.Wait()
	t.Logf("evict run took %s; Ready pods sampled %d times, minimum %d", time.Since(start).Round(100*time.Millisecond), samples, minReady)
	if code != 0 {
		t.Fatalf("refresh --restart-via=evict: exit %d, want 0", code)
	}
	r := doc.Items
	if actionsOf(doc) != "evict deployment/web" || r[0].Outcome != refresh.OutcomeCurrent || len(r[0].Evicted) != 3 || len(r[0].Replacements) != 3 || r[0].CurrentAfter == nil {
		t.Fatalf("result %+v, want one evict of 3 pods, 3 replacements, verified current", r)
	}
	if !strings.Contains(errOut, "evicting pod "+f.ns+"/") {
		t.Errorf("stderr does not report the evictions:\n%s", errOut)
	}
	if samples < 5 || minReady < 2 {
		t.Errorf("Ready pods fell to %d (of %d samples), want never fewer than 2", minReady, samples)
	}

	// no drift: spec and template never written; only the controller's status
	dep := f.getDeployment("web")
	tmpl, _ := json.Marshal(dep.Spec.Template)
	if string(tmpl) != string(tmpl0) || dep.Generation != dep0.Generation || dep.Spec.Template.Annotations[refresh.RestartedAtAnnotation] != "" {
		t.Errorf("the Deployment's template changed (generation %d -> %d):\n%s\n->\n%s", dep0.Generation, dep.Generation, tmpl0, tmpl)
	}
	for _, mf := range dep.ManagedFields {
		if mf.Manager == "kubectl-cmsync" || (mf.Time != nil && !mf.Time.Time.Before(start.Truncate(time.Second)) && mf.Subresource != "status") {
			t.Errorf("the Deployment was written during the run by %s (%s, subresource %q)", mf.Manager, mf.Operation, mf.Subresource)
		}
	}
	t.Logf("Deployment resourceVersion %s -> %s (status written by the controller: %v)", dep0.ResourceVersion, dep.ResourceVersion, dep.ResourceVersion != dep0.ResourceVersion)

	// every consumer current: new pods, new value
	pods := f.waitPodsReady(3)
	for _, p := range pods {
		if oldUIDs[string(p.UID)] {
			t.Errorf("pod %s was not replaced", p.Name)
		}
		f.expectEnv(p.Name, "c", "LEVEL", "v1")
	}
	doc, _, code = f.refreshJSON("app", "--restart-via=evict")
	if code != 0 || strings.Contains(actionsOf(doc), "evict") {
		t.Errorf("second run: exit %d plan %q, want nothing to evict", code, actionsOf(doc))
	}
}

// A PodDisruptionBudget that allows no disruption: the Eviction API answers
// 429, the plugin says so and retries; once the budget allows one, the
// eviction goes through. A budget that never allows one fails at --timeout
// naming the pods not evicted (exit 1).
func TestRefreshEvictRetriesWhileThePDBRefuses(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	f.createConfigMap(configMap("app", map[string]string{"LEVEL": "v0"}))
	f.createDeployment("web", 2, podSpec(withEnv(busybox("c"), cmEnv("LEVEL", "app", "LEVEL", nil))), false)
	all := intstr.FromInt32(2)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: f.ns}, Spec: policyv1.PodDisruptionBudgetSpec{
		MinAvailable: &all, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	if _, err := f.cs.PolicyV1().PodDisruptionBudgets(f.ns).Create(f.ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the PodDisruptionBudget: %v", err)
	}
	f.waitPodsReady(2)
	f.poll("the PodDisruptionBudget sees 2 healthy pods", podReadyTimeout, func() (bool, error) {
		p, err := f.cs.PolicyV1().PodDisruptionBudgets(f.ns).Get(f.ctx, "web", metav1.GetOptions{})
		return err == nil && p.Status.CurrentHealthy == 2, err
	})
	f.patchConfigMapData("app", map[string]string{"LEVEL": "v1"})

	// never allowed: fails at --timeout, nothing evicted, each pod named
	_, errOut, code := f.refreshJSON("app", "--restart-via=evict", "--yes", "--timeout", "6s")
	if code != 1 || !strings.Contains(errOut, "refused by a PodDisruptionBudget") || !strings.Contains(errOut, "not evicted") {
		t.Fatalf("budget of 0 disruptions: exit %d, stderr %s; want exit 1 naming the PDB and the pods not evicted", code, errOut)
	}
	if n, err := f.readyCount(); err != nil || n != 2 {
		t.Fatalf("%d Ready pods (%v), want both untouched", n, err)
	}

	// allowed once a refusal was seen: the refusals are retried, then it passes
	lowered := false
	out, errOut, code := f.pluginRunOnStderr("refused by a PodDisruptionBudget", func() {
		one := intstr.FromInt32(1)
		p, err := f.cs.PolicyV1().PodDisruptionBudgets(f.ns).Get(f.ctx, "web", metav1.GetOptions{})
		if err == nil {
			p.Spec.MinAvailable = &one
			_, err = f.cs.PolicyV1().PodDisruptionBudgets(f.ns).Update(f.ctx, p, metav1.UpdateOptions{})
		}
		if err != nil {
			t.Errorf("lowering the budget: %v", err)
		}
		lowered = true
	}, "refresh", "-n", f.ns, "-o", "json", "app", "--restart-via=evict", "--yes", "--timeout", "180s")
	var doc refreshDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("refresh output is not a document (exit %d): %v\n%s", code, err, out)
	}
	if !lowered {
		t.Fatalf("no refusal by the PodDisruptionBudget was reported:\n%s", errOut)
	}
	if code != 0 || actionsOf(doc) != "evict deployment/web" || doc.Items[0].Outcome != refresh.OutcomeCurrent {
		t.Fatalf("exit %d %+v, want the evictions to pass once the budget allows them", code, doc.Items)
	}
	if !strings.Contains(errOut, "refused by a PodDisruptionBudget") || !strings.Contains(errOut, "retrying in") {
		t.Errorf("stderr does not say the refusal was retried:\n%s", errOut)
	}
	for _, p := range f.waitPodsReady(2) {
		f.expectEnv(p.Name, "c", "LEVEL", "v1")
	}
}

// A StatefulSet whose partition spares every pod: a template restart would
// replace none (manual), eviction replaces them highest ordinal first, each
// coming back under its name with a new UID, the StatefulSet's spec never
// written.
func TestRefreshEvictStatefulSetBelowItsPartition(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	f.createConfigMap(configMap("app", map[string]string{"LEVEL": "v0"}))
	labels := map[string]string{"app": "db"}
	replicas, partition := int32(2), int32(2)
	s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: f.ns}, Spec: appsv1.StatefulSetSpec{
		Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels}, ServiceName: "db",
		PodManagementPolicy: appsv1.ParallelPodManagement,
		UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
			RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: &partition}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: podSpec(withEnv(busybox("c"), cmEnv("LEVEL", "app", "LEVEL", nil)))},
	}}
	if _, err := f.cs.AppsV1().StatefulSets(f.ns).Create(f.ctx, s, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating statefulset: %v", err)
	}
	before := f.waitPodsReady(2)
	f.patchConfigMapData("app", map[string]string{"LEVEL": "v1"})
	gen0 := func() int64 {
		s, err := f.cs.AppsV1().StatefulSets(f.ns).Get(f.ctx, "db", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("getting statefulset: %v", err)
		}
		return s.Generation
	}
	g0 := gen0()

	doc, _, code := f.refreshJSON("app", "--dry-run=client")
	if code != 0 || actionsOf(doc) != "manual statefulset/db; manual statefulset/db" {
		t.Fatalf("template plan: exit %d %q, want manual (the partition spares both pods)", code, actionsOf(doc))
	}
	doc, _, code = f.refreshJSON("app", "--restart-via=evict", "--yes", "--timeout", "180s")
	if code != 0 || actionsOf(doc) != "evict statefulset/db" || doc.Items[0].Outcome != refresh.OutcomeCurrent {
		t.Fatalf("evict: exit %d %q %+v, want a verified evict", code, actionsOf(doc), doc.Items)
	}
	if got := strings.Join(doc.Items[0].Evicted, ","); got != "db-1,db-0" {
		t.Errorf("evicted %s, want db-1,db-0 (highest ordinal first)", got)
	}
	uids := map[string]string{}
	for _, p := range before {
		uids[p.Name] = string(p.UID)
	}
	for _, p := range f.waitPodsReady(2) {
		if uids[p.Name] == "" || uids[p.Name] == string(p.UID) {
			t.Errorf("pod %s (UID %s) is not a replacement of the same name", p.Name, p.UID)
		}
		f.expectEnv(p.Name, "c", "LEVEL", "v1")
	}
	if g := gen0(); g != g0 {
		t.Errorf("the StatefulSet's generation changed %d -> %d", g0, g)
	}
}

// pluginRunOnStderr runs `kubectl cmsync ARGS` and calls fn once, when a
// line of its stderr contains match (while it runs).
func (f *fx) pluginRunOnStderr(match string, fn func(), args ...string) (string, string, int) {
	f.t.Helper()
	if pluginBuildErr != nil {
		f.t.Fatalf("plugin not built: %v", pluginBuildErr)
	}
	ctx, cancel := context.WithTimeout(f.ctx, 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kubectl", append([]string{"cmsync"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	pipe, err := cmd.StderrPipe()
	if err != nil {
		f.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	sc := bufio.NewScanner(pipe)
	done := false
	for sc.Scan() {
		stderr.WriteString(sc.Text() + "\n")
		if !done && strings.Contains(sc.Text(), match) {
			done = true
			fn()
		}
	}
	code := 0
	var ee *exec.ExitError
	switch err := cmd.Wait(); {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		f.t.Fatalf("kubectl cmsync %s: %v", strings.Join(args, " "), err)
	}
	f.t.Logf("kubectl cmsync %s -> exit %d\nstderr:\n%s", strings.Join(args, " "), code, stderr.String())
	return stdout.String(), stderr.String(), code
}

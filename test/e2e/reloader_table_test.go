//go:build e2e

package e2e

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/reconcile"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// The scenario classes of Reloader's own e2e suite (stakater/Reloader
// v1.4.21, test/e2e: core, annotations, flags, advanced), replayed against
// `kubectl cmsync watch` for Deployments, StatefulSets and DaemonSets
// alike. Reloader's flags map through docs/controller.md's migration
// table: Reloader's default (no --auto-reload-all) is --require-opt-in,
// its --ignored-workload-types is --ignore-workload-kinds.

// Outcomes of a row.
const (
	wantRestart = "restart" // the workload restarted (once per edit round)
	wantRemount = "remount" // its pods annotated, nothing restarted
	wantNothing = "nothing" // no action on it, its pods untouched
)

// reloaderRow is one scenario, made for each workload kind.
type reloaderRow struct {
	name string
	// ann are the workload's annotations; "$OBJ" in a value is the name
	// of the row's object.
	ann map[string]string
	// secret: the row's object is a Secret (else a ConfigMap); objAnn are
	// its annotations; prefix starts its name ("cm-" when empty).
	secret bool
	objAnn map[string]string
	prefix string
	// volume: the pod mounts the object (else reads key K as $K).
	volume bool
	// edits made one after the other within the debounce (1 when 0);
	// sequential: once its outcome is seen, edited once more, and the
	// outcome expected again.
	edits      int
	sequential bool
	// ignored: watched by the watch that ignores the row's kind.
	ignored bool
	want    string
	// differsOnPurpose says why cmsync differs from Reloader here (the
	// migration table of docs/controller.md says it too); "" where it
	// does as Reloader does.
	differsOnPurpose string
}

var reloaderRows = []reloaderRow{
	{name: "auto-env", ann: map[string]string{reconcile.ReloaderAuto: "true"}, want: wantRestart},
	{name: "auto-vol", ann: map[string]string{reconcile.ReloaderAuto: "true"}, volume: true, want: wantRestart},
	{name: "auto-remount", ann: map[string]string{reconcile.ReloaderAuto: "true", reconcile.AnnotationOnChange: reconcile.OnChangeRemount}, volume: true, want: wantRemount,
		differsOnPurpose: "kubectl-cmsync.io/on-change: remount (no Reloader counterpart) remounts a volume-only consumer instead of restarting it"},
	{name: "cm-auto", ann: map[string]string{reconcile.ReloaderConfigMapAuto: "true"}, want: wantRestart},
	{name: "sec-auto", ann: map[string]string{reconcile.ReloaderSecretAuto: "true"}, secret: true, want: wantRestart},
	{name: "sec-auto-cm", ann: map[string]string{reconcile.ReloaderSecretAuto: "true"}, want: wantNothing},
	{name: "rx", ann: map[string]string{reconcile.ReloaderConfigMapReload: "app-$KIND-rx-.*"}, prefix: "app-", want: wantRestart},
	{name: "nrx", ann: map[string]string{reconcile.ReloaderConfigMapReload: "other-.*"}, prefix: "app-", want: wantNothing},
	{name: "excl", ann: map[string]string{reconcile.ReloaderAuto: "true", reconcile.ReloaderConfigMapExclude: "$OBJ"}, want: wantNothing},
	{name: "search", ann: map[string]string{reconcile.ReloaderSearch: "true"}, objAnn: map[string]string{reconcile.ReloaderMatch: "true"}, want: wantRestart},
	{name: "search-nm", ann: map[string]string{reconcile.ReloaderSearch: "true"}, want: wantNothing},
	{name: "seq", ann: map[string]string{reconcile.ReloaderAuto: "true"}, sequential: true, want: wantRestart},
	{name: "coalesce", ann: map[string]string{reconcile.ReloaderAuto: "true"}, edits: 2, want: wantRestart,
		differsOnPurpose: "edits within --debounce make one restart; Reloader restarts once per edit"},
	{name: "ignored", ann: map[string]string{reconcile.ReloaderAuto: "true"}, ignored: true, want: wantNothing,
		differsOnPurpose: "--ignore-workload-kinds takes any built-in kind; Reloader's --ignored-workload-types only jobs and cronjobs"},
}

// reloaderKinds are the workload kinds every row is made for, by the
// short name in their objects' names.
var reloaderKinds = []struct{ short, kind string }{{"d", "deployment"}, {"s", "statefulset"}, {"ds", "daemonset"}}

// reloaderCase is one row made for one kind.
type reloaderCase struct {
	row            reloaderRow
	f              *fx
	w              *watcher
	kind, workload string // "deployment", "d-auto-env"
	object         string
	pods           map[string]string // its pods before the edits, name -> UID
}

func (c *reloaderCase) target() string { return c.kind + "/" + c.workload }

// TestReloaderScenarios creates every row's workload at once (two
// namespaces: one watched by a watch that ignores the three kinds), edits
// every object together, and checks the outcomes in one pass over the
// events; then the sequential rows are edited once more. It runs in the
// sequential phase, alone: its 42 workloads and their rollouts beside the
// parallel phase starved the in-cluster controller tests on 2 cores.
func TestReloaderScenarios(t *testing.T) {
	start := time.Now()
	fm, ign := newFx(t), newFx(t)
	var cases []*reloaderCase
	for _, k := range reloaderKinds {
		for _, r := range reloaderRows {
			f := fm
			if r.ignored {
				f = ign
			}
			c := &reloaderCase{row: r, f: f, kind: k.kind, workload: k.short + "-" + r.name}
			c.object = cmp.Or(r.prefix, "cm-") + c.workload + map[bool]string{true: "-1"}[r.prefix != ""]
			cases = append(cases, c)
			c.create(k.short)
		}
	}
	for _, c := range cases {
		c.f.waitWorkloadSettled(c.kind, c.workload)
		c.pods = c.f.podsOf(c.workload)
	}
	created := time.Since(start)
	// every restart at once: the rows are about what is restarted, not how many at a time (at the
	// default 2, the others held and checked again with a backoff took minutes)
	args := []string{"--require-opt-in", "--secrets", "--debounce", "2s", "--max-concurrent-restarts", strconv.Itoa(len(cases))}
	wMain := fm.startWatch(args...)
	wIgn := ign.startWatch(append(args, "--ignore-workload-kinds", "deployments,statefulsets,daemonsets")...)
	for _, c := range cases {
		c.w = map[*fx]*watcher{fm: wMain, ign: wIgn}[c.f]
	}

	edited := time.Now()
	editAll(cases, 1)
	checkOutcomes(t, cases, 1)
	firstRound := time.Since(edited)

	var seq []*reloaderCase
	for _, c := range cases {
		if c.row.sequential {
			seq = append(seq, c)
		}
	}
	editAll(seq, 2)
	checkOutcomes(t, seq, 2)
	t.Logf("wall time: %s (workloads created and ready in %s, first edits to outcomes %s, sequential edits %s)",
		time.Since(start).Round(time.Second), created.Round(time.Second), firstRound.Round(time.Second), time.Since(edited.Add(firstRound)).Round(time.Second))
	wMain.stop()
	wIgn.stop()
}

// create makes the row's object and workload.
func (c *reloaderCase) create(kindShort string) {
	f, r := c.f, c.row
	ann := map[string]string{}
	for k, v := range r.ann {
		ann[k] = strings.NewReplacer("$OBJ", c.object, "$KIND", kindShort).Replace(v)
	}
	if r.secret {
		s := secret(c.object, map[string]string{"K": "v0"})
		s.Annotations = r.objAnn
		f.createSecret(s)
	} else {
		cm := configMap(c.object, map[string]string{"K": "v0"})
		cm.Annotations = r.objAnn
		f.createConfigMap(cm)
	}
	ctr := busybox("app")
	spec := podSpec(ctr)
	switch {
	case r.volume:
		spec = withVolumes(podSpec(withMounts(ctr, mount("cfg", "/etc/cfg"))), cmVolume("cfg", c.object))
	case r.secret:
		spec = podSpec(withEnv(ctr, secretEnv("K", c.object, "K")))
	default:
		spec = podSpec(withEnv(ctr, cmEnv("K", c.object, "K", nil)))
	}
	labels := map[string]string{"app": c.workload}
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}
	sel := &metav1.LabelSelector{MatchLabels: labels}
	meta := metav1.ObjectMeta{Name: c.workload, Annotations: ann}
	apps := f.cs.AppsV1()
	var err error
	switch c.kind {
	case "deployment":
		_, err = apps.Deployments(f.ns).Create(f.ctx, &appsv1.Deployment{ObjectMeta: meta,
			Spec: appsv1.DeploymentSpec{Replicas: ptr(int32(1)), Selector: sel, Template: tmpl}}, metav1.CreateOptions{})
	case "statefulset":
		_, err = apps.StatefulSets(f.ns).Create(f.ctx, &appsv1.StatefulSet{ObjectMeta: meta,
			Spec: appsv1.StatefulSetSpec{Replicas: ptr(int32(1)), ServiceName: c.workload, Selector: sel, Template: tmpl,
				PodManagementPolicy: appsv1.ParallelPodManagement}}, metav1.CreateOptions{})
	case "daemonset":
		_, err = apps.DaemonSets(f.ns).Create(f.ctx, &appsv1.DaemonSet{ObjectMeta: meta,
			Spec: appsv1.DaemonSetSpec{Selector: sel, Template: tmpl}}, metav1.CreateOptions{})
	}
	if err != nil {
		f.t.Fatalf("creating %s %s: %v", c.kind, c.workload, err)
	}
}

// edit writes value into the row's object.
func (c *reloaderCase) edit(value string) {
	if c.row.secret {
		c.f.patchSecretData(c.object, map[string]string{"K": value})
		return
	}
	c.f.patchConfigMapData(c.object, map[string]string{"K": value})
}

// editAll edits every case's object together: its row's edits one after
// the other, 300 ms apart (within the debounce); round numbers the values.
func editAll(cases []*reloaderCase, round int) {
	for i := range slices.Max(append([]int{1}, editsOf(cases)...)) {
		for _, c := range cases {
			if i < max(c.row.edits, 1) {
				c.edit(fmt.Sprintf("v%d.%d", round, i))
			}
		}
		time.Sleep(300 * time.Millisecond)
	}
}

func editsOf(cases []*reloaderCase) []int {
	out := make([]int, 0, len(cases))
	for _, c := range cases {
		out = append(out, c.row.edits)
	}
	return out
}

// checkOutcomes waits until every case that expects an action shows it
// (round: how many restarts of it by now), polling all at once, then, a
// debounce and more later, checks that no case did more than it should:
// one restart per round, none for a remount, nothing at all for nothing.
func checkOutcomes(t *testing.T, cases []*reloaderCase, round int) {
	t.Helper()
	f := cases[0].f
	f.poll(fmt.Sprintf("the outcomes of round %d", round), 4*podReadyTimeout, func() (bool, error) {
		for _, c := range cases {
			if !c.reached(round) {
				return false, fmt.Errorf("%s (%s): no %s yet", c.target(), c.row.name, c.row.want)
			}
		}
		return true, nil
	})
	time.Sleep(5 * time.Second) // past another debounce: a second round would show now
	for _, c := range cases {
		if msg := c.check(round); msg != "" {
			why := ""
			if c.row.differsOnPurpose != "" {
				why = " (differs from Reloader on purpose: " + c.row.differsOnPurpose + ")"
			}
			t.Errorf("%s, row %s, want %s%s: %s", c.target(), c.row.name, c.row.want, why, msg)
		}
	}
}

// reached tells whether the case's expected outcome is seen (nothing: at
// once; the check after the wait says whether something happened).
func (c *reloaderCase) reached(round int) bool {
	switch c.row.want {
	case wantRestart:
		return c.w.count(isResultOutcome(refresh.ActionRestart, c.target(), refresh.OutcomeCurrent)) >= round
	case wantRemount:
		return c.w.count(c.annotated(refresh.OutcomeCurrent)) > 0
	}
	return true
}

// check says what is wrong with the case's events after its outcome ("":
// nothing).
func (c *reloaderCase) check(round int) string {
	restarts := c.w.count(isAction(refresh.ActionRestart, c.target()))
	annotated := c.w.count(c.annotated(""))
	manual := c.w.count(isAction(refresh.ActionManual, c.target()))
	switch c.row.want {
	case wantRestart:
		if restarts != round {
			return fmt.Sprintf("%d restarts, want %d", restarts, round)
		}
	case wantRemount:
		if restarts != 0 {
			return fmt.Sprintf("%d restarts, want none", restarts)
		}
		if pods := c.f.podsOf(c.workload); !equalPods(pods, c.pods) {
			return fmt.Sprintf("pods %v, want the same as before the edit %v", pods, c.pods)
		}
	case wantNothing:
		if restarts+annotated+manual != 0 {
			return fmt.Sprintf("%d restarts, %d annotations, %d manual, want no action", restarts, annotated, manual)
		}
		if pods := c.f.podsOf(c.workload); !equalPods(pods, c.pods) {
			return fmt.Sprintf("pods %v, want the same as before the edit %v", pods, c.pods)
		}
	}
	return ""
}

// annotated matches the annotations of the case's pods, of outcome when
// not "" (results), else the actions.
func (c *reloaderCase) annotated(outcome refresh.Outcome) func(reconcile.Event) bool {
	return func(e reconcile.Event) bool {
		if e.Action == nil || e.Action.Action != refresh.ActionAnnotate || e.Action.Target.Kind != "Pod" ||
			!strings.HasPrefix(e.Action.Target.Name, c.workload+"-") || e.Action.Target.Namespace != c.f.ns {
			return false
		}
		if outcome == "" {
			return e.Kind == reconcile.EventAction
		}
		return e.Kind == reconcile.EventResult && e.Outcome == outcome
	}
}

func isResultOutcome(kind refresh.ActionKind, target string, outcome refresh.Outcome) func(reconcile.Event) bool {
	return func(e reconcile.Event) bool { return isResult(kind, target)(e) && e.Outcome == outcome }
}

func equalPods(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// podsOf are the live pods of the workload labelled app=name, name -> UID.
func (f *fx) podsOf(name string) map[string]string {
	f.t.Helper()
	pods, err := f.cs.CoreV1().Pods(f.ns).List(f.ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		f.t.Fatalf("listing pods of %s: %v", name, err)
	}
	out := map[string]string{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			out[p.Name] = string(p.UID)
		}
	}
	return out
}

// waitWorkloadSettled waits until a Deployment, StatefulSet or DaemonSet
// has observed its generation and runs every replica updated and ready.
func (f *fx) waitWorkloadSettled(kind, name string) {
	f.t.Helper()
	if kind == "deployment" {
		f.waitDeploymentSettled(name)
		return
	}
	apps := f.cs.AppsV1()
	f.poll(kind+" "+name+" settled", podReadyTimeout, func() (bool, error) {
		switch kind {
		case "statefulset":
			s, err := apps.StatefulSets(f.ns).Get(f.ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			st := s.Status
			return st.ObservedGeneration == s.Generation && st.ReadyReplicas == *s.Spec.Replicas && st.UpdatedReplicas == *s.Spec.Replicas &&
				st.CurrentRevision == st.UpdateRevision, nil
		case "daemonset":
			d, err := apps.DaemonSets(f.ns).Get(f.ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			st := d.Status
			return st.ObservedGeneration == d.Generation && st.DesiredNumberScheduled > 0 && st.NumberReady == st.DesiredNumberScheduled &&
				st.UpdatedNumberScheduled == st.DesiredNumberScheduled, nil
		}
		return false, fmt.Errorf("unknown kind %s", kind)
	})
}

// TestReloaderOptInRestartsUnreadable: with --exec-timeout 1ms no
// container can be read; a Deployment opted in through Reloader's
// annotation is restarted for an edit of the ConfigMap it reads as an
// environment variable all the same (Reloader does not read containers),
// not reported manual and dropped.
func TestReloaderOptInRestartsUnreadable(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	f.createConfigMap(configMap("cfg", map[string]string{"K": "v0"}))
	f.createAnnotatedDeployment("web", 1, podSpec(withEnv(busybox("app"), cmEnv("K", "cfg", "K", nil))), map[string]string{reconcile.ReloaderAuto: "true"})
	f.waitDeploymentSettled("web")
	before := f.podsOf("web")
	w := f.startWatch("--require-opt-in", "--exec-timeout", "1ms", "--debounce", "1s")
	f.patchConfigMapData("cfg", map[string]string{"K": "v1"})
	w.waitFor("restart of deployment/web", isAction(refresh.ActionRestart, "deployment/web"))
	if n := w.count(isAction(refresh.ActionManual, "deployment/web")); n != 0 {
		t.Errorf("%d manual actions for deployment/web, want none", n)
	}
	// the action is told before its patch is sent: wait for the old pod to go,
	// not for a Deployment that may still look settled
	f.poll("the pod of deployment/web replaced", podReadyTimeout, func() (bool, error) {
		for name := range f.podsOf("web") {
			if _, old := before[name]; old {
				return false, nil
			}
		}
		return true, nil
	})
	f.waitDeploymentSettled("web")
	w.stop()
}

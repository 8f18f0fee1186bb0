package reconcile

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread/readtest"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// deployment adds to objs a Deployment name (ReplicaSet name-1, pods
// name-1-0 .. name-1-(pods-1)) whose container reads key of ConfigMap cm
// by env.
func deployment(name, cm, key string, pods int) []runtime.Object {
	ctrl := true
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("d-" + name),
		Annotations: map[string]string{AnnotationWatch: "true"}}, Spec: appsv1.DeploymentSpec{Selector: sel}}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name + "-1", Namespace: "ns", UID: types.UID("r-" + name), Labels: sel.MatchLabels,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: name, UID: dep.UID, Controller: &ctrl}}}}
	out := []runtime.Object{dep, rs}
	for i := range pods {
		pn := rs.Name + "-" + string(rune('0'+i))
		out = append(out, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pn, Namespace: "ns", UID: types.UID("p-" + pn), Labels: sel.MatchLabels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: &ctrl}}},
			Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "app", Env: []corev1.EnvVar{{Name: "V", ValueFrom: &corev1.EnvVarSource{
				ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: cm}, Key: key}}}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}})
	}
	return out
}

type patchLog struct {
	refresh.Patcher
	patched []string
}

func (p *patchLog) Patch(ctx context.Context, t refresh.Target, pt types.PatchType, patch []byte, dry bool) error {
	p.patched = append(p.patched, t.Kind+"/"+t.Name)
	return p.Patcher.Patch(ctx, t, pt, patch, dry)
}

func resumeLoop(c kubernetes.Interface, events *[]Event) (*Loop, *patchLog) {
	p := &patchLog{Patcher: refresh.ClientPatcher{Client: c}}
	l := &Loop{Config: Config{Namespace: "ns", RequireOptIn: true, DigestKey: []byte("0123456789abcdef0123")},
		Client: c, Cluster: refresh.Cluster{Patcher: p}, Annotations: refresh.ClientWorkloads{Client: c},
		Emit: func(e Event) { *events = append(*events, e) }}
	l.defaults()
	return l, p
}

func resumeOnce(t *testing.T, c kubernetes.Interface) (map[inspect.ObjectKey]*pending, []string, string) {
	t.Helper()
	var events []Event
	l, p := resumeLoop(c, &events)
	out := map[inspect.ObjectKey]*pending{}
	var n resumeCounts
	l.resumeIn(context.Background(), "ns", out, &n)
	for _, e := range events {
		t.Errorf("unexpected event: %+v", e)
	}
	return out, p.patched, n.String()
}

// A controller that starts again with nothing changed reads the records and
// leaves every consumer alone; one whose object changed since is checked,
// for that workload only; a workload not opted in is never recorded.
func TestResumeActsOnlyWhereTheRecordDiffers(t *testing.T) {
	objs := []runtime.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}, Data: map[string]string{"k": "1", "unread": "x"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns"}, Data: map[string]string{"k": "1"}},
	}
	objs = append(objs, deployment("web-a", "a", "k", 2)...)
	objs = append(objs, deployment("web-b", "b", "k", 1)...)
	other := deployment("not-opted", "a", "k", 1)
	delete(other[0].(*appsv1.Deployment).Annotations, AnnotationWatch)
	objs = append(objs, other...)
	c := fake.NewClientset(objs...)

	out, patched, counts := resumeOnce(t, c)
	if len(out) != 0 || strings.Join(patched, ",") != "Deployment/web-a,Deployment/web-b" ||
		counts != "0 consumers current by their record, 2 recorded for the first time (left alone), 0 changed since their record (checked)" {
		t.Fatalf("first start: pending %v, patched %v, %s", out, patched, counts)
	}
	dep, _ := c.AppsV1().Deployments("ns").Get(context.Background(), "web-a", metav1.GetOptions{})
	rec := ParseRecord(dep.Annotations[AnnotationApplied])
	if len(rec) != 1 || !strings.HasPrefix(rec["configmap/a"], keyID([]byte("0123456789abcdef0123"))+":v2.") {
		t.Fatalf("web-a's record = %q", dep.Annotations[AnnotationApplied])
	}

	out, patched, counts = resumeOnce(t, c)
	if len(out) != 0 || len(patched) != 0 || !strings.HasPrefix(counts, "2 consumers current by their record, 0 recorded") {
		t.Fatalf("restart with nothing changed: pending %v, patched %v, %s", out, patched, counts)
	}

	// a key no consumer reads changes nothing; the read key does
	update := func(data map[string]string) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}, Data: data}
		if _, err := c.CoreV1().ConfigMaps("ns").Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	update(map[string]string{"k": "1", "unread": "y"})
	if out, _, _ = resumeOnce(t, c); len(out) != 0 {
		t.Fatalf("an unread key changed: pending %v", out)
	}
	update(map[string]string{"k": "2", "unread": "y"})
	out, patched, counts = resumeOnce(t, c)
	a := inspect.ObjectKey{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "a"}
	if len(out) != 1 || out[a] == nil || !out[a].existing || len(out[a].only) != 1 || !out[a].only["Deployment/web-a"] || len(patched) != 0 ||
		!strings.HasPrefix(counts, "1 consumers current by their record, 0 recorded for the first time (left alone), 1 changed") {
		t.Fatalf("a read key changed: pending %+v, patched %v, %s", out, patched, counts)
	}
}

// A record that differs because of an edit the leader before restarted the
// workload for (its template's restartedAt after the object's last write:
// the leader change cut the restart's verification, so nothing was
// recorded) is no edit no leader acted on: the consumer is checked, and
// restarted only if stale, not restarted again by its on-change policy.
// The same edit with the last restart before it is one.
func TestResumeTakesNoEditForTheRestartSentAfterIt(t *testing.T) {
	for _, tc := range []struct {
		restartedAt time.Duration // after the edit, in whole seconds; -1: none
		edit        bool
	}{
		{2 * time.Second, false},
		{0, true}, // the same second: which came first is not known
		{-time.Minute, true},
		{-1, true},
	} {
		objs := []runtime.Object{&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", ResourceVersion: "1"}, Data: map[string]string{"k": "1"}}}
		objs = append(objs, deployment("web", "a", "k", 1)...)
		c := fake.NewClientset(objs...)
		if out, _, _ := resumeOnce(t, c); len(out) != 0 { // records it
			t.Fatalf("first start: pending %v", out)
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", ResourceVersion: "2"}, Data: map[string]string{"k": "2"}}
		if _, err := c.CoreV1().ConfigMaps("ns").Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		got, err := c.CoreV1().ConfigMaps("ns").Get(context.Background(), "a", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		edit := inspect.ConfigMapObject(got).LastChange.Truncate(time.Second) // its managedFields' time, as the fake wrote it
		if tc.restartedAt != -1 {
			dep, _ := c.AppsV1().Deployments("ns").Get(context.Background(), "web", metav1.GetOptions{})
			// a time ahead of the loop's clock counts as now, still after the edit
			dep.Spec.Template.Annotations = map[string]string{refresh.RestartedAtAnnotation: edit.Add(tc.restartedAt).Format(time.RFC3339)}
			if _, err := c.AppsV1().Deployments("ns").Update(context.Background(), dep, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if got := resumedWebEdit(t, c, fmt.Sprintf("restarted %v after the edit", tc.restartedAt)); got != tc.edit {
			t.Errorf("restarted %v after the edit: an edit for its policy = %t, want %t", tc.restartedAt, got, tc.edit)
		}
	}
}

// A record that differs because of an edit whose evictions (or restart)
// the leader before made, without writing the record (gone, or its write
// refused), is no edit no leader acted on when every pod that reads the
// object was created after its last write: the consumer is checked, not
// restarted again by its on-change policy. One pod older than the write,
// or created in its second, keeps it an edit.
func TestResumeTakesNoEditThatEveryPodWasCreatedAfter(t *testing.T) {
	for _, tc := range []struct {
		created [2]time.Duration // each pod's creation after the edit
		edit    bool
	}{
		{[2]time.Duration{2 * time.Second, time.Minute}, false},
		{[2]time.Duration{2 * time.Second, -time.Minute}, true}, // the second pod not evicted yet
		{[2]time.Duration{0, time.Minute}, true},                // the same second: which came first is not known
	} {
		objs := []runtime.Object{&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", ResourceVersion: "1"}, Data: map[string]string{"k": "1"}}}
		objs = append(objs, deployment("web", "a", "k", 2)...)
		c := fake.NewClientset(objs...)
		if out, _, _ := resumeOnce(t, c); len(out) != 0 { // records it
			t.Fatalf("first start: pending %v", out)
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", ResourceVersion: "2"}, Data: map[string]string{"k": "2"}}
		got, err := c.CoreV1().ConfigMaps("ns").Update(context.Background(), cm, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		edit := inspect.ConfigMapObject(got).LastChange.Truncate(time.Second)
		for i, name := range []string{"web-1-0", "web-1-1"} {
			pod, err := c.CoreV1().Pods("ns").Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			pod.CreationTimestamp = metav1.NewTime(edit.Add(tc.created[i]))
			if _, err := c.CoreV1().Pods("ns").Update(context.Background(), pod, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if got := resumedWebEdit(t, c, fmt.Sprintf("pods created %v after the edit", tc.created)); got != tc.edit {
			t.Errorf("pods created %v after the edit: an edit for its policy = %t, want %t", tc.created, got, tc.edit)
		}
	}
}

// resumedWebEdit resumes once and tells whether web's changed consumer of
// a, which must be checked, is an edit for its on-change policy.
func resumedWebEdit(t *testing.T, c kubernetes.Interface, what string) bool {
	t.Helper()
	out, _, _ := resumeOnce(t, c)
	p := out[inspect.ObjectKey{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "a"}]
	if p == nil || !p.only["Deployment/web"] {
		t.Fatalf("%s: the changed consumer is not checked: %+v", what, out)
	}
	return editedFor(p, "Deployment/web")
}

// A new leader whose first reads fail (the pod list, then a workload's
// annotations) reads the namespace again rather than leave its consumers
// to their next change.
func TestResumeReadsAgainAfterAFailedRead(t *testing.T) {
	objs := []runtime.Object{&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}, Data: map[string]string{"k": "1"}}}
	objs = append(objs, deployment("web", "a", "k", 1)...)
	c := fake.NewClientset(objs...)
	fail := map[string]int{"list pods": 1, "get deployments": 1}
	c.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		k := a.GetVerb() + " " + a.GetResource().Resource
		if fail[k] > 0 {
			fail[k]--
			return true, nil, apierrors.NewServiceUnavailable("busy")
		}
		return false, nil, nil
	})
	var events []Event
	l, _ := resumeLoop(c, &events)
	out := map[inspect.ObjectKey]*pending{}
	var n resumeCounts
	l.resumeIn(context.Background(), "ns", out, &n)
	if got := n.String(); got != "0 consumers current by their record, 1 recorded for the first time (left alone), 0 changed since their record (checked)" {
		t.Fatalf("after two failed reads: %s (events %+v)", got, events)
	}
	if fail["list pods"] != 0 || fail["get deployments"] != 0 {
		t.Fatalf("the failing reads were not made: %v", fail)
	}
	if len(events) != 0 {
		t.Errorf("events %+v: a read that succeeded on a later attempt reports nothing", events)
	}
}

func TestDigestsIgnoreScaleAndFollowTheKeysRead(t *testing.T) {
	snap := func(v, unread string, pods int) (*inspect.Snapshot, []inspect.Use) {
		objs := []runtime.Object{&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}, Data: map[string]string{"k": v, "u": unread}}}
		objs = append(objs, deployment("web", "a", "k", pods)...)
		s, err := inspect.Load(context.Background(), fake.NewClientset(objs...), inspect.LoadOptions{Namespace: "ns"})
		if err != nil {
			t.Fatal(err)
		}
		items, err := inspect.Build(s, inspect.BuildOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s, items
	}
	key := []byte("0123456789abcdef")
	d := func(v, unread string, pods int) string {
		s, items := snap(v, unread, pods)
		r := digests(key, s, items)[subject{Kind: "Deployment", Namespace: "ns", Name: "web", workload: inspect.WorkloadRef{Kind: "Deployment", Name: "web"}}]
		return r["configmap/a"]
	}
	base := d("1", "x", 1)
	if base == "" {
		t.Fatal("no digest for Deployment/web")
	}
	if got := d("1", "x", 3); got != base {
		t.Errorf("3 pods: %s, want the 1-pod digest %s", got, base)
	}
	if got := d("1", "changed", 1); got != base {
		t.Errorf("an unread key changed the digest")
	}
	if got := d("2", "x", 1); got == base {
		t.Errorf("the read key changed and the digest did not")
	}
}

func TestUpdatedKeepsUncheckedEntriesAndDropsUnread(t *testing.T) {
	old := Record{"configmap/a": "k:old-a", "configmap/b": "k:old-b", "secret/gone": "k:x"}
	now := Record{"configmap/a": "k:new-a", "configmap/b": "k:new-b", "configmap/c": "k:new-c"}
	r, changed := updated(old, now, []string{"configmap/a", "configmap/c"})
	if !changed || r.String() != `{"configmap/a":"k:new-a","configmap/b":"k:old-b","configmap/c":"k:new-c"}` {
		t.Fatalf("updated = %s (changed %v)", r, changed)
	}
	if _, changed := updated(r, now, nil); changed {
		t.Fatal("nothing done, yet changed")
	}
	differ, unknown := compare(r, now)
	if strings.Join(differ, ",") != "configmap/b" || len(unknown) != 0 {
		t.Fatalf("compare: differ %v unknown %v", differ, unknown)
	}
	// made under another key (the key rotated) or in an older digest
	// format: checked, as a change is
	differ, unknown = compare(Record{"configmap/a": "other:v1.old-a", "configmap/b": "k:v0.old-b"}, Record{"configmap/a": "k:v1.new-a", "configmap/b": "k:v1.new-b"})
	if strings.Join(differ, ",") != "configmap/a,configmap/b" || len(unknown) != 0 {
		t.Fatalf("another key, another format: differ %v unknown %v; want both checked", differ, unknown)
	}
	if len(ParseRecord("not json")) != 0 || len(ParseRecord("")) != 0 {
		t.Fatal("an unreadable record is not empty")
	}
}

func TestRecordSkipsSubjectsWhoseActionsDidNotComplete(t *testing.T) {
	now := metav1.NewTime(time.Now())
	cases := []struct {
		r    refresh.Result
		want bool
	}{
		{refresh.Result{Action: refresh.Action{Action: refresh.ActionNone}}, true},
		{refresh.Result{Action: refresh.Action{Action: refresh.ActionRestart}, Outcome: refresh.OutcomeCurrent, AppliedAt: &now}, true},
		{refresh.Result{Action: refresh.Action{Action: refresh.ActionAnnotate}, Outcome: refresh.OutcomeUnverifiable}, true},
		{refresh.Result{Action: refresh.Action{Action: refresh.ActionRestart}, Outcome: refresh.OutcomeTimeout, Error: "timed out"}, false},
		{refresh.Result{Action: refresh.Action{Action: refresh.ActionRestart}, Outcome: refresh.OutcomeFailed, Error: "x"}, false},
		{refresh.Result{Action: refresh.Action{Action: refresh.ActionManual}, Outcome: refresh.OutcomeNotApplied}, false},
		{heldResults([]refresh.Action{{Action: refresh.ActionRestart}})[0], false},
	}
	for _, tc := range cases {
		if got := completed(tc.r); got != tc.want {
			t.Errorf("completed(%s %s %q) = %v", tc.r.Action.Action, tc.r.Outcome, tc.r.Error, got)
		}
	}
}

// Two holds of one object in one round (a rollout under way for A, the
// restart limit for B) retry both workloads; a new edit retries every use.
func TestRequeueJoinsTheWorkloadsHeldBack(t *testing.T) {
	l := &Loop{}
	l.defaults()
	k := inspect.ObjectKey{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "x"}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l.requeue(pending{change: Change{Object: k}, existing: true, only: map[string]bool{"Deployment/a": true}})
	l.requeue(pending{change: Change{Object: k}, existing: true, only: map[string]bool{"Deployment/b": true},
		told: map[string]time.Time{"Deployment/b rollout": {}}, deferredSince: t0})
	if only := l.pending[k].only; len(only) != 2 || !only["Deployment/a"] || !only["Deployment/b"] {
		t.Fatalf("only = %v, want both workloads", only)
	}
	q := l.pending[k]
	if _, told := q.told["Deployment/b rollout"]; !told || !q.deferredSince.Equal(t0) {
		t.Errorf("told %v, deferred since %s: the second hold's report and clock are kept", q.told, q.deferredSince)
	}
	held := subject{Kind: "Deployment", Namespace: "ns", Name: "a", workload: inspect.WorkloadRef{Kind: "Deployment", Name: "a"}}
	if got := l.unchangedSince(held, []string{"configmap/x", "configmap/y"}, nil); strings.Join(got, ",") != "configmap/y" {
		t.Errorf("unchangedSince(held) = %v: an object with a change pending for it is not recorded by this round", got)
	}
	done := subject{Kind: "Deployment", Namespace: "ns", Name: "c", workload: inspect.WorkloadRef{Kind: "Deployment", Name: "c"}}
	if got := l.unchangedSince(done, []string{"configmap/x", "configmap/y"}, nil); strings.Join(got, ",") != "configmap/x,configmap/y" {
		t.Errorf("unchangedSince(completed) = %v: a retry of other workloads is no change for one that completed", got)
	}
	l.noteChange(inspect.Object{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "x", Exists: true, Data: map[string][]byte{"a": []byte("1")}},
		inspect.Object{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "x", Exists: true, Data: map[string][]byte{"a": []byte("2")}})
	if got := l.unchangedSince(done, []string{"configmap/x"}, nil); len(got) != 0 {
		t.Errorf("unchangedSince(completed) after a new edit = %v, want none: the edit is recorded by its own round", got)
	}
	if l.pending[k].only != nil {
		t.Errorf("after a new edit only = %v, want every use", l.pending[k].only)
	}
}

// TestRecordEditNeedsTheObjectWritten: an entry whose digest differs is an
// edit only when the object was written since (another resourceVersion,
// or none known: a v1 entry); the version alone moving is no difference,
// and a v1 entry is compared by its digest.
func TestRecordEditNeedsTheObjectWritten(t *testing.T) {
	for _, tc := range []struct {
		recorded, now string
		differ, edit  bool
	}{
		{"id:v2.D1.5", "id:v2.D1.5", false, false},
		{"id:v2.D1.5", "id:v2.D1.6", false, false}, // its metadata written
		{"id:v2.D1.5", "id:v2.D2.5", true, false},  // other keys read, the object as it was
		{"id:v2.D1.5", "id:v2.D2.6", true, true},
		{"id:v1.D1", "id:v2.D1.5", false, false},
		{"id:v1.D1", "id:v2.D2.5", true, true},
		{"id:v3.D1.5", "id:v2.D1.5", true, false}, // a newer format: checked
		{"other:v2.D1.5", "id:v2.D2.6", true, false},
	} {
		differ, _ := compare(Record{"configmap/a": tc.recorded}, Record{"configmap/a": tc.now})
		edit := edits(Record{"configmap/a": tc.recorded}, Record{"configmap/a": tc.now}, differ)
		if (len(differ) == 1) != tc.differ || (len(edit) == 1) != tc.edit {
			t.Errorf("%s -> %s: differ %v, edit %v; want %t, %t", tc.recorded, tc.now, differ, edit, tc.differ, tc.edit)
		}
	}
}

// A new leader says, for an object written since the watermark, that a
// workload reading it is left alone (not opted in): the loop before it did
// not see that edit, and no other line would say so. An object written
// before the watermark was the earlier loop's to say; at a first start (no
// watermark) nothing is news.
func TestResumeSaysTheSkipOfAnEditSinceTheWatermark(t *testing.T) {
	written := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name      string
		watermark time.Time
		want      int
	}{
		{"written after the watermark", written.Add(-time.Minute), 1},
		{"written before the watermark", written.Add(time.Minute), 0},
		{"no watermark", time.Time{}, 0},
	} {
		objs := deployment("web", "app", "K", 1)
		objs[0].(*appsv1.Deployment).Annotations = nil // not opted in
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "ns", CreationTimestamp: metav1.NewTime(written)},
			Data: map[string]string{"K": "2"}}
		var events []Event
		l, _ := resumeLoop(fake.NewClientset(append(objs, cm)...), &events)
		l.Watermark = tc.watermark
		var n resumeCounts
		l.resumeIn(context.Background(), "ns", map[inspect.ObjectKey]*pending{}, &n)
		skips := 0
		for _, e := range events {
			if e.Kind == EventSkip && e.Object != nil && e.Object.Name == "app" {
				skips++
			}
		}
		if skips != tc.want {
			t.Errorf("%s: %d skip lines for configmap/app, want %d (%+v)", tc.name, skips, tc.want, events)
		}
	}
}

// A workload whose restart for one object is held back has its other
// object recorded when that object's own action completed: its pods
// started after that edit. Otherwise the next controller takes the edit,
// from the record, for one no consumer has seen, and restarts the workload
// a second time.
func TestHeldRestartForOneObjectRecordsTheOther(t *testing.T) {
	w := inspect.WorkloadRef{Kind: "Deployment", Name: "web"}
	use := func(pod, cm string) inspect.Use {
		return inspect.Use{Object: inspect.ObjectRef{Kind: "ConfigMap", Namespace: "ns", Name: cm}, Pod: inspect.PodRef{Name: pod}, Workload: w}
	}
	consumer := func(pod, cm string) refresh.Consumer {
		return refresh.Consumer{Object: inspect.ObjectRef{Kind: "ConfigMap", Namespace: "ns", Name: cm}, Pod: pod}
	}
	kept := []inspect.Use{use("web-1", "a"), use("web-2", "a"), use("web-1", "b"), use("web-2", "b")}
	results := []refresh.Result{
		{Action: refresh.Action{Action: refresh.ActionNone, Target: refresh.Target{Kind: "Pod", Namespace: "ns", Name: "web-1"},
			Consumers: []refresh.Consumer{consumer("web-1", "a")}}, Outcome: refresh.OutcomeNotApplied},
		{Action: refresh.Action{Action: refresh.ActionNone, Target: refresh.Target{Kind: "Pod", Namespace: "ns", Name: "web-2"},
			Consumers: []refresh.Consumer{consumer("web-2", "a")}}, Outcome: refresh.OutcomeNotApplied},
		{Action: refresh.Action{Action: refresh.ActionEvict, Target: refresh.Target{Kind: "Deployment", Namespace: "ns", Name: "web"},
			Consumers: []refresh.Consumer{consumer("web-1", "b"), consumer("web-2", "b")}}, Outcome: refresh.OutcomeNotApplied, Error: "held back"},
	}
	got := recordable(kept, results)
	if s := subjectOf(kept[0]); len(got) != 1 || !slices.Equal(got[s], []string{"configmap/a"}) {
		t.Fatalf("recorded %v, want web's record of configmap/a only: b's eviction was held back", got)
	}
	results[1].Action.Action, results[1].Error = refresh.ActionAnnotate, "connection refused"
	if got := recordable(kept, results); len(got) != 0 {
		t.Fatalf("recorded %v, want nothing: a's action failed on web-2 and b's was held back", got)
	}
}

// A completed rollout restart records every object its new pods read, not
// only the one it was sent for: they read all of them when they started.
// Otherwise an edit of the other object made before the restart, which the
// watch delivers only after it (a cut, then a relist), is taken for a new
// one and restarts the workload a second time. A restart still pending is
// recorded once verified, with the same objects, never before.
func TestCompletedRestartRecordsEveryObjectItsPodsRead(t *testing.T) {
	w := inspect.WorkloadRef{Kind: "Deployment", Name: "web"}
	use := func(pod, cm string) inspect.Use {
		return inspect.Use{Object: inspect.ObjectRef{Kind: "ConfigMap", Namespace: "ns", Name: cm}, Pod: inspect.PodRef{Name: pod}, Workload: w}
	}
	kept := []inspect.Use{use("web-1", "b"), use("web-2", "b")}
	all := []inspect.Use{use("web-1", "a"), use("web-2", "a"), use("web-1", "b"), use("web-2", "b")}
	restart := refresh.Result{Action: refresh.Action{Action: refresh.ActionRestart, Target: refresh.Target{Kind: "Deployment", Namespace: "ns", Name: "web"},
		Consumers: []refresh.Consumer{{Object: inspect.ObjectRef{Kind: "ConfigMap", Namespace: "ns", Name: "b"}, Pod: "web-1"}}}, Outcome: refresh.OutcomeCurrent}
	s := subjectOf(kept[0])
	want := []string{"configmap/a", "configmap/b"}
	got := recordable(withRestarted(kept, func() []inspect.Use { return all }, []refresh.Result{restart}), []refresh.Result{restart})
	if k := slices.Sorted(slices.Values(got[s])); !slices.Equal(k, want) {
		t.Fatalf("recorded %v after the restart completed, want %v", got, want)
	}
	pending := restart
	pending.Pending, pending.Outcome = true, refresh.OutcomeApplied
	if got := recordable(withRestarted(kept, func() []inspect.Use { return all }, []refresh.Result{pending}), []refresh.Result{pending}); len(got) != 0 {
		t.Fatalf("recorded %v while the restart is pending, want nothing yet", got)
	}
	now := map[subject]Record{s: {"configmap/a": "x", "configmap/b": "y"}}
	later, _ := recordedLater(kept, func() []inspect.Use { return all }, []refresh.Result{pending}, map[string]bool{"Deployment/web": true}, now)
	if k := slices.Sorted(slices.Values(later[s])); !slices.Equal(k, want) {
		t.Fatalf("recorded once verified: %v, want %v", later, want)
	}
}

// A change's copy taken for an earlier edit (a verification that ended
// after a round acted on a later edit) brings back nothing of what was
// said of the earlier edit: a restart deferred to its window for the
// earlier edit, then held for the limit after the later one, is said again
// when the window holds it once more. Whichever is requeued first.
func TestRequeueOfAnEarlierEditKeepsTheLaterOnesDeferrals(t *testing.T) {
	k := inspect.ObjectKey{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "x"}
	now := time.Date(2026, 1, 5, 2, 37, 0, 0, time.UTC)
	window := Hold{Reason: "window closed", Window: "Mon-Sun 02:00-02:10", Kind: HoldWindow, Until: time.Date(2026, 1, 6, 2, 0, 0, 0, time.UTC)}
	limit := Hold{Reason: "1 restarts are under way (--max-concurrent-restarts)", Kind: HoldLimit}
	edit := func(l *Loop, v string) {
		l.noteChange(inspect.Object{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "x", Exists: true, Data: map[string][]byte{"a": []byte("0")}},
			inspect.Object{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "x", Exists: true, Data: map[string][]byte{"a": []byte(v)}})
	}
	for _, earlierFirst := range []bool{true, false} {
		l := &Loop{}
		l.defaults()
		edit(l, "1")
		earlier := *l.pending[k]
		delete(l.pending, k) // taken by a round
		earlier.firstDeferral("Deployment/w0", window, now.Add(-2*time.Minute))
		edit(l, "2")
		later := *l.pending[k]
		delete(l.pending, k)
		later.firstDeferral("Deployment/w0", limit, now.Add(-time.Minute))
		requeueBoth(l, earlier, later, earlierFirst)
		if !l.pending[k].firstDeferral("Deployment/w0", window, now) {
			t.Errorf("requeued earlier first %t: the window's deferral is not said again after the later edit (told %v)", earlierFirst, l.pending[k].told)
		}
	}
}

// An object is not recorded on a workload while the workload's restart for
// it is still being verified: a later round that only remounted the
// workload's volumes for another edit of the object did not make its env
// current, and a new leader would take the record's word for it.
func TestNoRecordWhileTheRestartIsVerified(t *testing.T) {
	l := &Loop{}
	l.defaults()
	k := inspect.ObjectKey{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "x"}
	web := subject{Kind: "Deployment", Namespace: "ns", Name: "web", workload: inspect.WorkloadRef{Kind: "Deployment", Name: "web"}}
	v := &verification{changes: map[inspect.ObjectKey]*pending{k: {change: Change{Object: k}}},
		results: []refresh.Result{{Action: refresh.Action{Action: refresh.ActionRestart, Target: refresh.Target{Kind: "Deployment", Namespace: "ns", Name: "web"}}, Pending: true}}}
	l.verifying = map[string][]*verification{"ns": {v}}
	if got := l.unchangedSince(web, []string{"configmap/x", "configmap/y"}, nil); strings.Join(got, ",") != "configmap/y" {
		t.Errorf("unchangedSince(web) = %v while its restart for configmap/x is verified, want configmap/y only", got)
	}
	other := subject{Kind: "Deployment", Namespace: "ns", Name: "api", workload: inspect.WorkloadRef{Kind: "Deployment", Name: "api"}}
	if got := l.unchangedSince(other, []string{"configmap/x"}, nil); len(got) != 1 {
		t.Errorf("unchangedSince(api) = %v: another workload's verification does not hold its record", got)
	}
	v.results = nil // verified
	if got := l.unchangedSince(web, []string{"configmap/x", "configmap/y"}, nil); len(got) != 2 {
		t.Errorf("unchangedSince(web) = %v once verified, want both", got)
	}
}

// A change the watch delivers late (a cut, then a relist) of the version a
// restart's new pods read is no edit since for the workload they replaced:
// the object is recorded, and the late change restarts nothing again. A
// later version, or a workload no restart replaced, waits for its round.
func TestLateChangeOfTheVersionARestartReadIsRecorded(t *testing.T) {
	l := &Loop{}
	l.defaults()
	k := inspect.ObjectKey{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "x"}
	web := subject{Kind: "Deployment", Namespace: "ns", Name: "web", workload: inspect.WorkloadRef{Kind: "Deployment", Name: "web"}}
	l.noteChange(inspect.Object{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "x", Exists: true, Data: map[string][]byte{"a": []byte("1")}, ResourceVersion: "6"},
		inspect.Object{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "x", Exists: true, Data: map[string][]byte{"a": []byte("2")}, ResourceVersion: "7"})
	if l.pending[k].change.Version != "7" {
		t.Fatalf("pending change version %q, want 7", l.pending[k].change.Version)
	}
	for _, tc := range []struct {
		name string
		held Record
		want int
	}{
		{"replaced, read version 7", Record{"configmap/x": "abcd1234:v2.DIGEST.7"}, 1},
		{"replaced, read version 6", Record{"configmap/x": "abcd1234:v2.DIGEST.6"}, 0},
		{"not replaced", nil, 0},
	} {
		if got := l.unchangedSince(web, []string{"configmap/x"}, tc.held); len(got) != tc.want {
			t.Errorf("%s: unchangedSince = %v, want %d objects", tc.name, got, tc.want)
		}
	}
}

// failingPatcher fails every patch with err (nil: accepts it).
type failingPatcher struct{ err error }

func (p *failingPatcher) Patch(context.Context, refresh.Target, types.PatchType, []byte, bool) error {
	return p.err
}

// TestRecordNotWrittenIsKeptByTheLeader: a record whose write failed (an
// API server that could not answer) is what this leader takes for the
// subject's record until a write succeeds: a late delivery of an edit its
// restart's new pods read is then no edit for it, and the workload is not
// restarted again because its annotation lags. It is forgotten once
// written, or once the subject reads nothing (a pod replaced).
func TestRecordNotWrittenIsKeptByTheLeader(t *testing.T) {
	p := &failingPatcher{err: apierrors.NewServiceUnavailable("could not be completed at this time")}
	l := &Loop{Cluster: refresh.Cluster{Patcher: p}, Emit: func(Event) {}}
	l.defaults()
	web := subject{Kind: "Deployment", Namespace: "ns", Name: "web", workload: inspect.WorkloadRef{Kind: "Deployment", Name: "web"}}
	meta := map[inspect.WorkloadRef]subjectMeta{web.workload: {workload: map[string]string{AnnotationApplied: `{"configmap/x":"old"}`}}}
	r := Record{"configmap/x": "new"}
	l.writeRecord(context.Background(), web, r)
	if got := l.recordOf(web, meta, nil); got != r.String() {
		t.Fatalf("after a failed write: %s, want the record not written %s", got, r)
	}
	p.err = nil
	r2 := Record{"configmap/x": "newer"}
	l.writeRecord(context.Background(), web, r2)
	meta[web.workload].workload[AnnotationApplied] = r2.String()
	if got := l.recordOf(web, meta, nil); got != r2.String() {
		t.Errorf("once written: %s, want the annotation %s", got, r2)
	}
	p.err = apierrors.NewNotFound(schema.GroupResource{Resource: "deployments"}, "web")
	l.writeRecord(context.Background(), web, Record{"configmap/x": "gone"})
	if got := l.recordOf(web, meta, nil); got != r2.String() {
		t.Errorf("gone: %s, want nothing kept", got)
	}
	p.err = apierrors.NewServiceUnavailable("could not be completed at this time")
	l.writeRecord(context.Background(), web, r)
	l.forgetUnwritten("ns", map[subject]Record{web: r})
	if got := l.recordOf(web, meta, nil); got != r.String() {
		t.Errorf("a round in which web still reads: %s, want the record not written %s", got, r)
	}
	l.forgetUnwritten("ns", map[subject]Record{})
	if got := l.recordOf(web, meta, nil); got != r2.String() {
		t.Errorf("a round in which web reads nothing: %s, want it forgotten", got)
	}
}

// A recheck of an earlier edit (its restart was sent, and timed out) stands
// when its copy joins a later edit's retry that concerns other workloads
// only, in either order: the later edit's first round concerned every
// use, so the workload is verified again, never restarted a second time by
// its on-change policy. One the later edit retries itself is left to it.
func TestEarlierEditsRecheckStandsInALaterRetry(t *testing.T) {
	k := inspect.ObjectKey{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "x"}
	edit := func(l *Loop, v string) {
		l.noteChange(inspect.Object{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "x", Exists: true, Data: map[string][]byte{"a": []byte("0")}},
			inspect.Object{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "x", Exists: true, Data: map[string][]byte{"a": []byte(v)}})
	}
	for _, tc := range []struct {
		laterOnly string
		want      bool
	}{{"Deployment/w1", true}, {"Deployment/w2", false}} {
		for _, earlierFirst := range []bool{true, false} {
			l := &Loop{}
			l.defaults()
			edit(l, "1")
			earlier := *l.pending[k]
			delete(l.pending, k) // taken by the round that restarted w2
			earlier.only, earlier.recheck = map[string]bool{"Deployment/w2": true}, map[string]bool{"Deployment/w2": true}
			edit(l, "2")
			later := *l.pending[k]
			delete(l.pending, k) // taken: its round retries one workload
			later.only = map[string]bool{tc.laterOnly: true}
			requeueBoth(l, earlier, later, earlierFirst)
			if got := l.pending[k].recheck["Deployment/w2"]; got != tc.want {
				t.Errorf("later retries %s, earlier requeued first %t: w2 rechecked %t, want %t (recheck %v)", tc.laterOnly, earlierFirst, got, tc.want, l.pending[k].recheck)
			}
		}
	}
}

// TestNoRecordOfAnEditNotDeliveredYet: a round reads its objects as they
// are now, which may hold an edit the watch has not delivered (a cut). It
// verifies only the uses the change it acts on concerns, so it does not
// record the object at that newer version: the record would tell the
// next leader that the workload reads an edit no one checked.
func TestNoRecordOfAnEditNotDeliveredYet(t *testing.T) {
	f := newRoundFixture(t)
	f.loop.DigestKey = []byte("0123456789abcdef0123456789abcdef")
	envFrom := func(name string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "a"}, Key: name}}}
	}
	for _, o := range deploymentObjects("two", map[string]string{AnnotationWatch: "true"}, corev1.Container{Env: []corev1.EnvVar{envFrom("K"), envFrom("X")}}) {
		if err := f.client.Tracker().Add(o); err != nil {
			t.Fatal(err)
		}
	}
	f.ex.Containers["ns/two-1-a/app"] = &readtest.Container{Env: map[string]string{"K": "2", "X": "x"}}
	f.ex.Containers["ns/web-1-a/app"].Env["K"] = "2"
	cms := f.client.CoreV1().ConfigMaps("ns")
	write := func(rv string, data map[string]string) *corev1.ConfigMap {
		cm := configMap("a", data)
		cm.ResourceVersion = rv
		got, err := cms.Update(context.Background(), cm, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	old, _ := cms.Get(context.Background(), "a", metav1.GetOptions{})
	cur := write("5", map[string]string{"K": "2", "X": "x"})
	f.loop.noteChange(inspect.ConfigMapObject(old), inspect.ConfigMapObject(cur)) // delivered: K changed
	write("6", map[string]string{"K": "2", "X": "y"})                             // X changed too, not delivered yet
	f.step(3 * time.Second)
	if rec := ParseRecord(f.record("two")); rec["configmap/a"] != "" {
		t.Errorf("two's record holds configmap/a (%s) at a version whose edit of X no round checked", rec["configmap/a"])
	}
}

// A completed eviction of a workload's pods replaced them, as a rollout
// restart does: their replacements read every object when they started.
// One that left a pod not evicted, or failed, replaced nothing for good.
func TestCompletedEvictionReplacesTheWorkloadsPods(t *testing.T) {
	web := refresh.Target{Kind: "Deployment", Namespace: "ns", Name: "web"}
	for _, tc := range []struct {
		name string
		r    refresh.Result
		want bool
	}{
		{"restart", refresh.Result{Action: refresh.Action{Action: refresh.ActionRestart, Target: web}, Outcome: refresh.OutcomeCurrent}, true},
		{"eviction", refresh.Result{Action: refresh.Action{Action: refresh.ActionEvict, Target: web}, Outcome: refresh.OutcomeCurrent, Evicted: []string{"web-1"}}, true},
		{"eviction of some pods", refresh.Result{Action: refresh.Action{Action: refresh.ActionEvict, Target: web}, Outcome: refresh.OutcomeCurrent, Evicted: []string{"web-1"}, NotEvicted: []string{"web-2"}}, false},
		{"failed eviction", refresh.Result{Action: refresh.Action{Action: refresh.ActionEvict, Target: web}, Outcome: refresh.OutcomeFailed, Error: "refused"}, false},
	} {
		if got := replacedBy([]refresh.Result{tc.r})["Deployment/web"]; got != tc.want {
			t.Errorf("%s: replaced %t, want %t", tc.name, got, tc.want)
		}
	}
}

// requeueBoth puts back copies of an earlier and a later edit of one
// object, the earlier first or not.
func requeueBoth(l *Loop, earlier, later pending, earlierFirst bool) {
	if earlierFirst {
		l.requeue(earlier)
		l.requeue(later)
		return
	}
	l.requeue(later)
	l.requeue(earlier)
}

type countingPatcher struct{ n int }

func (p *countingPatcher) Patch(context.Context, refresh.Target, types.PatchType, []byte, bool) error {
	p.n++
	return nil
}

// TestNoRecordIsWrittenWhileTheResumeIsOwed: a namespace whose resume
// failed and is tried again writes no record until it has run. An edit
// made while no leader acted is in the object as the informers listed it,
// so a live change of another of its keys, acted on first, would record
// the object as it is now on a workload that reads both, and the resume
// would find that record current and the first edit gone. The rounds go on
// reading this leader's record (an edit delivered again is no edit for a
// workload that read it), during the resume and after it.
func TestNoRecordIsWrittenWhileTheResumeIsOwed(t *testing.T) {
	p := &countingPatcher{}
	l := &Loop{Cluster: refresh.Cluster{Patcher: p}, Emit: func(Event) {}}
	l.defaults()
	web := subject{Kind: "Deployment", Namespace: "ns", Name: "web", workload: inspect.WorkloadRef{Kind: "Deployment", Name: "web"}}
	write := func() {
		l.writeRecords(context.Background(), map[subject][]string{web: {"configmap/x"}}, map[subject]Record{web: {"configmap/x": "new"}}, nil,
			func(subject) (string, bool) { return `{"configmap/x":"old"}`, true })
	}
	l.resumeAgain["ns"] = resumeRetry{attempts: 1, at: l.Clock().Add(time.Minute)}
	write()
	if r, ok := l.notWritten(web); p.n != 0 || !ok || r != `{"configmap/x":"new"}` {
		t.Fatalf("with the resume of ns owed: %d records written, this leader's %q (%t); want none written, the new one held", p.n, r, ok)
	}
	meta := map[inspect.WorkloadRef]subjectMeta{web.workload: {workload: map[string]string{AnnotationApplied: `{"configmap/x":"old"}`}}}
	if got := l.resumeRecordOf(web, meta, nil); got != `{"configmap/x":"old"}` {
		t.Errorf("the record the resume compares: %q, want the annotation's, not the one held", got)
	}
	delete(l.resumeAgain, "ns")
	l.keepHeld("ns") // as the resume does once it compared
	if r, ok := l.notWritten(web); !ok || r != `{"configmap/x":"new"}` || len(l.held) != 0 {
		t.Errorf("once resumed: this leader's record %q (%t), %d held; want the new one kept as unwritten, none held", r, ok, len(l.held))
	}
	write()
	if p.n != 1 {
		t.Errorf("once resumed: %d records written, want 1", p.n)
	}
}

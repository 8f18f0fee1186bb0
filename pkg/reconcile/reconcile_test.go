package reconcile

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

func TestMergeJoinsSuccessiveChanges(t *testing.T) {
	k := inspect.ObjectKey{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "app"}
	cases := []struct {
		name string
		a, b Change
		want string
	}{
		{"keys joined, sorted, once", Change{Object: k, Keys: []string{"b", "a"}}, Change{Object: k, Keys: []string{"c", "a"}}, "[a b c] created=false deleted=false"},
		{"created then edited", Change{Object: k, Created: true}, Change{Object: k, Keys: []string{"x"}}, "[x] created=true deleted=false"},
		{"created then deleted", Change{Object: k, Created: true}, Change{Object: k, Deleted: true}, "[] created=false deleted=true"},
		{"deleted then created", Change{Object: k, Deleted: true}, Change{Object: k, Created: true}, "[] created=true deleted=false"},
	}
	for _, tc := range cases {
		m := merge(tc.a, tc.b)
		if got := fmt.Sprintf("%v created=%v deleted=%v", m.Keys, m.Created, m.Deleted); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

func item(object, pod string, keys ...string) inspect.Use {
	return inspect.Use{Object: inspect.ObjectRef{Kind: inspect.KindConfigMap, Namespace: "ns", Name: object, Exists: true},
		Pod: inspect.PodRef{Name: pod}, Keys: keys}
}

func TestConcernedKeepsTheUsesThatReadAChangedKey(t *testing.T) {
	app := inspect.ObjectKey{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "app"}
	other := inspect.ObjectKey{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "other"}
	items := []inspect.Use{
		item("app", "whole"),        // reads every key
		item("app", "reads-a", "a"), // items / env of key a
		item("app", "reads-b", "b"),
		item("other", "o", "z"),
		item("unchanged", "u"),
	}
	changes := map[inspect.ObjectKey]*pending{
		app:   {change: Change{Object: app, Keys: []string{"a"}}},
		other: {change: Change{Object: other}, existing: true},
	}
	kept, acted := concernedItems(items, changes)
	var pods []string
	for _, it := range kept {
		pods = append(pods, it.Pod.Name)
	}
	if got := strings.Join(pods, ","); got != "whole,reads-a,o" {
		t.Errorf("kept %s, want whole,reads-a,o (a key b is not read by a change of a; --sync-existing keeps every use)", got)
	}
	if !acted[app] || !acted[other] || len(acted) != 2 {
		t.Errorf("acted %v, want app and other", acted)
	}
	// a retry of a held restart: the uses of that workload only
	changes[app].only = map[string]bool{"Deployment/api": true}
	items[0].Workload = inspect.WorkloadRef{Kind: "Deployment", Name: "api"}
	items[1].Workload = inspect.WorkloadRef{Kind: "Deployment", Name: "web"}
	kept, _ = concernedItems(items[:2], changes)
	if len(kept) != 1 || kept[0].Pod.Name != "whole" {
		t.Errorf("retry kept %v, want the use of deployment api only", kept)
	}
}

// TestARecheckConcernsEveryUseOfItsWorkload: a workload verified again
// after its action for a change timed out (a restart whose rollout does
// not complete) is checked in every use of the object, whatever key: the
// restart was to make them all current, and one stale for another key is
// said (a manual step: not sent again), not left unsaid.
func TestARecheckConcernsEveryUseOfItsWorkload(t *testing.T) {
	app := inspect.ObjectKey{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "app"}
	items := []inspect.Use{item("app", "web-1", "a"), item("app", "web-1", "b"), item("app", "api-1", "b")}
	items[0].Workload = inspect.WorkloadRef{Kind: "Deployment", Name: "web"}
	items[1].Workload = items[0].Workload
	items[2].Workload = inspect.WorkloadRef{Kind: "Deployment", Name: "api"}
	changes := map[inspect.ObjectKey]*pending{app: {change: Change{Object: app, Keys: []string{"a"}}}}
	count := func() int { kept, _ := concernedItems(items, changes); return len(kept) }
	if n := count(); n != 1 {
		t.Fatalf("a change of key a: %d uses kept, want web's of a", n)
	}
	changes[app].recheck = map[string]bool{"Deployment/web": true}
	kept, _ := concernedItems(items, changes)
	if len(kept) != 2 || kept[0].Keys[0] != "a" || kept[1].Keys[0] != "b" || kept[1].Workload.Name != "web" {
		t.Errorf("web verified again: kept %v, want both of web's uses, not api's", kept)
	}
}

func action(kind refresh.ActionKind, name string) refresh.Action {
	return refresh.Action{Action: kind, Target: refresh.Target{Kind: "Deployment", Namespace: "ns", Name: name}}
}

func TestGateLimitsRestartsAndWaitsForRollouts(t *testing.T) {
	actions := []refresh.Action{
		{Action: refresh.ActionAnnotate, Target: refresh.Target{Kind: "Pod", Namespace: "ns", Name: "p"}},
		action(refresh.ActionRestart, "rolling"),
		action(refresh.ActionRestart, "a"),
		action(refresh.ActionEvict, "b"),
		action(refresh.ActionRestart, "c"),
		action(refresh.ActionRestart, "stuck"),
	}
	rollout := func(t refresh.Target) Hold {
		switch t.Name {
		case "rolling":
			return Hold{Reason: "the previous rollout of deployment/rolling is not complete"}
		case "stuck":
			return Hold{Reason: "stuck", Stuck: true}
		}
		return Hold{}
	}
	asked := map[string]bool{} // whose schedule (the pace) was asked
	schedule := func(t refresh.Target) Hold {
		asked[t.Name] = true
		return Hold{}
	}
	send, held := Gate(actions, 2, 0, rollout, schedule)
	var sent []string
	for _, a := range send {
		sent = append(sent, string(a.Action)+" "+a.Target.Name)
	}
	if got := strings.Join(sent, ", "); got != "annotate p, restart a, evict b" {
		t.Errorf("sent %s, want the annotation and two restarts", got)
	}
	if len(held) != 3 || !strings.Contains(held[1].Reason, "not complete") || !strings.Contains(held[4].Reason, "--max-concurrent-restarts") ||
		!strings.Contains(held[5].Reason, "--max-concurrent-restarts") {
		t.Errorf("held %+v, want rolling (rollout), c and stuck (the limit)", held)
	}
	if asked["c"] || asked["stuck"] || asked["rolling"] || !asked["a"] || !asked["b"] {
		t.Errorf("schedules asked %v, want only those of a and b: a restart held by the limit or a rollout spends nothing of the pace", asked)
	}
	if _, held := Gate(actions, 0, 0, rollout, schedule); !held[5].Stuck || len(held) != 2 {
		t.Errorf("without a limit: held %+v, want rolling and stuck", held)
	}
	// over the limit, a workload whose own rollout goes on (its previous
	// restart, counted as busy) is held for that rollout, not the limit
	own := []refresh.Action{action(refresh.ActionRestart, "own"), action(refresh.ActionRestart, "other")}
	_, held = Gate(own, 1, 1, func(t refresh.Target) Hold {
		if t.Name == "own" {
			return Hold{Reason: "the previous rollout of deployment/own is not complete", Kind: HoldRollout}
		}
		return Hold{}
	}, schedule)
	if !held[0].rollout() || !strings.Contains(held[1].Reason, "--max-concurrent-restarts") {
		t.Errorf("over the limit: held %+v, want own for its rollout and other for the limit", held)
	}
}

func TestTrimKeepsNoSecretValue(t *testing.T) {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Data: map[string][]byte{"token": []byte("s3cr3t-token-value")}}
	obj, err := trim(s)
	got := obj.(*corev1.Secret)
	if err != nil || len(got.ManagedFields) != 0 || strings.Contains(string(got.Data["token"]), "s3cr3t") || len(got.Data["token"]) != 32 {
		t.Fatalf("trimmed %+v (%v), want managed fields gone and the value as its SHA-256", got, err)
	}
	other, _ := trim(&corev1.Secret{Data: map[string][]byte{"token": []byte("another-value")}})
	if c := Diff(inspect.SecretObject(got), inspect.SecretObject(other.(*corev1.Secret))); strings.Join(c.Keys, ",") != "token" {
		t.Errorf("a changed value: keys %v, want token", c.Keys)
	}
}

// TestTrimKeepsNoConfigMapValue: the cache holds a ConfigMap's values as
// their SHA-256, 32 bytes a key however large the value, and a changed
// value still reads as a change of its key.
func TestTrimKeepsNoConfigMapValue(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	obj, _ := trim(&corev1.ConfigMap{Data: map[string]string{"bundle": big, "mode": "a"}, BinaryData: map[string][]byte{"cert": []byte(big)}})
	got := obj.(*corev1.ConfigMap)
	if len(got.Data["bundle"]) != 32 || len(got.Data["mode"]) != 32 || len(got.BinaryData["cert"]) != 32 {
		t.Fatalf("trimmed values of %d, %d and %d bytes, want each its SHA-256", len(got.Data["bundle"]), len(got.Data["mode"]), len(got.BinaryData["cert"]))
	}
	other, _ := trim(&corev1.ConfigMap{Data: map[string]string{"bundle": big, "mode": "b"}, BinaryData: map[string][]byte{"cert": []byte(big)}})
	if c := Diff(inspect.ConfigMapObject(got), inspect.ConfigMapObject(other.(*corev1.ConfigMap))); strings.Join(c.Keys, ",") != "mode" {
		t.Errorf("a changed value: keys %v, want mode", c.Keys)
	}
}

// TestTrimKeepsTheLastChange: of the managed fields, the cache keeps the
// time of the newest entry, which the informer's ConfigMaps report as
// their last change.
func TestTrimKeepsTheLastChange(t *testing.T) {
	created, edited := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), metav1.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	older := metav1.NewTime(created.Add(time.Hour))
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app", CreationTimestamp: metav1.NewTime(created),
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "a", Time: &edited, FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{}}`)}}, {Manager: "b", Time: &older}}}}
	obj, _ := trim(cm)
	got := obj.(*corev1.ConfigMap)
	if len(got.ManagedFields) != 1 || got.ManagedFields[0].FieldsV1 != nil {
		t.Errorf("managed fields %+v, want one entry with a time only", got.ManagedFields)
	}
	if lc := inspect.ConfigMapObject(got).LastChange; !lc.Equal(edited.Time) {
		t.Errorf("last change %s, want the newest entry's %s", lc, edited)
	}
}

func TestSelectsSkipsSystemConfigMaps(t *testing.T) {
	root := inspect.ObjectKey{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "kube-root-ca.crt"}
	app := inspect.ObjectKey{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "app"}
	l := &Loop{}
	if l.selects(root) || !l.selects(app) {
		t.Errorf("selects(kube-root-ca.crt) %v, selects(app) %v; want false, true", l.selects(root), l.selects(app))
	}
	l.IncludeSystem = true
	if !l.selects(root) {
		t.Error("with IncludeSystem, kube-root-ca.crt is not selected")
	}
	l = &Loop{Config: Config{Names: []inspect.ObjectKey{app}}}
	if !l.selects(app) || l.selects(inspect.ObjectKey{Kind: inspect.KindSecret, Namespace: "ns", Name: "app"}) {
		t.Error("with names, only the named object is selected (by kind too)")
	}
}

// TestDueTakesANamespaceAtOnce: the edits of one namespace fall due
// together, a quiet period after the last of them, so a release that edits
// two objects one workload reads is one round; another namespace keeps its
// own clock.
func TestDueTakesANamespaceAtOnce(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := &Loop{Config: Config{Debounce: 2 * time.Second, MaxWait: 30 * time.Second, Now: func() time.Time { return now }}}
	l.Clock = func() time.Time { return now }
	l.defaults()
	cm := func(ns, name, v string) inspect.Object {
		return inspect.Object{Kind: inspect.KindConfigMap, Namespace: ns, Name: name, Exists: true, Data: map[string][]byte{"k": []byte(v)}}
	}
	at := func(d time.Duration) { now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(d) }
	l.noteChange(cm("a", "one", "0"), cm("a", "one", "1"))
	l.noteChange(cm("b", "three", "0"), cm("b", "three", "1"))
	at(1500 * time.Millisecond)
	l.noteChange(cm("a", "two", "0"), cm("a", "two", "1"))
	// due dispatches, and takes the changes of every namespace queued
	due := func() (string, time.Time) {
		next := l.dispatch()
		var out []string
		for l.queue.Len() > 0 {
			ns, _ := l.queue.Get()
			for k := range l.take(ns) {
				out = append(out, k.Namespace+"/"+k.Name)
			}
			l.untake(ns)
			l.queue.Done(ns)
		}
		slices.Sort(out)
		return strings.Join(out, " "), next
	}
	at(2 * time.Second)
	if names, next := due(); names != "b/three" || !next.Equal(now.Add(1500*time.Millisecond)) {
		t.Fatalf("2 s: due %q next %s, want b/three alone, and a at 3.5 s (the quiet time after its last edit)", names, next)
	}
	at(3500 * time.Millisecond)
	if names, _ := due(); names != "a/one a/two" {
		t.Fatalf("3.5 s: due %q, want both objects of namespace a", names)
	}
	if names, next := due(); names != "" || !next.IsZero() {
		t.Fatalf("after: due %q next %s, want nothing left", names, next)
	}
}

// TestDeferralIsToldOncePerEdit: a restart held back at every retry of a
// long rollout is reported the first time only, per workload and kind of
// reason, and again after a new edit.
func TestDeferralIsToldOncePerEdit(t *testing.T) {
	l := &Loop{}
	l.defaults()
	cm := func(v string) inspect.Object {
		return inspect.Object{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "app", Exists: true, Data: map[string][]byte{"k": []byte(v)}}
	}
	l.noteChange(cm("0"), cm("1"))
	p := l.pending[inspect.ObjectKey{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "app"}]
	rollout, limit := Hold{Kind: HoldRollout}, Hold{}
	steps := []struct {
		workload string
		hold     Hold
		want     bool
	}{{"Deployment/a", rollout, true}, {"Deployment/a", rollout, false}, {"Deployment/b", rollout, true}, {"Deployment/a", limit, true}, {"Deployment/a", limit, false}}
	for i, s := range steps {
		if got := p.firstDeferral(s.workload, s.hold, time.Time{}); got != s.want {
			t.Errorf("step %d (%s, rollout %t): %t, want %t", i, s.workload, s.hold.rollout(), got, s.want)
		}
	}
	l.noteChange(cm("1"), cm("2"))
	if !p.firstDeferral("Deployment/a", rollout, time.Time{}) {
		t.Errorf("after a new edit: not told again")
	}
}

package reconcile

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

type namedFake []refresh.AnnotatedWorkload

func (n namedFake) Annotated(context.Context, string, ...string) ([]refresh.AnnotatedWorkload, error) {
	return n, nil
}

// TestNamedRestartsFollowReloadersReloadList: a workload that names an
// edited object in Reloader's reload annotation without reading it is
// restarted, once however many of its objects changed; one that reads it,
// names another, is paused, is outside -l or was not held back is not; a
// creation is not an edit.
func TestNamedRestartsFollowReloadersReloadList(t *testing.T) {
	reload := func(list string) map[string]string { return map[string]string{ReloaderConfigMapReload: list} }
	app := map[string]string{"app": "x"}
	readsApp := corev1.PodSpec{Containers: []corev1.Container{{Name: "c", EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}}}}}}
	ws := namedFake{
		{Kind: "Deployment", Name: "api", Annotations: reload("app,other"), Labels: app},
		{Kind: "StatefulSet", Name: "db", Template: reload("ap+"), Labels: app},
		{Kind: "Deployment", Name: "reads", Annotations: reload("app"), Labels: app, Spec: readsApp},
		{Kind: "Deployment", Name: "elsewhere", Annotations: reload("nothing"), Labels: app},
		{Kind: "Deployment", Name: "paused", Annotations: map[string]string{ReloaderConfigMapReload: "app", AnnotationPaused: "true"}, Labels: app},
		{Kind: "DaemonSet", Name: "unlabelled", Annotations: reload("app")},
	}
	key := func(name string) inspect.ObjectKey {
		return inspect.ObjectKey{Kind: inspect.KindConfigMap, Namespace: "ns", Name: name}
	}
	edit := func(name string) *pending {
		return &pending{change: Change{Object: key(name), Keys: []string{"k"}}}
	}
	snap := &inspect.Snapshot{}
	cases := []struct {
		name     string
		selector string
		changes  map[inspect.ObjectKey]*pending
		want     string
		skips    string
	}{
		{"two objects api names", "", map[inspect.ObjectKey]*pending{key("app"): edit("app"), key("other"): edit("other")},
			"Deployment/api[app other] StatefulSet/db[app] DaemonSet/unlabelled[app]", "Deployment/paused"},
		{"-l", "app=x", map[inspect.ObjectKey]*pending{key("app"): edit("app")}, "Deployment/api[app] StatefulSet/db[app]", "Deployment/paused"},
		{"created", "", map[inspect.ObjectKey]*pending{key("app"): {change: Change{Object: key("app"), Keys: []string{"k"}, Created: true}}}, "", ""},
		{"retry of db only", "", map[inspect.ObjectKey]*pending{key("app"): {change: Change{Object: key("app"), Keys: []string{"k"}},
			only: map[string]bool{"StatefulSet/db": true}, retry: true}}, "StatefulSet/db[app]", ""},
	}
	for _, tc := range cases {
		var skips []string
		l := &Loop{Config: Config{PodSelector: tc.selector}, Named: ws, Emit: func(e Event) {
			if e.Kind == EventSkip {
				skips = append(skips, e.Target.Kind+"/"+e.Target.Name)
			}
		}}
		l.defaults()
		got, err := l.namedRestarts(context.Background(), "ns", snap, tc.changes)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var rows []string
		for _, a := range got {
			var objs []string
			for _, c := range a.Consumers {
				if c.Mode != refresh.ModeNamed {
					t.Errorf("%s: consumer mode %s, want named", tc.name, c.Mode)
				}
				objs = append(objs, c.Object.Name)
			}
			if a.Action != refresh.ActionRestart || !strings.Contains(a.Reason, "named in "+ReloaderConfigMapReload) {
				t.Errorf("%s: %s %s (%s), want a restart named in the reload annotation", tc.name, a.Action, a.Target, a.Reason)
			}
			rows = append(rows, a.Target.Kind+"/"+a.Target.Name+"["+strings.Join(objs, " ")+"]")
		}
		if g := strings.Join(rows, " "); g != tc.want {
			t.Errorf("%s: restarts %q, want %q", tc.name, g, tc.want)
		}
		if g := strings.Join(skips, " "); g != tc.skips {
			t.Errorf("%s: skips %q, want %q", tc.name, g, tc.skips)
		}
	}
}

// TestNamedRestartsSpareAWorkloadWhosePodsStartedSinceTheEdit: an edit
// that reaches the loop late (a cut watch that lists again) is no reason
// to restart a named workload whose every pod was created after the
// object's last write, in whole seconds, both the API server's times: those
// pods read it when they started, and a result line says so. A pod created
// in the same second as the write or before it, no pod, a write of unknown
// time, or a change that removed a key leaves the edit owed.
func TestNamedRestartsSpareAWorkloadWhosePodsStartedSinceTheEdit(t *testing.T) {
	written := time.Date(2026, 1, 5, 2, 13, 50, 400_000_000, time.UTC)
	reload := map[string]string{ReloaderConfigMapReload: "app"}
	var ws namedFake
	var pods []corev1.Pod
	for _, w := range []struct {
		name    string
		created []time.Duration // after the write's second
	}{
		{"after", []time.Duration{time.Second, 3 * time.Second}},
		{"one-older", []time.Duration{time.Second, -time.Minute}},
		{"same-second", []time.Duration{time.Second, 900 * time.Millisecond}},
		{"no-pods", nil},
	} {
		ws = append(ws, refresh.AnnotatedWorkload{Kind: "StatefulSet", Name: w.name, Annotations: reload, Labels: map[string]string{"app": "x"}})
		for i, d := range w.created {
			pods = append(pods, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("%s-%d", w.name, i),
				CreationTimestamp: metav1.NewTime(written.Truncate(time.Second).Add(d)),
				OwnerReferences:   []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: w.name, Controller: ptr.To(true)}}}})
		}
	}
	key := inspect.ObjectKey{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "app"}
	snapOf := func(fields []metav1.ManagedFieldsEntry) *inspect.Snapshot {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app", ManagedFields: fields,
			CreationTimestamp: metav1.NewTime(written.Add(-time.Hour))}, Data: map[string]string{"k": "v2"}}
		return &inspect.Snapshot{Pods: pods, ConfigMaps: map[inspect.ObjectKey]*corev1.ConfigMap{key: cm}}
	}
	timed := []metav1.ManagedFieldsEntry{{Manager: "kubectl", Time: &metav1.Time{Time: written}}}
	all := "after restart, one-older restart, same-second restart, no-pods restart"
	for _, tc := range []struct {
		name     string
		snap     *inspect.Snapshot
		keys     []string
		selector string
		want     string
		spared   string
	}{
		{"an edit", snapOf(timed), []string{"k"}, "", "one-older restart, same-second restart, no-pods restart", "StatefulSet/after"},
		{"a write of unknown time", snapOf(nil), []string{"k"}, "", all, ""},
		{"a key removed", snapOf(timed), []string{"gone", "k"}, "", all, ""},
		{"-l: some pods only", snapOf(timed), []string{"k"}, "app=x", all, ""},
	} {
		var spared []string
		l := &Loop{Config: Config{PodSelector: tc.selector}, Named: ws, Emit: func(e Event) {
			if e.Kind == EventResult && e.Outcome == refresh.OutcomeCurrent && strings.Contains(e.Message, "read it when it started") {
				spared = append(spared, e.Action.Target.Kind+"/"+e.Action.Target.Name)
			}
		}}
		l.defaults()
		changes := map[inspect.ObjectKey]*pending{key: {change: Change{Object: key, Keys: tc.keys}}}
		got, err := l.namedRestarts(context.Background(), "ns", tc.snap, changes)
		if err != nil {
			t.Fatal(err)
		}
		var rows []string
		for _, a := range got {
			rows = append(rows, a.Target.Name+" "+string(a.Action))
		}
		if g := strings.Join(rows, ", "); g != tc.want {
			t.Errorf("%s: named actions %q, want %q", tc.name, g, tc.want)
		}
		if g := strings.Join(spared, ", "); g != tc.spared {
			t.Errorf("%s: said spared %q, want %q", tc.name, g, tc.spared)
		}
	}
}

// TestNamedRestartsJoinThePlan: a workload the plan restarts or evicts gets
// the named objects as consumers of that action; the annotations of the
// pods a named restart replaces are folded into it; a workload whose pods
// the plan evicts, a paused Deployment, an OnDelete or partitioned
// StatefulSet is a manual action, not a restart that would replace no pod
// or do twice what the plan does.
func TestNamedRestartsJoinThePlan(t *testing.T) {
	target := func(kind, name string) refresh.Target { return refresh.Target{Kind: kind, Namespace: "ns", Name: name} }
	named := func(kind, name string) refresh.Action {
		return refresh.Action{Action: refresh.ActionRestart, Target: target(kind, name), Reason: "named",
			Consumers: []refresh.Consumer{{Mode: refresh.ModeNamed, Object: inspect.ObjectRef{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "n"}}}}
	}
	vol := refresh.Consumer{Mode: inspect.ModeVolume, Pod: "web-1", Object: inspect.ObjectRef{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "v"}}
	plan := []refresh.Action{
		{Action: refresh.ActionRestart, Target: target("Deployment", "api"), Consumers: []refresh.Consumer{{Mode: inspect.ModeEnv, Pod: "api-1"}}},
		{Action: refresh.ActionEvict, Target: target("Deployment", "evicted"), Consumers: []refresh.Consumer{{Mode: inspect.ModeEnv, Pod: "evicted-1"}}},
		{Action: refresh.ActionRestart, Target: target("StatefulSet", "db"), Consumers: []refresh.Consumer{{Mode: inspect.ModeEnv, Pod: "db-2"}}},
		{Action: refresh.ActionAnnotate, Target: target("Pod", "web-1"), Consumers: []refresh.Consumer{vol}},
		{Action: refresh.ActionAnnotate, Target: target("Pod", "other-1")},
	}
	items := []inspect.Use{{Object: inspect.ObjectRef{Namespace: "ns", Name: "v"}, Pod: inspect.PodRef{Name: "web-1"},
		Workload: inspect.WorkloadRef{Kind: "Deployment", Name: "web"}}}
	manualDB := restartable(named("StatefulSet", "db"), refresh.AnnotatedWorkload{Partition: 2})
	got := withNamed(plan, []refresh.Action{named("Deployment", "api"), named("Deployment", "evicted"), manualDB, named("Deployment", "web")}, items)
	var rows []string
	for _, a := range got {
		var modes []string
		for _, c := range a.Consumers {
			modes = append(modes, string(c.Mode))
		}
		rows = append(rows, string(a.Action)+" "+a.Target.String()+" ["+strings.Join(modes, " ")+"]")
	}
	want := "restart deployment/api [env named], evict deployment/evicted [env], restart statefulset/db [env], annotate pod/other-1 [], " +
		"manual deployment/evicted [named], manual statefulset/db [named], restart deployment/web [named volume]"
	if g := strings.Join(rows, ", "); g != want {
		t.Errorf("plan:\n got %s\nwant %s", g, want)
	}
	if m := got[4].Reason; !strings.Contains(m, "--restart-via=evict") || !strings.Contains(m, "kubectl rollout restart deployment/evicted -n ns") {
		t.Errorf("the named restart of an evicted workload: %q, want the manual restart", m)
	}

	for _, tc := range []struct {
		w    refresh.AnnotatedWorkload
		want string
	}{
		{refresh.AnnotatedWorkload{}, "restart"}, {refresh.AnnotatedWorkload{Paused: true}, "manual: paused"},
		{refresh.AnnotatedWorkload{OnDelete: true}, "manual: OnDelete"}, {refresh.AnnotatedWorkload{Partition: 2}, "manual: partition (2)"},
	} {
		a := restartable(named("StatefulSet", "x"), tc.w)
		kind, detail, _ := strings.Cut(tc.want, ": ")
		if string(a.Action) != kind || !strings.Contains(a.Reason, detail) {
			t.Errorf("%+v: %s (%s), want %s", tc.w, a.Action, a.Reason, tc.want)
		}
	}
}

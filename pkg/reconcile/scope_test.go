package reconcile

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

func mustSelector(t *testing.T, s string) labels.Selector {
	t.Helper()
	sel, err := labels.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

func TestNamespaceOutOfScope(t *testing.T) {
	sel := mustSelector(t, "team=a,env!=prod")
	for _, c := range []struct {
		name   string
		scope  Scope
		ns     string
		labels map[string]string
		known  bool
		want   string
	}{
		{"no scope", Scope{}, "a", nil, false, ""},
		{"labels match", Scope{Namespaces: sel}, "a", map[string]string{"team": "a"}, true, ""},
		{"labels do not match", Scope{Namespaces: sel}, "a", map[string]string{"team": "a", "env": "prod"}, true,
			`namespace a is out of scope (its labels do not match --namespace-selector "env!=prod,team=a")`},
		{"not seen", Scope{Namespaces: sel}, "a", nil, false,
			`namespace a is out of scope (not seen with labels matching --namespace-selector "env!=prod,team=a")`},
		{"ignored though its labels match", Scope{Namespaces: sel, IgnoreNamespaces: []string{"b", "a"}}, "a", map[string]string{"team": "a"}, true,
			"namespace a is out of scope (--ignore-namespaces)"},
		{"ignored, no selector", Scope{IgnoreNamespaces: []string{"a"}}, "a", nil, false, "namespace a is out of scope (--ignore-namespaces)"},
		{"another one ignored", Scope{IgnoreNamespaces: []string{"b"}}, "a", nil, false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.scope.NamespaceOutOfScope(c.ns, c.labels, c.known); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestObjectOutOfScope(t *testing.T) {
	s := Scope{Objects: mustSelector(t, "cmsync=on")}
	if got := s.ObjectOutOfScope("ConfigMap", map[string]string{"cmsync": "on", "x": "y"}); got != "" {
		t.Errorf("a labelled object: %q, want in scope", got)
	}
	want := `out of scope: the Secret's labels do not match --resource-label-selector "cmsync=on"`
	if got := s.ObjectOutOfScope("Secret", map[string]string{"cmsync": "off"}); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := (Scope{}).ObjectOutOfScope("ConfigMap", nil); got != "" {
		t.Errorf("no selector: %q, want in scope", got)
	}
}

func TestWorkloadOutOfScope(t *testing.T) {
	s := Scope{IgnoreKinds: []string{"CronJob", "Job", "Rollout.argoproj.io"}}
	for _, c := range []struct {
		w    inspect.WorkloadRef
		want string
	}{
		{inspect.WorkloadRef{Kind: "CronJob", Name: "backup"}, "out of scope: its kind is ignored (--ignore-workload-kinds cronjobs)"},
		{inspect.WorkloadRef{Kind: "Job", Name: "once"}, "out of scope: its kind is ignored (--ignore-workload-kinds jobs)"},
		{inspect.WorkloadRef{Kind: "Deployment", Name: "web"}, ""},
		// a controller of another group is never taken for a built-in kind
		{inspect.WorkloadRef{Kind: "Job", Name: "x", APIVersion: "example.com/v1"}, ""},
		// an Argo Rollout by group and kind; another group's Rollout is not one
		{inspect.WorkloadRef{Kind: "Rollout", Name: "web", APIVersion: "argoproj.io/v1alpha1"}, "out of scope: its kind is ignored (--ignore-workload-kinds rollouts)"},
		{inspect.WorkloadRef{Kind: "Rollout", Name: "web", APIVersion: "example.com/v1"}, ""},
		{inspect.WorkloadRef{Kind: "Rollout", Name: "web"}, ""},
	} {
		if got := s.WorkloadOutOfScope(c.w); got != c.want {
			t.Errorf("%+v: got %q, want %q", c.w, got, c.want)
		}
	}
}

func TestWorkloadKinds(t *testing.T) {
	got, err := WorkloadKinds([]string{"CronJobs", "job", " ds ", "", "Deployment", "cronjob", "PODS", "sts", "rs"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "CronJob,DaemonSet,Deployment,Job,Pod,ReplicaSet,StatefulSet"; strings.Join(got, ",") != want {
		t.Errorf("got %v, want %s", got, want)
	}
	got, err = WorkloadKinds([]string{"Rollouts", "ro", "rollout"})
	if err != nil || strings.Join(got, ",") != "Rollout.argoproj.io" {
		t.Errorf("rollouts: got %v, %v; want %s", got, err, "Rollout.argoproj.io")
	}
	_, err = WorkloadKinds([]string{"jobs", "rollouts.example.com"})
	want := `unknown workload kind "rollouts.example.com"; valid kinds are cronjobs, daemonsets, deployments, jobs, pods, replicasets, rollouts, statefulsets`
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}

// TestUnlabelledObjectIsOutOfScopeNotDeleted: a ConfigMap whose labels stop
// matching --resource-label-selector leaves the informer's cache as if
// deleted; the round reads it as out of scope and restarts nothing, though
// its env consumer differs from it.
func TestUnlabelledObjectIsOutOfScopeNotDeleted(t *testing.T) {
	f := newRoundFixture(t)
	f.loop.Scope.Objects = mustSelector(t, "cmsync=on")
	f.ex.Containers["ns/web-1-a/app"].Env["K"] = "0"
	old, err := f.client.CoreV1().ConfigMaps("ns").Get(context.Background(), "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	was := inspect.ConfigMapObject(old)
	gone := was
	gone.Exists, gone.Data, gone.BinaryKeys = false, nil, nil
	f.loop.noteChange(was, gone) // the informer's delete
	f.step(5 * time.Second)
	want := `out of scope: the ConfigMap's labels do not match --resource-label-selector "cmsync=on"`
	if got := f.took(EventIgnored); strings.Join(got, "; ") != want {
		t.Errorf("ignored %q, want %q", got, want)
	}
	if f.restartedAt() != "" {
		t.Error("deployment/web was restarted for an object out of scope")
	}
}

// TestIgnoredWorkloadKindIsSkipped: a use through a workload of an ignored
// kind is reported skipped, and its workload is not restarted.
func TestIgnoredWorkloadKindIsSkipped(t *testing.T) {
	f := newRoundFixture(t)
	f.loop.Scope.IgnoreKinds = []string{"Deployment"}
	f.ex.Containers["ns/web-1-a/app"].Env["K"] = "1"
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	f.step(5 * time.Second)
	want := "deployment/web: out of scope: its kind is ignored (--ignore-workload-kinds deployments)"
	if got := f.took(EventSkip); strings.Join(got, "; ") != want {
		t.Errorf("skips %q, want %q", got, want)
	}
	if f.restartedAt() != "" {
		t.Error("deployment/web was restarted though its kind is ignored")
	}
}

// TestNamespaceOutOfScopeIsIgnored: a change in a namespace the selector
// does not select is reported ignored and acted on by nothing; once the
// namespace is labelled into scope its next change is acted on.
func TestNamespaceOutOfScopeIsIgnored(t *testing.T) {
	f := newRoundFixture(t)
	f.loop.Scope.Namespaces = mustSelector(t, "team=a")
	nsLabels := map[string]string{"team": "b"}
	f.loop.namespaceLabels = func(string) (map[string]string, bool) { return nsLabels, true }
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	f.step(5 * time.Second)
	want := `namespace ns is out of scope (its labels do not match --namespace-selector "team=a")`
	if got := f.took(EventIgnored); strings.Join(got, "; ") != want {
		t.Errorf("ignored %q, want %q", got, want)
	}
	if f.restartedAt() != "" {
		t.Fatal("deployment/web was restarted in a namespace out of scope")
	}
	nsLabels = map[string]string{"team": "a"}
	f.edit("a", map[string]string{"K": "3", "X": "x"})
	f.step(5 * time.Second)
	if got := f.took(EventAction); strings.Join(got, "; ") != "restart deployment/web" {
		t.Errorf("actions %q once in scope, want a restart of deployment/web", got)
	}
}

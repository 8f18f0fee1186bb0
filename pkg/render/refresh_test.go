package render

import (
	"strings"
	"testing"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

func TestConsumersNamesPathOrVariable(t *testing.T) {
	cm := inspect.ObjectRef{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "grafana"}
	pod := refresh.Target{Kind: "Pod", Namespace: "ns", Name: "g-0"}
	cs := []refresh.Consumer{
		{Object: cm, Pod: "g-0", Container: "grafana", Mode: inspect.ModeSubPath, Volume: "cfg", MountPath: "/etc/grafana/grafana.ini"},
		{Object: cm, Pod: "g-0", Container: "grafana", Mode: inspect.ModeSubPath, Volume: "cfg", MountPath: "/etc/grafana/ldap.toml"},
		{Object: cm, Pod: "g-0", Container: "grafana", Mode: inspect.ModeEnv, Env: "GF_LOG_LEVEL"},
		{Object: cm, Pod: "g-0", Container: "grafana", Mode: inspect.ModeEnvFrom, Env: "GF_"},
		{Object: cm, Pod: "g-0", Container: "grafana", Mode: inspect.ModeEnvFrom},
	}
	want := "g-0/grafana:subPath:/etc/grafana/grafana.ini,g-0/grafana:subPath:/etc/grafana/ldap.toml,g-0/grafana:env:$GF_LOG_LEVEL,+2 more"
	if got := Consumers(cs, pod, false); got != want {
		t.Errorf("Consumers =\n%s\nwant\n%s", got, want)
	}
	if got := Consumers(cs[3:], pod, false); got != "g-0/grafana:envFrom:$GF_*,g-0/grafana:envFrom" {
		t.Errorf("envFrom entries = %s", got)
	}
}

func TestConsumersSummarisesPodsUnlessWide(t *testing.T) {
	cm := inspect.ObjectRef{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "cfg"}
	var cs []refresh.Consumer
	for _, p := range []string{"web-a", "web-b", "web-c", "web-d"} {
		cs = append(cs, refresh.Consumer{Object: cm, Pod: p, Container: "app", Mode: inspect.ModeVolume, MountPath: "/etc/cfg"},
			refresh.Consumer{Object: cm, Pod: p, Container: "app", Mode: inspect.ModeEnv, Env: "L"})
	}
	web := refresh.Target{Kind: "Deployment", Namespace: "ns", Name: "web"}
	for _, c := range []struct {
		name   string
		cs     []refresh.Consumer
		target refresh.Target
		wide   bool
		want   string
	}{
		{"workload", cs, web, false, "deployment/web (4 pods)"},
		{"two pods", cs[:4], web, false, "deployment/web (2 pods)"},
		{"one pod", cs[:2], web, false, "web-a/app:volume:/etc/cfg,web-a/app:env:$L"},
		{"pods of no workload", cs, refresh.Target{Kind: "Pod", Name: "web-a"}, false, "4 pods"},
		{"wide", cs[:6], web, true, "web-a/app:volume:/etc/cfg,web-a/app:env:$L,web-b/app:volume:/etc/cfg,web-b/app:env:$L,web-c/app:volume:/etc/cfg,web-c/app:env:$L"},
		{"no pods", []refresh.Consumer{{Object: cm}}, refresh.Target{Kind: inspect.KindConfigMap, Name: "cfg"}, false, "configmap/cfg"},
	} {
		if got := Consumers(c.cs, c.target, c.wide); got != c.want {
			t.Errorf("%s: Consumers = %q, want %q", c.name, got, c.want)
		}
	}
}

// The verbs of the result line, evict included, and what counts as bad.
func TestResultLine(t *testing.T) {
	act := func(k refresh.ActionKind) refresh.Action { return refresh.Action{Action: k} }
	line, bad := ResultLine([]refresh.Result{
		{Action: act(refresh.ActionEvict), Outcome: refresh.OutcomeCurrent},
		{Action: act(refresh.ActionRestart), Outcome: refresh.OutcomeCurrent},
		{Action: act(refresh.ActionAnnotate), Outcome: refresh.OutcomeTimeout},
		{Action: act(refresh.ActionNone)},
	})
	if want := "refresh: 1 evicted current, 1 restarted current, 1 annotated timeout, 1 already current"; line != want || !bad {
		t.Errorf("ResultLine = %q, %v; want %q, true", line, bad, want)
	}
	if line, bad = ResultLine([]refresh.Result{{Action: act(refresh.ActionEvict), Outcome: refresh.OutcomeApplied}}); line != "refresh: 1 evicted applied" || bad {
		t.Errorf("ResultLine = %q, %v", line, bad)
	}
	if line, bad = ResultLine(nil); bad || line != "refresh: nothing consumes the selected objects: nothing to do" {
		t.Errorf("ResultLine(nil) = %q, %v", line, bad)
	}
}

// A manual action for a controller of another API group names it with its
// group, in TARGET and in the CONSUMERS summary.
func TestPlanTableNamesForeignOwnerWithItsGroup(t *testing.T) {
	cm := inspect.ObjectRef{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "cfg"}
	target := refresh.Target{Kind: "StatefulSet.apps.kruise.io", Namespace: "ns", Name: "db"}
	a := refresh.Action{Action: refresh.ActionManual, Target: target, Reason: "owner apps.kruise.io/v1beta1 StatefulSet \"db\" is not a built-in workload",
		Consumers: []refresh.Consumer{{Object: cm, Pod: "db-0", Container: "app", Mode: inspect.ModeEnv}, {Object: cm, Pod: "db-1", Container: "app", Mode: inspect.ModeEnv}}}
	var out strings.Builder
	if err := PrintTable(&out, Actions{Items: []refresh.Action{a}}, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"statefulset.apps.kruise.io/db (2 pods)", "apps.kruise.io/v1beta1 StatefulSet"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("plan table lacks %q:\n%s", want, out.String())
		}
	}
}

// The DETAIL cell of an annotated pod says what became of its reload
// hook, the application's answer escaped.
func TestResultDetailSaysTheHook(t *testing.T) {
	a := refresh.Action{Action: refresh.ActionAnnotate, Target: refresh.Target{Kind: "Pod", Namespace: "ns", Name: "prom-0"}}
	r := refresh.Result{Action: a, Outcome: refresh.OutcomeCurrent,
		Hook: &refresh.HookResult{Request: "POST :9090/-/reload", Outcome: refresh.HookFailed, Via: "proxy", Status: 500, Message: "HTTP 500: bad\nconfig"}}
	rows := Results{Items: []refresh.Result{r}}.Rows()
	want := `annotated (state not observed before); reload hook POST :9090/-/reload: failed (via proxy): HTTP 500: bad\nconfig`
	if got := rows[0][len(rows[0])-1]; got != want {
		t.Errorf("DETAIL %q\nwant   %q", got, want)
	}
	r.Hook = nil
	if got := Detail(r); strings.Contains(got, "reload hook") {
		t.Errorf("no hook: %q", got)
	}
}

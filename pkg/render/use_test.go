package render

import (
	"strings"
	"testing"
	"time"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// TestUseColumns: the table cells of rows the fixture does not cover.
func TestUseColumns(t *testing.T) {
	vol := func(mode inspect.Mode, v inspect.VolumeRef, keys ...string) inspect.Use {
		return inspect.Use{Mode: mode, Volume: &v, Keys: keys}
	}
	cases := []struct {
		name string
		it   inspect.Use
		path string
	}{
		{"volume", vol(inspect.ModeVolume, inspect.VolumeRef{MountPath: "/etc/a"}), "/etc/a"},
		{"items", vol(inspect.ModeItems, inspect.VolumeRef{MountPath: "/etc/a"}, "k1", "k2"), "/etc/a [k1,k2]"},
		{"projected", vol(inspect.ModeProjected, inspect.VolumeRef{MountPath: "/etc/a"}, "k"), "/etc/a [k]"},
		{"subPath", vol(inspect.ModeSubPath, inspect.VolumeRef{MountPath: "/etc/a.yaml", SubPath: "a.yaml"}, "a.yaml"), "/etc/a.yaml (subPath a.yaml)"},
		{"subPathExpr", vol(inspect.ModeSubPathExpr, inspect.VolumeRef{MountPath: "/etc/x", SubPathExpr: "$(POD)"}), "/etc/x (subPathExpr $(POD))"},
		{"env", inspect.Use{Mode: inspect.ModeEnv, EnvName: "LEVEL", Keys: []string{"log-level"}}, "$LEVEL <- log-level"},
		{"envFrom", inspect.Use{Mode: inspect.ModeEnvFrom}, "all keys"},
		{"envFrom with prefix", inspect.Use{Mode: inspect.ModeEnvFrom, EnvPrefix: "APP_"}, "$APP_* <- all keys"},
		{"unmounted", vol(inspect.ModeUnmounted, inspect.VolumeRef{Name: "spare"}, "k"), "volume spare [k]"},
		{"unused", inspect.Use{}, "<none>"},
	}
	for _, tc := range cases {
		if got := PathKeys(tc.it); got != tc.path {
			t.Errorf("%s: PATH/KEYS = %q, want %q", tc.name, got, tc.path)
		}
	}
	for _, c := range []struct {
		ref  *inspect.ContainerRef
		want string
	}{
		{nil, "<none>"},
		{&inspect.ContainerRef{Name: "app", Type: inspect.ContainerRegular}, "app"},
		{&inspect.ContainerRef{Name: "setup", Type: inspect.ContainerInit}, "setup (init)"},
		{&inspect.ContainerRef{Name: "proxy", Type: inspect.ContainerSidecar}, "proxy (sidecar)"},
		{&inspect.ContainerRef{Name: "debugger", Type: inspect.ContainerEphemeral}, "debugger (ephemeral)"},
	} {
		if got := Container(inspect.Use{Container: c.ref}); got != c.want {
			t.Errorf("CONTAINER of %+v = %q, want %q", c.ref, got, c.want)
		}
	}
	for _, c := range []struct {
		obj  inspect.ObjectRef
		want string
	}{
		{inspect.ObjectRef{Kind: inspect.KindConfigMap, Name: "a", Exists: true}, "a"},
		{inspect.ObjectRef{Kind: inspect.KindConfigMap, Name: "a"}, "a (missing)"},
		{inspect.ObjectRef{Kind: inspect.KindSecret, Name: "s", Exists: true}, "secret/s"},
		{inspect.ObjectRef{Kind: inspect.KindSecret, Name: "s"}, "secret/s (missing)"},
	} {
		if got := Object(inspect.Use{Object: c.obj}); got != c.want {
			t.Errorf("CONFIGMAP of %+v = %q, want %q", c.obj, got, c.want)
		}
	}
	for _, c := range []struct {
		w    inspect.WorkloadRef
		want string
	}{
		{inspect.WorkloadRef{}, "<none>"},
		{inspect.WorkloadRef{Kind: "Deployment", Name: "web"}, "deployment/web"},
		{inspect.WorkloadRef{Kind: "Rollout", Name: "canary", APIVersion: "argoproj.io/v1alpha1"}, "rollout.argoproj.io/canary"},
		{inspect.WorkloadRef{Kind: "StatefulSet", Name: "db", APIVersion: "apps.kruise.io/v1beta1"}, "statefulset.apps.kruise.io/db"},
		{inspect.WorkloadRef{Kind: "Pod", Name: "debug"}, "pod/debug"},
	} {
		if got := Workload(inspect.Use{Workload: c.w}); got != c.want {
			t.Errorf("WORKLOAD of %+v = %q, want %q", c.w, got, c.want)
		}
	}
}

// The dashboard's consumers screen shows a use in the words of status
// --verify: an optional missing object is "missing (optional)", a use of a
// terminating pod "terminating", an unverifiable one its short reason.
func TestUseCellsAreTheStatusColumns(t *testing.T) {
	now := time.Date(2024, 5, 6, 7, 10, 0, 0, time.UTC)
	base := inspect.Use{Object: inspect.ObjectRef{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "cfg"},
		Pod: inspect.PodRef{Name: "web-1"}, Container: &inspect.ContainerRef{Name: "app", Type: inspect.ContainerRegular},
		Workload: inspect.WorkloadRef{Kind: "Deployment", Name: "web"}, Mode: inspect.ModeEnv, EnvName: "L", Keys: []string{"l"}}
	optional := base
	optional.Verdict, optional.Optional, optional.State = inspect.VerdictMissing, true, inspect.StateMissing
	terminating := base
	terminating.Verdict, terminating.State, terminating.Pod.Phase = inspect.VerdictRestartNeeded, inspect.StateNA, "Terminating"
	for _, c := range []struct {
		it   inspect.Use
		want string
	}{
		{optional, "web-1|app|env|$L <- l|missing (optional)|deployment/web|missing|<none>"},
		{terminating, "web-1|app|env|$L <- l|restart-needed|deployment/web|terminating|<none>"},
	} {
		if got := strings.Join(Uses{Items: []inspect.Use{c.it}, Verify: true, OneObject: true, Now: now}.Rows()[0], "|"); got != c.want {
			t.Errorf("row = %q, want %q", got, c.want)
		}
	}
}

// TestStateWarning: an unverifiable use grouped in a warning points to it.
func TestStateWarning(t *testing.T) {
	it := inspect.Use{State: inspect.StateUnverifiable, StateReason: "error: namespace x does not exist (create it)", Warning: 2}
	if got := State(it); got != "unverifiable: see warning 2" {
		t.Errorf("State = %q", got)
	}
	it.Warning = 0
	if got := State(it); got != "unverifiable: error" {
		t.Errorf("State = %q", got)
	}
}

// TestContextColumn: with Contexts, CONTEXT is the first column, before
// NAMESPACE; the summary has a line per context and one for all.
func TestContextColumn(t *testing.T) {
	items := []inspect.Use{
		{Context: "prod", Object: inspect.ObjectRef{Kind: inspect.KindConfigMap, Namespace: "shop", Name: "web"}, Pod: inspect.PodRef{Name: "web-1"}, Verdict: inspect.VerdictHotUpdate},
		{Context: "dev", Object: inspect.ObjectRef{Kind: inspect.KindConfigMap, Namespace: "shop", Name: "web"}, Pod: inspect.PodRef{Name: "web-1"}, Verdict: inspect.VerdictRestartNeeded},
	}
	u := Uses{Items: items, AllNamespaces: true, Contexts: true}
	if h := u.Header(); h[0] != "CONTEXT" || h[1] != "NAMESPACE" {
		t.Errorf("header %q", h)
	}
	rows := u.Rows()
	if rows[0][0] != "prod" || rows[1][0] != "dev" || rows[0][1] != "shop" {
		t.Errorf("rows %q", rows)
	}
	if h := (Uses{Items: items}).Header(); h[0] == "CONTEXT" {
		t.Errorf("one context has a CONTEXT column: %q", h)
	}
	got := ContextSummaries([]string{"prod", "dev", "qa"}, items, false)
	want := []string{"prod: 1 use by 1 pod: 1 hot-update", "dev: 1 use by 1 pod: 1 restart-needed", "qa: no uses",
		"all 3 contexts: 2 uses by 2 pods: 1 hot-update, 1 restart-needed"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("summaries:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

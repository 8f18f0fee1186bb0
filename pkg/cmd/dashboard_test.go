package cmd

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/render"
)

// What the dashboard shows of the cluster (the cells of a use, the diff of a
// file) reaches the terminal with its control characters escaped: a mount
// path or a ConfigMap value holding an escape sequence must not restyle,
// move or retitle the user's terminal under the dashboard.
func TestDashboardEscapesClusterText(t *testing.T) {
	o := NewDashboardOptions(nil, genericiooptions.NewTestIOStreamsDiscard())
	a := &dashboardActions{o: o, hmacKey: []byte("k")}
	cells := strings.Join(render.Uses{Items: []inspect.Use{hostilePathItem()}, Verify: true, OneObject: true, Now: time.Now()}.Rows()[0], "|") // the consumers screen's cells
	if strings.ContainsAny(cells, "\x1b\n") || !strings.Contains(cells, `/etc/a\nb\x1b[31m`) {
		t.Errorf("use cells not escaped: %q", cells)
	}

	snap, ex := diffFixture()
	key := inspect.ObjectKey{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "cfg"}
	snap.ConfigMaps[key].Data["greeting"] = "hello \x1b]0;pwned\x07v2\r\n\tindented\tx\n"
	o.Now, o.Executor = time.Now, ex
	o.Verify = VerifyFlags{MaxBytes: 1 << 20, Concurrency: 4, ExecTimeout: 5 * time.Second, Executor: ex}
	items, err := inspect.Build(snap, inspect.BuildOptions{Names: []inspect.ObjectKey{key}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := a.Diff(context.Background(), snap, items)
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(out, "\x1b\x07\r\t") || !strings.Contains(out, "+hello \\x1b]0;pwned\\av2\n") || !strings.Contains(out, "-hello v1\n") {
		t.Errorf("diff not escaped line by line:\n%q", out)
	}
	// a CRLF's \r goes, tabs become spaces to the next multiple of 8
	if want := "\n+       indented        x\n"; !strings.Contains(out, want) {
		t.Errorf("diff lacks %q:\n%q", want, out)
	}
}

// dashboardFixture is the stale env consumer of staleEnvFixture seen by
// the dashboard's actions.
func dashboardFixture(t *testing.T) (*dashboardActions, *inspect.Snapshot, *countingPatcher) {
	t.Helper()
	ro, p, _ := staleEnvFixture(t)
	snap, err := inspect.Load(context.Background(), ro.Client, inspect.LoadOptions{Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	o := NewDashboardOptions(nil, genericiooptions.NewTestIOStreamsDiscard())
	o.Namespace, o.Client, o.Executor, o.Patcher = "ns", ro.Client, ro.Cluster.Executor, p
	o.Verify = VerifyFlags{MaxBytes: 1 << 20, Concurrency: 4, ExecTimeout: 5 * time.Second, Executor: ro.Cluster.Executor}
	return &dashboardActions{o: o, hmacKey: []byte("k")}, snap, p
}

var dashCfg = []inspect.ObjectKey{{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "cfg"}}

// The dashboard's refresh is refresh's: a plan the credentials may not
// apply is refused before anything is sent, and the refusal names the
// missing permission.
func TestDashboardPlanChecksPermissionsFirst(t *testing.T) {
	a, snap, p := dashboardFixture(t)
	a.o.Access = denyingReviewer{"deployments": true}
	_, err := a.Plan(context.Background(), snap, dashCfg)
	if err == nil || !strings.Contains(err.Error(), `patch deployments in namespace "ns" (for deployment/web)`) || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("Plan() = %v, want the refusal naming patch deployments", err)
	}
	if len(p.sent) != 0 {
		t.Errorf("patches sent: %v", p.sent)
	}

	// allowed: the plan restarts the Deployment
	a.o.Access = denyingReviewer{}
	plan, err := a.Plan(context.Background(), snap, dashCfg)
	if err != nil || plan.Restarts != 1 || plan.Plan == nil {
		t.Fatalf("Plan() = %+v, %v; want one restart", plan, err)
	}
}

// --max-restarts and --restart-via=evict reach the dashboard's plan.
func TestDashboardPlanMaxRestartsAndEvict(t *testing.T) {
	a, snap, _ := dashboardFixture(t)
	a.o.Access, a.o.MaxRestarts = denyingReviewer{}, 0
	if _, err := a.Plan(context.Background(), snap, dashCfg); err == nil || !strings.Contains(err.Error(), "more than --max-restarts=0") {
		t.Errorf("Plan() = %v, want the --max-restarts refusal", err)
	}
	a.o.MaxRestarts, a.o.RestartVia = -1, string(refresh.RestartViaEvict)
	a.o.Access = denyingReviewer{"pods/eviction": true}
	if _, err := a.Plan(context.Background(), snap, dashCfg); err == nil || !strings.Contains(err.Error(), `create pods/eviction in namespace "ns"`) {
		t.Errorf("Plan() = %v, want the refusal naming create pods/eviction", err)
	}
	a.o.Access = denyingReviewer{}
	plan, err := a.Plan(context.Background(), snap, dashCfg)
	if err != nil || len(plan.Actions) == 0 || plan.Actions[0].Action != refresh.ActionEvict || plan.Restarts != 1 {
		t.Fatalf("Plan() = %+v, %v; want one evict action", plan.Actions, err)
	}
}

func TestDashboardValidatesRestartFlags(t *testing.T) {
	for _, c := range []struct {
		set  func(*DashboardOptions)
		want string
	}{
		{func(o *DashboardOptions) { o.RestartVia = "delete" }, `invalid --restart-via "delete"`},
		{func(o *DashboardOptions) { o.MaxUnavailable = 0 }, "--max-unavailable must be 1 or more"},
		{func(o *DashboardOptions) { o.MaxRestarts = -2 }, "--max-restarts must be -1"},
		{func(o *DashboardOptions) { o.Selector = "a in (" }, `invalid -l "a in ("`},
	} {
		o := NewDashboardOptions(nil, genericiooptions.NewTestIOStreamsDiscard())
		c.set(o)
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate() = %v, want %q", err, c.want)
		}
	}
}

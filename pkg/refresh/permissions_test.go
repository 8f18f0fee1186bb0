package refresh

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/rbac"
)

func TestPermissions(t *testing.T) {
	plan := []Action{
		{Action: ActionRestart, Target: Target{Kind: "Deployment", Namespace: "shop", Name: "web"}},
		{Action: ActionAnnotate, Target: Target{Kind: "Pod", Namespace: "shop", Name: "a"}},
		{Action: ActionAnnotate, Target: Target{Kind: "Pod", Namespace: "shop", Name: "b"}},
		{Action: ActionRestart, Target: Target{Kind: "StatefulSet", Namespace: "db", Name: "pg"}},
		{Action: ActionNone, Target: Target{Kind: "Pod", Namespace: "shop", Name: "c"}},
		{Action: ActionManual, Target: Target{Kind: "Pod", Namespace: "shop", Name: "d"}},
		{Action: ActionEvict, Target: Target{Kind: "Deployment", Namespace: "shop", Name: "api"}},
	}
	want := []Permission{
		{Verb: "patch", Group: "apps", Resource: "statefulsets", Namespace: "db", Targets: []string{"statefulset/pg"}},
		{Verb: "patch", Group: "apps", Resource: "deployments", Namespace: "shop", Targets: []string{"deployment/web"}},
		{Verb: "patch", Group: "", Resource: "pods", Namespace: "shop", Targets: []string{"pod/a", "pod/b"}},
		{Verb: "create", Group: "", Resource: "pods/eviction", Namespace: "shop", Targets: []string{"deployment/api"}},
	}
	for _, dry := range []DryRun{DryRunNone, DryRunServer} {
		if got := Permissions(plan, dry); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: Permissions =\n%+v\nwant\n%+v", dry, got, want)
		}
	}
	if got := Permissions(plan, DryRunClient); len(got) != 0 {
		t.Errorf("a client dry run sends nothing, needs nothing: %+v", got)
	}
	if got := Permissions([]Action{{Action: ActionNone}}, DryRunNone); len(got) != 0 {
		t.Errorf("a plan of none needs nothing: %+v", got)
	}
}

type fakeReviewer map[string]error // resource -> nil allowed, errDenied denied, other: review failed

var errDenied = errors.New("denied")

func (f fakeReviewer) Allowed(_ context.Context, p Permission) (bool, error) {
	err, ok := f[p.Resource]
	if !ok || err == nil {
		return true, nil
	}
	if err == errDenied {
		return false, nil
	}
	return false, err
}

func TestMissing(t *testing.T) {
	perms := []Permission{{Verb: "patch", Resource: "deployments", Namespace: "shop"}, {Verb: "patch", Resource: "pods", Namespace: "shop",
		Targets: []string{"pod/a", "pod/b", "pod/c", "pod/d"}}, {Verb: "patch", Resource: "statefulsets", Namespace: "shop"}}
	got := Missing(context.Background(), fakeReviewer{"pods": errDenied, "statefulsets": errors.New("review failed")}, perms)
	if len(got) != 1 || got[0].Resource != "pods" {
		t.Fatalf("Missing = %+v, want only pods (a failed review counts as allowed)", got)
	}
	if d := got[0].Describe(); d != `patch pods in namespace "shop" (for pod/a, pod/b, pod/c and 1 more)` {
		t.Errorf("Describe = %s", d)
	}
}

// Every permission a plan can need is in the permission table, granted
// by the refresh role: the pre-check and deploy/rbac.yaml agree.
func TestPermissionsAreInTheRefreshRole(t *testing.T) {
	var plan []Action
	for kind := range resourceOf {
		plan = append(plan, Action{Action: ActionAnnotate, Target: Target{kind, "ns", "x"}}, Action{Action: ActionRestart, Target: Target{kind, "ns", "x"}})
	}
	plan = append(plan, Action{Action: ActionEvict, Target: Target{"ReplicaSet", "ns", "x"}})
	perms := Permissions(plan, DryRunNone)
	if len(perms) != len(resourceOf)+1 {
		t.Fatalf("Permissions() = %+v, want one per resource", perms)
	}
	for _, p := range perms {
		if !rbac.Grants(rbac.RoleRefresh, p.Verb, p.Resource) || p.Group != rbac.Group(p.Resource) {
			t.Errorf("%s (group %q) is not granted by %s in the permission table", p, p.Group, rbac.RoleRefresh)
		}
	}
}

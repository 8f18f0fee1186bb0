package cmd

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// deniedLoader loads the fixture cluster through a fake clientset whose
// RBAC denies LISTs of the given resources.
func deniedLoader(t *testing.T, resources ...string) func(context.Context, inspect.LoadOptions) (*inspect.Snapshot, error) {
	objs := statusClusterObjects(t)
	return func(ctx context.Context, o inspect.LoadOptions) (*inspect.Snapshot, error) {
		c := fake.NewClientset(objs...)
		for _, r := range resources {
			group := ""
			if r == "replicasets" {
				group = "apps"
			}
			c.PrependReactor("list", r, func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, forbiddenList(r, group, o.Namespace)
			})
		}
		return inspect.Load(ctx, c, o)
	}
}

// TestStatusWithoutOptionalKinds: no access to Secrets, ReplicaSets or
// nodes is never an error for the ConfigMap rows: Secrets are skipped,
// owners stay replicaset/NAME, delays are the defaults, each with one note.
func TestStatusWithoutOptionalKinds(t *testing.T) {
	o, out, errOut := newTestStatusOptions(t, &statusLoader{})
	o.LoadSnapshot = deniedLoader(t, "secrets", "replicasets", "nodes")
	o.Secrets = true
	o.Output = "wide"
	o.ConfigFlags.Namespace = ptrTo("shop")
	if err := runStatusOptions(t, o, nil); err != nil {
		t.Fatalf("status: %v", err)
	}
	wantNotes := `note: Secrets skipped (ConfigMaps are shown): cannot list secrets in namespace "shop" (forbidden); a Role with this rule grants it: {apiGroups: [""], resources: ["secrets"], verbs: ["list"]}
note: owners shown as replicaset/NAME (unresolved): cannot list replicasets in namespace "shop" (forbidden); a Role with this rule grants it: {apiGroups: ["apps"], resources: ["replicasets"], verbs: ["list"]}
note: delays assume the kubelet defaults (0-90s): cannot list nodes (forbidden); a ClusterRole with this rule grants it: {apiGroups: [""], resources: ["nodes"], verbs: ["list"]}
`
	if errOut.String() != wantNotes {
		t.Errorf("stderr:\n%s\nwant:\n%s", errOut.String(), wantNotes)
	}
	table := out.String()
	if strings.Contains(table, "web-secrets") || !strings.Contains(table, "web-config") {
		t.Errorf("want ConfigMap rows and no Secret rows:\n%s", table)
	}
	if !strings.Contains(table, "replicaset/web-7c9d") || strings.Contains(table, "deployment/web") {
		t.Errorf("the owner must stay replicaset/web-7c9d (unresolved):\n%s", table)
	}
	// the rows: the table without its header and the summary line after the blank line
	rows, _, _ := strings.Cut(table, "\n\n")
	for _, line := range strings.Split(strings.TrimSpace(rows), "\n")[1:] {
		if strings.Contains(line, "hot-update") && !strings.Contains(line, "0-90s") {
			t.Errorf("a hot-update row without the default delay: %s", line)
		}
	}

	// a Secret asked for by name cannot be skipped: exit 1, with the rule
	o, _, _ = newTestStatusOptions(t, &statusLoader{})
	o.LoadSnapshot = deniedLoader(t, "secrets")
	o.ConfigFlags.Namespace = ptrTo("shop")
	err := runStatusOptions(t, o, []string{"secret/web-secrets"})
	want := `cannot list secrets in namespace "shop": forbidden (secrets is forbidden: User "dev" cannot list resource "secrets" in API group "" in the namespace "shop")` + "\n" +
		`A Role with this rule grants it: {apiGroups: [""], resources: ["secrets"], verbs: ["list"]}`
	if err == nil || err.Error() != want || ExitCode(err) != ExitFailure {
		t.Errorf("status secret/web-secrets: %v (exit %d)\nwant %s (exit 1)", err, ExitCode(err), want)
	}
}

func ptrTo[T any](v T) *T { return &v }

// denyingReviewer denies the listed resources.
type denyingReviewer map[string]bool

func (d denyingReviewer) Allowed(_ context.Context, p refresh.Permission) (bool, error) {
	return !d[p.Resource], nil
}

// TestRefreshSaysWhichPermissionIsMissingFirst: a plan whose patches RBAC
// denies is refused before anything is sent, naming each permission and
// its rule (exit 1); a server dry run is checked the same way.
func TestRefreshSaysWhichPermissionIsMissingFirst(t *testing.T) {
	for _, dry := range []string{"none", "server"} {
		o, p, out := staleEnvFixture(t)
		o.Yes, o.DryRun = true, dry
		o.Cluster.Access = denyingReviewer{"deployments": true}
		err := o.Run(context.Background())
		want := `cannot refresh: the credentials lack permissions the plan needs; nothing was changed:
  patch deployments in namespace "ns" (for deployment/web): a Role with this rule grants it: {apiGroups: ["apps"], resources: ["deployments"], verbs: ["patch"]}
The ClusterRole cmsync-refresh of deploy/rbac.yaml grants what refresh needs (with cmsync-secrets where Secrets are read).`
		if err == nil || err.Error() != want || ExitCode(err) != ExitFailure {
			t.Errorf("--dry-run=%s: %v (exit %d)\nwant %s (exit 1)", dry, err, ExitCode(err), want)
		}
		if len(p.sent) != 0 {
			t.Errorf("--dry-run=%s: patches sent before the permission check: %v", dry, p.sent)
		}
		if !strings.Contains(out.String(), `"kind": "RefreshPlan"`) {
			t.Errorf("--dry-run=%s: the plan must be printed:\n%s", dry, out.String())
		}
	}
	// allowed: the patch is sent
	o, p, _ := staleEnvFixture(t)
	o.Yes, o.Wait = true, false
	o.Cluster.Access = denyingReviewer{"pods": true}
	if err := o.Run(context.Background()); err != nil || len(p.sent) != 1 {
		t.Errorf("a restart the credentials allow: %v, sent %v", err, p.sent)
	}
}

// TestMissingPermissionsNamesExec: consumers unverifiable because exec is
// forbidden add the exec rule to the refusal.
func TestMissingPermissionsNamesExec(t *testing.T) {
	items := []inspect.Use{{Object: inspect.ObjectRef{Namespace: "shop"}, State: inspect.StateUnverifiable, StateCause: inspect.CauseExecForbidden},
		{Object: inspect.ObjectRef{Namespace: "shop"}, State: inspect.StateUnverifiable, StateCause: inspect.CauseExecForbidden}}
	err := missingPermissionsError([]refresh.Permission{{Verb: "patch", Resource: "pods", Namespace: "shop", Targets: []string{"pod/a"}}}, items)
	want := `cannot refresh: the credentials lack permissions the plan needs; nothing was changed:
  patch pods in namespace "shop" (for pod/a): a Role with this rule grants it: {apiGroups: [""], resources: ["pods"], verbs: ["patch"]}
  get and create pods/exec in namespace "shop" (to verify the consumers): a Role with this rule grants it: {apiGroups: [""], resources: ["pods/exec"], verbs: ["get", "create"]}
The ClusterRole cmsync-refresh of deploy/rbac.yaml grants what refresh needs (with cmsync-secrets where Secrets are read).`
	if err.Error() != want {
		t.Errorf("got\n%s\nwant\n%s", err, want)
	}
}

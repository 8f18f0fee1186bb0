package rbacaudit

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
)

const sa = "system:serviceaccount:ctl:cmsync"

// manifests: a ClusterRole bound cluster-wide, a Role in ctl with a
// resourceNames rule, and a ClusterRole bound in shop only by a RoleBinding;
// plus objects bound to someone else, and a ConfigMap, all to be ignored.
const manifests = `
apiVersion: v1
kind: ConfigMap
metadata: {name: unrelated}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: watch}
rules:
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["list", "watch"]
- apiGroups: [""]
  resources: ["pods/exec"]
  verbs: ["get"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: watch}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: watch}
subjects:
- {kind: ServiceAccount, name: cmsync, namespace: ctl}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: key}
rules:
- apiGroups: [""]
  resources: ["secrets"]
  resourceNames: ["the-key"]
  verbs: ["get"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: key}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: key}
subjects:
- {kind: ServiceAccount, name: cmsync, namespace: ctl}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: evict}
rules:
- apiGroups: [""]
  resources: ["pods/eviction"]
  verbs: ["create"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: evict, namespace: shop}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: evict}
subjects:
- {kind: ServiceAccount, name: cmsync, namespace: ctl}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: other}
rules:
- apiGroups: [""]
  resources: ["nodes"]
  verbs: ["delete"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: other}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: other}
subjects:
- {kind: ServiceAccount, name: cmsync, namespace: elsewhere}
`

// ev is one audit log line of user sa.
func ev(id, verb, group, resource, sub, ns, name string, code int) string {
	return ev2(sa, id, verb, group, resource, sub, ns, name, code, "")
}

func ev2(user, id, verb, group, resource, sub, ns, name string, code int, decision string) string {
	ann := ""
	if decision != "" {
		ann = fmt.Sprintf(`,"annotations":{"authorization.k8s.io/decision":%q}`, decision)
	}
	return fmt.Sprintf(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":%q,"stage":"ResponseComplete",`+
		`"requestURI":"/x","verb":%q,"user":{"username":%q,"groups":["system:serviceaccounts"]},`+
		`"objectRef":{"resource":%q,"subresource":%q,"namespace":%q,"name":%q,"apiGroup":%q,"apiVersion":"v1"},`+
		`"responseStatus":{"metadata":{},"code":%d},"requestReceivedTimestamp":"2030-01-01T00:00:00.000000Z"%s}`,
		id, verb, user, resource, sub, ns, name, group, code, ann) + "\n"
}

func grants(t *testing.T) []Grant {
	t.Helper()
	o, err := ParseManifests([]byte(manifests), "ctl")
	if err != nil {
		t.Fatal(err)
	}
	g, err := o.GrantsTo("ctl", "cmsync")
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func compare(t *testing.T, log string, allow []Allowance) Report {
	t.Helper()
	events, err := ReadEvents(strings.NewReader(log), sa, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	return Compare(grants(t), events, allow)
}

// every permission used: nothing to report
var fullLog = ev("1", "list", "", "configmaps", "", "a", "", 200) +
	ev("2", "watch", "", "configmaps", "", "", "", 200) +
	ev("3", "get", "", "pods", "exec", "a", "p", 101) +
	ev("4", "get", "", "secrets", "", "ctl", "the-key", 200) +
	ev("5", "create", "", "pods", "eviction", "shop", "p", 201)

func TestGrantsTo(t *testing.T) {
	var got []string
	for _, g := range grants(t) {
		got = append(got, g.Namespace+" "+g.From)
	}
	want := []string{
		" ClusterRole/watch via ClusterRoleBinding/watch",
		" ClusterRole/watch via ClusterRoleBinding/watch",
		"ctl Role/ctl/key via RoleBinding/ctl/key",
		"shop ClusterRole/evict via RoleBinding/shop/evict",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("grants:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	o, _ := ParseManifests([]byte(manifests+"---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: dangling}\n"+
		"roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: nowhere}\nsubjects:\n- {kind: ServiceAccount, name: cmsync, namespace: ctl}\n"), "ctl")
	if _, err := o.GrantsTo("ctl", "cmsync"); err == nil || !strings.Contains(err.Error(), "nowhere") {
		t.Errorf("a binding to a missing Role: %v, want an error naming it", err)
	}
}

func TestAllUsed(t *testing.T) {
	rep := compare(t, fullLog, nil)
	if !rep.OK() || len(rep.Used) != 5 {
		t.Errorf("every permission used: OK %v, %d used, want OK and 5:\n%s", rep.OK(), len(rep.Used), rep)
	}
}

func TestUnusedRuleReported(t *testing.T) {
	// no watch of configmaps: reported, by verb, resource and group
	log := strings.Replace(fullLog, `"verb":"watch"`, `"verb":"list"`, 1)
	rep := compare(t, log, nil)
	if rep.OK() || len(rep.Unused) != 1 || rep.Unused[0] != (Permission{APIGroup: "", Resource: "configmaps", Verb: "watch"}) {
		t.Errorf("unused watch: %v, want watch configmaps reported:\n%s", rep.Unused, rep)
	}
	// the same in another API group is not a use
	log = strings.Replace(fullLog, `"verb":"watch","user":{"username":"`+sa+`","groups":["system:serviceaccounts"]},"objectRef":{"resource":"configmaps","subresource":"","namespace":"","name":"","apiGroup":""`,
		`"verb":"watch","user":{"username":"`+sa+`","groups":["system:serviceaccounts"]},"objectRef":{"resource":"configmaps","subresource":"","namespace":"","name":"","apiGroup":"apps"`, 1)
	if log == fullLog {
		t.Fatal("fixture edit did not apply")
	}
	if rep := compare(t, log, nil); len(rep.Unused) != 1 || rep.Unused[0].Verb != "watch" {
		t.Errorf("watch in group apps counted for the core group: %v", rep.Unused)
	}
	// allow-listed: excused, not a failure
	rep = compare(t, strings.Replace(fullLog, `"verb":"watch"`, `"verb":"list"`, 1),
		[]Allowance{{Resource: "configmaps", Verb: "watch", Scenario: "s", Why: "w"}})
	if !rep.OK() || len(rep.Excused) != 1 {
		t.Errorf("allow-listed watch: OK %v, excused %v", rep.OK(), rep.Excused)
	}
	// another user's use does not count
	log = strings.Replace(fullLog, ev("2", "watch", "", "configmaps", "", "", "", 200),
		ev2("system:serviceaccount:x:y", "2", "watch", "", "configmaps", "", "", "", 200, ""), 1)
	if rep := compare(t, log, nil); len(rep.Unused) != 1 {
		t.Errorf("another user's watch counted: %v", rep.Unused)
	}
}

func TestForbiddenReported(t *testing.T) {
	log := fullLog + ev("6", "list", "", "secrets", "", "kube-system", "", 403)
	rep := compare(t, log, nil)
	if rep.OK() || len(rep.Forbidden) != 1 || rep.Forbidden[0].AuditID != "6" {
		t.Errorf("a 403: %v, want it reported:\n%s", rep.Forbidden, rep)
	}
	// a refused request is no use of a permission: the list of configmaps refused only
	log = strings.Replace(fullLog, ev("1", "list", "", "configmaps", "", "a", "", 200), ev2(sa, "1", "list", "", "configmaps", "", "a", "", 403, "forbid"), 1)
	rep = compare(t, log, nil)
	if len(rep.Forbidden) != 1 || len(rep.Unused) != 1 || rep.Unused[0].Verb != "list" {
		t.Errorf("a refused list: forbidden %v, unused %v, want both reported", rep.Forbidden, rep.Unused)
	}
	// the ResponseStarted and ResponseComplete of one request: one request
	log = fullLog + ev("7", "watch", "", "secrets", "", "x", "", 403) + ev("7", "watch", "", "secrets", "", "x", "", 403)
	if rep := compare(t, log, nil); len(rep.Forbidden) != 1 {
		t.Errorf("one request logged twice: %d forbidden, want 1", len(rep.Forbidden))
	}
}

func TestResourceNames(t *testing.T) {
	// a get of another Secret in ctl does not use the rule on the-key
	log := strings.Replace(fullLog, `"the-key"`, `"other"`, 1)
	rep := compare(t, log, nil)
	want := Permission{Namespace: "ctl", Resource: "secrets", Verb: "get", Name: "the-key"}
	if len(rep.Unused) != 1 || rep.Unused[0] != want {
		t.Errorf("get of another Secret: unused %v, want %v", rep.Unused, want)
	}
	// nor does a get of the-key in another namespace (a Role's rule holds in its namespace only)
	log = strings.Replace(fullLog, `"namespace":"ctl","name":"the-key"`, `"namespace":"shop","name":"the-key"`, 1)
	if rep := compare(t, log, nil); len(rep.Unused) != 1 || rep.Unused[0] != want {
		t.Errorf("get of the-key in shop: unused %v, want %v", rep.Unused, want)
	}
}

func TestSubresources(t *testing.T) {
	// a get of pods is not a get of pods/exec; a create of pods is not one of pods/eviction
	log := strings.Replace(fullLog, `"resource":"pods","subresource":"exec"`, `"resource":"pods","subresource":""`, 1)
	log = strings.Replace(log, `"resource":"pods","subresource":"eviction"`, `"resource":"pods","subresource":""`, 1)
	rep := compare(t, log, nil)
	var got []string
	for _, p := range rep.Unused {
		got = append(got, p.Verb+" "+p.Resource+" "+p.Namespace)
	}
	if strings.Join(got, ",") != "get pods/exec ,create pods/eviction shop" {
		t.Errorf("subresources: unused %v, want get pods/exec and create pods/eviction in shop", got)
	}
	// the eviction rule holds in shop only: an eviction elsewhere is no use of it
	log = strings.Replace(fullLog, `"subresource":"eviction","namespace":"shop"`, `"subresource":"eviction","namespace":"a"`, 1)
	if rep := compare(t, log, nil); len(rep.Unused) != 1 || rep.Unused[0].Resource != "pods/eviction" {
		t.Errorf("eviction outside shop: unused %v", rep.Unused)
	}
}

func TestWildcardsNotMatched(t *testing.T) {
	o, err := ParseManifests([]byte(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: all}
rules:
- apiGroups: [""]
  resources: ["*"]
  verbs: ["get"]
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["list"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: all}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: all}
subjects:
- {kind: ServiceAccount, name: cmsync, namespace: ctl}
`), "ctl")
	if err != nil {
		t.Fatal(err)
	}
	g, _ := o.GrantsTo("ctl", "cmsync")
	events, _ := ReadEvents(strings.NewReader(fullLog), sa, time.Time{})
	rep := Compare(g, events, nil)
	if rep.OK() || len(rep.Unverifiable) != 1 || !strings.Contains(rep.Unverifiable[0], "wildcard") {
		t.Errorf("a wildcard rule: %v, want it reported as unverifiable:\n%s", rep.Unverifiable, rep)
	}
	// a get of configmaps is not a use of "list" (no verb matches another)
	if rep.Used[Permission{Resource: "configmaps", Verb: "list"}] != 1 {
		t.Errorf("list configmaps: %v", rep.Used)
	}
}

func TestReadEvents(t *testing.T) {
	log := fullLog + `{"kind":"Event","auditID":"partial`
	events, err := ReadEvents(strings.NewReader(log), sa, time.Time{})
	if err != nil || len(events) != 5 {
		t.Errorf("a partial last line: %d events, %v; want 5, no error", len(events), err)
	}
	if _, err := ReadEvents(strings.NewReader("not json\n"+fullLog), sa, time.Time{}); err == nil {
		t.Error("a line that is not JSON: no error")
	}
	since, _ := time.Parse(time.RFC3339, "2030-01-01T00:00:01Z")
	if events, _ := ReadEvents(strings.NewReader(fullLog), sa, since); len(events) != 0 {
		t.Errorf("events before since kept: %d", len(events))
	}
}

func TestParseAllowList(t *testing.T) {
	md := "# T\n\n## Allowed unused\n\ntext\n\n| apiGroup | resources | verbs | scenario | why not reached |\n| --- | --- | --- | --- | --- |\n" +
		"| `argoproj.io` | rollouts | get, patch | Argo | no CRD |\n| `\"\"` | pods/exec | create | SPDY | WebSocket |\n\nafter\n| x | y |\n"
	a, err := ParseAllowList([]byte(md), "## Allowed unused")
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(a)
	want := "[{ argoproj.io rollouts get Argo no CRD} { argoproj.io rollouts patch Argo no CRD} {  pods/exec create SPDY WebSocket}]"
	if got != want {
		t.Errorf("allow-list %s, want %s", got, want)
	}
	if _, err := ParseAllowList([]byte(strings.Replace(md, "| no CRD |", "| |", 1)), "## Allowed unused"); err == nil {
		t.Error("a row without its reason: no error")
	}
}

// TestParseAllowListWithRoles: a first column role names the role each row
// excuses a permission of; ForRole keeps that role's rows.
func TestParseAllowListWithRoles(t *testing.T) {
	md := "### CLI\n\n| role | apiGroup | resources | verbs | scenario | why not reached |\n| --- | --- | --- | --- | --- | --- |\n" +
		"| `cmsync-refresh` | `\"\"` | pods/eviction | create | evict | patch is the default |\n" +
		"| `cmsync-status` | `apps` | replicasets | watch | dashboard | tmux |\n"
	a, err := ParseAllowList([]byte(md), "### CLI")
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(ForRole(a, "cmsync-refresh"))
	if want := "[{cmsync-refresh  pods/eviction create evict patch is the default}]"; got != want {
		t.Errorf("ForRole(cmsync-refresh) %s, want %s", got, want)
	}
	if got := ForRole(a, "cmsync-verify"); len(got) != 0 {
		t.Errorf("ForRole(cmsync-verify) %v, want none", got)
	}
	if _, err := ParseAllowList([]byte(strings.Replace(md, "| `cmsync-status` |", "| |", 1)), "### CLI"); err == nil {
		t.Error("a row without its role: no error")
	}
	if _, err := ParseAllowList([]byte(strings.Replace(md, "| role |", "| who |", 1)), "### CLI"); err == nil {
		t.Error("a header with an unknown first column: no error")
	}
	for _, bad := range []string{"| `` |", "| `\"\"` |"} {
		if _, err := ParseAllowList([]byte(strings.Replace(md, "| `cmsync-status` |", bad, 1)), "### CLI"); err == nil {
			t.Errorf("role %s: no error", bad)
		}
	}
	for _, bad := range []string{"| | replicasets |", "| `apps` | | watch |", "| `apps` | replicasets | |"} {
		row := strings.Replace(md, "| `apps` | replicasets | watch |", bad, 1)
		if strings.Count(bad, "|") == 3 {
			row = strings.Replace(md, "| `apps` | replicasets |", bad, 1)
		}
		if _, err := ParseAllowList([]byte(row), "### CLI"); err == nil {
			t.Errorf("row with %s: no error", bad)
		}
	}
}

// TestDocsAllowList: docs/rbac.md's allow-list parses, each row naming its
// scenario and reason.
func TestDocsAllowList(t *testing.T) {
	b, err := os.ReadFile("../../docs/rbac.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{AllowListHeading, CLIAllowListHeading} {
		a, err := ParseAllowList(b, h)
		if err != nil {
			t.Fatal(err)
		}
		if len(a) == 0 {
			t.Fatalf("%s: empty allow-list", h)
		}
	}
}

// A RoleBinding's ServiceAccount subject without a namespace is the
// ServiceAccount of the binding's namespace, as the authorizer reads it:
// bound in ctl, it grants cmsync of ctl; in shop, cmsync of shop only.
func TestRoleBindingSubjectWithoutNamespace(t *testing.T) {
	o, err := ParseManifests([]byte(manifests+`---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: local, namespace: ctl}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: other}
subjects:
- {kind: ServiceAccount, name: cmsync}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: theirs, namespace: shop}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: other}
subjects:
- {kind: ServiceAccount, name: cmsync}
`), "ctl")
	if err != nil {
		t.Fatal(err)
	}
	g, err := o.GrantsTo("ctl", "cmsync")
	if err != nil {
		t.Fatal(err)
	}
	var from []string
	for _, x := range g {
		if strings.HasPrefix(x.From, "ClusterRole/other") {
			from = append(from, x.Namespace+" "+x.From)
		}
	}
	if want := "ctl ClusterRole/other via RoleBinding/ctl/local"; strings.Join(from, ",") != want {
		t.Errorf("grants of ClusterRole/other: %q, want only %q", from, want)
	}
}

// A bound ClusterRole with an aggregationRule grants what the cluster's
// matching roles grant, not its manifest's (empty) rules: the comparison
// cannot pass on it.
func TestAggregatedClusterRoleUnverifiable(t *testing.T) {
	o, err := ParseManifests([]byte(manifests+`---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: aggregated}
aggregationRule:
  clusterRoleSelectors:
  - matchLabels: {rbac.example.com/aggregate-to-cmsync: "true"}
rules: []
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: aggregated}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: aggregated}
subjects:
- {kind: ServiceAccount, name: cmsync, namespace: ctl}
`), "ctl")
	if err != nil {
		t.Fatal(err)
	}
	g, err := o.GrantsTo("ctl", "cmsync")
	if err != nil {
		t.Fatal(err)
	}
	events, _ := ReadEvents(strings.NewReader(fullLog), sa, time.Time{})
	rep := Compare(g, events, nil)
	if rep.OK() || len(rep.Unverifiable) != 1 || !strings.Contains(rep.Unverifiable[0], "ClusterRole/aggregated") || !strings.Contains(rep.Unverifiable[0], "aggregat") {
		t.Errorf("an aggregated ClusterRole: OK %v, unverifiable %q, want it reported:\n%s", rep.OK(), rep.Unverifiable, rep)
	}
}

// A request the API server allowed for a rule the grants under test lack
// (a binding left in the test cluster, a group's) fails the comparison;
// what every authenticated user may do (an access review, discovery) and
// what a wildcard rule grants do not.
func TestAllowedRequestNotGranted(t *testing.T) {
	review := `{"kind":"Event","auditID":"8","stage":"ResponseComplete","requestURI":"/apis/authorization.k8s.io/v1/selfsubjectaccessreviews","verb":"create",` +
		`"user":{"username":"` + sa + `"},"objectRef":{"resource":"selfsubjectaccessreviews","apiGroup":"authorization.k8s.io"},"responseStatus":{"code":201}}` + "\n"
	discovery := `{"kind":"Event","auditID":"9","stage":"ResponseComplete","requestURI":"/apis/apps/v1?timeout=32s","verb":"get",` +
		`"user":{"username":"` + sa + `"},"responseStatus":{"code":200}}` + "\n"
	if rep := compare(t, fullLog+review+discovery, nil); !rep.OK() {
		t.Errorf("an access review and discovery, allowed to every user: not OK:\n%s", rep)
	}
	rep := compare(t, fullLog+ev("10", "list", "", "secrets", "", "kube-system", "", 200)+ev("11", "get", "", "secrets", "", "ctl", "other", 200), nil)
	if rep.OK() || len(rep.Ungranted) != 2 || rep.Ungranted[0].AuditID != "10" || rep.Ungranted[1].AuditID != "11" {
		t.Errorf("allowed requests no grant allows: OK %v, ungranted %v, want both reported:\n%s", rep.OK(), rep.Ungranted, rep)
	}
	wild := Grant{Rule: rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{""}, Resources: []string{"*/exec"}}}
	if e := (Event{Verb: "create", ObjectRef: &ObjectRef{Resource: "pods", Subresource: "exec", Namespace: "a"}}); !wild.Allows(e) {
		t.Errorf("a wildcard rule does not allow %s", e)
	}
}

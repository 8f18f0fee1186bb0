package deploy

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/rbac"
)

// rule is one permission: ClusterRole, API group, resource, verb.
type rule struct{ role, group, resource, verb string }

func (r rule) String() string {
	return r.role + ": " + r.verb + " " + r.resource + " (group " + `"` + r.group + `"` + ")"
}

// fileRules reads every rule of rbac.yaml's ClusterRoles.
func fileRules(t *testing.T) (map[rule]bool, []string) {
	t.Helper()
	b, err := os.ReadFile("rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out := map[rule]bool{}
	var roles []string
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
		if len(bytes.TrimSpace([]byte(doc))) == 0 || !strings.Contains(doc, "kind:") {
			continue
		}
		var cr rbacv1.ClusterRole
		if err := yaml.UnmarshalStrict([]byte(doc), &cr); err != nil {
			t.Fatalf("rbac.yaml: %v\n%s", err, doc)
		}
		if cr.Kind != "ClusterRole" || cr.APIVersion != "rbac.authorization.k8s.io/v1" || cr.Name == "" {
			t.Fatalf("rbac.yaml: want only named rbac.authorization.k8s.io/v1 ClusterRoles, got %s %s %q", cr.APIVersion, cr.Kind, cr.Name)
		}
		roles = append(roles, cr.Name)
		for _, pr := range cr.Rules {
			for _, g := range pr.APIGroups {
				for _, res := range pr.Resources {
					for _, v := range pr.Verbs {
						out[rule{cr.Name, g, res, v}] = true
					}
				}
			}
		}
	}
	return out, roles
}

// rbacDoc is the page whose table lists rbac.yaml's rules, and rbacHeading
// the heading of the section that holds the table.
const (
	rbacDoc     = "docs/rbac.md"
	rbacHeading = "## The ClusterRoles, rule by rule"
)

// docRules reads the table of rbacDoc's rbacHeading section:
// | `ROLE` | for | `GROUP` | resources, ... | verbs, ... |
func docRules(t *testing.T) map[rule]bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", filepath.FromSlash(rbacDoc)))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "\n"+rbacHeading+"\n")
	if i < 0 {
		t.Fatalf("%s has no %q section", rbacDoc, rbacHeading)
	}
	s = s[i+1:]
	if j := strings.Index(s[1:], "\n## "); j >= 0 {
		s = s[:j+1]
	}
	out := map[rule]bool{}
	rows := 0
	for _, line := range strings.Split(s, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 5 {
			t.Fatalf("%s: RBAC row with %d cells, want 5: %s", rbacDoc, len(cells), line)
		}
		unquote := func(c string) string { return strings.Trim(strings.TrimSpace(c), "`") }
		role, group := unquote(cells[0]), strings.Trim(unquote(cells[2]), `"`)
		rows++
		for _, res := range strings.Split(cells[3], ",") {
			for _, v := range strings.Split(cells[4], ",") {
				out[rule{role, group, unquote(res), unquote(v)}] = true
			}
		}
	}
	if rows == 0 {
		t.Fatalf("%s: the %q section has no table rows", rbacDoc, rbacHeading)
	}
	return out
}

func diff(a, b map[rule]bool) []string {
	var out []string
	for r := range a {
		if !b[r] {
			out = append(out, r.String())
		}
	}
	sort.Strings(out)
	return out
}

// TestDocTableIsRBACFile: the rules docs/rbac.md's table names are exactly
// those of rbac.yaml.
func TestDocTableIsRBACFile(t *testing.T) {
	file, roles := fileRules(t)
	doc := docRules(t)
	if extra := diff(doc, file); len(extra) > 0 {
		t.Errorf("%s names rules rbac.yaml does not have:\n  %s", rbacDoc, strings.Join(extra, "\n  "))
	}
	if missing := diff(file, doc); len(missing) > 0 {
		t.Errorf("rbac.yaml has rules %s's table does not name:\n  %s", rbacDoc, strings.Join(missing, "\n  "))
	}
	want := []string{"cmsync-status", "cmsync-verify", "cmsync-refresh", "cmsync-secrets", "cmsync-nodes", "cmsync-namespaces", "cmsync-lint", "cmsync-node-reader"}
	if strings.Join(roles, " ") != strings.Join(want, " ") {
		t.Errorf("ClusterRoles %v, want %v", roles, want)
	}
	// each use's role holds what the commands need (the contract's RBAC verbs)
	needs := map[string][]rule{
		"cmsync-status":     {{"", "", "pods", "list"}, {"", "", "pods", "watch"}, {"", "", "configmaps", "list"}, {"", "apps", "replicasets", "list"}, {"", "batch", "jobs", "list"}},
		"cmsync-verify":     {{"", "", "pods", "list"}, {"", "", "pods/exec", "get"}, {"", "", "pods/exec", "create"}},
		"cmsync-refresh":    {{"", "", "pods", "list"}, {"", "", "pods/exec", "create"}, {"", "", "pods", "patch"}, {"", "apps", "deployments", "get"}, {"", "apps", "deployments", "patch"}, {"", "apps", "statefulsets", "patch"}, {"", "apps", "daemonsets", "patch"}},
		"cmsync-lint":       {{"", "", "configmaps", "get"}, {"", "", "secrets", "get"}},
		"cmsync-namespaces": {{"", "", "namespaces", "list"}, {"", "", "namespaces", "watch"}},
		"cmsync-node-reader": {{"", "", "pods", "create"}, {"", "", "pods", "get"}, {"", "", "pods", "list"}, {"", "", "pods", "watch"}, {"", "", "pods", "delete"},
			{"", "", "pods/exec", "get"}, {"", "", "pods/exec", "create"}},
	}
	for role, rs := range needs {
		for _, r := range rs {
			r.role = role
			if !file[r] {
				t.Errorf("rbac.yaml lacks %s", r)
			}
		}
	}
}

// TestRBACFileIsTable: rbac.yaml's ClusterRoles are exactly the Go table
// (pkg/rbac) the commands' pre-checks and notes read, role by role.
func TestRBACFileIsTable(t *testing.T) {
	file, roles := fileRules(t)
	table := map[rule]bool{}
	var names []string
	for _, r := range rbac.Roles {
		names = append(names, r.Name)
		for _, pr := range r.Rules {
			for _, res := range pr.Resources {
				for _, v := range pr.Verbs {
					table[rule{r.Name, pr.Group, res, v}] = true
					if !rbac.Grants(r.Name, v, res) {
						t.Errorf("rbac.Grants(%s, %s, %s) = false for a rule of the table", r.Name, v, res)
					}
				}
			}
		}
	}
	if strings.Join(names, " ") != strings.Join(roles, " ") {
		t.Errorf("table roles %v, rbac.yaml roles %v", names, roles)
	}
	if extra := diff(table, file); len(extra) > 0 {
		t.Errorf("the table (pkg/rbac) has rules rbac.yaml does not:\n  %s", strings.Join(extra, "\n  "))
	}
	if missing := diff(file, table); len(missing) > 0 {
		t.Errorf("rbac.yaml has rules the table (pkg/rbac) does not:\n  %s", strings.Join(missing, "\n  "))
	}
}

// Package rbac is the one table of the permissions each kubectl-cmsync
// command needs. deploy/rbac.yaml is that table written as ClusterRoles (a
// test in deploy keeps the two equal); the refresh pre-check, the Role rule
// an error names and the notes printed when an optional kind is denied all
// read it from here.
package rbac

import (
	"fmt"
	"slices"
)

// Rule is one rule of a ClusterRole: verbs on resources of an API group.
type Rule struct {
	Group     string
	Resources []string
	Verbs     []string
}

// Role is one ClusterRole of deploy/rbac.yaml: what one use of cmsync
// needs, complete (bind one, not several).
type Role struct {
	Name string
	// For says which commands it serves.
	For   string
	Rules []Rule
}

// Role names.
const (
	RoleStatus  = "cmsync-status"
	RoleVerify  = "cmsync-verify"
	RoleRefresh = "cmsync-refresh"
	RoleSecrets = "cmsync-secrets"
	RoleNodes   = "cmsync-nodes"
	RoleLint    = "cmsync-lint"
	// RoleNamespaces: watch and controller --namespace-selector, which
	// watch the labels of namespaces (cluster-scoped).
	RoleNamespaces = "cmsync-namespaces"
	// RoleNodeReader: --reader=node, bound in --reader-namespace only, next
	// to the command's own role.
	RoleNodeReader = "cmsync-node-reader"
)

// read is what every command that reads consumers needs: pods (one by name
// for pod/NAME) and ConfigMaps (listed, watched by the dashboard), the
// owners (ReplicaSet -> Deployment, Job -> CronJob, watched by the
// dashboard) and the workloads with no pod now.
var read = []Rule{
	{"", []string{"pods"}, []string{"get", "list", "watch"}},
	{"", []string{"configmaps"}, []string{"list", "watch"}},
	{"apps", []string{"replicasets"}, []string{"get", "list", "watch"}},
	{"batch", []string{"jobs"}, []string{"get", "list", "watch"}},
	{"apps", []string{"deployments", "statefulsets", "daemonsets"}, []string{"get", "list"}},
	{"batch", []string{"cronjobs"}, []string{"get", "list"}},
}

// exec reads files and the environment inside consuming containers
// (WebSocket exec is a GET, the SPDY fallback a POST).
var exec = Rule{"", []string{"pods/exec"}, []string{"get", "create"}}

// Roles is the table, in the order of deploy/rbac.yaml.
var Roles = []Role{
	{Name: RoleStatus, For: "status, dashboard (watching)", Rules: read},
	{Name: RoleVerify, For: "status --verify, diff, the dashboard's verify and diff", Rules: append(append([]Rule{}, read...), exec)},
	{Name: RoleRefresh, For: "refresh, watch, the dashboard's refresh", Rules: append(append([]Rule{}, read...), exec,
		// verifying: each object read again, by name, after the actions
		Rule{"", []string{"configmaps"}, []string{"get"}},
		Rule{"", []string{"pods"}, []string{"patch"}},
		// restarts; watch watches them for a peer's restarts (the double-restart warning)
		Rule{"apps", []string{"deployments", "statefulsets", "daemonsets"}, []string{"patch", "watch"}},
		Rule{"", []string{"pods/eviction"}, []string{"create"}},
		// reload hooks sent from the operator's machine, through the API
		// server's pod proxy: create for POST, update for PUT, get for GET
		Rule{"", []string{"pods/proxy"}, []string{"get", "create", "update"}},
		Rule{"argoproj.io", []string{"rollouts"}, []string{"get", "list", "watch", "patch"}})},
	{Name: RoleSecrets, For: "--secrets, secret/NAME (with any of the above)", Rules: []Rule{{"", []string{"secrets"}, []string{"get", "list", "watch"}}}},
	{Name: RoleNodes, For: "the kubelet sync delay (optional, cluster-scoped)", Rules: []Rule{
		{"", []string{"nodes"}, []string{"list"}},
		{"", []string{"nodes/proxy"}, []string{"get"}}}},
	{Name: RoleNamespaces, For: "watch and controller --namespace-selector (cluster-scoped)", Rules: []Rule{
		{"", []string{"namespaces"}, []string{"list", "watch"}}}},
	{Name: RoleLint, For: "lint --cluster", Rules: []Rule{{"", []string{"configmaps", "secrets"}, []string{"get"}}}},
	{Name: RoleNodeReader, For: "--reader=node, in --reader-namespace (with the command's role)", Rules: []Rule{
		{"", []string{"pods"}, []string{"create", "get", "list", "watch", "delete"}},
		{"", []string{"pods/exec"}, []string{"get", "create"}},
		{"", []string{"events"}, []string{"list"}}}},
}

// groups is the API group of every resource the table names.
var groups = func() map[string]string {
	out := map[string]string{}
	for _, r := range Roles {
		for _, rule := range r.Rules {
			for _, res := range rule.Resources {
				out[res] = rule.Group
			}
		}
	}
	return out
}()

// Group is the API group of resource ("" for the core group, and for a
// resource the table does not name).
func Group(resource string) string { return groups[resource] }

// Grants tells whether role holds verb on resource.
func Grants(role, verb, resource string) bool {
	for _, r := range Roles {
		if r.Name != role {
			continue
		}
		for _, rule := range r.Rules {
			if slices.Contains(rule.Resources, resource) && slices.Contains(rule.Verbs, verb) && rule.Group == groups[resource] {
				return true
			}
		}
	}
	return false
}

// RoleRule renders the Role rule that grants verb on resource.
func RoleRule(verb, resource string) string {
	return fmt.Sprintf(`{apiGroups: [%q], resources: [%q], verbs: [%q]}`, Group(resource), resource, verb)
}

// Optional are the kinds a reading command does without: what its output
// does when RBAC denies their LIST (the note printed then).
var Optional = map[string]string{
	"secrets":     "Secrets skipped (ConfigMaps are shown)",
	"replicasets": "owners shown as replicaset/NAME (unresolved)",
	"jobs":        "owners shown as job/NAME (unresolved)",
	"nodes":       "delays assume the kubelet defaults (0-90s)",
}

// Without says what the output does without resource: Optional's note, or
// for any other kind that its pod templates are left out.
func Without(resource string) string {
	if s, ok := Optional[resource]; ok {
		return s
	}
	return resource + " not read (their pod templates are left out)"
}

// ClusterScoped are the resources a ClusterRole (not a Role) grants.
var ClusterScoped = map[string]bool{"nodes": true, "nodes/proxy": true, "namespaces": true}

// Package rbacaudit compares what a ServiceAccount was granted (the RBAC
// rules of the Roles and ClusterRoles bound to it) with what it did (the
// API server's audit log): every request must have been allowed, and every
// permission granted must have been used, or be excused by an allow-list
// that says which scenario needs it and why the tests do not reach it.
//
// The audit Events are decoded into a struct of this package holding only
// the fields the comparison reads (k8s.io/apiserver, which has the full
// type, is not a dependency of this module). Matching is exact: verb, API
// group, resource with its subresource (pods/exec), namespace, and the
// object's name where a rule has resourceNames. A rule with a wildcard or
// nonResourceURLs cannot be shown used request by request, and is reported
// as such.
package rbacaudit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// Event is the part of an audit.k8s.io/v1 Event the comparison reads.
type Event struct {
	AuditID                  string            `json:"auditID"`
	Stage                    string            `json:"stage"`
	RequestURI               string            `json:"requestURI"`
	Verb                     string            `json:"verb"`
	User                     User              `json:"user"`
	ObjectRef                *ObjectRef        `json:"objectRef,omitempty"`
	ResponseStatus           *Status           `json:"responseStatus,omitempty"`
	RequestReceivedTimestamp time.Time         `json:"requestReceivedTimestamp"`
	Annotations              map[string]string `json:"annotations,omitempty"`
}

// User is the authenticated user of a request.
type User struct {
	Username string `json:"username"`
}

// ObjectRef is the object a request is about.
type ObjectRef struct {
	Resource    string `json:"resource,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
	Name        string `json:"name,omitempty"`
	APIGroup    string `json:"apiGroup,omitempty"`
	Subresource string `json:"subresource,omitempty"`
}

// Status is the response's status: its code, and for a failure its reason.
type Status struct {
	Code    int32  `json:"code"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// decisionAnnotation is the authorizer's decision the API server records
// on each audited request ("allow" or "forbid").
const decisionAnnotation = "authorization.k8s.io/decision"

// Forbidden reports whether the request was refused: the authorizer's
// decision was forbid, or it was answered 403 (admission refusals too).
func (e Event) Forbidden() bool {
	if e.Annotations[decisionAnnotation] == "forbid" {
		return true
	}
	return e.ResponseStatus != nil && e.ResponseStatus.Code == 403
}

// Resource is the event's resource with its subresource, "pods/exec".
func (e Event) Resource() string {
	if e.ObjectRef == nil {
		return ""
	}
	if e.ObjectRef.Subresource != "" {
		return e.ObjectRef.Resource + "/" + e.ObjectRef.Subresource
	}
	return e.ObjectRef.Resource
}

func (e Event) String() string {
	code := int32(0)
	if e.ResponseStatus != nil {
		code = e.ResponseStatus.Code
	}
	if e.ObjectRef == nil {
		return fmt.Sprintf("%s %s -> %d", e.Verb, e.RequestURI, code)
	}
	o := e.ObjectRef
	return fmt.Sprintf("%s %s (group %q) %s/%s -> %d %s", e.Verb, e.Resource(), o.APIGroup, o.Namespace, o.Name, code, e.RequestURI)
}

// ReadEvents reads an audit log (JSON lines) and returns the events of
// user received at or after since (zero: all), one per request (a watch
// is logged when its response starts and when it ends: the last stage is
// kept). A last line without its newline is one the API server is still
// writing, and is left out; any other line that is not an Event is an
// error.
func ReadEvents(r io.Reader, user string, since time.Time) ([]Event, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	var out []Event
	index := map[string]int{}
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return out, nil // a partial last line, or none
		}
		if err != nil {
			return nil, err
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var e Event
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("audit log line %d: %w", n, err)
		}
		if e.User.Username != user || (!since.IsZero() && e.RequestReceivedTimestamp.Before(since)) {
			continue
		}
		if i, ok := index[e.AuditID]; ok && e.AuditID != "" {
			out[i] = e
			continue
		}
		index[e.AuditID] = len(out)
		out = append(out, e)
	}
}

// Objects are the RBAC objects of an install.
type Objects struct {
	Roles               []rbacv1.Role
	ClusterRoles        []rbacv1.ClusterRole
	RoleBindings        []rbacv1.RoleBinding
	ClusterRoleBindings []rbacv1.ClusterRoleBinding
}

var docSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// ParseManifests reads the RBAC objects of a multi-document YAML stream
// (helm template, kubectl kustomize); other kinds are skipped. A Role or
// RoleBinding without a namespace takes defaultNamespace.
func ParseManifests(b []byte, defaultNamespace string) (Objects, error) {
	var o Objects
	for _, doc := range docSeparator.Split(string(b), -1) {
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			return o, fmt.Errorf("manifest: %w\n%s", err, doc)
		}
		if head.APIVersion != rbacv1.SchemeGroupVersion.String() {
			continue
		}
		var err error
		switch head.Kind {
		case "Role":
			var r rbacv1.Role
			if err = yaml.Unmarshal([]byte(doc), &r); r.Namespace == "" {
				r.Namespace = defaultNamespace
			}
			o.Roles = append(o.Roles, r)
		case "ClusterRole":
			var r rbacv1.ClusterRole
			err = yaml.Unmarshal([]byte(doc), &r)
			o.ClusterRoles = append(o.ClusterRoles, r)
		case "RoleBinding":
			var b rbacv1.RoleBinding
			if err = yaml.Unmarshal([]byte(doc), &b); b.Namespace == "" {
				b.Namespace = defaultNamespace
			}
			o.RoleBindings = append(o.RoleBindings, b)
		case "ClusterRoleBinding":
			var b rbacv1.ClusterRoleBinding
			err = yaml.Unmarshal([]byte(doc), &b)
			o.ClusterRoleBindings = append(o.ClusterRoleBindings, b)
		}
		if err != nil {
			return o, fmt.Errorf("%s: %w", head.Kind, err)
		}
	}
	return o, nil
}

// Grant is one rule granted, and where: Namespace "" for a ClusterRole
// bound by a ClusterRoleBinding (every namespace, and cluster-scoped
// resources), else the one namespace of the RoleBinding.
type Grant struct {
	Namespace string
	From      string // "ClusterRole/NAME via RoleBinding/NS/NAME"
	Rule      rbacv1.PolicyRule
	// Unknown says why the rules of From are not known, so that nothing
	// is known of what it grants: an aggregated ClusterRole, whose rules
	// the cluster's controller fills in from other roles.
	Unknown string
}

// Username is the name the API server authenticates a ServiceAccount as.
func Username(namespace, serviceAccount string) string {
	return "system:serviceaccount:" + namespace + ":" + serviceAccount
}

// boundTo tells whether subjects name the ServiceAccount; bindingNamespace
// is a RoleBinding's namespace ("" for a ClusterRoleBinding), which a
// ServiceAccount subject without a namespace means, as the authorizer reads it.
func boundTo(subjects []rbacv1.Subject, bindingNamespace, namespace, serviceAccount string) bool {
	for _, s := range subjects {
		saNamespace := s.Namespace
		if saNamespace == "" {
			saNamespace = bindingNamespace
		}
		switch {
		case s.Kind == rbacv1.ServiceAccountKind && s.Name == serviceAccount && saNamespace == namespace:
			return true
		case s.Kind == rbacv1.UserKind && s.Name == Username(namespace, serviceAccount):
			return true
		}
	}
	return false
}

// GrantsTo returns the rules bound to the ServiceAccount namespace/name by
// these objects (its groups' bindings are not followed). A binding whose
// role is not among the objects is an error: what it grants is unknown.
// An aggregated ClusterRole is one Grant whose rules are Unknown: its
// manifest's rules are not what the cluster grants.
func (o Objects) GrantsTo(namespace, serviceAccount string) ([]Grant, error) {
	var out []Grant
	add := func(ns, from string, rules []rbacv1.PolicyRule) {
		for _, r := range rules {
			out = append(out, Grant{Namespace: ns, From: from, Rule: r})
		}
	}
	addCluster := func(ns, via string, cr *rbacv1.ClusterRole) {
		from := "ClusterRole/" + cr.Name + via
		if cr.AggregationRule != nil {
			out = append(out, Grant{Namespace: ns, From: from, Unknown: "an aggregated ClusterRole (aggregationRule): " +
				"its rules are those of the cluster's ClusterRoles its selectors match, not its manifest's"})
			return
		}
		add(ns, from, cr.Rules)
	}
	for _, b := range o.ClusterRoleBindings {
		if !boundTo(b.Subjects, "", namespace, serviceAccount) {
			continue
		}
		if b.RoleRef.Kind != "ClusterRole" {
			return nil, fmt.Errorf("ClusterRoleBinding %s refers to a %s", b.Name, b.RoleRef.Kind)
		}
		cr, err := o.clusterRole(b.RoleRef.Name)
		if err != nil {
			return nil, err
		}
		addCluster("", " via ClusterRoleBinding/"+b.Name, cr)
	}
	for _, b := range o.RoleBindings {
		if !boundTo(b.Subjects, b.Namespace, namespace, serviceAccount) {
			continue
		}
		via := " via RoleBinding/" + b.Namespace + "/" + b.Name
		switch b.RoleRef.Kind {
		case "ClusterRole":
			cr, err := o.clusterRole(b.RoleRef.Name)
			if err != nil {
				return nil, err
			}
			addCluster(b.Namespace, via, cr)
		case "Role":
			i := slices.IndexFunc(o.Roles, func(r rbacv1.Role) bool { return r.Name == b.RoleRef.Name && r.Namespace == b.Namespace })
			if i < 0 {
				return nil, fmt.Errorf("Role %s/%s is bound but not among the objects", b.Namespace, b.RoleRef.Name)
			}
			add(b.Namespace, "Role/"+b.Namespace+"/"+b.RoleRef.Name+via, o.Roles[i].Rules)
		default:
			return nil, fmt.Errorf("RoleBinding %s/%s refers to a %s", b.Namespace, b.Name, b.RoleRef.Kind)
		}
	}
	return out, nil
}

// clusterRole is the ClusterRole of that name among the objects.
func (o Objects) clusterRole(name string) (*rbacv1.ClusterRole, error) {
	for i := range o.ClusterRoles {
		if o.ClusterRoles[i].Name == name {
			return &o.ClusterRoles[i], nil
		}
	}
	return nil, fmt.Errorf("ClusterRole %s is bound but not among the objects", name)
}

// Permission is one verb on one resource (with its subresource) of one API
// group, in one namespace ("" everywhere), on one object by name ("" any).
type Permission struct {
	Namespace, APIGroup, Resource, Verb, Name string
}

func (p Permission) String() string {
	s := fmt.Sprintf("%s %s (group %q)", p.Verb, p.Resource, p.APIGroup)
	if p.Name != "" {
		s += " named " + p.Name
	}
	if p.Namespace != "" {
		return s + " in " + p.Namespace
	}
	return s + " cluster-wide"
}

// Permissions expands a grant into its permissions, or says why it cannot
// (a wildcard or nonResourceURLs).
func (g Grant) Permissions() ([]Permission, error) {
	r := g.Rule
	if g.Unknown != "" {
		return nil, fmt.Errorf("%s: %s", g.From, g.Unknown)
	}
	if len(r.NonResourceURLs) > 0 {
		return nil, fmt.Errorf("%s: nonResourceURLs %v are not resources", g.From, r.NonResourceURLs)
	}
	for _, l := range [][]string{r.Verbs, r.APIGroups, r.Resources, r.ResourceNames} {
		if slices.Contains(l, "*") || slices.ContainsFunc(l, func(s string) bool { return strings.Contains(s, "*") }) {
			return nil, fmt.Errorf("%s: a wildcard in %v cannot be shown used", g.From, r)
		}
	}
	names := r.ResourceNames
	if len(names) == 0 {
		names = []string{""}
	}
	var out []Permission
	for _, v := range r.Verbs {
		for _, grp := range r.APIGroups {
			for _, res := range r.Resources {
				for _, n := range names {
					out = append(out, Permission{Namespace: g.Namespace, APIGroup: grp, Resource: res, Verb: v, Name: n})
				}
			}
		}
	}
	return out, nil
}

// UsedBy reports whether the event is a request this permission allowed.
func (p Permission) UsedBy(e Event) bool {
	if e.ObjectRef == nil || e.Forbidden() || e.Verb != p.Verb || e.ObjectRef.APIGroup != p.APIGroup || e.Resource() != p.Resource {
		return false
	}
	if p.Namespace != "" && e.ObjectRef.Namespace != p.Namespace {
		return false
	}
	return p.Name == "" || e.ObjectRef.Name == p.Name
}

// AuthenticatedDefaults are what Kubernetes grants every authenticated
// user (the bootstrap ClusterRoles system:basic-user, system:discovery
// and system:public-info-viewer, bound to system:authenticated): a request
// they allow needs no rule of the grants under test.
var AuthenticatedDefaults = []Grant{
	{From: "ClusterRole/system:basic-user", Rule: rbacv1.PolicyRule{Verbs: []string{"create"}, APIGroups: []string{"authorization.k8s.io"},
		Resources: []string{"selfsubjectaccessreviews", "selfsubjectrulesreviews"}}},
	{From: "ClusterRole/system:basic-user", Rule: rbacv1.PolicyRule{Verbs: []string{"create"}, APIGroups: []string{"authentication.k8s.io"},
		Resources: []string{"selfsubjectreviews"}}},
	{From: "ClusterRole/system:discovery", Rule: rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{
		"/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*", "/readyz", "/version", "/version/"}}},
}

// Allows tells whether the grant allows the request, wildcards included,
// as the RBAC authorizer matches a rule; a grant whose rules are Unknown
// allows nothing that can be shown.
func (g Grant) Allows(e Event) bool {
	r := g.Rule
	if g.Unknown != "" || !anyOf(r.Verbs, e.Verb) {
		return false
	}
	if e.ObjectRef == nil {
		path, _, _ := strings.Cut(e.RequestURI, "?")
		return slices.ContainsFunc(r.NonResourceURLs, func(u string) bool {
			prefix, wild := strings.CutSuffix(u, "*")
			return u == path || wild && strings.HasPrefix(path, prefix)
		})
	}
	o := e.ObjectRef
	if g.Namespace != "" && o.Namespace != g.Namespace || !anyOf(r.APIGroups, o.APIGroup) {
		return false
	}
	resource := slices.ContainsFunc(r.Resources, func(res string) bool {
		return res == "*" || res == e.Resource() || o.Subresource != "" && res == "*/"+o.Subresource
	})
	return resource && (len(r.ResourceNames) == 0 || slices.Contains(r.ResourceNames, o.Name))
}

// anyOf tells whether list holds v or the wildcard.
func anyOf(list []string, v string) bool {
	return slices.Contains(list, "*") || slices.Contains(list, v)
}

// AllowListHeading is the heading of docs/rbac.md's allow-list for the
// in-cluster controller; CLIAllowListHeading that of the CLI's roles, whose
// table has a first column naming the role each row is for.
const (
	AllowListHeading    = "### Granted, not reached by the tests"
	CLIAllowListHeading = "### The roles' permissions not reached by the tests"
)

// Allowance excuses a permission the tests do not use: Verb on Resource
// of APIGroup, in any namespace and by any name, for Role (every role when
// empty); Scenario is what needs it, Why why the tests do not reach it.
type Allowance struct {
	Role                     string
	APIGroup, Resource, Verb string
	Scenario, Why            string
}

func (a Allowance) covers(p Permission) bool {
	return a.APIGroup == p.APIGroup && a.Resource == p.Resource && a.Verb == p.Verb
}

// ForRole is the part of an allow-list that excuses permissions of role:
// its rows, and the rows that name no role.
func ForRole(allow []Allowance, role string) []Allowance {
	var out []Allowance
	for _, a := range allow {
		if a.Role == "" || a.Role == role {
			out = append(out, a)
		}
	}
	return out
}

// ParseAllowList reads the allow-list: the first table after the heading
// line heading (a Markdown heading, "## ..."), whose columns are apiGroup
// (`""` for the core group), resources, verbs (both comma-separated),
// the scenario that needs them and why the tests do not reach it, after
// an optional first column role (the ClusterRole the row is for). Every
// row must say both the scenario and why.
func ParseAllowList(markdown []byte, heading string) ([]Allowance, error) {
	lines := strings.Split(string(markdown), "\n")
	start := slices.Index(lines, heading)
	if start < 0 {
		return nil, fmt.Errorf("no heading %q", heading)
	}
	var out []Allowance
	width := 0 // the header's cells: 5, or 6 with a role column
	for _, l := range lines[start+1:] {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "#") {
			break
		}
		if !strings.HasPrefix(l, "|") {
			if width > 0 {
				break
			}
			continue
		}
		cells := strings.Split(strings.Trim(l, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if width == 0 { // the header row
			if width = allowListWidth(cells); width == 0 {
				return nil, fmt.Errorf("allow-list header %q: want | [role |] apiGroup | resources | verbs | scenario | why not reached |", l)
			}
			continue
		}
		if separatorRow(cells) {
			continue
		}
		if len(cells) != width || cells[width-2] == "" || cells[width-1] == "" || (width == 6 && cells[0] == "") {
			return nil, fmt.Errorf("allow-list row %q: want %d cells, the scenario and why it is not reached included", l, width)
		}
		role := ""
		if width == 6 {
			if role, cells = strings.Trim(cells[0], "`"), cells[1:]; role == "" || role == `""` {
				return nil, fmt.Errorf("allow-list row %q: no role", l)
			}
		}
		a := allowances(role, cells)
		if cells[0] == "" || len(a) == 0 {
			return nil, fmt.Errorf("allow-list row %q: want an apiGroup (`\"\"` for the core group), resources and verbs", l)
		}
		out = append(out, a...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no allow-list table after %q", heading)
	}
	return out, nil
}

// separatorRow: the row under a table's header, every cell dashes.
func separatorRow(cells []string) bool {
	for _, c := range cells {
		if c == "" || strings.Trim(c, "-: ") != "" {
			return false
		}
	}
	return true
}

// allowListWidth is the number of cells of a valid allow-list header, 0
// for another header.
func allowListWidth(cells []string) int {
	switch {
	case len(cells) == 5 && strings.EqualFold(cells[0], "apiGroup"):
		return 5
	case len(cells) == 6 && strings.EqualFold(cells[0], "role") && strings.EqualFold(cells[1], "apiGroup"):
		return 6
	}
	return 0
}

// allowances expands one row (apiGroup, resources, verbs, scenario, why).
func allowances(role string, cells []string) []Allowance {
	group := strings.Trim(cells[0], "`")
	if group == `""` {
		group = ""
	}
	var out []Allowance
	for _, res := range splitList(cells[1]) {
		for _, v := range splitList(cells[2]) {
			out = append(out, Allowance{Role: role, APIGroup: group, Resource: res, Verb: v, Scenario: cells[3], Why: cells[4]})
		}
	}
	return out
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.Trim(strings.TrimSpace(f), "`"); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// Report is the comparison's outcome.
type Report struct {
	// Forbidden: requests refused (one event per request)
	Forbidden []Event
	// Unused: permissions granted, not used and not excused
	Unused []Permission
	// Excused: permissions granted, not used, excused by the allow-list
	Excused []Permission
	// Used: each permission used, and how many requests used it
	Used map[Permission]int
	// Unverifiable: rules that cannot be expanded into permissions
	Unverifiable []string
	// Ungranted: requests the API server allowed that no grant under test
	// (nor AuthenticatedDefaults) allows: a binding left in the cluster, or
	// one to a group, answered for a rule the grants lack.
	Ungranted []Event
}

// OK: nothing refused, nothing allowed that the grants do not allow,
// nothing granted but unused and unexcused.
func (r Report) OK() bool {
	return len(r.Forbidden) == 0 && len(r.Unused) == 0 && len(r.Unverifiable) == 0 && len(r.Ungranted) == 0
}

func (r Report) String() string {
	var b strings.Builder
	for _, e := range r.Forbidden {
		fmt.Fprintf(&b, "forbidden: %s\n", e)
	}
	for _, e := range r.Ungranted {
		fmt.Fprintf(&b, "allowed, yet granted by no rule under test: %s\n", e)
	}
	for _, p := range r.Unused {
		fmt.Fprintf(&b, "granted, never used and not in the allow-list: %s\n", p)
	}
	for _, s := range r.Unverifiable {
		fmt.Fprintf(&b, "cannot be checked: %s\n", s)
	}
	for _, p := range r.Excused {
		fmt.Fprintf(&b, "granted, not used, allow-listed: %s\n", p)
	}
	used := make([]string, 0, len(r.Used))
	for p, n := range r.Used {
		used = append(used, fmt.Sprintf("used %d times: %s", n, p))
	}
	sort.Strings(used)
	for _, s := range used {
		b.WriteString(s + "\n")
	}
	return b.String()
}

// Compare checks the events of one user (ReadEvents) against the grants
// made to it (GrantsTo) and the allow-list: every request the API server
// allowed must be one the grants (or AuthenticatedDefaults) allow, whatever
// else in the cluster allowed it.
func Compare(grants []Grant, events []Event, allow []Allowance) Report {
	rep := Report{Used: map[Permission]int{}}
	allowedBy := append(slices.Clone(grants), AuthenticatedDefaults...)
	for _, e := range events {
		switch {
		case e.Forbidden():
			rep.Forbidden = append(rep.Forbidden, e)
		case !slices.ContainsFunc(allowedBy, func(g Grant) bool { return g.Allows(e) }):
			rep.Ungranted = append(rep.Ungranted, e)
		}
	}
	seen := map[Permission]bool{}
	for _, g := range grants {
		perms, err := g.Permissions()
		if err != nil {
			rep.Unverifiable = append(rep.Unverifiable, err.Error())
			continue
		}
		for _, p := range perms {
			if seen[p] {
				continue
			}
			seen[p] = true
			n := 0
			for _, e := range events {
				if p.UsedBy(e) {
					n++
				}
			}
			switch {
			case n > 0:
				rep.Used[p] = n
			case slices.ContainsFunc(allow, func(a Allowance) bool { return a.covers(p) }):
				rep.Excused = append(rep.Excused, p)
			default:
				rep.Unused = append(rep.Unused, p)
			}
		}
	}
	return rep
}

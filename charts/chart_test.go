package charts

import (
	"bytes"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the goldens in testdata/")

const chart = "kubectl-cmsync"

// helm is the cached helm of hack/tools/helm.sh; the test fails, saying how
// to build it, when it is absent.
func helm(t *testing.T) string {
	t.Helper()
	out, err := exec.Command(filepath.Join("..", "hack", "tools", "helm.sh"), "--path").Output()
	path := strings.TrimSpace(string(out))
	if err != nil {
		t.Fatalf("helm is not built (%s: %v): run hack/tools/helm.sh (or make helm) once", path, err)
	}
	return path
}

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(helm(t), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out), nil
}

// render is helm template of the release kubectl-cmsync in cmsync-system
// (deploy/controller's names), with the values files and --set flags of
// extra, as objects by kind/namespace/name.
func render(t *testing.T, extra ...string) (string, map[string][]byte) {
	t.Helper()
	// no --kube-version: a plain helm template (a GitOps pipeline's, lint's
	// input) must render
	args := append([]string{"template", "kubectl-cmsync", chart, "--namespace", "cmsync-system"}, extra...)
	out, err := run(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out, split(t, out)
}

func split(t *testing.T, s string) map[string][]byte {
	t.Helper()
	docs := map[string][]byte{}
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(s, -1) {
		var u unstructured.Unstructured
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatalf("%v in\n%s", err, doc)
		}
		if u.Object == nil {
			continue
		}
		docs[u.GetKind()+"/"+u.GetNamespace()+"/"+u.GetName()] = []byte(doc)
	}
	return docs
}

func get[T any](t *testing.T, docs map[string][]byte, key string) T {
	t.Helper()
	var v T
	doc, ok := docs[key]
	if !ok {
		keys := make([]string, 0, len(docs))
		for k := range docs {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		t.Fatalf("no %s in %v", key, keys)
	}
	if err := yaml.UnmarshalStrict(doc, &v); err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	return v
}

func TestLint(t *testing.T) {
	for _, values := range [][]string{nil, {"-f", "kubectl-cmsync/ci/full-values.yaml"}} {
		if out, err := run(t, append([]string{"lint", "--strict", chart}, values...)...); err != nil {
			t.Errorf("%v\n%s", err, out)
		}
	}
}

// helm template of the default values and of ci/full-values.yaml (every
// option changed) equal testdata/*.golden.yaml.
func TestGolden(t *testing.T) {
	for name, values := range map[string][]string{
		"default": nil,
		"full":    {"-f", "kubectl-cmsync/ci/full-values.yaml"},
	} {
		got, _ := render(t, values...)
		path := filepath.Join("testdata", name+".golden.yaml")
		if *update {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test ./charts -update writes it)", err)
		}
		if got != string(want) {
			t.Errorf("helm template with %s values differs from %s (go test ./charts -update rewrites it after a review):\n%s",
				name, path, lineDiff(string(want), got))
		}
	}
}

// lineDiff names the first differing line.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return fmt.Sprintf("line %d:\n  golden:   %q\n  rendered: %q", i+1, a, b)
		}
	}
	return "(equal lines)"
}

// deployDocs reads a file of deploy/ by kind/namespace/name, the base's
// objects in cmsync-system as its kustomization puts them.
func deployDocs(t *testing.T, file, ns string) map[string][]byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "deploy", file))
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string][]byte{}
	for k, v := range split(t, string(b)) {
		var u unstructured.Unstructured
		_ = yaml.Unmarshal(v, &u.Object)
		if u.GetNamespace() == "" && u.GetKind() != "ClusterRole" && u.GetKind() != "ClusterRoleBinding" && u.GetKind() != "Namespace" {
			u.SetNamespace(ns)
			k = u.GetKind() + "/" + ns + "/" + u.GetName()
		}
		docs[k] = v
	}
	return docs
}

// The chart's RBAC is deploy/controller's, rule by rule; with the node
// reader, less the cluster-wide pods/exec, plus deploy/controller-node-
// reader's Role in the readers' namespace (privileged Pod Security).
func TestRBACMatchesDeploy(t *testing.T) {
	const name = "kubectl-cmsync-controller"
	base := deployDocs(t, "controller/rbac.yaml", "cmsync-system")
	baseCR := get[rbacv1.ClusterRole](t, base, "ClusterRole//"+name)
	baseRole := get[rbacv1.Role](t, base, "Role/cmsync-system/"+name)
	for _, mode := range []string{"exec", "node"} {
		_, docs := render(t, "--set", "reader.mode="+mode)
		cr := get[rbacv1.ClusterRole](t, docs, "ClusterRole//"+name)
		want := baseCR.Rules
		if mode == "node" {
			want = slices.DeleteFunc(slices.Clone(want), func(r rbacv1.PolicyRule) bool { return slices.Contains(r.Resources, "pods/exec") })
			if len(want) != len(baseCR.Rules)-1 {
				t.Fatalf("deploy/controller's ClusterRole has no pods/exec rule to drop: %v", baseCR.Rules)
			}
		}
		if fmt.Sprint(cr.Rules) != fmt.Sprint(want) {
			t.Errorf("reader %s: the ClusterRole's rules\n  %v\nwant\n  %v", mode, cr.Rules, want)
		}
		role := get[rbacv1.Role](t, docs, "Role/cmsync-system/"+name)
		if fmt.Sprint(role.Rules) != fmt.Sprint(baseRole.Rules) {
			t.Errorf("reader %s: the Role's rules\n  %v\nwant\n  %v", mode, role.Rules, baseRole.Rules)
		}
		for _, b := range []string{"ClusterRoleBinding//" + name, "RoleBinding/cmsync-system/" + name} {
			rb := get[rbacv1.ClusterRoleBinding](t, docs, b)
			if len(rb.Subjects) != 1 || rb.Subjects[0].Name != name || rb.Subjects[0].Namespace != "cmsync-system" || rb.RoleRef.Name != name {
				t.Errorf("%s binds %+v to %+v", b, rb.Subjects, rb.RoleRef)
			}
		}
		const readerRole = "Role/cmsync-readers/" + name + "-node-reader"
		if _, ok := docs[readerRole]; ok != (mode == "node") {
			t.Errorf("reader %s: %s rendered: %v", mode, readerRole, ok)
		}
		if mode != "node" {
			continue
		}
		reader := deployDocs(t, "controller-node-reader/rbac.yaml", "cmsync-readers")
		want2 := get[rbacv1.Role](t, reader, "Role/cmsync-readers/kubectl-cmsync-node-reader")
		if got := get[rbacv1.Role](t, docs, readerRole); fmt.Sprint(got.Rules) != fmt.Sprint(want2.Rules) {
			t.Errorf("the node reader's Role: %v, want %v", got.Rules, want2.Rules)
		}
		ns := get[corev1.Namespace](t, docs, "Namespace//cmsync-readers")
		if ns.Labels["pod-security.kubernetes.io/enforce"] != "privileged" {
			t.Errorf("the readers' namespace labels: %v", ns.Labels)
		}
		d := get[appsv1.Deployment](t, docs, "Deployment/cmsync-system/"+name)
		if args := d.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--reader=node") || !slices.Contains(args, "--reader-namespace=cmsync-readers") {
			t.Errorf("reader node: args %v", args)
		}
	}
}

// The chart runs the image deploy/controller runs (v + appVersion), as
// deploy/controller's Deployment does: the same args by default, non-root,
// read-only root filesystem, no privilege escalation, no capability.
func TestDeploymentMatchesDeploy(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(chart, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct{ AppVersion string }
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	kb, err := os.ReadFile(filepath.Join("..", "deploy", "controller", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Images []struct{ NewName, NewTag string }
	}
	if err := yaml.Unmarshal(kb, &k); err != nil || len(k.Images) != 1 {
		t.Fatalf("deploy/controller/kustomization.yaml: %v %+v", err, k.Images)
	}
	wantImage := k.Images[0].NewName + ":" + k.Images[0].NewTag
	if "v"+c.AppVersion != k.Images[0].NewTag {
		t.Errorf("Chart.yaml appVersion %q, deploy/controller's tag %q: release them together", c.AppVersion, k.Images[0].NewTag)
	}
	const name = "kubectl-cmsync-controller"
	_, docs := render(t)
	d := get[appsv1.Deployment](t, docs, "Deployment/cmsync-system/"+name)
	base := get[appsv1.Deployment](t, deployDocs(t, "controller/deployment.yaml", "cmsync-system"), "Deployment/cmsync-system/"+name)
	ctr, bctr := d.Spec.Template.Spec.Containers[0], base.Spec.Template.Spec.Containers[0]
	if ctr.Image != wantImage || ctr.ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("image %s (%s), want %s", ctr.Image, ctr.ImagePullPolicy, wantImage)
	}
	// the base's args, then the defaults made explicit
	wantArgs := append(slices.Clone(bctr.Args), "--require-opt-in=true", "--leader-elect=true", "--lease-name="+name,
		"--key-secret="+name+"-key", "--metrics-addr=:8080")
	if fmt.Sprint(ctr.Args) != fmt.Sprint(wantArgs) {
		t.Errorf("args %v, want %v", ctr.Args, wantArgs)
	}
	if *d.Spec.Replicas != *base.Spec.Replicas || fmt.Sprint(ctr.Env) != fmt.Sprint(bctr.Env) ||
		fmt.Sprint(ctr.SecurityContext) != fmt.Sprint(bctr.SecurityContext) ||
		fmt.Sprint(d.Spec.Template.Spec.SecurityContext) != fmt.Sprint(base.Spec.Template.Spec.SecurityContext) ||
		fmt.Sprint(ctr.Resources) != fmt.Sprint(bctr.Resources) || fmt.Sprint(ctr.LivenessProbe) != fmt.Sprint(bctr.LivenessProbe) ||
		fmt.Sprint(ctr.ReadinessProbe) != fmt.Sprint(bctr.ReadinessProbe) {
		t.Errorf("the Deployment differs from deploy/controller's:\n%+v\n%+v", d.Spec.Template.Spec, base.Spec.Template.Spec)
	}
	sc := ctr.SecurityContext
	if ps := d.Spec.Template.Spec.SecurityContext; ps == nil || ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot ||
		sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("security contexts %+v %+v", d.Spec.Template.Spec.SecurityContext, sc)
	}
	for _, kind := range []string{"PodDisruptionBudget", "ServiceAccount"} {
		if _, ok := docs[kind+"/cmsync-system/"+name]; !ok {
			t.Errorf("no %s", kind)
		}
	}
	for k := range docs {
		if strings.HasPrefix(k, "NetworkPolicy/") || strings.HasPrefix(k, "PodMonitor/") || strings.HasPrefix(k, "ServiceMonitor/") || strings.HasPrefix(k, "Service/") {
			t.Errorf("%s rendered by default", k)
		}
	}
}

// Values the controller cannot honour fail the install, saying why: the
// templates' checks, which hold with --skip-schema-validation too; where
// values.schema.json refuses the value first, its message (schema).
func TestInvalidValues(t *testing.T) {
	for _, tc := range []struct{ set, want, schema string }{
		{"leaderElection.enabled=false", "replicas > 1 needs leaderElection.enabled", ""},
		{"reader.mode=ssh", `reader.mode "ssh": exec or node`, `at '/reader/mode': value must be one of 'exec', 'node'`},
		{"watchGlobally=false,namespaces={a,b}", "the controller watches one namespace", ""},
		{"watchGlobally=false,namespaces={a},ignoreNamespaces={b,a}", `ignoreNamespaces: "a" is the namespace watched`, ""},
		{"alerts.info=prod", "alerts.format, alerts.proxy and alerts.info need alerts.webhook.existingSecret", ""},
		{"alerts.format=slack", "alerts.format, alerts.proxy and alerts.info need alerts.webhook.existingSecret", ""},
		{"alerts.webhook.existingSecret=hook,alerts.format=discord", `alerts.format "discord": slack, teams, gchat or raw`,
			`at '/alerts/format': value must be one of 'slack', 'teams', 'gchat', 'raw'`},
	} {
		for _, skip := range []bool{false, true} {
			args, want := []string{"template", "x", chart, "--set", tc.set}, tc.want
			if skip {
				args = append(args, "--skip-schema-validation")
			} else if tc.schema != "" {
				want = tc.schema
			}
			_, err := run(t, args...)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%v: %v, want an error saying %q", args[3:], err, want)
			}
		}
	}
	_, docs := render(t, "--set", "watchGlobally=false,leaderElection.enabled=false,replicas=1")
	d := get[appsv1.Deployment](t, docs, "Deployment/cmsync-system/kubectl-cmsync-controller")
	if args := d.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--namespace=cmsync-system") ||
		slices.Contains(args, "--all-namespaces") || !slices.Contains(args, "--leader-elect=false") {
		t.Errorf("watchGlobally=false, one replica without election: args %v", args)
	}
}

// rbacDocs are the RBAC objects rendered, by kind/namespace/name.
func rbacDocs(t *testing.T, docs map[string][]byte) (roles map[string][]rbacv1.PolicyRule, bindings map[string]rbacv1.RoleBinding) {
	t.Helper()
	roles, bindings = map[string][]rbacv1.PolicyRule{}, map[string]rbacv1.RoleBinding{}
	for k := range docs {
		switch strings.SplitN(k, "/", 2)[0] {
		case "ClusterRole", "Role":
			roles[k] = get[rbacv1.ClusterRole](t, docs, k).Rules
		case "ClusterRoleBinding", "RoleBinding":
			bindings[k] = get[rbacv1.RoleBinding](t, docs, k)
		}
	}
	return roles, bindings
}

// grants is whether rules grant verb on resource in group, and to which
// names (nil: every name).
func grants(rules []rbacv1.PolicyRule, group, resource, verb string) (bool, []string) {
	var names []string
	for _, r := range rules {
		if (slices.Contains(r.APIGroups, group) || slices.Contains(r.APIGroups, "*")) &&
			(slices.Contains(r.Resources, resource) || slices.Contains(r.Resources, "*")) &&
			(slices.Contains(r.Verbs, verb) || slices.Contains(r.Verbs, "*")) {
			if len(r.ResourceNames) == 0 {
				return true, nil
			}
			names = append(names, r.ResourceNames...)
		}
	}
	return len(names) > 0, names
}

// With watchGlobally=false the controller is granted nothing beyond its
// namespace: no ClusterRole and no ClusterRoleBinding, a Role and its
// RoleBinding in the namespace watched (what it reads, patches, execs
// into, evicts, and its Events), and a Role in the release's namespace for
// its Lease and key Secret only. Only namespaceSelector, which watches the
// namespace's labels (cluster-scoped), adds a ClusterRole: list and watch
// of that one namespace by name.
func TestNamespacedRBAC(t *testing.T) {
	const name = "kubectl-cmsync-controller"
	for _, tc := range []struct {
		set     string
		watched string
	}{
		{"watchGlobally=false,namespaces={shop}", "shop"},
		{"watchGlobally=false", "cmsync-system"},
		{"watchGlobally=false,namespaces={shop},reader.mode=node", "shop"},
		{"watchGlobally=false,namespaces={shop},secrets=false", "shop"},
	} {
		_, docs := render(t, "--set", tc.set)
		roles, bindings := rbacDocs(t, docs)
		for k := range roles {
			if strings.HasPrefix(k, "ClusterRole/") {
				t.Errorf("%s: %s rendered", tc.set, k)
			}
		}
		for k, b := range bindings {
			if strings.HasPrefix(k, "ClusterRoleBinding/") {
				t.Errorf("%s: %s rendered", tc.set, k)
			}
			if len(b.Subjects) != 1 || b.Subjects[0].Name != name || b.Subjects[0].Namespace != "cmsync-system" || b.RoleRef.Kind != "Role" {
				t.Errorf("%s: %s binds %+v to %+v", tc.set, k, b.Subjects, b.RoleRef)
			}
		}
		watched := roles["Role/"+tc.watched+"/"+name+"-watched"]
		if watched == nil {
			t.Fatalf("%s: no Role %s-watched in %s: %v", tc.set, name, tc.watched, slices.Sorted(maps.Keys(roles)))
		}
		if _, ok := bindings["RoleBinding/"+tc.watched+"/"+name+"-watched"]; !ok {
			t.Errorf("%s: no RoleBinding for the watched namespace", tc.set)
		}
		for _, need := range [][3]string{{"", "pods", "list"}, {"", "configmaps", "watch"}, {"", "pods", "patch"}, {"apps", "deployments", "patch"},
			{"", "pods/eviction", "create"}, {"", "events", "create"}, {"argoproj.io", "rollouts", "patch"}} {
			if ok, names := grants(watched, need[0], need[1], need[2]); !ok || names != nil {
				t.Errorf("%s: the watched namespace's Role lacks %s %s: %v", tc.set, need[2], need[1], watched)
			}
		}
		if ok, _ := grants(watched, "", "pods/exec", "create"); ok == strings.Contains(tc.set, "reader.mode=node") {
			t.Errorf("%s: pods/exec in the watched namespace: %v", tc.set, ok)
		}
		if ok, _ := grants(watched, "", "secrets", "list"); ok == strings.Contains(tc.set, "secrets=false") {
			t.Errorf("%s: list secrets in the watched namespace: %v", tc.set, ok)
		}
		own := roles["Role/cmsync-system/"+name]
		for _, need := range [][3]string{{"coordination.k8s.io", "leases", "update"}, {"", "secrets", "get"}, {"", "secrets", "patch"}} {
			if ok, names := grants(own, need[0], need[1], need[2]); !ok || (need[1] == "secrets" && fmt.Sprint(names) != "["+name+"-key]") {
				t.Errorf("%s: the release namespace's Role: %s %s to %v: %v", tc.set, need[2], need[1], names, own)
			}
		}
		if tc.watched != "cmsync-system" {
			for k := range roles {
				if ns := strings.Split(k, "/")[1]; ns != tc.watched && ns != "cmsync-system" && ns != "cmsync-readers" {
					t.Errorf("%s: %s is in neither namespace", tc.set, k)
				}
			}
		}
	}
	_, docs := render(t, "--set", "watchGlobally=false,namespaces={shop},namespaceSelector=team=a")
	roles, _ := rbacDocs(t, docs)
	var cluster []string
	for k, rules := range roles {
		if !strings.HasPrefix(k, "ClusterRole/") {
			continue
		}
		cluster = append(cluster, k)
		if len(rules) != 1 || fmt.Sprint(rules[0].Resources, rules[0].Verbs, rules[0].ResourceNames) != "[namespaces] [list watch] [shop]" {
			t.Errorf("namespaceSelector: %s grants %v, want list and watch of namespace shop only", k, rules)
		}
	}
	if len(cluster) != 1 {
		t.Errorf("namespaceSelector: ClusterRoles %v, want the one reading namespace shop", cluster)
	}
}

// With secrets=false no rule grants list or watch of Secrets anywhere, nor
// get of any Secret but the controller's key (by name): whatever the scope
// and the reader.
func TestNoSecretsRBAC(t *testing.T) {
	const key = "kubectl-cmsync-controller-key"
	for _, set := range []string{"secrets=false", "secrets=false,watchGlobally=false,namespaces={shop}", "secrets=false,reader.mode=node",
		"secrets=false,namespaceSelector=team=a"} {
		_, docs := render(t, "--set", set)
		roles, _ := rbacDocs(t, docs)
		for k, rules := range roles {
			for _, verb := range []string{"list", "watch"} {
				if ok, _ := grants(rules, "", "secrets", verb); ok {
					t.Errorf("%s: %s grants %s secrets", set, k, verb)
				}
			}
			for _, verb := range []string{"get", "patch", "update", "delete"} {
				if ok, names := grants(rules, "", "secrets", verb); ok && fmt.Sprint(names) != "["+key+"]" {
					t.Errorf("%s: %s grants %s secrets to %v, want the key only", set, k, verb, names)
				}
			}
		}
	}
	_, docs := render(t)
	roles, _ := rbacDocs(t, docs)
	if ok, names := grants(roles["ClusterRole//kubectl-cmsync-controller"], "", "secrets", "watch"); !ok || names != nil {
		t.Errorf("secrets=true (the default): the ClusterRole does not watch Secrets")
	}
}

// The proxy of the alerts may hold a password: it comes from a Secret
// into $CMSYNC_ALERT_PROXY, never into the arguments; the old plain value
// fails the install, saying what to set instead.
func TestAlertProxyFromSecret(t *testing.T) {
	_, docs := render(t, "--set", "alerts.webhook.existingSecret=hook,alerts.proxy.existingSecret=proxy,alerts.proxy.key=u")
	d := get[appsv1.Deployment](t, docs, "Deployment/cmsync-system/kubectl-cmsync-controller")
	c := d.Spec.Template.Spec.Containers[0]
	for _, a := range c.Args {
		if strings.Contains(a, "proxy") {
			t.Errorf("an argument names the proxy: %q", a)
		}
	}
	var found bool
	for _, e := range c.Env {
		if e.Name == "CMSYNC_ALERT_PROXY" {
			found = e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name == "proxy" && e.ValueFrom.SecretKeyRef.Key == "u"
		}
	}
	if !found {
		t.Errorf("no CMSYNC_ALERT_PROXY from Secret proxy, key u: %+v", c.Env)
	}
	_, err := run(t, "template", "x", chart, "--set", "alerts.webhook.existingSecret=hook,alerts.proxy=http://user:pw@proxy:3128")
	_, helmSaid, _ := strings.Cut(fmt.Sprint(err), "Error:")
	if want := "alerts.proxy is no longer a URL"; err == nil || !strings.Contains(helmSaid, want) || strings.Contains(helmSaid, "user:pw") {
		t.Errorf("the old plain alerts.proxy: %v, want an error saying %q that does not quote it", err, want)
	}
}

// reloadHooks.hostNetwork is --reload-hook-host-network.
func TestReloadHookHostNetworkValue(t *testing.T) {
	for _, on := range []bool{false, true} {
		_, docs := render(t, "--set", fmt.Sprintf("reloadHooks.hostNetwork=%v", on))
		d := get[appsv1.Deployment](t, docs, "Deployment/cmsync-system/kubectl-cmsync-controller")
		if got := slices.Contains(d.Spec.Template.Spec.Containers[0].Args, "--reload-hook-host-network"); got != on {
			t.Errorf("reloadHooks.hostNetwork=%v: the flag given: %v", on, got)
		}
	}
}

package charts

import (
	"bytes"
	"flag"
	"fmt"
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

// Values the controller cannot honour fail the install, saying why.
func TestInvalidValues(t *testing.T) {
	for _, tc := range []struct{ set, want string }{
		{"leaderElection.enabled=false", "replicas > 1 needs leaderElection.enabled"},
		{"reader.mode=ssh", `reader.mode "ssh": exec or node`},
		{"watchGlobally=false,namespaces={a,b}", "the controller watches one namespace"},
		{"watchGlobally=false,namespaces={a},ignoreNamespaces={b,a}", `ignoreNamespaces: "a" is the namespace watched`},
		{"alerts.info=prod", "alerts.format, alerts.proxy and alerts.info need alerts.webhook.existingSecret"},
		{"alerts.format=slack", "alerts.format, alerts.proxy and alerts.info need alerts.webhook.existingSecret"},
		{"alerts.webhook.existingSecret=hook,alerts.format=discord", `alerts.format "discord": slack, teams, gchat or raw`},
	} {
		_, err := run(t, "template", "x", chart, "--set", tc.set)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--set %s: %v, want an error saying %q", tc.set, err, tc.want)
		}
	}
	_, docs := render(t, "--set", "watchGlobally=false,leaderElection.enabled=false,replicas=1")
	d := get[appsv1.Deployment](t, docs, "Deployment/cmsync-system/kubectl-cmsync-controller")
	if args := d.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--namespace=cmsync-system") ||
		slices.Contains(args, "--all-namespaces") || !slices.Contains(args, "--leader-elect=false") {
		t.Errorf("watchGlobally=false, one replica without election: args %v", args)
	}
}

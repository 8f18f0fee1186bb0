package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/rbac"
)

// controllerDocs reads every document of the kustomization's resources, by
// kind and name.
func controllerDocs(t *testing.T) map[string][]byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("controller", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Namespace string   `json:"namespace"`
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(b, &k); err != nil || k.Namespace != "cmsync-system" {
		t.Fatalf("kustomization.yaml: %v, namespace %q", err, k.Namespace)
	}
	out := map[string][]byte{}
	for _, r := range k.Resources {
		b, err := os.ReadFile(filepath.Join("controller", r))
		if err != nil {
			t.Fatalf("kustomization.yaml lists %s: %v", r, err)
		}
		for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
			var u unstructured.Unstructured
			if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
				t.Fatalf("%s: %v", r, err)
			}
			if u.Object == nil {
				continue
			}
			out[u.GetKind()+"/"+u.GetName()] = []byte(doc)
		}
	}
	return out
}

func strict[T any](t *testing.T, docs map[string][]byte, key string) T {
	t.Helper()
	var v T
	doc, ok := docs[key]
	if !ok {
		t.Fatalf("deploy/controller has no %s", key)
	}
	if err := yaml.UnmarshalStrict(doc, &v); err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	return v
}

func grants(rules []rbacv1.PolicyRule, group, resource, verb string) bool {
	return slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool {
		return slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb)
	})
}

// The controller's ClusterRole holds what refresh and --secrets need (the
// table of pkg/rbac), Events, and no more; the Lease and the key Secret are
// a Role of its own namespace.
func TestControllerRBAC(t *testing.T) {
	docs := controllerDocs(t)
	const name = "kubectl-cmsync-controller"
	cr := strict[rbacv1.ClusterRole](t, docs, "ClusterRole/"+name)
	want := map[string]bool{}
	for _, role := range rbac.Roles {
		if role.Name != rbac.RoleRefresh && role.Name != rbac.RoleSecrets && role.Name != rbac.RoleNamespaces {
			continue
		}
		for _, r := range role.Rules {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					want[r.Group+"|"+res+"|"+v] = true
				}
			}
		}
	}
	// its Events: core Events (record.EventRecorder), none of events.k8s.io
	want["|events|create"], want["|events|patch"] = true, true
	want["|secrets|get"] = true // the key, and each Secret's values for the digests
	// reload hooks go straight to the pod's address in the cluster
	// (--reload-hook-via=direct), not through the API server's pod proxy
	delete(want, "|pods/proxy|get")
	delete(want, "|pods/proxy|create")
	delete(want, "|pods/proxy|update")
	// the controller watches ConfigMaps and Secrets only of what refresh
	// may watch; it lists pods and owners in each round
	delete(want, "|pods|watch")
	delete(want, "apps|replicasets|watch")
	delete(want, "batch|jobs|watch")
	// and watches the workloads' templates for a peer's restarts (shadow
	// mode, the double-restart warning)
	for _, res := range []string{"deployments", "statefulsets", "daemonsets"} {
		want["apps|"+res+"|watch"] = true
	}
	have := map[string]bool{}
	for _, r := range cr.Rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					have[g+"|"+res+"|"+v] = true
				}
			}
		}
	}
	for k := range want {
		if !have[k] {
			t.Errorf("the ClusterRole lacks %s", k)
		}
	}
	for k := range have {
		if !want[k] {
			t.Errorf("the ClusterRole grants %s, which the controller does not need", k)
		}
	}
	role := strict[rbacv1.Role](t, docs, "Role/"+name)
	for _, v := range []string{"get", "create", "update"} {
		if !grants(role.Rules, "coordination.k8s.io", "leases", v) {
			t.Errorf("the Role lacks %s leases", v)
		}
	}
	if !grants(role.Rules, "", "secrets", "create") {
		t.Error("the Role lacks create secrets (the key)")
	}
	for _, b := range []string{"ClusterRoleBinding/" + name, "RoleBinding/" + name} {
		binding := strict[rbacv1.ClusterRoleBinding](t, docs, b)
		if len(binding.Subjects) != 1 || binding.Subjects[0].Name != name || binding.Subjects[0].Namespace != "cmsync-system" ||
			binding.RoleRef.Name != name {
			t.Errorf("%s binds %+v to %+v", b, binding.Subjects, binding.RoleRef)
		}
	}
}

// Two replicas behind a PodDisruptionBudget that keeps one, probes on the
// controller's /healthz and /readyz, the downward API for the election.
func TestControllerDeployment(t *testing.T) {
	docs := controllerDocs(t)
	const name = "kubectl-cmsync-controller"
	d := strict[appsv1.Deployment](t, docs, "Deployment/"+name)
	spec := d.Spec.Template.Spec
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("replicas %v, want 2", d.Spec.Replicas)
	}
	if spec.ServiceAccountName != name {
		t.Errorf("serviceAccountName %q", spec.ServiceAccountName)
	}
	strict[map[string]any](t, docs, "ServiceAccount/"+name)
	sel, err := labels.Parse(labels.Set(d.Spec.Selector.MatchLabels).String())
	if err != nil || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Errorf("the selector %v does not select the template %v", d.Spec.Selector.MatchLabels, d.Spec.Template.Labels)
	}
	pdb := strict[policyv1.PodDisruptionBudget](t, docs, "PodDisruptionBudget/"+name)
	pdbSel, _ := labels.Parse(labels.Set(pdb.Spec.Selector.MatchLabels).String())
	if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() != 1 || !pdbSel.Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Errorf("the PodDisruptionBudget keeps %v of %v", pdb.Spec.MinAvailable, pdb.Spec.Selector)
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers", len(spec.Containers))
	}
	c := spec.Containers[0]
	if len(c.Args) == 0 || c.Args[0] != "controller" {
		t.Errorf("args %v, want controller first", c.Args)
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("probes %+v %+v", c.LivenessProbe, c.ReadinessProbe)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			env[e.Name] = e.ValueFrom.FieldRef.FieldPath
		}
	}
	if env["POD_NAME"] != "metadata.name" || env["POD_NAMESPACE"] != "metadata.namespace" {
		t.Errorf("downward API env %v", env)
	}
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || strings.Join(capabilities(sc.Capabilities.Drop), ",") != "ALL" {
		t.Errorf("container securityContext %+v", sc)
	}
}

func capabilities[T ~string](cs []T) []string {
	var out []string
	for _, c := range cs {
		out = append(out, string(c))
	}
	return out
}

// deploy/controller-node-reader adds to deploy/controller the readers'
// namespace (privileged: only reader pods run there), the node reader's
// Role of pkg/rbac bound to the controller's ServiceAccount in that
// namespace alone, the two flags that use them, and the idle timeout that
// deletes a reader pod between changes.
func TestControllerNodeReaderOverlay(t *testing.T) {
	dir := "controller-node-reader"
	k, err := readKustomization(dir)
	if err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	if strings.Join(k.Resources, " ") != "../controller namespace.yaml rbac.yaml" || len(k.Patches) != 2 ||
		!strings.Contains(k.Patches[0].Patch, "value: --reader=node") || !strings.Contains(k.Patches[0].Patch, "value: --reader-namespace=cmsync-readers") ||
		!strings.Contains(k.Patches[0].Patch, "value: --reader-idle-timeout=1m") {
		t.Fatalf("kustomization: resources %v, patches %+v", k.Resources, k.Patches)
	}
	// the base ClusterRole's cluster-wide pods/exec goes: the rule the patch
	// tests for (kustomize fails the build when the test fails) and removes
	var ops []struct {
		Op, Path string
		Value    []string
	}
	if err := yaml.Unmarshal([]byte(k.Patches[1].Patch), &ops); err != nil {
		t.Fatal(err)
	}
	base := strict[rbacv1.ClusterRole](t, controllerDocs(t), "ClusterRole/kubectl-cmsync-controller")
	if len(ops) != 2 || ops[0].Op != "test" || ops[1].Op != "remove" || ops[0].Path != ops[1].Path+"/resources" ||
		fmt.Sprint(ops[0].Value) != "[pods/exec]" || ops[1].Path != "/rules/7" || fmt.Sprint(base.Rules[7].Resources) != "[pods/exec]" {
		t.Errorf("the ClusterRole patch %+v does not remove the base's pods/exec rule (%+v)", ops, base.Rules)
	}
	docs := map[string][]byte{}
	for _, f := range []string{"namespace.yaml", "rbac.yaml"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
			var u unstructured.Unstructured
			if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil || u.Object == nil {
				t.Fatalf("%s: %v", f, err)
			}
			docs[u.GetKind()+"/"+u.GetName()] = []byte(doc)
		}
	}
	ns := strict[corev1.Namespace](t, docs, "Namespace/cmsync-readers")
	if ns.Labels["pod-security.kubernetes.io/enforce"] != "privileged" {
		t.Errorf("namespace labels %v, want the privileged Pod Security level (hostPID, capabilities)", ns.Labels)
	}
	role := strict[rbacv1.Role](t, docs, "Role/kubectl-cmsync-node-reader")
	var want []rbac.Rule
	for _, r := range rbac.Roles {
		if r.Name == rbac.RoleNodeReader {
			want = r.Rules
		}
	}
	var have []rbac.Rule
	for _, r := range role.Rules {
		have = append(have, rbac.Rule{Group: r.APIGroups[0], Resources: r.Resources, Verbs: r.Verbs})
	}
	if fmt.Sprint(have) != fmt.Sprint(want) || role.Namespace != "cmsync-readers" {
		t.Errorf("Role in %q: %v, want %v in cmsync-readers", role.Namespace, have, want)
	}
	rb := strict[rbacv1.RoleBinding](t, docs, "RoleBinding/kubectl-cmsync-node-reader")
	if rb.Namespace != "cmsync-readers" || rb.RoleRef.Name != role.Name || len(rb.Subjects) != 1 ||
		rb.Subjects[0].Name != "kubectl-cmsync-controller" || rb.Subjects[0].Namespace != "cmsync-system" {
		t.Errorf("RoleBinding in %q binds %+v to %+v", rb.Namespace, rb.Subjects, rb.RoleRef)
	}
}

// publishedImage is the repository the release pushes the image index to
// (hack/release/image.sh).
const publishedImage = "ghcr.io/kubectl-cmsync/kubectl-cmsync"

// releaseVersion is the version of the last release, in plugins/krew.yaml.
func releaseVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "plugins", "krew.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Spec struct {
			Version string `json:"version"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &m); err != nil || !regexp.MustCompile(`^v\d+\.\d+\.\d+$`).MatchString(m.Spec.Version) {
		t.Fatalf("plugins/krew.yaml: %v, spec.version %q", err, m.Spec.Version)
	}
	return m.Spec.Version
}

// The base runs the published image at the released version (the tag
// hack/release/image.sh builds from newTag), so that kubectl apply -k needs
// no image step: not a local or moving tag.
func TestControllerImage(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("controller", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Images []struct {
			Name, NewName, NewTag, Digest string
		} `json:"images"`
	}
	if err := yaml.Unmarshal(b, &k); err != nil {
		t.Fatal(err)
	}
	want := releaseVersion(t)
	if len(k.Images) != 1 || k.Images[0].Name != "kubectl-cmsync" || k.Images[0].NewName != publishedImage ||
		k.Images[0].NewTag != want || k.Images[0].Digest != "" {
		t.Errorf("kustomization images %+v, want kubectl-cmsync -> %s:%s", k.Images, publishedImage, want)
	}
	d := strict[appsv1.Deployment](t, controllerDocs(t), "Deployment/kubectl-cmsync-controller")
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "kubectl-cmsync" {
		t.Errorf("the Deployment's image is %q, want kubectl-cmsync (the name the kustomization's images replace)", img)
	}
}

// deploy/controller-namespaced runs the base watching one namespace with no
// cluster-wide permission: its ClusterRole and ClusterRoleBinding deleted,
// --all-namespaces replaced by --namespace of that namespace, and a Role
// there holding the base ClusterRole's rules but for namespaces (which only
// --namespace-selector reads), bound to the controller's ServiceAccount.
func TestControllerNamespacedOverlay(t *testing.T) {
	dir := "controller-namespaced"
	k, err := readKustomization(dir)
	if err != nil || strings.Join(k.Resources, " ") != "../controller rbac.yaml" || len(k.Patches) != 3 {
		t.Fatalf("kustomization.yaml: %v, resources %v, %d patches", err, k.Resources, len(k.Patches))
	}
	deleted := map[string]bool{}
	for _, p := range k.Patches[1:] {
		var u unstructured.Unstructured
		if err := yaml.Unmarshal([]byte(p.Patch), &u.Object); err != nil || u.Object["$patch"] != "delete" {
			t.Fatalf("patch %q: %v, want a $patch: delete", p.Patch, err)
		}
		deleted[u.GetKind()+"/"+u.GetName()] = true
	}
	base := controllerDocs(t)
	for key := range base {
		if strings.HasPrefix(key, "Cluster") && !deleted[key] {
			t.Errorf("the base's %s is not deleted", key)
		}
	}
	docs := map[string][]byte{}
	b, err := os.ReadFile(filepath.Join(dir, "rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
		var u unstructured.Unstructured
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil || u.Object == nil {
			t.Fatalf("rbac.yaml: %v", err)
		}
		docs[u.GetKind()+"/"+u.GetName()] = []byte(doc)
	}
	const name = "kubectl-cmsync-controller"
	role := strict[rbacv1.Role](t, docs, "Role/"+name+"-watched")
	cr := strict[rbacv1.ClusterRole](t, base, "ClusterRole/"+name)
	want := slices.DeleteFunc(slices.Clone(cr.Rules), func(r rbacv1.PolicyRule) bool { return slices.Contains(r.Resources, "namespaces") })
	if len(want) != len(cr.Rules)-1 || fmt.Sprint(role.Rules) != fmt.Sprint(want) {
		t.Errorf("the Role's rules\n  %v\nwant the base ClusterRole's but for namespaces\n  %v", role.Rules, want)
	}
	rb := strict[rbacv1.RoleBinding](t, docs, "RoleBinding/"+name+"-watched")
	if role.Namespace == "" || rb.Namespace != role.Namespace || rb.RoleRef.Kind != "Role" || rb.RoleRef.Name != role.Name ||
		len(rb.Subjects) != 1 || rb.Subjects[0].Name != name || rb.Subjects[0].Namespace != "cmsync-system" {
		t.Errorf("RoleBinding in %q binds %+v to %+v (the Role in %q)", rb.Namespace, rb.Subjects, rb.RoleRef, role.Namespace)
	}
	var ops []struct{ Op, Path, Value string }
	if err := yaml.Unmarshal([]byte(k.Patches[0].Patch), &ops); err != nil {
		t.Fatal(err)
	}
	d := strict[appsv1.Deployment](t, base, "Deployment/"+name)
	const arg = "/spec/template/spec/containers/0/args/"
	if len(ops) != 2 || ops[0].Op != "test" || ops[1].Op != "replace" || ops[0].Path != ops[1].Path || !strings.HasPrefix(ops[0].Path, arg) {
		t.Fatalf("the Deployment's patch %+v", ops)
	}
	i := slices.Index(d.Spec.Template.Spec.Containers[0].Args, ops[0].Value)
	if ops[0].Value != "--all-namespaces" || fmt.Sprint(arg, i) != ops[0].Path || ops[1].Value != "--namespace="+role.Namespace {
		t.Errorf("the Deployment's patch %+v does not replace the base's --all-namespaces (%v) with --namespace=%s", ops, d.Spec.Template.Spec.Containers[0].Args, role.Namespace)
	}
}

// kustomization is what the overlay tests read of a kustomization.yaml.
type kustomization struct {
	Resources []string `json:"resources"`
	Patches   []struct {
		Patch string `json:"patch"`
	} `json:"patches"`
}

// readKustomization reads dir/kustomization.yaml.
func readKustomization(dir string) (kustomization, error) {
	var k kustomization
	b, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err == nil {
		err = yaml.Unmarshal(b, &k)
	}
	return k, err
}

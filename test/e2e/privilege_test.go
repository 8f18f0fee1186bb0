//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// ---- least privilege: a kubeconfig per ServiceAccount ----

// saKubeconfig creates ServiceAccount name in the namespace, binds it to
// the given rules (a Role) or ClusterRole, and writes a kubeconfig that
// authenticates with a token from the TokenRequest API; server and CA come
// from the admin kubeconfig. It returns the kubeconfig's path.
func (f *fx) saKubeconfig(name string, rules []rbacv1.PolicyRule, clusterRole string) string {
	f.t.Helper()
	return f.saKubeconfigReady(name, rules, clusterRole, func(path string) bool {
		_, _, code := f.pluginRunQuiet("status", "--kubeconfig", path, "-o", "json")
		return code == 0
	})
}

// saKubeconfigReady is saKubeconfig with its own test of the RBAC in
// effect: ready(path) tells when the kubeconfig at path may do its work.
func (f *fx) saKubeconfigReady(name string, rules []rbacv1.PolicyRule, clusterRole string, ready func(path string) bool) string {
	f.t.Helper()
	if _, err := f.cs.CoreV1().ServiceAccounts(f.ns).Create(f.ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		f.t.Fatalf("creating ServiceAccount %s: %v", name, err)
	}
	ref := rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: clusterRole}
	if rules != nil {
		if _, err := f.cs.RbacV1().Roles(f.ns).Create(f.ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
			f.t.Fatalf("creating Role %s: %v", name, err)
		}
		ref = rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name}
	}
	if _, err := f.cs.RbacV1().RoleBindings(f.ns).Create(f.ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, RoleRef: ref,
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: f.ns}}}, metav1.CreateOptions{}); err != nil {
		f.t.Fatalf("creating RoleBinding %s: %v", name, err)
	}
	return f.tokenKubeconfig(name, ready)
}

// tokenKubeconfig writes a kubeconfig that authenticates as the
// ServiceAccount name of the namespace with a token from the TokenRequest
// API (server and CA from the admin kubeconfig), and waits until ready(path)
// says its bindings are in effect. It returns the kubeconfig's path.
func (f *fx) tokenKubeconfig(name string, ready func(path string) bool) string {
	f.t.Helper()
	tok, err := f.cs.CoreV1().ServiceAccounts(f.ns).CreateToken(f.ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(3600))}}, metav1.CreateOptions{})
	if err != nil {
		f.t.Fatalf("TokenRequest for %s: %v", name, err)
	}
	ca := restConfig.CAData
	if len(ca) == 0 && restConfig.CAFile != "" {
		if ca, err = os.ReadFile(restConfig.CAFile); err != nil {
			f.t.Fatalf("reading the CA of the admin kubeconfig: %v", err)
		}
	}
	dir := f.t.TempDir()
	caFile := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caFile, ca, 0o600); err != nil {
		f.t.Fatal(err)
	}
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster: {server: %q, certificate-authority: %q}
users:
- name: %s
  user: {token: %q}
contexts:
- name: e2e
  context: {cluster: e2e, user: %s, namespace: %q}
current-context: e2e
`, restConfig.Host, caFile, name, tok.Status.Token, name, f.ns)
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		f.t.Fatal(err)
	}
	// the RoleBinding reaches the authorizer's cache within a moment
	f.poll("RBAC of "+name+" in effect", 30*time.Second, func() (bool, error) { return ready(path), nil })
	return path
}

// pluginRunQuiet is pluginRun without the log (for polls).
func (f *fx) pluginRunQuiet(args ...string) (string, string, int) {
	f.t.Helper()
	return runPlugin(f, false, args...)
}

// resourceVersions lists every object of the kinds the plugin reads or
// changes in the namespace: kind/name -> resourceVersion.
func (f *fx) resourceVersions() map[string]string {
	f.t.Helper()
	out := map[string]string{}
	add := func(kind string, items []metav1.Object) {
		for _, o := range items {
			out[kind+"/"+o.GetName()] = o.GetResourceVersion()
		}
	}
	pods, err1 := f.cs.CoreV1().Pods(f.ns).List(f.ctx, metav1.ListOptions{})
	cms, err2 := f.cs.CoreV1().ConfigMaps(f.ns).List(f.ctx, metav1.ListOptions{})
	secs, err3 := f.cs.CoreV1().Secrets(f.ns).List(f.ctx, metav1.ListOptions{})
	deps, err4 := f.cs.AppsV1().Deployments(f.ns).List(f.ctx, metav1.ListOptions{})
	stss, err5 := f.cs.AppsV1().StatefulSets(f.ns).List(f.ctx, metav1.ListOptions{})
	rss, err6 := f.cs.AppsV1().ReplicaSets(f.ns).List(f.ctx, metav1.ListOptions{})
	dss, err7 := f.cs.AppsV1().DaemonSets(f.ns).List(f.ctx, metav1.ListOptions{})
	crs, err8 := f.cs.AppsV1().ControllerRevisions(f.ns).List(f.ctx, metav1.ListOptions{})
	for _, err := range []error{err1, err2, err3, err4, err5, err6, err7, err8} {
		if err != nil {
			f.t.Fatalf("listing the namespace's objects: %v", err)
		}
	}
	for i := range pods.Items {
		add("pod", []metav1.Object{&pods.Items[i]})
	}
	for i := range cms.Items {
		add("configmap", []metav1.Object{&cms.Items[i]})
	}
	for i := range secs.Items {
		add("secret", []metav1.Object{&secs.Items[i]})
	}
	for i := range deps.Items {
		add("deployment", []metav1.Object{&deps.Items[i]})
	}
	for i := range stss.Items {
		add("statefulset", []metav1.Object{&stss.Items[i]})
	}
	for i := range rss.Items {
		add("replicaset", []metav1.Object{&rss.Items[i]})
	}
	for i := range dss.Items {
		add("daemonset", []metav1.Object{&dss.Items[i]})
	}
	for i := range crs.Items {
		add("controllerrevision", []metav1.Object{&crs.Items[i]})
	}
	return out
}

// changedVersions names the objects whose resourceVersion differs, or that
// appeared or vanished.
func changedVersions(before, after map[string]string) []string {
	var out []string
	for k, v := range before {
		if w, ok := after[k]; !ok {
			out = append(out, k+" deleted")
		} else if w != v {
			out = append(out, fmt.Sprintf("%s %s -> %s", k, v, w))
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			out = append(out, k+" created")
		}
	}
	sort.Strings(out)
	return out
}

// readerWorkload: ConfigMap cfg read by a Deployment's pod through a volume
// and an env variable, Secret sec mounted beside it.
func (f *fx) readerWorkload() {
	f.t.Helper()
	f.createConfigMap(configMap("cfg", map[string]string{"K": "v0"}))
	f.createSecret(secret("sec", map[string]string{"password": "e2e-secret-value"}))
	c := withEnv(withMounts(busybox("c"), mount("cfg", "/etc/cfg"), mount("sec", "/etc/sec")), cmEnv("K", "cfg", "K", nil))
	f.createDeployment("web", 1, withVolumes(podSpec(c), cmVolume("cfg", "cfg"), secretVolume("sec", "sec")), false)
	f.waitPodsReady(1)
	f.waitDeploymentSettled("web")
}

// A namespaced Role with only get/list/watch on pods and configmaps:
// status works (owners unresolved, default delays, Secrets skipped, each
// with a note); --verify marks the consumers unverifiable "forbidden:
// create pods/exec" (exit 0, 3 with --check); refresh says which
// permission is missing before it changes anything.
func TestLeastPrivilegeReadOnlyRole(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	f.readerWorkload()
	kc := f.saKubeconfig("reader", []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods", "configmaps"}, Verbs: []string{"get", "list", "watch"}}}, "")

	// status
	out, errOut, code := f.pluginRun("status", "--kubeconfig", kc, "-o", "json")
	if code != 0 {
		t.Fatalf("status: exit %d: %s", code, errOut)
	}
	var rep inspect.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("status -o json: %v\n%s", err, out)
	}
	if len(rep.Items) != 2 {
		t.Fatalf("status: %d items, want the volume and env uses of cfg", len(rep.Items))
	}
	for _, it := range rep.Items {
		if it.Workload.Kind != "ReplicaSet" || !strings.HasPrefix(it.Workload.Name, "web-") {
			t.Errorf("%s use: workload %s/%s, want the unresolved replicaset/web-...", it.Mode, it.Workload.Kind, it.Workload.Name)
		}
		if it.Mode == inspect.ModeVolume && (it.Delay == nil || it.Delay.Basis != inspect.BasisDefault || it.Delay.Max.Duration != 90*time.Second) {
			t.Errorf("volume use: delay %+v, want the default 0-90s", it.Delay)
		}
	}
	for _, note := range []string{
		fmt.Sprintf(noteReplicaSetsDenied, f.ns),
		noteNodesDenied,
	} {
		if !strings.Contains(errOut, note+"\n") {
			t.Errorf("status stderr lacks the note\n%s\nstderr:\n%s", note, errOut)
		}
	}

	// --secrets: skipped with one note, the ConfigMap rows unharmed
	out, errOut, code = f.pluginRun("status", "--kubeconfig", kc, "--secrets")
	secretNote := fmt.Sprintf(noteSecretsDenied, f.ns)
	if code != 0 || !strings.Contains(errOut, secretNote+"\n") || strings.Count(errOut, "Secrets skipped") != 1 {
		t.Errorf("status --secrets: exit %d, want 0 and one note\n%s\nstderr:\n%s", code, secretNote, errOut)
	}
	rows := map[string]int{}
	table, _, _ := strings.Cut(out, "\n\n") // the summary line follows a blank line
	for _, l := range strings.Split(strings.TrimSpace(table), "\n")[1:] {
		rows[strings.Fields(l)[0]]++
	}
	if len(rows) != 1 || rows["cfg"] != 2 {
		t.Errorf("status --secrets: want the 2 ConfigMap rows and no Secret row:\n%s", out)
	}

	// --verify: unverifiable, forbidden: create pods/exec
	out, errOut, code = f.pluginRun("status", "--kubeconfig", kc, "--verify", "-o", "json")
	if code != 0 {
		t.Fatalf("status --verify: exit %d, want 0: %s", code, errOut)
	}
	rep = inspect.Report{}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("status --verify -o json: %v\n%s", err, out)
	}
	for _, it := range rep.Items {
		if it.State != inspect.StateUnverifiable || it.StateCause != inspect.CauseExecForbidden || !strings.HasPrefix(it.StateReason, "forbidden: create pods/exec (") {
			t.Errorf("%s use: state %s cause %s reason %q, want unverifiable, exec-forbidden, \"forbidden: create pods/exec (...\"", it.Mode, it.State, it.StateCause, it.StateReason)
		}
	}
	// one cause for both uses: one warning that says what to grant, and the rows point to it
	out, errOut, code = f.pluginRun("status", "--kubeconfig", kc, "--verify")
	warning := "Warning: [1] 2 uses are unverifiable: forbidden: create pods/exec. Fix: verify needs get and create on pods/exec"
	if code != 0 || strings.Count(out, "unverifiable: see warning 1") != 2 || strings.Count(errOut, "Warning:") != 1 || !strings.Contains(errOut, warning) {
		t.Errorf("status --verify table: exit %d, want 0, 2 rows 'unverifiable: see warning 1' and one warning %q:\n%s\nstderr:\n%s", code, warning, out, errOut)
	}
	if _, errOut, code = f.pluginRun("status", "--kubeconfig", kc, "--verify", "--check"); code != 3 || !strings.Contains(errOut, "unverifiable: forbidden: create pods/exec") {
		t.Errorf("status --verify --check: exit %d, want 3 naming the reason: %s", code, errOut)
	}

	// refresh: the missing permission is named before anything changes
	f.patchConfigMapData("cfg", map[string]string{"K": "v1"})
	before := f.resourceVersions()
	_, errOut, code = f.pluginRun("refresh", "--kubeconfig", kc, "cfg", "--yes")
	if code != 1 {
		t.Errorf("refresh: exit %d, want 1", code)
	}
	for _, want := range []string{
		"error: cannot refresh: the credentials lack permissions the plan needs; nothing was changed:\n",
		`  patch pods in namespace "` + f.ns + `" (for pod/web-`,
		`a Role with this rule grants it: {apiGroups: [""], resources: ["pods"], verbs: ["patch"]}`,
		`  get and create pods/exec in namespace "` + f.ns + `" (to verify the consumers)`,
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("refresh stderr lacks %q:\n%s", want, errOut)
		}
	}
	if ch := changedVersions(before, f.resourceVersions()); len(ch) > 0 {
		t.Errorf("refresh without the permission changed objects: %v", ch)
	}

	// the dashboard: live (no watch failure), the note, and after v the
	// same reason in the status line, as one grouped warning
	d := f.startDashboard("--kubeconfig", kc)
	s := d.waitScreen("the dashboard is live with the note", 60*time.Second,
		has("cfg", "● live", "note: owners shown as replicaset/NAME (unresolved): cannot list replicasets (forbidden)"))
	if strings.Contains(s, "watch failing") {
		t.Errorf("a denied optional kind is shown as a failure:\n%s", s)
	}
	d.keys("v")
	d.waitScreen("the verify names the missing permission", 60*time.Second,
		has("verified 2 consumers at", "Warning: [1] 2 uses are unverifiable: forbidden: create pods/exec"))
	d.keys("q")
	if code := d.exitCode(); code != "0" {
		t.Errorf("dashboard exit code %s, want 0", code)
	}
}

// rbacFileRoles reads the ClusterRoles of deploy/rbac.yaml.
// The notes of status when an optional kind is denied ("%s": the namespace).
const (
	noteSecretsDenied     = `note: Secrets skipped (ConfigMaps are shown): cannot list secrets in namespace "%s" (forbidden); a Role with this rule grants it: {apiGroups: [""], resources: ["secrets"], verbs: ["list"]}`
	noteNodesDenied       = `note: delays assume the kubelet defaults (0-90s): cannot list nodes (forbidden); a ClusterRole with this rule grants it: {apiGroups: [""], resources: ["nodes"], verbs: ["list"]}`
	noteReplicaSetsDenied = `note: owners shown as replicaset/NAME (unresolved): cannot list replicasets in namespace "%s" (forbidden); a Role with this rule grants it: {apiGroups: ["apps"], resources: ["replicasets"], verbs: ["list"]}`
)

func rbacFileRoles(t *testing.T) map[string]rbacv1.ClusterRole {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]rbacv1.ClusterRole{}
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
		if !strings.Contains(doc, "kind:") {
			continue
		}
		var cr rbacv1.ClusterRole
		if err := yaml.UnmarshalStrict([]byte(doc), &cr); err != nil {
			t.Fatalf("deploy/rbac.yaml: %v", err)
		}
		out[cr.Name] = cr
	}
	return out
}

// The refresh ClusterRole of deploy/rbac.yaml, bound alone (a RoleBinding),
// is enough for status --verify and refresh --yes: both succeed, the stale
// env restarts the Deployment and the pending volume is refreshed.
func TestRBACFileRefreshRoleIsSufficient(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	roles := rbacFileRoles(t)
	cr, ok := roles["cmsync-refresh"]
	if !ok {
		t.Fatalf("deploy/rbac.yaml has no ClusterRole cmsync-refresh")
	}
	// a copy named after the namespace: the test owns it and deletes it
	cr.Name = "cmsync-refresh-" + f.ns
	cr.ResourceVersion = ""
	if _, err := f.cs.RbacV1().ClusterRoles().Create(f.ctx, &cr, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ClusterRole %s: %v", cr.Name, err)
	}
	t.Cleanup(func() {
		_ = f.cs.RbacV1().ClusterRoles().Delete(f.ctx, cr.Name, metav1.DeleteOptions{})
	})
	f.createConfigMap(configMap("cfg", map[string]string{"K": "v0"}))
	c := withEnv(withMounts(busybox("c"), mount("cfg", "/etc/cfg")), cmEnv("K", "cfg", "K", nil))
	f.createDeployment("web", 1, withVolumes(podSpec(c), cmVolume("cfg", "cfg")), false)
	f.waitPodsReady(1)
	f.waitDeploymentSettled("web")
	kc := f.saKubeconfig("operator", nil, cr.Name)
	f.patchConfigMapData("cfg", map[string]string{"K": "v1"})

	out, errOut, code := f.pluginRun("status", "--kubeconfig", kc, "--verify", "-o", "json")
	if code != 0 {
		t.Fatalf("status --verify: exit %d: %s", code, errOut)
	}
	var rep inspect.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("status --verify -o json: %v\n%s", err, out)
	}
	for _, it := range rep.Items {
		if it.State == inspect.StateUnverifiable || it.State == "" {
			t.Errorf("%s use: state %q (%s): the role must allow verifying", it.Mode, it.State, it.StateReason)
		}
		if it.Workload.Kind != "Deployment" {
			t.Errorf("%s use: workload %s, want the Deployment (replicasets readable)", it.Mode, it.Workload.Kind)
		}
	}
	if strings.Contains(errOut, "note: owners") {
		t.Errorf("the role must allow resolving owners: %s", errOut)
	}

	doc, errOut, code := f.refreshJSON("--kubeconfig", kc, "cfg", "--yes", "--timeout", "120s")
	if code != 0 {
		t.Fatalf("refresh --yes with the refresh role: exit %d: %s", code, errOut)
	}
	restarted := false
	for _, r := range doc.Items {
		if r.Action.Action == refresh.ActionRestart && r.Target.Kind == "Deployment" && r.Outcome == refresh.OutcomeCurrent {
			restarted = true
		}
	}
	if !restarted {
		t.Errorf("want deployment/web restarted and current, got %s", actionsOf(doc))
	}
	if d := f.getDeployment("web"); d.Spec.Template.Annotations[refresh.RestartedAtAnnotation] == "" {
		t.Errorf("deployment/web was not restarted")
	}
}

// ---- dry-run safety ----

// Every strategy (and --restart-via=evict) in both dry-run modes leaves every resourceVersion of the
// namespace unchanged (pods, ConfigMaps, Secrets, Deployments,
// StatefulSets, ReplicaSets, DaemonSets, ControllerRevisions), with
// consumers that would be annotated and restarted.
func TestDryRunChangesNoResourceVersion(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	f.createConfigMap(configMap("cfg", map[string]string{"K": "v0"}))
	c := withEnv(withMounts(busybox("c"), mount("cfg", "/etc/cfg")), cmEnv("K", "cfg", "K", nil))
	f.createDeployment("web", 2, withVolumes(podSpec(c), cmVolume("cfg", "cfg")), false)
	labels := map[string]string{"app": "db"}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: f.ns}, Spec: appsv1.StatefulSetSpec{
		Replicas: ptr(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec(withEnv(busybox("db"), cmEnv("K", "cfg", "K", nil)))}}}
	if _, err := f.cs.AppsV1().StatefulSets(f.ns).Create(f.ctx, sts, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating StatefulSet: %v", err)
	}
	f.createPod(pod("solo", withVolumes(podSpec(withMounts(busybox("c"), mount("cfg", "/etc/cfg"))), cmVolume("cfg", "cfg"))))
	// no shell: its mount is unverifiable, so auto and annotate always annotate
	// it, however fast the kubelet syncs the others
	mute := corev1.Container{Name: "c", Image: imageNoShell, ImagePullPolicy: corev1.PullNever, VolumeMounts: []corev1.VolumeMount{mount("cfg", "/etc/cfg")}}
	f.createPod(pod("mute", withVolumes(podSpec(mute), cmVolume("cfg", "cfg"))))
	f.waitPodsReady(5)
	f.waitDeploymentSettled("web")
	f.poll("statefulset db settled", podReadyTimeout, func() (bool, error) {
		s, err := f.cs.AppsV1().StatefulSets(f.ns).Get(f.ctx, "db", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return s.Status.ObservedGeneration == s.Generation && s.Status.ReadyReplicas == 1 && s.Status.AvailableReplicas == 1 &&
			s.Status.CurrentRevision == s.Status.UpdateRevision, nil
	})
	f.patchConfigMapData("cfg", map[string]string{"K": "v1"})
	// the controllers' own last status writes must not be taken for a change
	var before map[string]string
	f.poll("the namespace is quiet", 60*time.Second, func() (bool, error) {
		a := f.resourceVersions()
		time.Sleep(2 * time.Second)
		before = f.resourceVersions()
		return len(changedVersions(a, before)) == 0, nil
	})
	for _, strategy := range []string{"auto", "annotate", "restart", "auto --restart-via=evict", "restart --restart-via=evict"} {
		for _, dry := range []string{"client", "server"} {
			args := append([]string{"cfg", "--strategy"}, strings.Fields(strategy)...)
			doc, errOut, code := f.refreshJSON(append(args, "--dry-run="+dry, "--yes")...)
			if code != 0 {
				t.Errorf("--strategy %s --dry-run=%s: exit %d: %s", strategy, dry, code, errOut)
				continue
			}
			acts := actionsOf(doc)
			wantActs := map[string][]string{"auto": {"restart deployment/web", "annotate pod/mute"}, "annotate": {"annotate pod/mute"}, "restart": {"restart deployment/web", "restart statefulset/db"},
				"auto --restart-via=evict": {"evict deployment/web", "annotate pod/mute"}, "restart --restart-via=evict": {"evict deployment/web", "evict statefulset/db"}}[strategy]
			for _, w := range wantActs {
				if !strings.Contains(acts, w) {
					t.Errorf("--strategy %s --dry-run=%s: plan %q lacks %q: the dry run must have something to change", strategy, dry, acts, w)
				}
			}
			if dry == "server" {
				for _, r := range doc.Items {
					if (r.Action.Action == refresh.ActionAnnotate || r.Action.Action == refresh.ActionRestart || r.Action.Action == refresh.ActionEvict) && r.Outcome != refresh.OutcomeDryRun {
						t.Errorf("--strategy %s --dry-run=server: %s %s outcome %q, want dry-run (accepted by the server)", strategy, r.Action.Action, r.Target, r.Outcome)
					}
				}
			}
			if ch := changedVersions(before, f.resourceVersions()); len(ch) > 0 {
				t.Errorf("--strategy %s --dry-run=%s changed objects: %v", strategy, dry, ch)
				before = f.resourceVersions()
			}
		}
	}
}

// runPlugin runs `kubectl cmsync ARGS` (stdin not a terminal) and returns
// stdout, stderr and the exit code; log writes them to the test log.
func runPlugin(f *fx, log bool, args ...string) (string, string, int) {
	f.t.Helper()
	if pluginBuildErr != nil {
		f.t.Fatalf("plugin not built: %v", pluginBuildErr)
	}
	ctx, cancel := context.WithTimeout(f.ctx, 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kubectl", append([]string{"cmsync"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		f.t.Fatalf("kubectl cmsync %s: %v", strings.Join(args, " "), err)
	}
	if log {
		f.t.Logf("kubectl cmsync %s -> exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
	}
	return stdout.String(), stderr.String(), code
}

// Each optional kind denied alone, everything else allowed (a Role with
// cmsync-verify's rules plus secrets, and a ClusterRole for nodes): only
// that kind's fallback and its one note, and the ConfigMap rows verified
// as they are, never an error:
//   - no Secrets: Secrets skipped, the ConfigMap rows in-sync and current;
//   - no nodes: the delay estimate is the kubelet defaults (0-90s);
//   - no list on ReplicaSets: owners shown as replicaset/NAME (unresolved),
//     status, --verify and a refresh plan (dry run) do not fail.
func TestLeastPrivilegeOneOptionalKindDenied(t *testing.T) {
	t.Parallel()
	// cmsync-verify's rules as deploy/rbac.yaml has them, its ReplicaSet
	// rule apart
	var base []rbacv1.PolicyRule
	var replicaSets rbacv1.PolicyRule
	for _, r := range rbacFileRoles(t)["cmsync-verify"].Rules {
		if slices.Contains(r.Resources, "replicasets") {
			replicaSets = r
		} else {
			base = append(base, r)
		}
	}
	if len(replicaSets.Resources) == 0 || len(base) == 0 {
		t.Fatal("deploy/rbac.yaml: cmsync-verify has no replicasets rule, or nothing else")
	}
	secrets := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"list", "watch"}}
	for _, c := range []struct {
		denied string
		rules  []rbacv1.PolicyRule
		nodes  bool
		note   string // the one note, "%s" the namespace
	}{
		{"secrets", append(base[:len(base):len(base)], replicaSets), true,
			noteSecretsDenied},
		{"nodes", append(base[:len(base):len(base)], secrets, replicaSets), false,
			noteNodesDenied},
		{"replicasets", append(base[:len(base):len(base)], secrets), true,
			noteReplicaSetsDenied},
	} {
		t.Run("no-"+c.denied, func(t *testing.T) {
			t.Parallel()
			f := newFx(t)
			f.readerWorkload()
			name := "only-" + c.denied + "-denied"
			if c.nodes {
				f.grantNodes(name)
			}
			kc := f.saKubeconfig(name, c.rules, "")
			note := c.note
			if strings.Contains(note, "%s") {
				note = fmt.Sprintf(note, f.ns)
			}
			// one note, nothing else on stderr
			onlyNote := func(what, errOut string) {
				t.Helper()
				if strings.TrimSpace(errOut) != note {
					t.Errorf("%s: stderr is not the one note\n%s\nstderr:\n%s", what, note, errOut)
				}
			}

			out, errOut, code := f.pluginRun("status", "--kubeconfig", kc, "--secrets", "--verify", "-o", "json")
			if code != 0 {
				t.Fatalf("status --secrets --verify: exit %d, want 0: %s", code, errOut)
			}
			onlyNote("status --secrets --verify", errOut)
			var rep inspect.Report
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("status -o json: %v\n%s", err, out)
			}
			states := map[string]string{}
			for _, it := range rep.Items {
				if it.Object.Kind == inspect.KindSecret {
					if c.denied == "secrets" {
						t.Errorf("a Secret row although Secrets are denied: %+v", it)
					}
					continue
				}
				states[string(it.Mode)] = string(it.State)
				// never an error for the ConfigMap rows: observed as they are
				want := map[inspect.Mode]inspect.State{inspect.ModeVolume: inspect.StateInSync, inspect.ModeEnv: inspect.StateCurrent}[it.Mode]
				if it.State != want {
					t.Errorf("configmap %s use: state %s (%s), want %s", it.Mode, it.State, it.StateReason, want)
				}
				if c.denied == "replicasets" {
					if it.Workload.Kind != "ReplicaSet" || !strings.HasPrefix(it.Workload.Name, "web-") {
						t.Errorf("%s use: workload %s/%s, want the unresolved replicaset/web-...", it.Mode, it.Workload.Kind, it.Workload.Name)
					}
				} else if it.Workload.Kind != "Deployment" || it.Workload.Name != "web" {
					t.Errorf("%s use: workload %s/%s, want deployment/web (resolved)", it.Mode, it.Workload.Kind, it.Workload.Name)
				}
				if it.Mode == inspect.ModeVolume {
					if it.Delay == nil {
						t.Errorf("volume use without a delay")
					} else if isDefault := it.Delay.Basis == inspect.BasisDefault && it.Delay.Max.Duration == 90*time.Second; isDefault != (c.denied == "nodes") {
						t.Errorf("volume use: delay %s-%s basis %s; want the defaults (0-90s) exactly when nodes are denied", it.Delay.Min.Duration, it.Delay.Max.Duration, it.Delay.Basis)
					}
				}
			}
			if len(states) != 2 {
				t.Errorf("ConfigMap uses by mode: %v, want volume and env", states)
			}
			wantSecretRows := 0
			if c.denied != "secrets" {
				wantSecretRows = 1
			}
			if n := len(rep.Items) - 2; n != wantSecretRows {
				t.Errorf("%d Secret rows, want %d", n, wantSecretRows)
			}

			// the table: the note once, the rows
			out, errOut, code = f.pluginRun("status", "--kubeconfig", kc, "--secrets")
			if code != 0 || !strings.Contains(out, "cfg") {
				t.Errorf("status --secrets table: exit %d, want 0 with the cfg rows:\n%s", code, out)
			}
			onlyNote("status --secrets", errOut)

			// a refresh plan over the denied kind: no crash, no change
			f.patchConfigMapData("cfg", map[string]string{"K": "v1"})
			before := f.resourceVersions()
			out, errOut, code = f.pluginRun("refresh", "--kubeconfig", kc, "cfg", "--strategy", "restart", "--dry-run=client", "-o", "json")
			if code != 0 && code != 3 {
				t.Errorf("refresh --dry-run=client: exit %d, want 0 or 3: %s", code, errOut)
			}
			var plan refreshDoc
			if err := json.Unmarshal([]byte(out), &plan); err != nil || len(plan.Items) == 0 {
				t.Errorf("refresh --dry-run=client -o json: want a plan (%v):\n%s", err, out)
			}
			for _, a := range plan.Items {
				t.Logf("plan: %s %s/%s: %s", a.Action.Action, a.Target.Kind, a.Target.Name, a.Reason)
				// the owner unknown: a person restarts it, with the hint
				if c.denied == "replicasets" && (a.Action.Action != refresh.ActionManual || a.Target.Kind != "ReplicaSet" || !strings.Contains(a.Reason, "kubectl rollout restart")) {
					t.Errorf("plan without ReplicaSets: %s %s/%s (%s), want manual replicaset/web-... with the rollout restart hint", a.Action.Action, a.Target.Kind, a.Target.Name, a.Reason)
				}
				if c.denied != "replicasets" && (a.Action.Action != refresh.ActionRestart || a.Target.Kind != "Deployment" || a.Target.Name != "web") {
					t.Errorf("plan: %s %s/%s, want restart deployment/web", a.Action.Action, a.Target.Kind, a.Target.Name)
				}
			}
			if strings.Contains(errOut, "panic") || strings.Contains(errOut, "goroutine ") {
				t.Errorf("refresh crashed:\n%s", errOut)
			}
			if ch := changedVersions(before, f.resourceVersions()); len(ch) > 0 {
				t.Errorf("a client dry run changed objects: %v", ch)
			}
		})
	}
}

// grantNodes binds ServiceAccount name of the namespace to a ClusterRole
// that lists nodes (cluster-scoped, so a ClusterRoleBinding; both deleted
// at the end).
func (f *fx) grantNodes(name string) {
	f.t.Helper()
	crName := "cmsync-e2e-" + f.ns + "-" + name
	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: crName, Labels: map[string]string{e2eLabel: "true"}},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list"}}}}
	if _, err := f.cs.RbacV1().ClusterRoles().Create(f.ctx, cr, metav1.CreateOptions{}); err != nil {
		f.t.Fatalf("creating ClusterRole %s: %v", crName, err)
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: crName, Labels: map[string]string{e2eLabel: "true"}},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: crName},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: f.ns}}}
	if _, err := f.cs.RbacV1().ClusterRoleBindings().Create(f.ctx, crb, metav1.CreateOptions{}); err != nil {
		f.t.Fatalf("creating ClusterRoleBinding %s: %v", crName, err)
	}
	f.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = f.cs.RbacV1().ClusterRoleBindings().Delete(ctx, crName, metav1.DeleteOptions{})
		_ = f.cs.RbacV1().ClusterRoles().Delete(ctx, crName, metav1.DeleteOptions{})
	})
}

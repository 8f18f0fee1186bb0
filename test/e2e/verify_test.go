//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// wantState selects one use (as want does) and lists the states --verify may
// report for it, and a word its stateReason must contain (optional).
type wantState struct {
	want
	states []inspect.State
	reason string
}

func (f *fx) checkStates(rep inspect.Report, wants []wantState) {
	f.t.Helper()
	bad := false
	for _, w := range wants {
		got := w.in(rep)
		if len(got) != 1 {
			f.t.Errorf("status --verify: %d item(s) for %s, want 1", len(got), w.want)
			bad = true
			continue
		}
		it := got[0]
		if !slices.Contains(w.states, it.State) {
			f.t.Errorf("status --verify: %s: state %q (%s), want one of %v", w.want, it.State, it.StateReason, w.states)
			bad = true
		} else if w.reason != "" && !strings.Contains(it.StateReason, w.reason) {
			f.t.Errorf("status --verify: %s: stateReason %q, want it to mention %q", w.want, it.StateReason, w.reason)
			bad = true
		}
	}
	if bad {
		b, _ := json.MarshalIndent(rep, "", "  ")
		f.t.Logf("the report was:\n%s", b)
	}
}

// TestVerifyStates checks `status --verify` (exec into each consumer) over the
// life of one pod that consumes a ConfigMap every way, plus a container
// without a shell: right after start, after a plain edit, and after the
// annotation bump.
func TestVerifyStates(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	f.createConfigMap(configMap("cfg", v1Data()))
	c := withMounts(withEnv(busybox(app), cmEnv("GREETING", "cfg", "greeting", nil)),
		mount("cfg", "/etc/cfg"),
		subPathMount("cfg", "/etc/app/greeting", "greeting"),
		subPathMount("tree", "/etc/conf", "conf"))
	noShell := corev1.Container{Name: "noshell", Image: imageNoShell, ImagePullPolicy: corev1.PullNever,
		VolumeMounts: []corev1.VolumeMount{mount("cfg", "/etc/cfg")}}
	f.createPod(pod("p", withVolumes(podSpec(c, noShell), cmVolume("cfg", "cfg"),
		cmItemsVolume("tree", "cfg", corev1.KeyToPath{Key: "greeting", Path: "conf/greeting"}))))
	f.waitPodReady("p")

	vol := want{object: "cfg", container: app, mode: inspect.ModeVolume, volume: "cfg"}
	sub := want{object: "cfg", container: app, mode: inspect.ModeSubPath, volume: "cfg"}
	dir := want{object: "cfg", container: app, mode: inspect.ModeSubPath, volume: "tree"}
	env := want{object: "cfg", container: app, mode: inspect.ModeEnv}
	ns := want{object: "cfg", container: "noshell", mode: inspect.ModeVolume, volume: "cfg"}
	unverifiable := wantState{ns, []inspect.State{inspect.StateUnverifiable}, "no shell"}

	if rep, ok := f.status("--verify"); ok {
		f.checkStates(rep, []wantState{
			{vol, []inspect.State{inspect.StateInSync}, ""},
			{sub, []inspect.State{inspect.StateCurrent}, ""},
			{dir, []inspect.State{inspect.StateCurrent}, ""},
			{env, []inspect.State{inspect.StateCurrent}, ""},
			unverifiable,
		})
	}

	// a plain edit: the volume is pending until the kubelet's periodic sync (0 to 90 s; it may
	// just have happened), env and subPath are stale for good
	toV2(f)
	if rep, ok := f.status("--verify"); ok {
		f.checkStates(rep, []wantState{
			{vol, []inspect.State{inspect.StatePending, inspect.StateInSync}, ""},
			{sub, []inspect.State{inspect.StateStale}, ""},
			{env, []inspect.State{inspect.StateStale}, ""},
			unverifiable,
		})
	}

	// the bump: the volume is current, the subPath directory is now empty
	f.bumpPod("p")
	f.waitFile("p", app, "/etc/cfg/greeting", "v2")
	f.poll("/etc/conf to turn empty", propagationWait, func() (bool, error) {
		out, _, err := f.execIn("p", app, "ls", "-A", "/etc/conf")
		return err == nil && strings.TrimSpace(out) == "", err
	})
	if rep, ok := f.status("--verify"); ok {
		f.checkStates(rep, []wantState{
			{vol, []inspect.State{inspect.StateInSync}, ""},
			{sub, []inspect.State{inspect.StateStale}, ""},
			{dir, []inspect.State{inspect.StateBroken}, ""},
			{env, []inspect.State{inspect.StateStale}, ""},
			unverifiable,
		})
	}
}

// TestVerifyPayloads: nested items, binaryData, a projected volume shared
// with a service-account token, the downward API and another ConfigMap,
// envFrom keys the shell would drop, and a hostile mountPath and items path:
// all read right (one exec per container), nothing injected; then `diff`.
func TestVerifyPayloads(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	cfg := configMap("cfg", map[string]string{"greeting": "v1", "with-dash": "d1", "with.dot": "o1", "9lives": "n1"})
	cfg.BinaryData = map[string][]byte{"blob": blobV1}
	f.createConfigMap(cfg)
	f.createConfigMap(configMap("other", map[string]string{"other": "x"}))
	hostileMount := "/etc/x;touch /tmp/pwned"
	hostileItem := "a$(touch /tmp/pwned2)"
	proj := corev1.Volume{Name: "proj", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
		{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}},
		{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "other"}}},
		{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
		{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
			{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}},
	}}}}
	c := busybox(app)
	c.EnvFrom = []corev1.EnvFromSource{cmEnvFrom("cfg", "")}
	c = withMounts(c, mount("nested", "/etc/nested"), mount("proj", "/etc/proj"), mount("hostile", hostileMount))
	f.createPod(pod("p", withVolumes(podSpec(c),
		cmItemsVolume("nested", "cfg", corev1.KeyToPath{Key: "greeting", Path: "conf/deep/greeting"}, corev1.KeyToPath{Key: "blob", Path: "bin/blob"}),
		proj,
		cmItemsVolume("hostile", "cfg", corev1.KeyToPath{Key: "greeting", Path: hostileItem}))))
	f.waitPodReady("p")

	nested := want{object: "cfg", container: app, mode: inspect.ModeItems, volume: "nested"}
	projected := want{object: "cfg", container: app, mode: inspect.ModeProjected, volume: "proj"}
	hostile := want{object: "cfg", container: app, mode: inspect.ModeItems, volume: "hostile"}
	envFrom := want{object: "cfg", container: app, mode: inspect.ModeEnvFrom}
	inSync := []inspect.State{inspect.StateInSync}
	if rep, ok := f.status("--verify"); ok {
		f.checkStates(rep, []wantState{
			{nested, inSync, "2 files"},
			{projected, inSync, "5 files"},
			{hostile, inSync, "1 file"},
			{envFrom, []inspect.State{inspect.StateCurrent}, "4 variables"},
		})
		for _, it := range rep.Items {
			if it.Mode.HotUpdating() && (it.SyncedAt == nil || time.Since(it.SyncedAt.Time) > 10*time.Minute) {
				t.Errorf("%s %s: syncedAt %v", it.Mode, it.Volume.Name, it.SyncedAt)
			}
		}
	}
	for _, p := range []string{"/tmp/pwned", "/tmp/pwned2"} {
		if _, _, err := f.execIn("p", app, "ls", p); err == nil {
			t.Errorf("%s exists in the container: a path was run as a command", p)
		}
	}
	if out, _, code := f.pluginRun("diff", "cfg", "-n", f.ns); code != 0 || out != "" {
		t.Errorf("diff before any change: exit %d, output %q", code, out)
	}

	// change data and binaryData: without a bump the volumes may be pending, envFrom is stale
	f.mergePatchConfigMap("cfg", map[string]any{"data": map[string]string{"greeting": "v2", "with-dash": "d2"},
		"binaryData": map[string][]byte{"blob": blobV2}})
	out, errOut, code := f.pluginRun("diff", "cfg", "-n", f.ns)
	if code != 3 {
		t.Errorf("diff after the change: exit %d, want 3\n%s\n%s", code, out, errOut)
	}
	for _, s := range []string{"-with-dash=d1", "+with-dash=d2", "envFrom"} {
		if !strings.Contains(out, s) {
			t.Errorf("diff output lacks %q:\n%s", s, out)
		}
	}
	f.bumpPod("p")
	f.waitFile("p", app, "/etc/nested/conf/deep/greeting", "v2")
	f.waitFile("p", app, "/etc/proj/greeting", "v2")
	if rep, ok := f.status("--verify"); ok {
		f.checkStates(rep, []wantState{
			{nested, inSync, ""},
			{projected, inSync, ""},
			{hostile, inSync, ""},
			{envFrom, []inspect.State{inspect.StateStale}, "with-dash"},
		})
	}
}

// TestVerifySecretDiff: diff never prints a Secret's values.
func TestVerifySecretDiff(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	f.createSecret(secret("creds", map[string]string{"password": "s3cret-one"}))
	c := withEnv(withMounts(busybox(app), mount("creds", "/etc/creds")), secretEnv("PASSWORD", "creds", "password"))
	f.createPod(pod("p", withVolumes(podSpec(c), secretVolume("creds", "creds"))))
	f.waitPodReady("p")
	f.patchSecretData("creds", map[string]string{"password": "s3cret-two"})
	out, errOut, code := f.pluginRun("diff", "secret/creds", "-n", f.ns)
	if code != 3 {
		t.Errorf("exit %d, want 3\n%s\n%s", code, out, errOut)
	}
	if strings.Contains(out+errOut, "s3cret") {
		t.Errorf("a secret value was printed:\n%s\n%s", out, errOut)
	}
	if !strings.Contains(out, "PASSWORD (key password): differs (container hmac:") {
		t.Errorf("output:\n%s", out)
	}
}

// TestVerifyForbidden: without pods/exec, --verify says forbidden and how to
// fix it, and --check fails.
func TestVerifyForbidden(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	appPod("p", withVolumes(podSpec(withMounts(busybox(app), mount("cfg", "/etc/cfg"))), cmVolume("cfg", "cfg")))(f)
	kc := f.serviceAccountKubeconfig("reader", []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods", "configmaps"}, Verbs: []string{"get", "list", "watch"}},
	})
	if rep, ok := f.status("--verify", "--kubeconfig", kc); ok {
		f.checkStates(rep, []wantState{{want{object: "cfg", container: app, mode: inspect.ModeVolume},
			[]inspect.State{inspect.StateUnverifiable}, "forbidden"}})
		for _, it := range rep.Items {
			if !strings.Contains(it.StateReason, "get and create on pods/exec") {
				t.Errorf("stateReason %q gives no hint", it.StateReason)
			}
		}
	}
	if _, _, code := f.pluginRun("status", "-n", f.ns, "--verify", "--check", "--kubeconfig", kc); code != 3 {
		t.Errorf("status --verify --check without exec: exit %d, want 3", code)
	}

	// Only create on pods/exec: the WebSocket upgrade (a GET) is refused and
	// the SPDY fallback (a POST) must take over, as in kubectl exec.
	kc = f.serviceAccountKubeconfig("spdy-only", []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods", "configmaps"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: []string{"create"}},
	})
	if rep, ok := f.status("--verify", "--kubeconfig", kc); ok {
		f.checkStates(rep, []wantState{{want{object: "cfg", container: app, mode: inspect.ModeVolume},
			[]inspect.State{inspect.StateInSync}, ""}})
	}
}

// serviceAccountKubeconfig makes a ServiceAccount with a Role of rules and
// writes a kubeconfig with a short-lived token for it.
func (f *fx) serviceAccountKubeconfig(name string, rules []rbacv1.PolicyRule) string {
	f.t.Helper()
	if _, err := f.cs.CoreV1().ServiceAccounts(f.ns).Create(f.ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		f.t.Fatalf("creating ServiceAccount: %v", err)
	}
	if _, err := f.cs.RbacV1().Roles(f.ns).Create(f.ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		f.t.Fatalf("creating Role: %v", err)
	}
	if _, err := f.cs.RbacV1().RoleBindings(f.ns).Create(f.ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: f.ns}}}, metav1.CreateOptions{}); err != nil {
		f.t.Fatalf("creating RoleBinding: %v", err)
	}
	tr, err := f.cs.CoreV1().ServiceAccounts(f.ns).CreateToken(f.ctx, name, &authv1.TokenRequest{
		Spec: authv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(3600))}}, metav1.CreateOptions{})
	if err != nil {
		f.t.Fatalf("creating a token: %v", err)
	}
	ca := restConfig.TLSClientConfig.CAData
	if len(ca) == 0 && restConfig.TLSClientConfig.CAFile != "" {
		if ca, err = os.ReadFile(restConfig.TLSClientConfig.CAFile); err != nil {
			f.t.Fatal(err)
		}
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: restConfig.Host, CertificateAuthorityData: ca}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u", Namespace: f.ns}
	cfg.CurrentContext = "x"
	p := filepath.Join(f.t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, p); err != nil {
		f.t.Fatal(err)
	}
	// RBAC is enforced at once, but give the informer-backed authorizer a moment.
	f.poll("the Role to apply", 30*time.Second, func() (bool, error) {
		_, _, code := f.pluginRun("status", "-n", f.ns, "--kubeconfig", p)
		return code == 0, nil
	})
	return p
}

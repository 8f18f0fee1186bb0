//go:build e2e

package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// nodeKubeletVersion is the kubeletVersion of the node a pod runs on.
func (f *fx) nodeKubeletVersion(node string) inspect.KubeletVersion {
	f.t.Helper()
	n, err := f.cs.CoreV1().Nodes().Get(f.ctx, node, metav1.GetOptions{})
	if err != nil {
		f.t.Fatalf("reading node %s: %v", node, err)
	}
	v, ok := inspect.ParseKubeletVersion(n.Status.NodeInfo.KubeletVersion)
	if !ok {
		f.t.Fatalf("node %s reports kubeletVersion %q", node, n.Status.NodeInfo.KubeletVersion)
	}
	return v
}

// statusItems runs status -o json with extra args and returns its items,
// stderr and exit code.
func (f *fx) statusItems(args ...string) ([]inspect.Use, string, int) {
	f.t.Helper()
	out, errOut, code := runPlugin(f, true, append([]string{"status", "-n", f.ns, "-o", "json"}, args...)...)
	var rep inspect.Report
	if code == 0 {
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			f.t.Fatalf("status output is not a report: %v\n%s", err, out)
		}
	}
	return rep.Items, errOut, code
}

// The real kubelet's /configz: what it answers is what ParseConfigz reads
// (the strategy and the sync period the predictions use); status
// --kubelet-config predicts from it, and a reader without get on
// nodes/proxy gets the defaults with a warning that says which were
// assumed, and the same predictions otherwise.
func TestKubeletConfigzPredictsAndDegrades(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	frozen := configMap("frozen", map[string]string{"k": "v1"})
	frozen.Immutable = ptr(true)
	f.createConfigMap(frozen)
	f.createConfigMap(configMap("live", map[string]string{"k": "v1"}))
	f.createPod(pod("p", withVolumes(podSpec(withMounts(busybox("c"), mount("frozen", "/etc/frozen"), mount("live", "/etc/live"))),
		cmVolume("frozen", "frozen"), cmVolume("live", "live"))))
	p := f.waitPodReady("p")
	node := p.Spec.NodeName

	raw, err := f.cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", node, "proxy", "configz").DoRaw(f.ctx)
	if err != nil {
		t.Fatalf("reading /configz of node %s as admin: %v", node, err)
	}
	kc, err := inspect.ParseConfigz(raw)
	if err != nil {
		t.Fatalf("the real /configz does not parse: %v\n%s", err, raw)
	}
	if kc.SyncFrequency <= 0 || kc.Strategy == "" {
		t.Errorf("/configz of node %s (kubelet %s): %+v, want a sync period and a strategy", node, f.nodeKubeletVersion(node).Text, kc)
	}
	t.Logf("node %s, kubelet %s: /configz %+v", node, f.nodeKubeletVersion(node).Text, kc)

	byMount := func(items []inspect.Use) map[string]inspect.Use {
		m := map[string]inspect.Use{}
		for _, it := range items {
			if it.Volume != nil {
				m[it.Volume.MountPath] = it
			}
		}
		return m
	}
	items, errOut, code := f.statusItems("--kubelet-config")
	if code != 0 || strings.Contains(errOut, "cannot read the kubelet configuration") {
		t.Fatalf("status --kubelet-config as admin: exit %d, stderr %q", code, errOut)
	}
	admin := byMount(items)
	if d := admin["/etc/live"].Delay; d == nil || d.Basis != inspect.BasisKubeletConfig {
		t.Errorf("live mount delay %+v, want basis kubelet-config", d)
	}
	wantFrozen := "the " + kc.Strategy + ` strategy of node "` + node + `"'s kubelet configuration`
	if it := admin["/etc/frozen"]; it.Verdict != inspect.VerdictNeverChanges || !strings.Contains(it.Reason, wantFrozen) {
		t.Errorf("frozen mount: %s %q, want never-changes naming %q", it.Verdict, it.Reason, wantFrozen)
	}

	// nodes readable (the version and TTL), nodes/proxy not
	kubeconfig := f.saKubeconfig("reader", []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods", "configmaps"}, Verbs: []string{"get", "list", "watch"}}}, "")
	f.grantNodes("reader")
	if _, err := f.cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", node, "proxy", "configz").DoRaw(f.ctx); err != nil {
		t.Fatalf("admin lost /configz: %v", err)
	}
	items, errOut, code = f.statusItems("--kubelet-config", "--kubeconfig", kubeconfig)
	if code != 0 {
		t.Fatalf("status --kubelet-config without nodes/proxy: exit %d, want 0 (the defaults apply)\n%s", code, errOut)
	}
	for _, w := range []string{`cannot read the kubelet configuration of node "` + node + `" (needs get on nodes/proxy`, "assuming " + inspect.KubeletDefaultsAssumed} {
		if !strings.Contains(errOut, w) {
			t.Errorf("stderr %q\nlacks %q", errOut, w)
		}
	}
	reader := byMount(items)
	if d := reader["/etc/live"].Delay; d == nil || d.Basis == inspect.BasisKubeletConfig {
		t.Errorf("live mount delay %+v without /configz, want a default basis", d)
	}
	if it := reader["/etc/frozen"]; it.Verdict != inspect.VerdictNeverChanges || !strings.Contains(it.Reason, "the Watch strategy assumed (the kubelet default") {
		t.Errorf("frozen mount without /configz: %s %q, want the Watch default assumed", it.Verdict, it.Reason)
	}
}

// An env variable read from a file (valueFrom.fileKeyRef): what it reads is
// a file in an emptyDir volume, not a ConfigMap. Where the kubelet has
// EnvFiles (on by default from v1.35) it sets the variable from the file
// when the container starts; status shows no ConfigMap use for it, never
// fails on it, and a subPathExpr built from it says where the value comes
// from. An API server that does not know the field drops it, and the pod
// is rejected as an env var with an empty valueFrom.
func TestFileKeyRefEnvIsShownAsAFileRead(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	f.createConfigMap(configMap("app", map[string]string{"a": "v1"}))
	init := busybox("writer")
	// the kubelet's env file format: KEY='value' (an unquoted value fails
	// the container with "couldn't parse env file")
	init.Command = []string{"sh", "-c", "echo \"DIR='sub'\" > /scratch/vars.env"}
	init.VolumeMounts = []corev1.VolumeMount{mount("scratch", "/scratch")}
	c := withEnv(busybox("c"), corev1.EnvVar{Name: "DIR", ValueFrom: &corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{
		VolumeName: "scratch", Path: "vars.env", Key: "DIR"}}})
	c = withMounts(c, mount("scratch", "/scratch"), corev1.VolumeMount{Name: "conf", MountPath: "/etc/conf", SubPathExpr: "$(DIR)"})
	spec := withVolumes(podSpec(c), corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		cmItemsVolume("conf", "app", corev1.KeyToPath{Key: "a", Path: "sub/a"}))
	spec.InitContainers = []corev1.Container{init}
	p := pod("p", spec)
	p.Namespace = f.ns
	created, err := f.cs.CoreV1().Pods(f.ns).Create(f.ctx, p, metav1.CreateOptions{})
	if err != nil {
		if apierrors.IsInvalid(err) && strings.Contains(err.Error(), "valueFrom") {
			// an API server without EnvFiles drops fileKeyRef and rejects what is left
			sv, verr := f.cs.Discovery().ServerVersion()
			if verr != nil {
				t.Fatalf("creating the pod: %v; server version: %v", err, verr)
			}
			t.Logf("API server %s rejects a fileKeyRef pod: %v", sv.GitVersion, err)
			if v, ok := inspect.ParseKubeletVersion(sv.GitVersion); !ok || v.Minor >= 35 {
				t.Fatalf("API server %s rejects fileKeyRef, which is on by default from v1.35: %v", sv.GitVersion, err)
			}
			return
		}
		t.Fatalf("creating the pod: %v", err)
	}
	if created.Spec.Containers[0].Env[0].ValueFrom.FileKeyRef == nil {
		t.Fatalf("the API server dropped fileKeyRef: %+v", created.Spec.Containers[0].Env[0])
	}
	f.waitPodReady("p")
	node := f.getPod("p").Spec.NodeName
	v := f.nodeKubeletVersion(node)
	f.expectEnv("p", "c", "DIR", "sub")
	f.expectFile("p", "c", "/etc/conf/a", "v1")

	items, errOut, code := f.statusItems()
	if code != 0 {
		t.Fatalf("status: exit %d\n%s", code, errOut)
	}
	if len(items) != 1 || items[0].Object.Name != "app" || items[0].Mode != inspect.ModeSubPathExpr {
		t.Fatalf("items %+v, want the one subPathExpr use of ConfigMap app (a fileKeyRef reads no ConfigMap)", items)
	}
	want := `DIR is read from key "DIR" of file "vars.env" in emptyDir volume "scratch" when the container starts (fileKeyRef; kubelet ` + v.Text
	if !strings.Contains(items[0].Reason, want) {
		t.Errorf("reason %q\nlacks %q", items[0].Reason, want)
	}
	items, errOut, code = f.statusItems("--verify")
	if code != 0 || len(items) != 1 || items[0].State == "" {
		t.Fatalf("status --verify: exit %d, items %+v\n%s", code, items, errOut)
	}
	t.Logf("verified: %s (%s)", items[0].State, items[0].StateReason)
}

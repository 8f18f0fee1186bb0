//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/rbacaudit"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/reconcile"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// auditLogPath is where the API server of hack/cluster writes its audit
// log: read from its command line (the PID up.sh recorded under the
// cluster's state directory, next to the kubeconfig's etc/). The test
// fails, saying to restart the cluster, when the API server runs without
// one.
func auditLogPath(t *testing.T) string {
	t.Helper()
	kc := os.Getenv("KUBECONFIG")
	if kc == "" {
		t.Fatal("KUBECONFIG is not set: run with KUBECONFIG=$(hack/cluster/kubeconfig.sh)")
	}
	root := filepath.Dir(filepath.Dir(kc)) // $CLUSTER_ROOT/etc/admin.kubeconfig
	pidFile := filepath.Join(root, "var", "pids", "kube-apiserver.pid")
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the API server of hack/cluster: %v (the audit log is read on this machine, from the cluster KUBECONFIG belongs to)", err)
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		t.Fatalf("%s is empty", pidFile)
	}
	cmdline, err := os.ReadFile(filepath.Join("/proc", fields[0], "cmdline"))
	if err != nil {
		t.Fatalf("the API server's command line (PID %s): %v", fields[0], err)
	}
	for _, a := range strings.Split(string(cmdline), "\x00") {
		if p, ok := strings.CutPrefix(a, "--audit-log-path="); ok && p != "" {
			return p
		}
	}
	t.Fatalf("the API server (PID %s) runs without an audit log: it was started before hack/cluster gave it one; "+
		"restart the cluster (make cluster-down cluster-up)", fields[0])
	return ""
}

// auditEvents reads the audit log at path, its rotated files first, and
// returns the requests of user received at or after since.
func auditEvents(t *testing.T, path, user string, since time.Time) []rbacaudit.Event {
	t.Helper()
	ext := filepath.Ext(path)
	rotated, _ := filepath.Glob(strings.TrimSuffix(path, ext) + "-*" + ext)
	sort.Strings(rotated) // lumberjack names them by time
	var out []rbacaudit.Event
	for _, p := range append(rotated, path) {
		f, err := os.Open(p)
		if err != nil {
			t.Fatalf("audit log: %v", err)
		}
		events, err := rbacaudit.ReadEvents(f, user, since)
		f.Close()
		if err != nil {
			t.Fatalf("audit log %s: %v", p, err)
		}
		out = append(out, events...)
	}
	return out
}

// docsAllowList reads the allow-list under heading in docs/rbac.md.
func docsAllowList(t *testing.T, heading string) []rbacaudit.Allowance {
	t.Helper()
	md, err := os.ReadFile(filepath.Join(repoRoot, "docs", "rbac.md"))
	if err != nil {
		t.Fatal(err)
	}
	allow, err := rbacaudit.ParseAllowList(md, heading)
	if err != nil {
		t.Fatalf("docs/rbac.md: %v", err)
	}
	return allow
}

// lpMode is one install mode of the controller.
type lpMode struct {
	name string
	// chart: the chart's values (--set) beyond the image's; kustomization: deploy/NAME instead
	chart         []string
	kustomization string
	// the mode reads Secrets; watches every namespace (narrowed to the test's by namespaceSelector)
	secrets, global bool
}

// TestControllerLeastPrivilege: for each install mode, the controller's
// ServiceAccount did, in the API server's audit log, nothing it was
// refused, and used every permission its install granted it, but those
// docs/rbac.md's allow-list excuses (the scenario that needs each, and why
// the tests do not reach it). Each mode is installed in a namespace of its
// own, side by side, and driven through a short scenario: a
// ConfigMap edit a volume consumer is refreshed for, an env edit that
// restarts a Deployment, and a Secret edit where Secrets are watched.
//
// Global modes watch every namespace: narrowed to the test's by a
// namespaceSelector (kubernetes.io/metadata.name), which changes the
// controller's arguments and not its RBAC, and uses the namespaces rule.
// Each mode's ServiceAccount is its own (the kustomization's in the
// test's own controller namespace): the audit log's requests of one are
// never another test's.
func TestControllerLeastPrivilege(t *testing.T) {
	t.Parallel()
	start := time.Now()
	t.Cleanup(func() { t.Logf("wall time of the test: %s", time.Since(start).Round(time.Second)) })
	logPath := auditLogPath(t)
	allow := docsAllowList(t, rbacaudit.AllowListHeading)
	helm := helmBin(t)
	loadImage(t)
	for _, m := range []lpMode{
		{name: "chart-default", secrets: true, global: true},
		{name: "chart-watchGlobally-false", chart: []string{"watchGlobally=false"}, secrets: true},
		{name: "chart-secrets-false", chart: []string{"watchGlobally=false", "secrets=false"}},
		{name: "chart-reader-node", chart: []string{"reader.mode=node"}, secrets: true, global: true},
		{name: "deploy-controller-namespaced", kustomization: "controller-namespaced", secrets: true},
	} {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			t0 := time.Now()
			f := newFx(t)
			f.leastPrivilegeScenarioSetup(m)
			var objs rbacaudit.Objects
			var user, saNS, sa string
			if m.kustomization != "" {
				objs, saNS, sa = f.installKustomizationIn(m.kustomization)
			} else {
				objs, saNS, sa = f.installChart(helm, m)
			}
			user = rbacaudit.Username(saNS, sa)
			f.leastPrivilegeScenario(m)
			grants, err := objs.GrantsTo(saNS, sa)
			if err != nil || len(grants) == 0 {
				t.Fatalf("the rules granted to %s: %d, %v", user, len(grants), err)
			}
			// the log of the requests made: written before each response is sent (the log backend blocks)
			events := auditEvents(t, logPath, user, t0)
			if len(events) == 0 {
				t.Fatalf("no request of %s in the audit log %s since %s", user, logPath, t0.Format(time.RFC3339))
			}
			rep := rbacaudit.Compare(grants, events, allow)
			t.Logf("%s: %d requests, %d permissions used, %d allow-listed, in %s\n%s", user, len(events), len(rep.Used), len(rep.Excused),
				time.Since(t0).Round(time.Second), rep)
			if !rep.OK() {
				t.Errorf("least privilege of %s (mode %s) not shown by the audit log:\n%s", user, m.name, rep)
			}
		})
	}
}

// leastPrivilegeScenarioSetup creates the consumers: vol mounts app's
// greeting (and, with Secrets, tok's token), env reads app's level into
// its environment (Reloader's auto annotation: restarted on a change).
func (f *fx) leastPrivilegeScenarioSetup(m lpMode) {
	f.createConfigMap(configMap("app", map[string]string{"greeting": "v0", "level": "l0"}))
	volSpec := withVolumes(podSpec(withMounts(busybox("c"), mount("v", "/etc/app"))),
		cmItemsVolume("v", "app", corev1.KeyToPath{Key: "greeting", Path: "greeting"}))
	if m.secrets {
		f.createSecret(secret("tok", map[string]string{"token": "t0"}))
		volSpec.Containers[0] = withMounts(volSpec.Containers[0], mount("s", "/etc/tok"))
		volSpec = withVolumes(volSpec, secretVolume("s", "tok"))
	}
	f.createAnnotatedDeployment("vol", 1, volSpec, map[string]string{reconcile.AnnotationWatch: "true"})
	f.createAnnotatedDeployment("env", 1, podSpec(withEnv(busybox("c"), cmEnv("LEVEL", "app", "level", nil))),
		map[string]string{reconcile.ReloaderAuto: "true"})
	f.waitDeploymentSettled("vol")
	f.waitDeploymentSettled("env")
}

// leastPrivilegeScenario waits for the controller to have recorded both
// Deployments, then edits the ConfigMap's mounted key (vol's pod refreshed
// in place), its env key (env restarted) and, with Secrets, the Secret
// (vol's pod refreshed again).
func (f *fx) leastPrivilegeScenario(m lpMode) {
	f.t.Helper()
	for _, d := range []string{"vol", "env"} {
		f.poll(d+" recorded by the controller", podReadyTimeout, func() (bool, error) { return f.appliedRecord(d) != "", nil })
	}
	pods, _ := f.deploymentPods("vol")
	var volPod string
	for name := range pods {
		volPod = name
	}
	refreshedAt := func() string {
		p, err := f.cs.CoreV1().Pods(f.ns).Get(f.ctx, volPod, metav1.GetOptions{})
		if err != nil {
			f.t.Fatalf("pod %s: %v", volPod, err)
		}
		return p.Annotations[refresh.RefreshedAtAnnotation]
	}
	f.patchConfigMapData("app", map[string]string{"greeting": "v1"})
	f.poll("pod "+volPod+" annotated refreshed", podReadyTimeout, func() (bool, error) { return refreshedAt() != "", nil })
	f.waitFile(volPod, "c", "/etc/app/greeting", "v1") // the annotation is written before the kubelet remounts

	f.patchConfigMapData("app", map[string]string{"level": "l1"})
	f.poll("env restarted", podReadyTimeout, func() (bool, error) {
		d, err := f.cs.AppsV1().Deployments(f.ns).Get(f.ctx, "env", metav1.GetOptions{})
		return err == nil && d.Spec.Template.Annotations[refresh.RestartedAtAnnotation] != "", err
	})
	f.waitDeploymentSettled("env")

	if m.secrets {
		first := refreshedAt()
		// the refreshed-at annotation has a resolution of a second: the next one must differ
		time.Sleep(1100 * time.Millisecond)
		f.patchSecretData("tok", map[string]string{"token": "t1"})
		f.poll("pod "+volPod+" refreshed for the Secret", podReadyTimeout, func() (bool, error) { return refreshedAt() != first, nil })
		f.waitFile(volPod, "c", "/etc/tok/token", "t1")
	}
}

// installChart installs the chart in f.ns (its ServiceAccount there) with
// the suite's image, one replica, the mode's values and short delays, and
// returns the RBAC objects helm template renders for the same values, and
// the ServiceAccount. The release is uninstalled at the end of the test.
func (f *fx) installChart(helm string, m lpMode) (rbacaudit.Objects, string, string) {
	t := f.t
	t.Helper()
	release := "lp-" + f.ns
	repo, tag, _ := strings.Cut(cmsyncImage, ":")
	sets := []string{"image.repository=" + repo, "image.tag=" + tag, "image.pullPolicy=Never", "replicas=1",
		"extraArgs={--debounce=1s,--max-wait=5s}"}
	if m.global {
		sets = append(sets, "namespaceSelector=kubernetes.io/metadata.name="+f.ns)
	} else {
		sets = append(sets, "namespaces={"+f.ns+"}")
	}
	for _, s := range m.chart {
		if s == "reader.mode=node" { // the image the node has: the readers start, and the scenario reads through them
			sets = append(sets, "reader.namespace="+f.ns+"-readers", "reader.image="+imageBusybox)
		}
	}
	sets = append(sets, m.chart...)
	args := []string{filepath.Join(repoRoot, "charts", "kubectl-cmsync"), "--namespace", f.ns}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	run := func(a ...string) []byte {
		t.Helper()
		out, err := exec.Command(helm, a...).CombinedOutput()
		if err != nil {
			t.Fatalf("helm %s: %v\n%s", strings.Join(a, " "), err, out)
		}
		return out
	}
	rendered := run(append([]string{"template", release}, args...)...)
	if m.global {
		// the namespaceSelector narrows the arguments, not the RBAC: the same rules as without it
		plain := run(append([]string{"template", release}, slicesWithout(args, "namespaceSelector=kubernetes.io/metadata.name="+f.ns)...)...)
		a, errA := rbacaudit.ParseManifests(rendered, f.ns)
		b, errB := rbacaudit.ParseManifests(plain, f.ns)
		if errA != nil || errB != nil || fmt.Sprint(a) != fmt.Sprint(b) {
			t.Fatalf("the chart's RBAC with a namespaceSelector differs from without one (%v, %v)", errA, errB)
		}
	}
	t.Cleanup(func() { _ = exec.Command(helm, "uninstall", release, "--namespace", f.ns).Run() })
	run(append([]string{"install", release}, append(args, "--wait", "--timeout", podReadyTimeout.String())...)...)
	objs, err := rbacaudit.ParseManifests(rendered, f.ns)
	if err != nil {
		t.Fatal(err)
	}
	pods, err := f.cs.CoreV1().Pods(f.ns).List(f.ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + release + ",app.kubernetes.io/component=controller"})
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("the controller's pods: %v", err)
	}
	return objs, f.ns, pods.Items[0].Spec.ServiceAccountName
}

// slicesWithout drops "--set", s from args.
func slicesWithout(args []string, s string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		if args[i] == "--set" && i+1 < len(args) && args[i+1] == s {
			i++
			continue
		}
		out = append(out, args[i])
	}
	return out
}

// installKustomizationIn applies deploy/NAME (a namespaced overlay: the
// namespace it watches, "shop", made f.ns) with the suite's image and
// short delays, in the test's own namespaces (applyController), removed
// at the end of the test; it returns its RBAC objects as applied and the
// controller's ServiceAccount.
func (f *fx) installKustomizationIn(kustomization string) (rbacaudit.Objects, string, string) {
	t := f.t
	t.Helper()
	manifests := f.applyController(kustomization, func(u *unstructured.Unstructured) {
		if u.GetNamespace() == "shop" {
			u.SetNamespace(f.ns)
		}
		if u.GetKind() == "Deployment" {
			c := controllerContainer(u)
			var args []any
			for _, a := range c["args"].([]any) {
				if a == "--namespace=shop" {
					a = "--namespace=" + f.ns
				}
				args = append(args, a)
			}
			c["args"] = append(args, "--debounce=1s", "--max-wait=5s")
			c["image"], c["imagePullPolicy"] = cmsyncImage, "Never"
			u.Object["spec"].(map[string]any)["replicas"] = int64(1)
		}
	})
	if strings.Contains(manifests, "shop") {
		t.Fatalf("deploy/%s still names shop after the edit:\n%s", kustomization, manifests)
	}
	objs, err := rbacaudit.ParseManifests([]byte(manifests), f.ctlNS())
	if err != nil {
		t.Fatal(err)
	}
	f.poll("the controller ready", podReadyTimeout, func() (bool, error) {
		for _, p := range f.controllerPods() {
			if podReady(&p) {
				return true, nil
			}
		}
		return false, nil
	})
	return objs, f.ctlNS(), ctlName
}

//go:build e2e

package e2e

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// workloadsFixture deploys the demo's shape: Deployment web (2 pods; a
// volume and an env use of app-config, an env use of Secret creds),
// StatefulSet db (a projected volume of app-config and creds) and bare pod
// toolbox (envFrom app-config), all Ready.
func workloadsFixture(t *testing.T) *fx {
	f := newFx(t)
	f.createConfigMap(configMap("app-config", map[string]string{"greeting": "hello", "log-level": "info"}))
	f.createSecret(secret("creds", map[string]string{"password": "v1"}))
	web := withVolumes(podSpec(withEnv(withMounts(busybox("web"), mount("cfg", "/etc/app")),
		cmEnv("LOG_LEVEL", "app-config", "log-level", nil), secretEnv("PASSWORD", "creds", "password"))), cmVolume("cfg", "app-config"))
	f.createDeployment("web", 2, web, false)
	projected := corev1.Volume{Name: "db", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
		{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}}},
		{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}},
	}}}}
	f.createStatefulSet("db", 1, withVolumes(podSpec(withMounts(busybox("db"), mount("db", "/etc/db"))), projected))
	toolbox := busybox("toolbox")
	toolbox.EnvFrom = []corev1.EnvFromSource{cmEnvFrom("app-config", "APP_")}
	f.createPod(pod("toolbox", podSpec(toolbox)))
	f.waitPodsReady(4)
	return f
}

// TestWorkloadArguments: status, diff and refresh on workloads named as
// kubectl names them, against the real API server and kubelet.
func TestWorkloadArguments(t *testing.T) {
	t.Parallel()
	f := workloadsFixture(t)

	// status deploy/web lists exactly web's uses: its 2 pods, app-config and creds
	rep, ok := f.status("deploy/web")
	if ok {
		if len(rep.Items) != 6 {
			t.Errorf("status deploy/web: %d uses, want 6 (2 pods x volume, env, secret env):\n%+v", len(rep.Items), rep.Items)
		}
		for _, it := range rep.Items {
			if !strings.HasPrefix(it.Pod.Name, "web-") || it.Workload != (inspect.WorkloadRef{Kind: "Deployment", Name: "web"}) {
				t.Errorf("status deploy/web lists a use of %s (%s)", it.Pod.Name, it.Workload)
			}
		}
	}
	// short names, plurals and mixed arguments: db's and toolbox's uses of app-config only
	rep, ok = f.status("sts/db", "po/toolbox", "configmaps/app-config")
	if ok {
		var got []string
		for _, it := range rep.Items {
			got = append(got, it.Pod.Name+" "+it.Object.Kind+"/"+it.Object.Name+" "+string(it.Mode))
		}
		if want := "db-0 ConfigMap/app-config projected; toolbox ConfigMap/app-config envFrom"; strings.Join(got, "; ") != want {
			t.Errorf("status sts/db po/toolbox configmaps/app-config = %q, want %q", strings.Join(got, "; "), want)
		}
	}
	// an unknown kind is refused with the accepted list
	_, errOut, code := f.pluginRun("status", "-n", f.ns, "service/web")
	if code != 2 || !strings.Contains(errOut, `unsupported resource type "service" in "service/web"`) || !strings.Contains(errOut, "deployment (deploy), statefulset (sts)") {
		t.Errorf("status service/web: exit %d, stderr %q", code, errOut)
	}
	// a workload that does not exist
	_, errOut, code = f.pluginRun("status", "-n", f.ns, "deploy/nope")
	if code != 1 || !strings.Contains(errOut, `deployments.apps "nope" not found in namespace "`+f.ns+`"`) {
		t.Errorf("status deploy/nope: exit %d, stderr %q", code, errOut)
	}

	// diff sts/db shows the projected volume once app-config changed
	f.patchConfigMapData("app-config", map[string]string{"greeting": "hello v2"})
	out, errOut, code := f.pluginRun("diff", "-n", f.ns, "sts/db")
	if (code != 0 && code != 3) || !strings.Contains(out+errOut, "projected /etc/db") {
		t.Errorf("diff sts/db: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	// refresh deploy/web --yes leaves db-0 and toolbox alone
	before := map[string]metav1.ObjectMeta{}
	for _, name := range []string{"db-0", "toolbox"} {
		before[name] = f.getPod(name).ObjectMeta
	}
	_, errOut, code = f.pluginRun("refresh", "-n", f.ns, "deploy/web", "--yes")
	if code != 0 {
		t.Errorf("refresh deploy/web --yes: exit %d, stderr %q", code, errOut)
	}
	for name, m := range before {
		p := f.getPod(name)
		if p.UID != m.UID || !mapsEqual(p.Annotations, m.Annotations) {
			t.Errorf("refresh deploy/web changed pod %s: uid %s -> %s, annotations %v -> %v", name, m.UID, p.UID, m.Annotations, p.Annotations)
		}
	}
}

// TestWorkloadArgumentsReaderNamespaceWarning: --reader=node with a reader
// namespace that does not exist says so once, with its fix, in the
// default output; the rows point to the warning. So does refresh's plan.
func TestWorkloadArgumentsReaderNamespaceWarning(t *testing.T) {
	t.Parallel()
	f := workloadsFixture(t)
	out, errOut, code := f.pluginRun("status", "-n", f.ns, "deploy/web", "--verify", "--reader=node", "--reader-namespace", "cmsync-no-such-namespace")
	if code != 0 {
		t.Errorf("status --verify: exit %d, stderr %q", code, errOut)
	}
	var warnings []string
	for _, l := range strings.Split(errOut, "\n") {
		if strings.HasPrefix(l, "Warning:") {
			warnings = append(warnings, l)
		}
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "6 uses are unverifiable") || !strings.Contains(warnings[0], "kubectl create namespace cmsync-no-such-namespace") {
		t.Errorf("warnings = %q, want one naming 6 uses and the fix\nstderr: %s", warnings, errOut)
	}
	if n := strings.Count(out, "unverifiable: see warning 1"); n != 6 {
		t.Errorf("%d rows point to warning 1, want 6:\n%s", n, out)
	}

	// refresh's plan says it the same way: once, and its rows point to it
	out, errOut, code = f.pluginRun("refresh", "-n", f.ns, "deploy/web", "--dry-run=client", "--reader=node", "--reader-namespace", "cmsync-no-such-namespace")
	warnings = nil
	for _, l := range strings.Split(errOut, "\n") {
		if strings.HasPrefix(l, "Warning:") {
			warnings = append(warnings, l)
		}
	}
	if code != 0 || len(warnings) != 1 || !strings.Contains(warnings[0], "[1] 6 uses are unverifiable") || !strings.Contains(warnings[0], "kubectl create namespace cmsync-no-such-namespace") {
		t.Errorf("refresh --dry-run=client: exit %d, warnings = %q, want one naming 6 uses and the fix\nstderr: %s", code, warnings, errOut)
	}
	if !strings.Contains(out, "(see warning 1)") || strings.Contains(out, "does not exist") {
		t.Errorf("refresh --dry-run=client: the plan's rows do not point to warning 1, or repeat its cause:\n%s", out)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

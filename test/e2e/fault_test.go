//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// TestRefreshWaitAcrossAPIServerRestart: the API server crashes and comes
// back while `refresh --wait` waits for a restarted Deployment. The run
// either resumes and ends current, or ends with a per-consumer result
// saying what was changed; a second run finishes the job and changes
// nothing that is already current. It restarts the cluster's API server
// once (hack/cluster/component.sh, KILL=1: a crash), so it is not parallel:
// go test runs it before any parallel test starts.
func TestRefreshWaitAcrossAPIServerRestart(t *testing.T) {
	f := newFx(t)
	f.createConfigMap(configMap("cfg", map[string]string{"greeting": "v1"}))
	c := withMounts(withEnv(busybox(app), cmEnv("GREETING", "cfg", "greeting", nil)), mount("cfg", "/etc/cfg"))
	f.createDeployment("web", 2, withVolumes(podSpec(c), cmVolume("cfg", "cfg")), false)
	f.waitPodsReady(2)
	f.waitDeploymentSettled("web")
	f.patchConfigMapData("cfg", map[string]string{"greeting": "v2"})

	run := f.runPlugin("refresh", "-n", f.ns, "--yes", "--wait", "--timeout", "100s", "-o", "json")
	f.poll("the restart to be applied", time.Minute, func() (bool, error) {
		d := f.getDeployment("web")
		return d.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"] != "", nil
	})
	restart := exec.Command(filepath.Join(repoRoot, "hack", "cluster", "component.sh"), "restart", "kube-apiserver")
	restart.Env = append(os.Environ(), "KILL=1")
	if out, err := restart.CombinedOutput(); err != nil {
		t.Fatalf("restarting kube-apiserver: %v\n%s", err, out)
	}
	res := <-run
	t.Logf("refresh --wait across the restart:\n%s", res)
	if strings.HasPrefix(res, "HUNG") {
		t.Fatal("refresh --wait hung across the API server restart")
	}
	_, body, _ := strings.Cut(res, "stdout:\n")
	body, _, _ = strings.Cut(body, "\nstderr:")
	var doc refreshDoc
	if err := json.Unmarshal([]byte(body), &doc); err != nil || len(doc.Items) == 0 {
		t.Errorf("refresh --wait across the restart: want a per-consumer result document (%v)", err)
	}
	for _, r := range doc.Items {
		if r.Outcome == "" || len(r.Consumers) == 0 {
			t.Errorf("result without an outcome or consumers: %+v", r)
		}
	}
	restartedAt := f.getDeployment("web").Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"]

	// again: it finishes the job and restarts nothing that is current
	f.waitDeploymentSettled("web")
	f.waitPodsReady(2)
	doc, errOut, code := f.refreshJSON("--yes", "--wait", "--timeout", "100s")
	if code != 0 {
		t.Errorf("second refresh --wait: exit %d, want 0\n%s", code, errOut)
	}
	for _, r := range doc.Items {
		if r.Action.Action == refresh.ActionRestart {
			t.Errorf("second refresh restarts %s again: %s", r.Target, r.Reason)
		}
	}
	if got := f.getDeployment("web").Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"]; got != restartedAt {
		t.Errorf("the second run changed restartedAt from %s to %s", restartedAt, got)
	}
	for _, p := range f.waitPodsReady(2) {
		f.expectEnv(p.Name, app, "GREETING", "v2")
	}
}

//go:build e2e

package e2e

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// An optional env key and an optional envFrom ConfigMap are removed while
// the pod runs: the kubelet leaves the container's variables as they were,
// status --verify says stale, and refresh restarts the Deployment, saying
// what was removed; its new pod has neither variable, and a second run has
// nothing to restart.
func TestRefreshRestartsEnvOfRemovedOptionalKeyAndObject(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	f.createConfigMap(configMap("opt", map[string]string{"K": "k0", "OTHER": "x"}))
	f.createConfigMap(configMap("extra", map[string]string{"E": "e0"}))
	c := withEnv(busybox("c"), cmEnv("K", "opt", "K", ptr(true)))
	from := cmEnvFrom("extra", "X_")
	from.ConfigMapRef.Optional = ptr(true)
	c.EnvFrom = []corev1.EnvFromSource{from}
	f.createDeployment("api", 1, podSpec(c), false)
	pod := f.waitPodsReady(1)[0].Name

	f.mergePatchConfigMap("opt", map[string]any{"data": map[string]any{"K": nil}})
	if err := f.cs.CoreV1().ConfigMaps(f.ns).Delete(f.ctx, "extra", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// the kubelet's side: the running container keeps both
	f.expectEnv(pod, "c", "K", "k0")
	f.expectEnv(pod, "c", "X_E", "e0")
	if rep, ok := f.status("opt", "extra", "--verify"); ok {
		for _, it := range rep.Items {
			if it.Pod.Name == pod && it.State != "stale" {
				t.Errorf("status --verify: %s %s is %s (%s), want stale", it.Object.Name, it.Mode, it.State, it.StateReason)
			}
		}
	}

	doc, errOut, code := f.refreshJSON("opt", "extra", "--yes", "--timeout", "120s")
	if code != 0 || actionsOf(doc) != "restart deployment/api" || doc.Items[0].Outcome != refresh.OutcomeCurrent {
		t.Fatalf("exit %d plan %q (%s), want one verified restart:\n%+v", code, actionsOf(doc), errOut, doc.Items)
	}
	// the reason is the first stale consumer's: either removal
	r := doc.Items[0].Reason
	if !strings.Contains(r, `optional key "K" is no longer in configmap "opt"`) && !strings.Contains(r, `optional configmap "extra" no longer exists`) {
		t.Errorf("reason %q does not say which key or object was removed", r)
	}
	pods := f.waitPodsReady(1)
	f.expectEnvUnset(pods[0].Name, "c", "K")
	f.expectEnvUnset(pods[0].Name, "c", "X_E")
	doc, _, code = f.refreshJSON("opt", "extra")
	if code != 0 || strings.Contains(actionsOf(doc), "restart") {
		t.Errorf("second run: exit %d plan %q, want nothing to restart", code, actionsOf(doc))
	}
}

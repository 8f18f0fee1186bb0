//go:build e2e

package e2e

import (
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// A StatefulSet whose ordinals start at 3 (pods web-3, web-4, web-5) with
// partition 1: the plan's restart names the pods the real StatefulSet
// controller replaces after a template change (web-4 and web-5: the
// partition counts indexes, ordinal minus ordinals.start), and names web-3
// as spared.
func TestRefreshPlanMatchesControllerWithOrdinalsStart(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	f.createConfigMap(configMap("app", map[string]string{"LEVEL": "v0"}))
	labels := map[string]string{"app": "web"}
	replicas, partition := int32(3), int32(1)
	s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: f.ns}, Spec: appsv1.StatefulSetSpec{
		Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels}, ServiceName: "web",
		Ordinals:            &appsv1.StatefulSetOrdinals{Start: 3},
		PodManagementPolicy: appsv1.ParallelPodManagement,
		UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
			RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: &partition}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: podSpec(withEnv(busybox("c"), cmEnv("LEVEL", "app", "LEVEL", nil)))},
	}}
	if _, err := f.cs.AppsV1().StatefulSets(f.ns).Create(f.ctx, s, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating statefulset: %v", err)
	}
	before := map[string]types.UID{}
	for _, p := range f.waitPodsReady(3) {
		before[p.Name] = p.UID
	}
	if len(before) != 3 || before["web-3"] == "" || before["web-5"] == "" {
		t.Fatalf("pods %v, want web-3, web-4, web-5", before)
	}
	f.patchConfigMapData("app", map[string]string{"LEVEL": "v1"})

	doc, errOut, code := f.refreshJSON("app", "--dry-run=client")
	if code != 0 && code != 3 {
		t.Fatalf("plan: exit %d: %s", code, errOut)
	}
	var planned []string
	for _, r := range doc.Items {
		if r.Action.Action == refresh.ActionRestart && r.Target.Name == "web" {
			planned = append(planned, r.Pods...)
		}
	}
	sort.Strings(planned)

	// The rollout itself, as kubectl rollout restart does it: the real
	// controller decides which pods it replaces.
	patch := `{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":"` + time.Now().UTC().Format(time.RFC3339) + `"}}}}}`
	if _, err := f.cs.AppsV1().StatefulSets(f.ns).Patch(f.ctx, "web", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("restarting the statefulset: %v", err)
	}
	f.poll("the rollout down to the partition", 3*time.Minute, func() (bool, error) {
		st, err := f.cs.AppsV1().StatefulSets(f.ns).Get(f.ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return st.Status.ObservedGeneration >= st.Generation && st.Status.UpdatedReplicas == replicas-partition && st.Status.ReadyReplicas == replicas, nil
	})
	var replaced []string
	for _, p := range f.waitPodsReady(3) {
		if before[p.Name] != p.UID {
			replaced = append(replaced, p.Name)
		}
	}
	sort.Strings(replaced)
	if strings.Join(replaced, ",") != "web-4,web-5" {
		t.Errorf("the controller replaced %v; this test expects web-4,web-5", replaced)
	}
	if strings.Join(planned, ",") != strings.Join(replaced, ",") {
		t.Errorf("the plan's restart names %v, the controller replaced %v (plan %q)", planned, replaced, actionsOf(doc))
	}
	manual := false
	for _, r := range doc.Items {
		if r.Action.Action == refresh.ActionManual && strings.Contains(r.Reason, "web-3") {
			manual = true
		}
	}
	if !manual {
		t.Errorf("plan %q does not name web-3 as spared by the partition", actionsOf(doc))
	}
	f.expectEnv("web-3", "c", "LEVEL", "v0")
	f.expectEnv("web-5", "c", "LEVEL", "v1")
}

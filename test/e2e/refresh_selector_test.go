//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

func (f *fx) createStatefulSet(name string, replicas int32, spec corev1.PodSpec) {
	f.t.Helper()
	labels := map[string]string{"app": name}
	s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns}, Spec: appsv1.StatefulSetSpec{
		Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels}, ServiceName: name,
		PodManagementPolicy: appsv1.ParallelPodManagement,
		Template:            corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
	}}
	if _, err := f.cs.AppsV1().StatefulSets(f.ns).Create(f.ctx, s, metav1.CreateOptions{}); err != nil {
		f.t.Fatalf("creating statefulset %s: %v", name, err)
	}
}

// resourceVersions of the StatefulSet and its pods, once the controller
// has nothing left to write.
func (f *fx) settledStatefulSetVersions(name string, replicas int32) map[string]string {
	f.t.Helper()
	f.poll("statefulset "+name+" settled", podReadyTimeout, func() (bool, error) {
		s, err := f.cs.AppsV1().StatefulSets(f.ns).Get(f.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		st := s.Status
		return st.ObservedGeneration == s.Generation && st.ReadyReplicas == replicas && st.AvailableReplicas == replicas &&
			st.CurrentReplicas == replicas && st.UpdatedReplicas == replicas, nil
	})
	time.Sleep(settle)
	rv := map[string]string{}
	s, err := f.cs.AppsV1().StatefulSets(f.ns).Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatalf("getting statefulset %s: %v", name, err)
	}
	rv["statefulset/"+name] = s.ResourceVersion
	pods, err := f.cs.CoreV1().Pods(f.ns).List(f.ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatalf("listing pods: %v", err)
	}
	for _, p := range pods.Items {
		rv["pod/"+p.Name] = p.ResourceVersion + " " + string(p.UID)
	}
	return rv
}

// -l narrows what is observed, not what a restart replaces: with -l naming
// db-2 only, a restart of StatefulSet db would roll db-0 and db-1 too. The
// plan says so and is refused without --yes; nothing changes.
func TestRefreshRefusesRestartBeyondSelector(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	f.createConfigMap(configMap("cfg", map[string]string{"K": "v0"}))
	f.createStatefulSet("db", 3, podSpec(withEnv(busybox("c"), cmEnv("K", "cfg", "K", nil))))
	f.waitPodsReady(3)
	before := f.settledStatefulSetVersions("db", 3)

	doc, errOut, code := f.refreshJSON("cfg", "--strategy", "restart", "-l", "statefulset.kubernetes.io/pod-name=db-2")
	if code != 4 || !strings.Contains(errOut, "statefulset/db replaces db-0, db-1") || !strings.Contains(errOut, "--yes") {
		t.Fatalf("exit %d (%s), want 4 naming the pods beyond -l and --yes", code, errOut)
	}
	if got := actionsOf(doc); got != "restart statefulset/db" {
		t.Fatalf("plan %q, want one restart", got)
	}
	a := doc.Items[0].Action
	if strings.Join(a.Pods, ",") != "db-0,db-1,db-2" || strings.Join(a.OutsideSelector, ",") != "db-0,db-1" {
		t.Errorf("plan pods %v outside -l %v, want db-0,db-1,db-2 and db-0,db-1", a.Pods, a.OutsideSelector)
	}
	if len(a.Consumers) != 1 || a.Consumers[0].Pod != "db-2" || a.Consumers[0].Env != "K" {
		t.Errorf("consumers %+v, want db-2's env K only (what -l observed)", a.Consumers)
	}
	after := f.settledStatefulSetVersions("db", 3)
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s changed: %s -> %s", k, v, after[k])
		}
	}
	if len(after) != len(before) {
		t.Errorf("objects before %v, after %v", before, after)
	}
}

// A StatefulSet with partition 1: a restart replaces db-1 and db-2 only. The
// plan says so (db-0 is manual), and the wait converges on the replaced pods
// instead of timing out on db-0, which keeps its old env.
func TestRefreshPartitionedStatefulSetConverges(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	f.createConfigMap(configMap("cfg", map[string]string{"K": "v0"}))
	f.createStatefulSet("db", 3, podSpec(withEnv(busybox("c"), cmEnv("K", "cfg", "K", nil))))
	f.waitPodsReady(3)
	f.settledStatefulSetVersions("db", 3)
	if _, err := f.cs.AppsV1().StatefulSets(f.ns).Patch(f.ctx, "db", types.MergePatchType,
		[]byte(`{"spec":{"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"partition":1}}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("setting the partition: %v", err)
	}
	db0 := f.getPod("db-0")
	f.patchConfigMapData("cfg", map[string]string{"K": "v1"})

	doc, errOut, code := f.refreshJSON("cfg", "--yes", "--timeout", "150s")
	if code != 3 || !strings.Contains(errOut, "statefulset/db: manual") {
		t.Fatalf("exit %d (%s), want 3 for db-0 left manual", code, errOut)
	}
	var restart *refresh.Result
	for i, r := range doc.Items {
		if r.Action.Action == refresh.ActionRestart {
			restart = &doc.Items[i]
		}
	}
	if restart == nil {
		t.Fatalf("plan %q has no restart", actionsOf(doc))
	}
	if strings.Join(restart.Pods, ",") != "db-1,db-2" || len(restart.Warnings) == 0 || !strings.Contains(restart.Warnings[0], "pod db-0 is not replaced") {
		t.Errorf("restart pods %v warnings %q, want db-1,db-2 and db-0 named as spared", restart.Pods, restart.Warnings)
	}
	if restart.Outcome != refresh.OutcomeCurrent {
		t.Errorf("restart outcome %s (%s), want current: it converges on db-1 and db-2", restart.Outcome, restart.Detail)
	}
	if p := f.getPod("db-0"); p.UID != db0.UID {
		t.Errorf("db-0 was replaced (uid %s -> %s)", db0.UID, p.UID)
	}
	f.expectEnv("db-0", "c", "K", "v0")
	f.expectEnv("db-2", "c", "K", "v1")
}

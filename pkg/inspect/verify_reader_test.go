package inspect

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread"
	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread/readtest"
)

// recordingReader answers from a table by container and records what it
// was asked.
type recordingReader struct {
	got  []containerread.Request
	obs  map[string]*containerread.Verified
	skip bool // answer for no container
}

func (r *recordingReader) ReadContainers(_ context.Context, reqs []containerread.Request, _ containerread.Options) []*containerread.Verified {
	r.got = append(r.got, reqs...)
	if r.skip {
		return nil
	}
	out := make([]*containerread.Verified, len(reqs))
	for i, q := range reqs {
		out[i] = r.obs[q.Pod.Name+"/"+q.Container]
	}
	return out
}

// TestVerifyUsesThroughReader: a reader set in VerifyOptions gets one
// request per container with the pod and every path its uses need, and
// what it returns goes through the same comparisons.
func TestVerifyUsesThroughReader(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm", CreationTimestamp: metav1.NewTime(testNow.Add(-time.Minute))},
		Data: map[string]string{"a": "1"}}
	pod := runningPod("p", corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}},
		Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}}}})
	vol := volItem(ModeVolume, "/etc/cfg")
	env := volItem(ModeEnvFrom, "")
	env.Volume = nil
	snap := &Snapshot{Pods: []corev1.Pod{*pod}, ConfigMaps: map[ObjectKey]*corev1.ConfigMap{{KindConfigMap, "ns", "cm"}: cm}}
	r := &recordingReader{obs: map[string]*containerread.Verified{"p/c": {
		Paths: map[string]*containerread.VerifiedPath{"/etc/cfg": {Kind: containerread.PathAtomic, Target: readtest.TS, Listed: true,
			Files: map[string]*containerread.VerifiedFile{"a": {Path: "a", Mode: 0o644, Size: 1, Data: []byte("0"), HasData: true}}}},
		Env: map[string]string{"a": "1"}, EnvRead: true}}}
	res := VerifyUses(context.Background(), []Use{vol, env}, snap, nil, VerifyOptions{Reader: r, Now: func() time.Time { return testNow }})
	if len(r.got) != 1 {
		t.Fatalf("requests = %d, want one for the one container", len(r.got))
	}
	q := r.got[0]
	if q.Pod == nil || q.Pod.Name != "p" || q.Container != "c" || !q.Env || len(q.Paths) != 1 || q.Paths[0].Path != "/etc/cfg" {
		t.Fatalf("request = %+v", q)
	}
	if res[0].Use.State != StatePending || res[1].Use.State != StateCurrent && res[1].Use.State != StateInSync {
		t.Fatalf("states = %s (%s), %s (%s)", res[0].Use.State, res[0].Use.StateReason, res[1].Use.State, res[1].Use.StateReason)
	}

	// a reader that answers for nobody leaves every use unverifiable
	none := &recordingReader{skip: true}
	res = VerifyUses(context.Background(), []Use{vol}, snap, nil, VerifyOptions{Reader: none, Now: func() time.Time { return testNow }})
	if res[0].Use.State != StateUnverifiable {
		t.Fatalf("state with no answer = %s, want unverifiable", res[0].Use.State)
	}
}

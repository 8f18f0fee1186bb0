package refresh

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// FuzzPlan: the planner over any report never panics, and every consumer
// (a use's identity) appears in exactly one action. The fuzzed bytes choose
// the strategy, whether states were observed, and for each use (3 bytes) its
// namespace, pod, container, mode, verdict, state, workload and object.
func FuzzPlan(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{1, 0xff, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xa0})
	f.Add([]byte{2, 7, 7, 7, 9, 9, 9, 3, 3, 3})
	modes := []inspect.Mode{inspect.ModeVolume, inspect.ModeItems, inspect.ModeProjected, inspect.ModeSubPath,
		inspect.ModeSubPathExpr, inspect.ModeEnv, inspect.ModeEnvFrom, inspect.ModeUnmounted}
	verdicts := []inspect.Verdict{inspect.VerdictHotUpdate, inspect.VerdictRestartNeeded, inspect.VerdictBreaksOnChange,
		inspect.VerdictNeverChanges, inspect.VerdictMissing, inspect.VerdictNotMounted}
	states := []inspect.State{"", inspect.StateInSync, inspect.StatePending, inspect.StateStale, inspect.StateCurrent,
		inspect.StateBroken, inspect.StateUnverifiable, inspect.StateMissing, inspect.StateNA}
	kinds := []string{"Pod", "Deployment", "StatefulSet", "DaemonSet", "Job", "ReplicaSet", "CronJob", "Deployment"}
	strategies := []Strategy{StrategyAuto, StrategyAnnotate, StrategyRestart}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 1 {
			return
		}
		in := PlanInput{Strategy: strategies[int(data[0])%3], Verified: data[0]&4 != 0,
			Pods: map[string]*corev1.Pod{}, Workload: map[WorkloadKey]WorkloadInfo{}}
		if data[0]&8 != 0 {
			in.Selector = labels.SelectorFromSet(labels.Set{"app": "p0"})
		}
		seen := map[inspect.UseID]bool{}
		for b := data[1:]; len(b) >= 3; b = b[3:] {
			ns := fmt.Sprintf("ns%d", b[0]&1)
			pod := fmt.Sprintf("p%d", b[0]>>1&3)
			kind := kinds[b[0]>>3&7]
			wl := fmt.Sprintf("w%d", b[0]>>6&1)
			if kind == "Pod" {
				wl = pod
			}
			it := inspect.Use{
				Object:    inspect.ObjectRef{Kind: []string{inspect.KindConfigMap, inspect.KindSecret}[b[1]>>7], Namespace: ns, Name: fmt.Sprintf("o%d", b[1]>>5&3), Exists: b[1]&16 == 0},
				Pod:       inspect.PodRef{Name: pod, UID: ns + "-" + pod, Node: "n", Phase: "Running"},
				Container: &inspect.ContainerRef{Name: fmt.Sprintf("c%d", b[1]&1), Type: inspect.ContainerRegular},
				Workload:  inspect.WorkloadRef{Kind: kind, Name: wl},
				Mode:      modes[b[1]>>1&7],
				Verdict:   verdicts[int(b[2])%len(verdicts)],
				State:     states[int(b[2]>>3)%len(states)],
			}
			if it.Mode != inspect.ModeEnv && it.Mode != inspect.ModeEnvFrom {
				it.Volume = &inspect.VolumeRef{Name: "v", MountPath: fmt.Sprintf("/m%d", b[2]>>7)}
			} else {
				it.EnvName = "E"
			}
			if it.Mode == inspect.ModeUnmounted {
				it.Container = nil
			}
			if seen[it.ID()] {
				continue
			}
			seen[it.ID()] = true
			in.Items = append(in.Items, it)
			key := PodKey(ns, pod)
			if in.Pods[key] == nil && b[2]&4 == 0 {
				in.Pods[key] = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: ns, UID: types.UID(ns + "-" + pod),
					Labels: map[string]string{"app": pod}}}
			}
			wk := WorkloadKey{kind, ns, wl}
			if _, ok := in.Workload[wk]; !ok && b[0]&0x80 == 0 {
				in.Workload[wk] = WorkloadInfo{Exists: b[2]&2 == 0, Paused: b[2]&1 != 0, OnDelete: b[1]&8 != 0, Partition: int32(b[0] >> 7),
					Pods: []WorkloadPod{{Name: pod, UID: ns + "-" + pod}}}
			}
		}
		actions := PlanActions(in)
		found := map[inspect.UseID]int{}
		for _, a := range actions {
			if a.Action == "" || a.Reason == "" {
				t.Fatalf("action without a kind or a reason: %+v", a)
			}
			for _, c := range a.Consumers {
				found[c.ID()]++
			}
		}
		for _, it := range in.Items {
			if n := found[ConsumerOf(it).ID()]; n != 1 {
				t.Fatalf("consumer %+v is in %d actions, want 1; plan: %s", ConsumerOf(it).ID(), n, summary(actions))
			}
		}
		if len(found) != len(in.Items) {
			t.Fatalf("the plan has %d consumers for %d uses: %s", len(found), len(in.Items), summary(actions))
		}
	})
}

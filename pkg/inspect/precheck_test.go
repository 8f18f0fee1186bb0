package inspect

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPrecheck(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	pod := runningPod("p", corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}, {Name: "crash"}},
		InitContainers: []corev1.Container{{Name: "init"}, {Name: "side", RestartPolicy: &always}}})
	pod.Status.ContainerStatuses[1].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	// Pending: c runs, late never started, init still waits.
	pending := runningPod("p", corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}, {Name: "late"}}})
	pending.Status.Phase = corev1.PodPending
	pending.Status.ContainerStatuses[1].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
	pending.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}}}
	noStatus := runningPod("p", corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}})
	noStatus.Status.Phase, noStatus.Status.ContainerStatuses = corev1.PodPending, nil
	succeeded := runningPod("p", corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}})
	succeeded.Status.Phase = corev1.PodSucceeded
	failed := succeeded.DeepCopy()
	failed.Status.Phase = corev1.PodFailed
	// The init container ran from 10:00:10 to 10:00:20.
	t0 := time.Date(2024, 5, 6, 10, 0, 0, 0, time.UTC)
	ran := pod.DeepCopy()
	ran.Status.InitContainerStatuses[0].State.Terminated.StartedAt = metav1.NewTime(t0.Add(10 * time.Second))
	ran.Status.InitContainerStatuses[0].State.Terminated.FinishedAt = metav1.NewTime(t0.Add(20 * time.Second))
	cmAt := func(d time.Duration) Object { return cmWith(map[string]string{"a": "1"}, t0.Add(d)) }
	cm := cmObject(map[string]string{"a": "1"}, nil)
	mk := func(mode Mode, container string, ctype ContainerType) Use {
		it := volItem(mode, "/m")
		it.Container = &ContainerRef{Name: container, Type: ctype}
		return it
	}
	cases := []struct {
		name  string
		it    Use
		pod   *corev1.Pod
		obj   Object
		want  State
		check bool // false: needs an exec
	}{
		{"unmounted", func() Use { it := mk(ModeUnmounted, "", ""); it.Container = nil; return it }(), pod, cm, StateNA, true},
		{"required object missing", mk(ModeVolume, "c", ContainerRegular), pod, Object{Kind: KindConfigMap, Name: "cm"}, StateMissing, true},
		{"required key missing", func() Use {
			it := mk(ModeItems, "c", ContainerRegular)
			it.KeyPaths = []KeyPath{{Key: "zz", Path: "z"}}
			return it
		}(), pod, cm, StateMissing, true},
		{"required env key missing", func() Use {
			it := mk(ModeEnv, "c", ContainerRegular)
			it.Keys, it.EnvName = []string{"zz"}, "Z"
			return it
		}(), pod, cm, StateMissing, true},
		{"pod pending, this container runs", mk(ModeVolume, "c", ContainerRegular), pending, cm, "", false},
		{"pod pending, this container never started", mk(ModeVolume, "late", ContainerRegular), pending, cm, StateUnverifiable, true},
		{"pod pending, no container status", mk(ModeVolume, "c", ContainerRegular), noStatus, cm, StateUnverifiable, true},
		{"pod pending, init container not run yet", mk(ModeVolume, "init", ContainerInit), pending, cm, StateNA, true},
		{"pod pending, init container without a status yet", mk(ModeVolume, "init", ContainerInit), noStatus, cm, StateNA, true},
		{"pod succeeded", mk(ModeVolume, "c", ContainerRegular), succeeded, cm, StateNA, true},
		{"pod failed", mk(ModeEnv, "c", ContainerRegular), failed, cm, StateNA, true},
		{"init container finished, change time unknown", mk(ModeVolume, "init", ContainerInit), pod, cm, StateUnverifiable, true},
		{"init container finished, changed before it ran", mk(ModeVolume, "init", ContainerInit), ran, cmAt(5 * time.Second), StateCurrent, true},
		{"init container finished, changed after it finished", mk(ModeVolume, "init", ContainerInit), ran, cmAt(time.Minute), StateStale, true},
		{"init container finished, changed while it ran", mk(ModeVolume, "init", ContainerInit), ran, cmAt(15 * time.Second), StateUnverifiable, true},
		{"init container env, changed after it finished", func() Use {
			it := mk(ModeEnv, "init", ContainerInit)
			it.Keys, it.EnvName = []string{"a"}, "A"
			return it
		}(), ran, cmAt(time.Minute), StateStale, true},
		{"crashlooping", mk(ModeVolume, "crash", ContainerRegular), pod, cm, StateUnverifiable, true},
		{"pod not in snapshot", mk(ModeVolume, "c", ContainerRegular), nil, cm, StateUnverifiable, true},
		{"running sidecar", mk(ModeVolume, "side", ContainerSidecar), pod, cm, "", false},
		{"running", mk(ModeVolume, "c", ContainerRegular), pod, cm, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, done := precheck(c.it, c.pod, inputsFor(c.it, c.obj))
			if done != c.check || got.State != c.want {
				t.Errorf("got %s %v (%s), want %s %v", got.State, done, got.Reason, c.want, c.check)
			}
		})
	}
}

func TestPrecheckTerminatingPod(t *testing.T) {
	now := metav1.Now()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", DeletionTimestamp: &now}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	it := Use{Object: ObjectRef{Kind: KindConfigMap, Name: "cm"}, Container: &ContainerRef{Name: "c", Type: ContainerRegular}, Mode: ModeEnv, Keys: []string{"k"}}
	obj := Object{Kind: KindConfigMap, Name: "cm", Exists: true, Data: map[string][]byte{"k": []byte("v")}}
	c, done := precheck(it, pod, inputsFor(it, obj))
	if !done || c.State != StateNA || !strings.Contains(c.Reason, "terminating") {
		t.Fatalf("terminating pod: state %q reason %q done %v, want n/a without an exec", c.State, c.Reason, done)
	}
	if got := Uses(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", DeletionTimestamp: &now},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}}}}}}); len(got) != 1 || got[0].Pod.Phase != "Terminating" {
		t.Fatalf("a pod being deleted must show phase Terminating: %+v", got)
	}
}

package inspect

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var testNow = time.Date(2024, 5, 6, 7, 10, 0, 0, time.UTC)

func runningPod(name string, spec corev1.PodSpec) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: spec,
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	for _, c := range spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, State: running})
	}
	for _, c := range spec.InitContainers {
		st := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed"}}
		if c.RestartPolicy != nil {
			st = running
		}
		p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses, corev1.ContainerStatus{Name: c.Name, State: st})
	}
	return p
}

func volItem(mode Mode, mountPath string) Item {
	return Item{Object: ObjectRef{Kind: KindConfigMap, Namespace: "ns", Name: "cm", Exists: true},
		Pod: PodRef{Name: "p", Phase: "Running"}, Container: &ContainerRef{Name: "c", Type: ContainerRegular},
		Mode: mode, Volume: &VolumeRef{Name: "v", MountPath: mountPath}, Verdict: VerdictHotUpdate}
}

func cmWith(data map[string]string, changed time.Time) Object {
	o := cmObject(data, nil)
	o.LastChange = changed
	return o
}

func atomicObs(files map[string]string) *Observation {
	op := &ObservedPath{Kind: PathAtomic, Target: testTS, Listed: true, Files: map[string]*ObservedFile{}}
	for p, c := range files {
		op.Files[p] = &ObservedFile{Path: p, Mode: 0o644, Size: int64(len(c)), Data: []byte(c), HasData: true}
	}
	return &Observation{Paths: map[string]*ObservedPath{"/etc/cfg": op}}
}

func TestCompareVolume(t *testing.T) {
	pod := runningPod("p", corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}},
		Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}}}})
	projPod := runningPod("p", corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}},
		Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "other"}}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "third"},
				Items: []corev1.KeyToPath{{Key: "k", Path: "third/k.txt"}}}},
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "labels"}}}},
		}}}}}})
	other := cmObject(map[string]string{"o": "x"}, nil)
	lookup := func(k ObjectKey) Object {
		if k.Name == "other" {
			return other
		}
		return Object{Kind: k.Kind, Name: k.Name}
	}
	recent := testNow.Add(-30 * time.Second)
	old := testNow.Add(-10 * time.Minute)
	big := strings.Repeat("b", 100)

	cases := []struct {
		name       string
		it         Item
		pod        *corev1.Pod
		obj        Object
		obs        *Observation
		want       State
		reason     []string
		fileStatus map[string]FileStatus
	}{
		{name: "in sync", it: volItem(ModeVolume, "/etc/cfg"), obj: cmWith(map[string]string{"a": "1", "b": "2"}, recent),
			obs: atomicObs(map[string]string{"a": "1", "b": "2"}), want: StateInSync, reason: []string{"matches the API (2 files)", "2024-05-06T07:08:09Z"}},
		{name: "pending: content differs", it: volItem(ModeVolume, "/etc/cfg"), obj: cmWith(map[string]string{"a": "new"}, recent),
			obs: atomicObs(map[string]string{"a": "old"}), want: StatePending,
			reason: []string{`"a"`, "changed 30s ago", "within 0-90s"}, fileStatus: map[string]FileStatus{"a": FileDiffers}},
		{name: "pending: overdue", it: volItem(ModeVolume, "/etc/cfg"), obj: cmWith(map[string]string{"a": "new"}, old),
			obs: atomicObs(map[string]string{"a": "old"}), want: StatePending, reason: []string{"changed 10m0s ago", "longer than the 0-90s"}},
		{name: "pending: key added", it: volItem(ModeVolume, "/etc/cfg"), obj: cmWith(map[string]string{"a": "1", "n": "2"}, recent),
			obs: atomicObs(map[string]string{"a": "1"}), want: StatePending, fileStatus: map[string]FileStatus{"n": FileMissing, "a": FileEqual}},
		{name: "pending: key removed", it: volItem(ModeVolume, "/etc/cfg"), obj: cmWith(map[string]string{"a": "1"}, recent),
			obs: atomicObs(map[string]string{"a": "1", "gone": "x"}), want: StatePending, fileStatus: map[string]FileStatus{"gone": FileExtra}},
		{name: "stale: immutable re-created", it: volItem(ModeVolume, "/etc/cfg"),
			obj: func() Object { o := cmWith(map[string]string{"a": "new"}, recent); o.Immutable = true; return o }(),
			obs: atomicObs(map[string]string{"a": "old"}), want: StateStale, reason: []string{"immutable", "new name"}},
		{name: "projected: other sources' files are not extra", it: volItem(ModeProjected, "/etc/cfg"), pod: projPod,
			obj: cmWith(map[string]string{"a": "1"}, recent),
			obs: atomicObs(map[string]string{"a": "1", "o": "x", "token": "jwt", "labels": "l", "third/k.txt": "k"}), want: StateInSync},
		{name: "projected: removed key of this source", it: volItem(ModeProjected, "/etc/cfg"), pod: projPod,
			obj: cmWith(map[string]string{"a": "1"}, recent),
			obs: atomicObs(map[string]string{"a": "1", "o": "x", "token": "jwt", "gone": "x"}), want: StatePending,
			fileStatus: map[string]FileStatus{"gone": FileExtra}},
		{name: "items: optional key removed", it: func() Item {
			it := volItem(ModeItems, "/etc/cfg")
			it.Optional = true
			it.Items = []KeyPath{{Key: "a", Path: "x/a"}, {Key: "b", Path: "b"}}
			return it
		}(), obj: cmWith(map[string]string{"a": "1"}, recent),
			obs: atomicObs(map[string]string{"x/a": "1", "b": "old"}), want: StatePending, fileStatus: map[string]FileStatus{"b": FileExtra}},
		{name: "items: nested in sync", it: func() Item {
			it := volItem(ModeItems, "/etc/cfg")
			it.Items = []KeyPath{{Key: "a", Path: "x/y/a"}}
			return it
		}(), obj: cmWith(map[string]string{"a": "1", "unlisted": "u"}, recent),
			obs: atomicObs(map[string]string{"x/y/a": "1"}), want: StateInSync},
		{name: "large file, sha256 equal", it: volItem(ModeVolume, "/etc/cfg"), obj: cmWith(map[string]string{"big": big}, recent),
			obs: func() *Observation {
				o := atomicObs(nil)
				o.Paths["/etc/cfg"].Files["big"] = &ObservedFile{Path: "big", Mode: 0o644, Size: 100, SHA256: sha256Hex([]byte(big))}
				return o
			}(), want: StateInSync},
		{name: "large file, no sha256sum, same size", it: volItem(ModeVolume, "/etc/cfg"), obj: cmWith(map[string]string{"big": big}, recent),
			obs: func() *Observation {
				o := atomicObs(nil)
				o.Paths["/etc/cfg"].Files["big"] = &ObservedFile{Path: "big", Mode: 0o644, Size: 100, Unread: "x"}
				return o
			}(), want: StateUnverifiable, reason: []string{"not compared"}},
		{name: "large file, no sha256sum, size differs", it: volItem(ModeVolume, "/etc/cfg"), obj: cmWith(map[string]string{"big": big}, recent),
			obs: func() *Observation {
				o := atomicObs(nil)
				o.Paths["/etc/cfg"].Files["big"] = &ObservedFile{Path: "big", Mode: 0o644, Size: 99, Unread: "x"}
				return o
			}(), want: StatePending},
		{name: "no ..data", it: volItem(ModeVolume, "/etc/cfg"), obj: cmWith(map[string]string{"a": "1"}, recent),
			obs:  &Observation{Paths: map[string]*ObservedPath{"/etc/cfg": {Kind: PathDir, Listed: true, Files: map[string]*ObservedFile{}}}},
			want: StateUnverifiable, reason: []string{"no ..data"}},
		{name: "unstable", it: volItem(ModeVolume, "/etc/cfg"), obj: cmWith(map[string]string{"a": "1"}, recent),
			obs: func() *Observation {
				o := atomicObs(map[string]string{"a": "1"})
				o.Paths["/etc/cfg"].Unstable = true
				return o
			}(),
			want: StateUnverifiable, reason: []string{"run again"}},
		{name: "exec failed", it: volItem(ModeVolume, "/etc/cfg"), obj: cmWith(map[string]string{"a": "1"}, recent),
			obs:  &Observation{Err: &ObserveError{Reason: ObserveForbidden, Message: "nope", Hint: "get and create"}},
			want: StateUnverifiable, reason: []string{"forbidden", "get and create"}},
		{name: "no shell, no listing, whole volume", it: volItem(ModeVolume, "/etc/cfg"), obj: cmWith(map[string]string{"a": "1"}, recent),
			obs: &Observation{NoShell: true, Paths: map[string]*ObservedPath{"/etc/cfg": {Kind: PathUnknown,
				Files: map[string]*ObservedFile{"a": {Path: "a", Mode: -1, Size: 1, Data: []byte("1"), HasData: true}}}}},
			want: StateUnverifiable, reason: []string{"no shell"}},
		{name: "no shell, listing shows a removed key", it: volItem(ModeVolume, "/etc/cfg"), obj: cmWith(map[string]string{"a": "1"}, recent),
			obs: &Observation{NoShell: true, Paths: map[string]*ObservedPath{"/etc/cfg": {Kind: PathAtomic, Target: testTS,
				Names: []string{"..data", testTS, "a", "gone"},
				Files: map[string]*ObservedFile{"a": {Path: "a", Mode: -1, Size: 1, Data: []byte("1"), HasData: true}}}}},
			want: StatePending, fileStatus: map[string]FileStatus{"gone": FileExtra}},
		{name: "no shell, listing, in sync", it: volItem(ModeVolume, "/etc/cfg"), obj: cmWith(map[string]string{"a": "1"}, recent),
			obs: &Observation{NoShell: true, Paths: map[string]*ObservedPath{"/etc/cfg": {Kind: PathAtomic, Target: testTS,
				Names: []string{"..data", testTS, "a"},
				Files: map[string]*ObservedFile{"a": {Path: "a", Mode: -1, Size: 1, Data: []byte("1"), HasData: true}}}}},
			want: StateInSync, reason: []string{"no shell"}},
		{name: "optional object missing, volume empty", it: func() Item { it := volItem(ModeVolume, "/etc/cfg"); it.Optional = true; return it }(),
			obj: Object{Kind: KindConfigMap, Name: "cm"}, obs: atomicObs(nil), want: StateInSync},
		{name: "optional object deleted, files remain", it: func() Item { it := volItem(ModeVolume, "/etc/cfg"); it.Optional = true; return it }(),
			obj: Object{Kind: KindConfigMap, Name: "cm"}, obs: atomicObs(map[string]string{"a": "1"}), want: StatePending},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := c.pod
			if p == nil {
				p = pod
			}
			got := CompareUse(c.it, p, c.obj, c.obs, CompareOptions{Now: testNow, Object: lookup})
			if got.State != c.want {
				t.Fatalf("state = %s (%s), want %s", got.State, got.Reason, c.want)
			}
			for _, r := range c.reason {
				if !strings.Contains(got.Reason, r) {
					t.Errorf("reason %q lacks %q", got.Reason, r)
				}
			}
			for p, st := range c.fileStatus {
				found := false
				for _, f := range got.Files {
					if f.Path == p {
						found = true
						if f.Status != st {
							t.Errorf("file %q: %s, want %s", p, f.Status, st)
						}
					}
				}
				if !found {
					t.Errorf("file %q not compared: %+v", p, got.Files)
				}
			}
			if c.want == StateInSync || c.want == StatePending {
				if got.SyncedAt == nil || !got.SyncedAt.Equal(time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)) {
					t.Errorf("syncedAt = %v", got.SyncedAt)
				}
			}
		})
	}
}

func TestCompareSubPath(t *testing.T) {
	pod := runningPod("p", corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}},
		Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}}}})
	sub := func(subPath string, items ...KeyPath) Item {
		it := volItem(ModeSubPath, "/etc/app.conf")
		it.Volume.SubPath = subPath
		it.Items = items
		return it
	}
	fileObs := func(kind PathKind, files map[string]string) *Observation {
		op := &ObservedPath{Kind: kind, Listed: true, Files: map[string]*ObservedFile{}}
		for p, c := range files {
			op.Files[p] = &ObservedFile{Path: p, Mode: 0o644, Size: int64(len(c)), Data: []byte(c), HasData: true}
		}
		return &Observation{Paths: map[string]*ObservedPath{"/etc/app.conf": op}, EnvRead: true, Env: map[string]string{"POD": "p-1"}}
	}
	obj := cmWith(map[string]string{"app.conf": "v2", "a": "1", "b": "2"}, testNow)
	cases := []struct {
		name   string
		it     Item
		obs    *Observation
		want   State
		reason string
	}{
		{"onto a file, equal", sub("app.conf"), fileObs(PathFile, map[string]string{"": "v2"}), StateCurrent, "matches the API now"},
		{"onto a file, old content", sub("app.conf"), fileObs(PathFile, map[string]string{"": "v1"}), StateStale, "restart the workload"},
		{"through ..data", sub("..data/app.conf"), fileObs(PathFile, map[string]string{"": "v2"}), StateCurrent, ""},
		{"onto a file, started before the key existed", sub("app.conf"), fileObs(PathDir, nil), StateStale, "directory"},
		{"onto a directory, equal", sub("dir", KeyPath{Key: "a", Path: "dir/a"}, KeyPath{Key: "b", Path: "dir/sub/b"}),
			fileObs(PathDir, map[string]string{"a": "1", "sub/b": "2"}), StateCurrent, "deletes this directory"},
		{"onto a directory, emptied by the kubelet", sub("dir", KeyPath{Key: "a", Path: "dir/a"}),
			fileObs(PathDir, nil), StateBroken, "restart the workload"},
		{"onto a directory, old content", sub("dir", KeyPath{Key: "a", Path: "dir/a"}),
			fileObs(PathDir, map[string]string{"a": "0"}), StateStale, ""},
		{"not in the payload, empty dir", sub("nothing"), fileObs(PathDir, nil), StateCurrent, "not in the payload"},
		{"key removed, file stays", sub("gone"), fileObs(PathFile, map[string]string{"": "x"}), StateStale, "no longer provides"},
		{"subPathExpr via the container's env", func() Item {
			it := volItem(ModeSubPathExpr, "/etc/app.conf")
			it.Volume.SubPathExpr = "$(POD)"
			it.Items = []KeyPath{{Key: "app.conf", Path: "p-1"}}
			return it
		}(), fileObs(PathFile, map[string]string{"": "v2"}), StateCurrent, ""},
		{"subPathExpr unresolved", func() Item {
			it := volItem(ModeSubPathExpr, "/etc/app.conf")
			it.Volume.SubPathExpr = "$(NOPE)"
			return it
		}(), fileObs(PathFile, map[string]string{"": "v2"}), StateUnverifiable, "NOPE"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := CompareUse(c.it, pod, obj, c.obs, CompareOptions{Now: testNow})
			if got.State != c.want || !strings.Contains(got.Reason, c.reason) {
				t.Errorf("got %s (%s), want %s with %q", got.State, got.Reason, c.want, c.reason)
			}
		})
	}
}

func TestCompareEnv(t *testing.T) {
	cm := cmObject(map[string]string{"A": "1", "with-dash": "d", "with.dot": "o", "9lives": "n"}, map[string][]byte{"bin": {1}})
	pod := runningPod("p", corev1.PodSpec{Containers: []corev1.Container{{Name: "c",
		EnvFrom: []corev1.EnvFromSource{
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}, Prefix: "P_"},
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "later"}}, Prefix: "P_"},
		},
		Env: []corev1.EnvVar{
			{Name: "X", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Key: "A"}}},
			{Name: "Y", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Key: "A"}}},
			{Name: "Y", Value: "literal"},
			{Name: "Z", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Key: "gone"}}},
			{Name: "B", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Key: "bin"}}},
		}}}})
	later := cmObject(map[string]string{"with.dot": "later wins"}, nil)
	lookup := func(k ObjectKey) Object {
		if k.Name == "later" {
			return later
		}
		return Object{Kind: k.Kind, Name: k.Name}
	}
	env := func(name, key string) Item {
		it := volItem(ModeEnv, "")
		it.Volume, it.EnvName, it.Keys, it.Optional = nil, name, []string{key}, true
		return it
	}
	envFrom := volItem(ModeEnvFrom, "")
	envFrom.Volume, envFrom.EnvPrefix = nil, "P_"
	obs := func(vars map[string]string) *Observation { return &Observation{EnvRead: true, Env: vars} }
	allGood := map[string]string{"X": "1", "P_A": "1", "P_with-dash": "d", "P_with.dot": "later wins", "P_9lives": "n"}
	cases := []struct {
		name string
		it   Item
		obs  *Observation
		want State
		text string
	}{
		{"env equal", env("X", "A"), obs(allGood), StateCurrent, "matches"},
		{"env differs", env("X", "A"), obs(map[string]string{"X": "0"}), StateStale, "restart the workload"},
		{"env unset, key now present", env("X", "A"), obs(map[string]string{}), StateStale, "not set"},
		{"env overridden by a later entry", env("Y", "A"), obs(map[string]string{"Y": "literal"}), StateNA, "later env entry"},
		{"optional key absent, unset", env("Z", "gone"), obs(map[string]string{}), StateCurrent, "unset"},
		{"optional key removed, still set", env("Z", "gone"), obs(map[string]string{"Z": "x"}), StateStale, "no longer"},
		{"binaryData never becomes a variable", env("B", "bin"), obs(map[string]string{}), StateCurrent, "unset"},
		{"envFrom equal (every key, later source wins)", envFrom, obs(allGood), StateCurrent, "3 variables match"},
		{"envFrom one differs", envFrom, obs(map[string]string{"P_A": "1", "P_with-dash": "old", "P_9lives": "n"}), StateStale, "P_with-dash"},
		{"envFrom key added", envFrom, obs(map[string]string{"P_A": "1", "P_with-dash": "d"}), StateStale, "P_9lives (not set)"},
		{"env unreadable", env("X", "A"), &Observation{EnvErr: "no /proc"}, StateUnverifiable, "no /proc"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := CompareUse(c.it, pod, cm, c.obs, CompareOptions{Now: testNow, Object: lookup})
			if got.State != c.want || !strings.Contains(got.Reason, c.text) {
				t.Errorf("got %s (%s), want %s with %q", got.State, got.Reason, c.want, c.text)
			}
		})
	}
}

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
	mk := func(mode Mode, container string, ctype ContainerType) Item {
		it := volItem(mode, "/m")
		it.Container = &ContainerRef{Name: container, Type: ctype}
		return it
	}
	cases := []struct {
		name  string
		it    Item
		pod   *corev1.Pod
		obj   Object
		want  State
		check bool // false: needs an exec
	}{
		{"unmounted", func() Item { it := mk(ModeUnmounted, "", ""); it.Container = nil; return it }(), pod, cm, StateNA, true},
		{"required object missing", mk(ModeVolume, "c", ContainerRegular), pod, Object{Kind: KindConfigMap, Name: "cm"}, StateMissing, true},
		{"required key missing", func() Item {
			it := mk(ModeItems, "c", ContainerRegular)
			it.Items = []KeyPath{{Key: "zz", Path: "z"}}
			return it
		}(), pod, cm, StateMissing, true},
		{"required env key missing", func() Item {
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
		{"init container env, changed after it finished", func() Item {
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

func TestExpandSubPathExpr(t *testing.T) {
	env := map[string]string{"A": "x", "EMPTY": ""}
	for in, want := range map[string]string{"$(A)/y": "x/y", "$$(A)": "$(A)", "a$b": "a$b", "$(A": "$(A", "end$": "end$"} {
		got, err := ExpandSubPathExpr(in, env)
		if err != nil || got != want {
			t.Errorf("%q -> %q %v, want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"$(B)", "$(EMPTY)"} {
		if _, err := ExpandSubPathExpr(bad, env); err == nil {
			t.Errorf("%q expanded", bad)
		}
	}
}

// countingExecutor wraps an executor and records concurrency.
type countingExecutor struct {
	inner        Executor
	mu           sync.Mutex
	perContainer map[string]int
	running, max int32
	delay        time.Duration
}

func (c *countingExecutor) Exec(ctx context.Context, ns, pod, container string, argv []string, stdout, stderr io.Writer) error {
	n := atomic.AddInt32(&c.running, 1)
	defer atomic.AddInt32(&c.running, -1)
	c.mu.Lock()
	c.perContainer[pod+"/"+container]++
	if n > c.max {
		c.max = n
	}
	c.mu.Unlock()
	time.Sleep(c.delay)
	return c.inner.Exec(ctx, ns, pod, container, argv, stdout, stderr)
}

// TestVerifyWithScript runs the real script (dash or busybox) against
// volumes laid out as the kubelet does, through Verify.
func TestVerifyWithScript(t *testing.T) {
	sets := shells(t)
	tools := sets["busybox"]
	if tools == nil {
		for _, s := range sets {
			tools = s
		}
	}
	root := t.TempDir()
	syncVol := filepath.Join(root, "in sync")
	staleVol := filepath.Join(root, "etc", "x;touch "+filepath.Join(root, "pwned"))
	atomicVolume(t, syncVol, testTS, map[string][]byte{"a": []byte("1"), "with-dash": []byte("d"), "bin": {0, 0xff}}, nil)
	atomicVolume(t, staleVol, testTS, map[string][]byte{"a": []byte("0"), "bin": {0, 0xff}}, nil)
	subFile := filepath.Join(root, "app.conf")
	if err := os.WriteFile(subFile, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm", CreationTimestamp: metav1.NewTime(testNow.Add(-time.Minute))},
		Data: map[string]string{"a": "1", "with-dash": "d"}, BinaryData: map[string][]byte{"bin": {0, 0xff}}}
	var pods []corev1.Pod
	var items []Item
	for i, mp := range []string{syncVol, staleVol} {
		name := []string{"p0", "p1"}[i]
		pods = append(pods, *runningPod(name, corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}},
			Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}}}}))
		it := volItem(ModeVolume, mp)
		it.Pod.Name = name
		items = append(items, it)
		sp := volItem(ModeSubPath, subFile)
		sp.Pod.Name, sp.Volume.SubPath = name, "a"
		items = append(items, sp)
		env := volItem(ModeEnvFrom, "")
		env.Pod.Name, env.Volume = name, nil
		items = append(items, env)
	}
	unmounted := volItem(ModeUnmounted, "")
	unmounted.Container = nil
	items = append(items, unmounted)
	snap := &Snapshot{Pods: pods, ConfigMaps: map[ObjectKey]*corev1.ConfigMap{{KindConfigMap, "ns", "cm"}: cm}}
	ex := &countingExecutor{inner: &localExecutor{binDir: toolDir(t, tools), env: []string{"a=1", "with-dash=d"}},
		perContainer: map[string]int{}, delay: 50 * time.Millisecond}
	var progress bytes.Buffer
	got := Verify(context.Background(), items, snap, ex, VerifyOptions{Now: func() time.Time { return testNow }, Concurrency: 1, Progress: &progress})
	want := []State{StateInSync, StateStale, StateCurrent, StatePending, StateStale, StateCurrent, StateNA}
	for i, it := range got {
		if it.State != want[i] {
			t.Errorf("item %d (%s %s): %s (%s), want %s", i, it.Pod.Name, it.Mode, it.State, it.StateReason, want[i])
		}
	}
	if got[0].SyncedAt == nil || got[0].SyncedAt.UTC() != time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC) {
		t.Errorf("syncedAt = %v", got[0].SyncedAt)
	}
	for c, n := range ex.perContainer {
		if n != 1 {
			t.Errorf("%s: %d execs, want 1", c, n)
		}
	}
	if ex.max != 1 {
		t.Errorf("concurrency reached %d with --concurrency 1", ex.max)
	}
	if _, err := os.Stat(filepath.Join(root, "pwned")); err == nil {
		t.Error("hostile mount path ran a command")
	}
	if progress.Len() != 0 {
		t.Errorf("progress printed for a short run: %q", progress.String())
	}
}

// secretOverridePod: container c takes envFrom [configMapRef cm, secretRef
// creds] (both have DB_PASSWORD) and mounts a projected volume of cm and
// creds (both have "shared").
func secretOverridePod() *corev1.Pod {
	return runningPod("p", corev1.PodSpec{Containers: []corev1.Container{{Name: "c",
		EnvFrom: []corev1.EnvFromSource{
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}},
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}},
		}}},
		Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}},
			{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}},
		}}}}}})
}

const secretValue = "s3cret-value"

func secretSnapshot(listed bool) *Snapshot {
	s := &Snapshot{ConfigMaps: map[ObjectKey]*corev1.ConfigMap{{KindConfigMap, "ns", "cm"}: {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"},
		Data: map[string]string{"DB_PASSWORD": "from-cm", "HOST": "db", "shared": "cm-shared", "a": "1"}}},
		Secrets: map[ObjectKey]*corev1.Secret{}, SecretsListed: listed}
	if listed {
		s.Secrets[ObjectKey{KindSecret, "ns", "creds"}] = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "creds"},
			Data: map[string][]byte{"DB_PASSWORD": []byte(secretValue), "shared": []byte(secretValue), "token": []byte(secretValue)}}
	}
	return s
}

func leaks(c Comparison) bool {
	for _, e := range c.Env {
		if strings.Contains(e.Observed, secretValue) {
			return true
		}
	}
	for _, f := range c.Files {
		if f.Observed != nil && strings.Contains(string(f.Observed.Data), secretValue) {
			return true
		}
	}
	return strings.Contains(c.Reason, secretValue)
}

// TestCompareSecretOverrides: a ConfigMap use whose variables or files a
// Secret source of the same container may override. Without the Secret
// read, those are unknown: never stale (refresh would restart the workload
// on every run), never in sync, never the Secret's value in the result.
// With it read, they are left out and the rest compares.
func TestCompareSecretOverrides(t *testing.T) {
	pod := secretOverridePod()
	envObs := &Observation{EnvRead: true, Env: map[string]string{"DB_PASSWORD": secretValue, "HOST": "db", "shared": "cm-shared", "a": "1", "token": secretValue}}
	volObs := func() *Observation {
		o := atomicObs(map[string]string{"DB_PASSWORD": secretValue, "HOST": "db", "shared": secretValue, "a": "1", "token": secretValue})
		return o
	}
	envFrom := volItem(ModeEnvFrom, "")
	envFrom.Volume = nil
	proj := volItem(ModeProjected, "/etc/cfg")
	cases := []struct {
		name   string
		listed bool
		it     Item
		obs    *Observation
		want   State
		reason string
	}{
		{"envFrom, Secret not read", false, envFrom, envObs, StateUnverifiable, `DB_PASSWORD may come from Secret "creds", which was not read (add --secrets)`},
		{"envFrom, Secret read", true, envFrom, envObs, StateCurrent, "2 variables set by other entries"},
		{"projected, Secret not read", false, proj, volObs(), StateUnverifiable, `Secret "creds", which was not read (add --secrets)`},
		{"projected, Secret read", true, proj, volObs(), StateInSync, "2 files overwritten by a later source"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			snap := secretSnapshot(c.listed)
			got := CompareUse(c.it, pod, snap.Object(c.it.Key()), c.obs, CompareOptions{Now: testNow, Object: snap.Object})
			if got.State != c.want || !strings.Contains(got.Reason, c.reason) {
				t.Errorf("got %s (%s), want %s with %q", got.State, got.Reason, c.want, c.reason)
			}
			if leaks(got) {
				t.Errorf("the Secret's value is in the comparison: %+v", got)
			}
		})
	}
	// A definite difference elsewhere is still stale (envFrom) or pending
	// (volume), without the unknown values.
	snap := secretSnapshot(false)
	obs := &Observation{EnvRead: true, Env: map[string]string{"DB_PASSWORD": secretValue, "HOST": "old"}}
	secretPrefixed := secretOverridePod()
	secretPrefixed.Spec.Containers[0].EnvFrom[1].Prefix = "S_"
	got := CompareUse(envFrom, secretPrefixed, snap.Object(envFrom.Key()), obs, CompareOptions{Now: testNow, Object: snap.Object})
	if got.State != StateStale || !strings.Contains(got.Reason, "DB_PASSWORD") {
		t.Errorf("prefixed Secret: %s (%s)", got.State, got.Reason)
	}
}

// TestVerifySecretOverrideNotStale: `refresh` and `status --verify` of a
// ConfigMap without --secrets go through Verify: the use must not be stale
// (refresh would restart the workload on every run).
func TestVerifySecretOverrideNotStale(t *testing.T) {
	for _, listed := range []bool{false, true} {
		snap := secretSnapshot(listed)
		snap.Pods = []corev1.Pod{*secretOverridePod()}
		items, err := Build(snap, BuildOptions{Names: []ObjectKey{{KindConfigMap, "ns", "cm"}}})
		if err != nil {
			t.Fatal(err)
		}
		ex := &scriptedEnv{env: "DB_PASSWORD=" + secretValue + "\x00HOST=db\x00a=1\x00shared=cm-shared\x00token=" + secretValue + "\x00"}
		checked := 0
		for _, r := range VerifyResults(context.Background(), items, snap, ex, VerifyOptions{Now: func() time.Time { return testNow }}) {
			if r.Item.Mode != ModeEnvFrom {
				continue
			}
			checked++
			if r.Item.State == StateStale || leaks(r.Comparison) {
				t.Errorf("listed %v: %s (%s) %+v", listed, r.Item.State, r.Item.StateReason, r.Comparison.Env)
			}
			if r.Pod == nil {
				t.Error("result without its pod")
			}
		}
		if checked != 1 {
			t.Errorf("listed %v: %d envFrom uses verified, want 1", listed, checked)
		}
	}
}

// scriptedEnv answers the observation script with an environment only.
type scriptedEnv struct{ env string }

func (s *scriptedEnv) Exec(ctx context.Context, ns, pod, container string, argv []string, stdout, stderr io.Writer) error {
	nonce, paths := argv[5], argv[7:]
	for i := range paths {
		io.WriteString(stdout, "P\x00"+string(rune('0'+i))+"\x00K\x00n\x00Q\x00\x00")
	}
	if argv[6] == "1" {
		io.WriteString(stdout, "V\x00"+s.env+nonce+"\x00")
	}
	io.WriteString(stdout, "Z\x00"+nonce+"\x00")
	return nil
}

// TestCompareEnvFromRemovedKey: a variable with the use's prefix whose key
// is no longer in the ConfigMap stays in the container: stale, unless
// another source sets it or the kubelet does (service links).
func TestCompareEnvFromRemovedKey(t *testing.T) {
	pod := runningPod("p", corev1.PodSpec{Containers: []corev1.Container{{Name: "c",
		EnvFrom: []corev1.EnvFromSource{
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}, Prefix: "APP_"},
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "other"}}, Prefix: "APP_"},
		},
		Env: []corev1.EnvVar{{Name: "APP_LITERAL", Value: "x"}}}}})
	cm := cmObject(map[string]string{"A": "1"}, nil)
	other := cmObject(map[string]string{"O": "o"}, nil)
	other.Name = "other"
	lookup := func(k ObjectKey) Object {
		if k.Name == "other" {
			return other
		}
		return Object{Kind: k.Kind, Name: k.Name}
	}
	it := volItem(ModeEnvFrom, "")
	it.Volume, it.EnvPrefix = nil, "APP_"
	env := map[string]string{"APP_A": "1", "APP_O": "o", "APP_LITERAL": "x", "APP_DB_SERVICE_HOST": "10.0.0.1", "APP_DB_PORT_5432_TCP": "tcp://x", "OTHER": "y"}
	got := CompareUse(it, pod, cm, &Observation{EnvRead: true, Env: env}, CompareOptions{Now: testNow, Object: lookup})
	if got.State != StateCurrent {
		t.Errorf("nothing removed: %s (%s)", got.State, got.Reason)
	}
	env["APP_GONE"] = "old"
	got = CompareUse(it, pod, cm, &Observation{EnvRead: true, Env: env}, CompareOptions{Now: testNow, Object: lookup})
	if got.State != StateStale || !strings.Contains(got.Reason, "APP_GONE still set") || !got.Differs() {
		t.Errorf("removed key: %s (%s)", got.State, got.Reason)
	}
	// Without a prefix, removed keys are not detected.
	it.EnvPrefix = ""
	pod.Spec.Containers[0].EnvFrom[0].Prefix = ""
	got = CompareUse(it, pod, cm, &Observation{EnvRead: true, Env: map[string]string{"A": "1", "GONE": "old"}}, CompareOptions{Now: testNow, Object: lookup})
	if got.State != StateCurrent {
		t.Errorf("no prefix: %s (%s)", got.State, got.Reason)
	}
}

// TestSnapshotObjectCached: Object converts each object once and shares
// the result, safely across goroutines; a Secret not listed is unread.
func TestSnapshotObjectCached(t *testing.T) {
	snap := secretSnapshot(false)
	k := ObjectKey{KindConfigMap, "ns", "cm"}
	var wg sync.WaitGroup
	objs := make([]Object, 8)
	for i := range objs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			objs[i] = snap.Object(k)
		}()
	}
	wg.Wait()
	for _, o := range objs[1:] {
		if fmt.Sprintf("%p", o.Data) != fmt.Sprintf("%p", objs[0].Data) {
			t.Fatal("Object converted the ConfigMap more than once")
		}
	}
	if s := snap.Object(ObjectKey{KindSecret, "ns", "creds"}); !s.Unread || s.Exists {
		t.Errorf("secret not listed: %+v", s)
	}
	if s := secretSnapshot(true).Object(ObjectKey{KindSecret, "ns", "nope"}); s.Unread || s.Exists {
		t.Errorf("secret listed, absent: %+v", s)
	}
}

// TestObserveErrorRedacted: malformed output is quoted a few bytes long,
// and not at all for a Secret use.
func TestObserveErrorRedacted(t *testing.T) {
	long := "AAAAAAAA" + secretValue
	ex := &rawExecutor{out: "P\x000\x00K\x00f\x00F\x00\x00-rw-r--r--\x00" + long + "\x00"}
	obs := Observe(context.Background(), ex, ObserveRequest{Paths: []PathRequest{{Path: "/f"}}}, ObserveOptions{MaxBytes: 10})
	if obs.Err == nil {
		t.Fatal("malformed output accepted")
	}
	cm := CompareUse(volItem(ModeVolume, "/f"), nil, cmObject(nil, nil), obs, CompareOptions{})
	if !strings.Contains(cm.Reason, `bad size "AAAAAAAA..."`) || strings.Contains(cm.Reason, secretValue) {
		t.Errorf("configmap reason: %s", cm.Reason)
	}
	it := volItem(ModeVolume, "/f")
	it.Object.Kind = KindSecret
	sec := CompareUse(it, nil, Object{Kind: KindSecret, Exists: true}, obs, CompareOptions{})
	if !strings.Contains(sec.Reason, "bad size") || strings.Contains(sec.Reason, "AAAA") {
		t.Errorf("secret reason: %s", sec.Reason)
	}
}

type rawExecutor struct{ out string }

func (r *rawExecutor) Exec(ctx context.Context, ns, pod, container string, argv []string, stdout, stderr io.Writer) error {
	io.WriteString(stdout, r.out)
	return nil
}

// TestSecretExposure: which values of a ConfigMap use may be a Secret's.
func TestSecretExposure(t *testing.T) {
	pod := secretOverridePod()
	pod.Spec.Containers[0].EnvFrom[1].Prefix = "S_"
	pod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "PW", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}}}
	env := volItem(ModeEnvFrom, "")
	e := SecretExposureOf(env, pod)
	if !e.Env("S_X") || !e.Env("PW") || e.Env("HOST") {
		t.Errorf("env exposure wrong")
	}
	p := SecretExposureOf(volItem(ModeProjected, "/etc/cfg"), pod)
	if !p.File("shared") || p.File("dir/nested") {
		t.Errorf("file exposure wrong")
	}
	if !SecretExposureOf(env, nil).Env("HOST") {
		t.Error("no pod: everything may be a Secret's")
	}
}

func TestPrecheckTerminatingPod(t *testing.T) {
	now := metav1.Now()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", DeletionTimestamp: &now}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	it := Item{Object: ObjectRef{Kind: KindConfigMap, Name: "cm"}, Container: &ContainerRef{Name: "c", Type: ContainerRegular}, Mode: ModeEnv, Keys: []string{"k"}}
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

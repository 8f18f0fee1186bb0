package inspect

import (
	"bytes"
	"context"
	"errors"
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
	pending := runningPod("p", corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}})
	pending.Status.Phase = corev1.PodPending
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
		{"pod pending", mk(ModeVolume, "c", ContainerRegular), pending, cm, StateNA, true},
		{"completed init container", mk(ModeVolume, "init", ContainerInit), pod, cm, StateNA, true},
		{"crashlooping", mk(ModeVolume, "crash", ContainerRegular), pod, cm, StateUnverifiable, true},
		{"pod not in snapshot", mk(ModeVolume, "c", ContainerRegular), nil, cm, StateUnverifiable, true},
		{"running sidecar", mk(ModeVolume, "side", ContainerSidecar), pod, cm, "", false},
		{"running", mk(ModeVolume, "c", ContainerRegular), pod, cm, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, done := precheck(c.it, c.pod, c.obj)
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

func TestVerifyProgressAndFailures(t *testing.T) {
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}},
		Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}}}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}, Data: map[string]string{"a": "1"}}
	snap := &Snapshot{ConfigMaps: map[ObjectKey]*corev1.ConfigMap{{KindConfigMap, "ns", "cm"}: cm}}
	ex := &FakeExecutor{Containers: map[string]*FakeContainer{}}
	var items []Item
	for i, c := range []*FakeContainer{
		{Volumes: map[string]FakeVolume{"/m": {Target: testTS, Files: map[string][]byte{"a": []byte("1")}}}},
		{NoShell: true},
		{Err: errors.New(`pods "p1" is forbidden: User "u" cannot create resource "pods/exec"`)},
		nil, // container gone since the LIST
	} {
		name := "p" + string(rune('0'+i))
		snap.Pods = append(snap.Pods, *runningPod(name, spec))
		if c != nil {
			ex.Containers["ns/"+name+"/c"] = c
		}
		it := volItem(ModeVolume, "/m")
		it.Pod.Name = name
		items = append(items, it)
	}
	var progress bytes.Buffer
	slow := &countingExecutor{inner: ex, perContainer: map[string]int{}, delay: 150 * time.Millisecond}
	got := Verify(context.Background(), items, snap, slow, VerifyOptions{Progress: &progress, ProgressAfter: time.Nanosecond, Concurrency: 1})
	want := []struct {
		state  State
		reason string
	}{{StateInSync, ""}, {StateUnverifiable, "no shell"}, {StateUnverifiable, "forbidden"}, {StateUnverifiable, "not running"}}
	for i, w := range want {
		if got[i].State != w.state || !strings.Contains(got[i].StateReason, w.reason) {
			t.Errorf("%s: %s (%s), want %s %q", got[i].Pod.Name, got[i].State, got[i].StateReason, w.state, w.reason)
		}
	}
	if !strings.Contains(progress.String(), "/4 containers") || !strings.HasSuffix(progress.String(), "\r\033[K") {
		t.Errorf("progress = %q", progress.String())
	}
}

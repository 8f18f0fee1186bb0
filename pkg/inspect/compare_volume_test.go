package inspect

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread"
	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread/readtest"
)

func TestCompareVolume(t *testing.T) {
	pod := configMapVolumePod()
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
	third := cmObject(map[string]string{"k": "k"}, nil)
	lookup := func(k ObjectKey) Object {
		switch k.Name {
		case "other":
			return other
		case "third":
			return third
		}
		return Object{Kind: k.Kind, Name: k.Name}
	}
	recent := testNow.Add(-30 * time.Second)
	old := testNow.Add(-10 * time.Minute)
	big := strings.Repeat("b", 100)

	cases := []struct {
		name       string
		it         Use
		pod        *corev1.Pod
		obj        Object
		obs        *containerread.Verified
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
		{name: "items: optional key removed", it: func() Use {
			it := volItem(ModeItems, "/etc/cfg")
			it.Optional = true
			it.KeyPaths = []KeyPath{{Key: "a", Path: "x/a"}, {Key: "b", Path: "b"}}
			return it
		}(), obj: cmWith(map[string]string{"a": "1"}, recent),
			obs: atomicObs(map[string]string{"x/a": "1", "b": "old"}), want: StatePending, fileStatus: map[string]FileStatus{"b": FileExtra}},
		{name: "items: nested in sync", it: func() Use {
			it := volItem(ModeItems, "/etc/cfg")
			it.KeyPaths = []KeyPath{{Key: "a", Path: "x/y/a"}}
			return it
		}(), obj: cmWith(map[string]string{"a": "1", "unlisted": "u"}, recent),
			obs: atomicObs(map[string]string{"x/y/a": "1"}), want: StateInSync},
		{name: "large file, sha256 equal", it: volItem(ModeVolume, "/etc/cfg"), obj: cmWith(map[string]string{"big": big}, recent),
			obs: func() *containerread.Verified {
				o := atomicObs(nil)
				o.Paths["/etc/cfg"].Files["big"] = &containerread.VerifiedFile{Path: "big", Mode: 0o644, Size: 100, SHA256: containerread.SHA256Hex([]byte(big))}
				return o
			}(), want: StateInSync},
		{name: "large file, no sha256sum, same size", it: volItem(ModeVolume, "/etc/cfg"), obj: cmWith(map[string]string{"big": big}, recent),
			obs: func() *containerread.Verified {
				o := atomicObs(nil)
				o.Paths["/etc/cfg"].Files["big"] = &containerread.VerifiedFile{Path: "big", Mode: 0o644, Size: 100, Unread: "x"}
				return o
			}(), want: StateUnverifiable, reason: []string{"not compared"}},
		{name: "large file, no sha256sum, size differs", it: volItem(ModeVolume, "/etc/cfg"), obj: cmWith(map[string]string{"big": big}, recent),
			obs: func() *containerread.Verified {
				o := atomicObs(nil)
				o.Paths["/etc/cfg"].Files["big"] = &containerread.VerifiedFile{Path: "big", Mode: 0o644, Size: 99, Unread: "x"}
				return o
			}(), want: StatePending},
		{name: "no ..data", it: volItem(ModeVolume, "/etc/cfg"), obj: cmWith(map[string]string{"a": "1"}, recent),
			obs:  &containerread.Verified{Paths: map[string]*containerread.VerifiedPath{"/etc/cfg": {Kind: containerread.PathDir, Listed: true, Files: map[string]*containerread.VerifiedFile{}}}},
			want: StateUnverifiable, reason: []string{"no ..data"}},
		{name: "unstable", it: volItem(ModeVolume, "/etc/cfg"), obj: cmWith(map[string]string{"a": "1"}, recent),
			obs: func() *containerread.Verified {
				o := atomicObs(map[string]string{"a": "1"})
				o.Paths["/etc/cfg"].Unstable = true
				return o
			}(),
			want: StateUnverifiable, reason: []string{"run again"}},
		{name: "exec failed", it: volItem(ModeVolume, "/etc/cfg"), obj: cmWith(map[string]string{"a": "1"}, recent),
			obs:  &containerread.Verified{Err: &containerread.VerifyError{Reason: containerread.VerifyForbidden, Message: "nope", Hint: "get and create"}},
			want: StateUnverifiable, reason: []string{"forbidden", "get and create"}},
		{name: "no shell, no listing, whole volume", it: volItem(ModeVolume, "/etc/cfg"), obj: cmWith(map[string]string{"a": "1"}, recent),
			obs: &containerread.Verified{NoShell: true, Paths: map[string]*containerread.VerifiedPath{"/etc/cfg": {Kind: containerread.PathUnknown,
				Files: map[string]*containerread.VerifiedFile{"a": {Path: "a", Mode: -1, Size: 1, Data: []byte("1"), HasData: true}}}}},
			want: StateUnverifiable, reason: []string{"no shell"}},
		{name: "no shell, listing shows a removed key", it: volItem(ModeVolume, "/etc/cfg"), obj: cmWith(map[string]string{"a": "1"}, recent),
			obs: &containerread.Verified{NoShell: true, Paths: map[string]*containerread.VerifiedPath{"/etc/cfg": {Kind: containerread.PathAtomic, Target: readtest.TS,
				Names: []string{"..data", readtest.TS, "a", "gone"},
				Files: map[string]*containerread.VerifiedFile{"a": {Path: "a", Mode: -1, Size: 1, Data: []byte("1"), HasData: true}}}}},
			want: StatePending, fileStatus: map[string]FileStatus{"gone": FileExtra}},
		{name: "no shell, listing, in sync", it: volItem(ModeVolume, "/etc/cfg"), obj: cmWith(map[string]string{"a": "1"}, recent),
			obs: &containerread.Verified{NoShell: true, Paths: map[string]*containerread.VerifiedPath{"/etc/cfg": {Kind: containerread.PathAtomic, Target: readtest.TS,
				Names: []string{"..data", readtest.TS, "a"},
				Files: map[string]*containerread.VerifiedFile{"a": {Path: "a", Mode: -1, Size: 1, Data: []byte("1"), HasData: true}}}}},
			want: StateInSync, reason: []string{"no shell"}},
		{name: "optional object missing, volume empty", it: func() Use { it := volItem(ModeVolume, "/etc/cfg"); it.Optional = true; return it }(),
			obj: Object{Kind: KindConfigMap, Name: "cm"}, obs: atomicObs(nil), want: StateInSync},
		{name: "optional object deleted, files remain", it: func() Use { it := volItem(ModeVolume, "/etc/cfg"); it.Optional = true; return it }(),
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

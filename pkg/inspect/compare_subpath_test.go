package inspect

import (
	"strings"
	"testing"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread"
)

func TestCompareSubPath(t *testing.T) {
	pod := configMapVolumePod()
	sub := func(subPath string, items ...KeyPath) Use {
		it := volItem(ModeSubPath, "/etc/app.conf")
		it.Volume.SubPath = subPath
		it.KeyPaths = items
		return it
	}
	fileObs := func(kind containerread.PathKind, files map[string]string) *containerread.Verified {
		op := &containerread.VerifiedPath{Kind: kind, Listed: true, Files: map[string]*containerread.VerifiedFile{}}
		for p, c := range files {
			op.Files[p] = &containerread.VerifiedFile{Path: p, Mode: 0o644, Size: int64(len(c)), Data: []byte(c), HasData: true}
		}
		return &containerread.Verified{Paths: map[string]*containerread.VerifiedPath{"/etc/app.conf": op}, EnvRead: true, Env: map[string]string{"POD": "p-1"}}
	}
	obj := cmWith(map[string]string{"app.conf": "v2", "a": "1", "b": "2"}, testNow)
	cases := []struct {
		name   string
		it     Use
		obs    *containerread.Verified
		want   State
		reason string
	}{
		{"onto a file, equal", sub("app.conf"), fileObs(containerread.PathFile, map[string]string{"": "v2"}), StateCurrent, "matches the API now"},
		{"onto a file, old content", sub("app.conf"), fileObs(containerread.PathFile, map[string]string{"": "v1"}), StateStale, "restart the workload"},
		{"through ..data", sub("..data/app.conf"), fileObs(containerread.PathFile, map[string]string{"": "v2"}), StateCurrent, ""},
		{"onto a file, started before the key existed", sub("app.conf"), fileObs(containerread.PathDir, nil), StateStale, "directory"},
		{"onto a directory, equal", sub("dir", KeyPath{Key: "a", Path: "dir/a"}, KeyPath{Key: "b", Path: "dir/sub/b"}),
			fileObs(containerread.PathDir, map[string]string{"a": "1", "sub/b": "2"}), StateCurrent, "deletes this directory"},
		{"onto a directory, emptied by the kubelet", sub("dir", KeyPath{Key: "a", Path: "dir/a"}),
			fileObs(containerread.PathDir, nil), StateBroken, "restart the workload"},
		{"onto a directory, old content", sub("dir", KeyPath{Key: "a", Path: "dir/a"}),
			fileObs(containerread.PathDir, map[string]string{"a": "0"}), StateStale, ""},
		{"not in the payload, empty dir", sub("nothing"), fileObs(containerread.PathDir, nil), StateCurrent, "not in the payload"},
		{"key removed, file stays", sub("gone"), fileObs(containerread.PathFile, map[string]string{"": "x"}), StateStale, "no longer provides"},
		{"subPathExpr via the container's env", func() Use {
			it := volItem(ModeSubPathExpr, "/etc/app.conf")
			it.Volume.SubPathExpr = "$(POD)"
			it.KeyPaths = []KeyPath{{Key: "app.conf", Path: "p-1"}}
			return it
		}(), fileObs(containerread.PathFile, map[string]string{"": "v2"}), StateCurrent, ""},
		{"subPathExpr unresolved", func() Use {
			it := volItem(ModeSubPathExpr, "/etc/app.conf")
			it.Volume.SubPathExpr = "$(NOPE)"
			return it
		}(), fileObs(containerread.PathFile, map[string]string{"": "v2"}), StateUnverifiable, "NOPE"},
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

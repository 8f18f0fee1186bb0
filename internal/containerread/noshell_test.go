package containerread_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread"
	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread/readtest"
)

func TestVerifyNoShellFallback(t *testing.T) {
	cat, err := exec.LookPath("cat")
	if err != nil {
		t.Skip("no cat")
	}
	ls, _ := exec.LookPath("ls")
	root := t.TempDir()
	vol := filepath.Join(root, "v")
	readtest.AtomicVolume(t, vol, readtest.TS, map[string][]byte{"a": []byte("1"), "old": []byte("gone")}, nil)

	t.Run("cat and ls", func(t *testing.T) {
		ex := &readtest.LocalExecutor{BinDir: readtest.ToolDir(t, map[string]string{"cat": cat, "ls": ls}), Env: []string{"with-dash=x"}}
		req := containerread.ExecRequest{Paths: []containerread.PathRequest{{Path: vol, Expect: []string{"a", "b"}, List: true}}, Env: true}
		obs := containerread.ReadContainer(context.Background(), ex, req, containerread.Options{MaxBytes: 1 << 20})
		if obs.Err != nil || !obs.NoShell {
			t.Fatalf("obs = %+v", obs)
		}
		if obs.Env["with-dash"] != "x" {
			t.Errorf("env = %v", obs.Env)
		}
		p := obs.Paths[vol]
		if string(p.Files["a"].Data) != "1" || p.Files["b"] != nil {
			t.Errorf("files = %v", p.Files)
		}
		if p.Target != readtest.TS || !slices.Contains(p.Names, "old") {
			t.Errorf("listing = %q target %q", p.Names, p.Target)
		}
	})
	t.Run("nothing", func(t *testing.T) {
		ex := &readtest.LocalExecutor{BinDir: t.TempDir()}
		obs := containerread.ReadContainer(context.Background(), ex, containerread.ExecRequest{Paths: []containerread.PathRequest{{Path: vol, Expect: []string{"a"}}}}, containerread.Options{})
		if obs.Err == nil || obs.Err.Reason != containerread.VerifyNoShell {
			t.Fatalf("err = %v", obs.Err)
		}
	})
}

package inspect

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

func TestVerifyNoShellFallback(t *testing.T) {
	cat, err := exec.LookPath("cat")
	if err != nil {
		t.Skip("no cat")
	}
	ls, _ := exec.LookPath("ls")
	root := t.TempDir()
	vol := filepath.Join(root, "v")
	atomicVolume(t, vol, testTS, map[string][]byte{"a": []byte("1"), "old": []byte("gone")}, nil)

	t.Run("cat and ls", func(t *testing.T) {
		ex := &localExecutor{binDir: toolDir(t, map[string]string{"cat": cat, "ls": ls}), env: []string{"with-dash=x"}}
		req := VerifyRequest{Paths: []PathRequest{{Path: vol, Expect: []string{"a", "b"}, List: true}}, Env: true}
		obs := ReadContainer(context.Background(), ex, req, VerifyReadOptions{MaxBytes: 1 << 20})
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
		if p.Target != testTS || !slices.Contains(p.Names, "old") {
			t.Errorf("listing = %q target %q", p.Names, p.Target)
		}
	})
	t.Run("nothing", func(t *testing.T) {
		ex := &localExecutor{binDir: t.TempDir()}
		obs := ReadContainer(context.Background(), ex, VerifyRequest{Paths: []PathRequest{{Path: vol, Expect: []string{"a"}}}}, VerifyReadOptions{})
		if obs.Err == nil || obs.Err.Reason != VerifyNoShell {
			t.Fatalf("err = %v", obs.Err)
		}
	})
}

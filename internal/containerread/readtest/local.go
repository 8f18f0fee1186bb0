package readtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	utilexec "k8s.io/client-go/util/exec"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread"
)

// LocalExecutor is a containerread.Executor that runs argv on this machine, as if the container were the
// host: PATH is restricted to BinDir, so a test chooses the tools the
// "container" has. argv[0] missing from BinDir fails the way containerd
// reports it.
type LocalExecutor struct {
	BinDir string
	Env    []string
	Calls  [][]string
}

// Exec implements containerread.Executor.
func (l *LocalExecutor) Exec(ctx context.Context, t containerread.Target, argv []string, stdout, stderr io.Writer) error {
	l.Calls = append(l.Calls, argv)
	bin := filepath.Join(l.BinDir, argv[0])
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("Internal error occurred: error executing command in container: failed to exec in container: failed to start exec \"abc\": OCI runtime exec failed: exec failed: unable to start container process: exec: %q: executable file not found in $PATH: unknown", argv[0])
	}
	cmd := exec.CommandContext(ctx, bin, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Env = append([]string{"PATH=" + l.BinDir}, l.Env...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return utilexec.CodeExitError{Err: fmt.Errorf("command terminated with exit code %d", ee.ExitCode()), Code: ee.ExitCode()}
	}
	return err
}

// ToolDir makes a directory of symlinks: name -> target path.
func ToolDir(t *testing.T, tools map[string]string) string {
	t.Helper()
	d := t.TempDir()
	for name, target := range tools {
		if err := os.Symlink(target, filepath.Join(d, name)); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// LookTools finds each tool on PATH, and skips the test without one.
func LookTools(t *testing.T, names ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, n := range names {
		p, err := exec.LookPath(n)
		if err != nil {
			t.Skipf("%s not installed", n)
		}
		out[n] = p
	}
	return out
}

// Shells returns the tool sets the script must work with.
func Shells(t *testing.T) map[string]map[string]string {
	t.Helper()
	sets := map[string]map[string]string{}
	core := []string{"ls", "cat", "wc", "sha256sum"}
	for _, sh := range []string{"dash", "bash"} {
		if p, err := exec.LookPath(sh); err == nil {
			m := map[string]string{"sh": p}
			ok := true
			for _, c := range core {
				cp, err := exec.LookPath(c)
				if err != nil {
					ok = false
					break
				}
				m[c] = cp
			}
			if ok {
				sets[sh+"+coreutils"] = m
				// with stat, a directory's files are read in one batch
				if st, err := exec.LookPath("stat"); err == nil {
					ms := maps.Clone(m)
					ms["stat"] = st
					sets[sh+"+coreutils+stat"] = ms
				}
			}
		}
	}
	if bb, err := exec.LookPath("busybox"); err == nil {
		m := map[string]string{}
		for _, n := range append([]string{"sh", "stat"}, core...) {
			m[n] = bb
		}
		sets["busybox"] = m
	}
	if len(sets) == 0 {
		t.Skip("no shell to test with")
	}
	return sets
}

// AtomicVolume lays out dir as the kubelet's atomic writer does.
func AtomicVolume(t *testing.T, dir, ts string, files map[string][]byte, modes map[string]os.FileMode) {
	t.Helper()
	data := filepath.Join(dir, ts)
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	top := map[string]bool{}
	for p, content := range files {
		full := filepath.Join(data, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		m := os.FileMode(0o644)
		if mm, ok := modes[p]; ok {
			m = mm
		}
		if err := os.WriteFile(full, content, m); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(full, m); err != nil {
			t.Fatal(err)
		}
		top[strings.SplitN(p, "/", 2)[0]] = true
	}
	if err := os.Symlink(ts, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	for name := range top {
		if err := os.Symlink(filepath.Join("..data", name), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
}

// TS is a ..data target name of the kubelet's atomic writer.
const TS = "..2024_05_06_07_08_09.123456789"

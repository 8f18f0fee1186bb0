package inspect

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	utilexec "k8s.io/client-go/util/exec"
)

// localExecutor runs argv on this machine, as if the container were the
// host: PATH is restricted to binDir, so a test chooses the tools the
// "container" has. argv[0] missing from binDir fails the way containerd
// reports it.
type localExecutor struct {
	binDir string
	env    []string
	calls  [][]string
}

func (l *localExecutor) Exec(ctx context.Context, ns, pod, container string, argv []string, stdout, stderr io.Writer) error {
	l.calls = append(l.calls, argv)
	bin := filepath.Join(l.binDir, argv[0])
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("Internal error occurred: error executing command in container: failed to exec in container: failed to start exec \"abc\": OCI runtime exec failed: exec failed: unable to start container process: exec: %q: executable file not found in $PATH: unknown", argv[0])
	}
	cmd := exec.CommandContext(ctx, bin, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Env = append([]string{"PATH=" + l.binDir}, l.env...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return utilexec.CodeExitError{Err: fmt.Errorf("command terminated with exit code %d", ee.ExitCode()), Code: ee.ExitCode()}
	}
	return err
}

// toolDir makes a directory of symlinks: name -> target path.
func toolDir(t *testing.T, tools map[string]string) string {
	t.Helper()
	d := t.TempDir()
	for name, target := range tools {
		if err := os.Symlink(target, filepath.Join(d, name)); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func lookTools(t *testing.T, names ...string) map[string]string {
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

// shells returns the tool sets the script must work with.
func shells(t *testing.T) map[string]map[string]string {
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

// atomicVolume lays out dir as the kubelet's atomic writer does.
func atomicVolume(t *testing.T, dir, ts string, files map[string][]byte, modes map[string]os.FileMode) {
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

const testTS = "..2024_05_06_07_08_09.123456789"

func TestScriptReadsVolumes(t *testing.T) {
	for name, tools := range shells(t) {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			pwned := filepath.Join(root, "pwned")
			// A hostile mount path and hostile items paths, binary content
			// that imitates the framing, a newline in a file name.
			vol := filepath.Join(root, "etc", "x;touch "+pwned)
			fake := []byte("C\x00F\x00evil\x00-rw-r--r--\x001\x00Z\x00cmsync-0000\x00")
			files := map[string][]byte{
				"app.conf":                 []byte("a=1\n"),
				"bin":                      {0, 1, 2, 0xff, 0},
				"fake":                     fake,
				"nested/dir/deep.txt":      []byte("deep"),
				"a$(touch " + pwned + "2)": []byte("x"),
				"new\nline":                []byte("nl"),
				"empty":                    {},
				"-rf":                      []byte("dash"),
				"`touch " + pwned + "3`":   []byte("bq"),
				"big":                      bytes.Repeat([]byte("z"), 5000),
				".hidden":                  []byte("h"),
				"..dots":                   []byte("d"),
				"sp ace":                   []byte("s"),
			}
			atomicVolume(t, vol, testTS, files, map[string]os.FileMode{"app.conf": 0o600, "bin": 0o755})
			sub := filepath.Join(root, "subfile")
			if err := os.WriteFile(sub, []byte("subpath content"), 0o644); err != nil {
				t.Fatal(err)
			}
			emptyDir := filepath.Join(root, "emptydir")
			if err := os.Mkdir(emptyDir, 0o755); err != nil {
				t.Fatal(err)
			}
			missing := filepath.Join(root, "nope")
			ex := &localExecutor{binDir: toolDir(t, tools), env: []string{"with-dash=1", "with.dot=2", "9lives=3", "MULTI=a\nb=c", "EMPTY="}}
			req := ObserveRequest{Paths: []PathRequest{{Path: vol}, {Path: sub}, {Path: emptyDir}, {Path: missing}}, Env: true}
			obs := Observe(context.Background(), ex, req, ObserveOptions{MaxBytes: 4096, Timeout: 10 * time.Second})
			if obs.Err != nil {
				t.Fatalf("observe: %v", obs.Err)
			}
			if len(ex.calls) != 1 {
				t.Errorf("execs = %d, want 1", len(ex.calls))
			}
			for _, p := range []string{pwned, pwned + "2", pwned + "3"} {
				if _, err := os.Stat(p); err == nil {
					t.Errorf("%s was created: injection", p)
				}
			}
			v := obs.Paths[vol]
			if v == nil || v.Kind != PathAtomic || v.Target != testTS || v.Unstable || !v.Listed {
				t.Fatalf("volume observation = %+v", v)
			}
			for p, want := range files {
				f := v.Files[p]
				if f == nil {
					t.Errorf("file %q not observed", p)
					continue
				}
				if int64(len(want)) > 4096 {
					if f.HasData || f.SHA256 != sha256Hex(want) || f.Size != int64(len(want)) {
						t.Errorf("big file: %+v", f)
					}
					continue
				}
				if !f.HasData || !bytes.Equal(f.Data, want) {
					t.Errorf("file %q = %q (has %v, unread %q), want %q", p, f.Data, f.HasData, f.Unread, want)
				}
			}
			if len(v.Files) != len(files) {
				t.Errorf("observed %d files, want %d: %v", len(v.Files), len(files), slices.Sorted(maps.Keys(v.Files)))
			}
			if m := v.Files["app.conf"].Mode; m != 0o600 {
				t.Errorf("app.conf mode = %o", m)
			}
			if m := v.Files["bin"].Mode; m != 0o755 {
				t.Errorf("bin mode = %o", m)
			}
			if !slices.Contains(v.Dirs, "nested") || !slices.Contains(v.Dirs, "nested/dir") {
				t.Errorf("dirs = %q", v.Dirs)
			}
			if s := obs.Paths[sub]; s == nil || s.Kind != PathFile || string(s.Files[""].Data) != "subpath content" {
				t.Errorf("subPath file = %+v", s)
			}
			if s := obs.Paths[emptyDir]; s == nil || s.Kind != PathDir || len(s.Files) != 0 || !s.Listed {
				t.Errorf("empty dir = %+v", s)
			}
			if s := obs.Paths[missing]; s == nil || s.Kind != PathMissing {
				t.Errorf("missing = %+v", s)
			}
			if !obs.EnvRead {
				t.Fatalf("env not read: %s", obs.EnvErr)
			}
			for k, want := range map[string]string{"with-dash": "1", "with.dot": "2", "9lives": "3", "MULTI": "a\nb=c", "EMPTY": ""} {
				if got, ok := obs.Env[k]; !ok || got != want {
					t.Errorf("env %s = %q (%v), want %q", k, got, ok, want)
				}
			}
		})
	}
}

func TestScriptWithoutSha256sum(t *testing.T) {
	for name, tools := range shells(t) {
		t.Run(name, func(t *testing.T) {
			delete(tools, "sha256sum")
			root := t.TempDir()
			vol := filepath.Join(root, "v")
			atomicVolume(t, vol, testTS, map[string][]byte{"big": bytes.Repeat([]byte("q"), 100), "small": []byte("s")}, nil)
			ex := &localExecutor{binDir: toolDir(t, tools)}
			obs := Observe(context.Background(), ex, ObserveRequest{Paths: []PathRequest{{Path: vol}}}, ObserveOptions{MaxBytes: 10})
			if obs.Err != nil {
				t.Fatal(obs.Err)
			}
			f := obs.Paths[vol].Files["big"]
			if name == "busybox" && f != nil && f.SHA256 != "" {
				// busybox ash runs its own applets whatever PATH says.
				f.SHA256, f.Unread = "", "applet"
			}
			if f == nil || f.HasData || f.SHA256 != "" || f.Unread == "" || f.Size != 100 {
				t.Errorf("big = %+v", f)
			}
			if s := obs.Paths[vol].Files["small"]; s == nil || string(s.Data) != "s" {
				t.Errorf("small = %+v", s)
			}
		})
	}
}

func TestObserveNoShellFallback(t *testing.T) {
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
		req := ObserveRequest{Paths: []PathRequest{{Path: vol, Expect: []string{"a", "b"}, List: true}}, Env: true}
		obs := Observe(context.Background(), ex, req, ObserveOptions{MaxBytes: 1 << 20})
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
		obs := Observe(context.Background(), ex, ObserveRequest{Paths: []PathRequest{{Path: vol, Expect: []string{"a"}}}}, ObserveOptions{})
		if obs.Err == nil || obs.Err.Reason != ObserveNoShell {
			t.Fatalf("err = %v", obs.Err)
		}
	})
}

func TestParseObservation(t *testing.T) {
	n := "cmsync-test"
	rec := func(fields ...string) string { return strings.Join(fields, "\x00") + "\x00" }
	paths := []string{"/a", "/b"}
	ok := rec("P", "0", "A", testTS, "D", "d", "F", "d/f", "-rw-r--r--", "3", "C") + "a\x00b" + rec(n) +
		rec("F", "big", "-r--------", "9999", "H", strings.Repeat("ab", 32)) +
		rec("F", "nosum", "?", "9999", "S") +
		rec("Q", testTS) +
		rec("P", "1", "K", "f", "F", "", "-rwsr-sr-t", "0", "C") + rec(n) + rec("Q", "") +
		"V\x00HOME=/root\x00A=b=c\x00" + rec(n) + rec("Z", n)
	obs, err := ParseObservation([]byte(ok), n, paths)
	if err != nil {
		t.Fatal(err)
	}
	a := obs.Paths["/a"]
	if a.Kind != PathAtomic || string(a.Files["d/f"].Data) != "a\x00b" || a.Files["d/f"].Mode != 0o644 {
		t.Errorf("a = %+v %+v", a, a.Files["d/f"])
	}
	if a.Files["big"].SHA256 == "" || a.Files["big"].Mode != 0o400 || a.Files["nosum"].Unread == "" || a.Files["nosum"].Mode != -1 {
		t.Errorf("big/nosum = %+v %+v", a.Files["big"], a.Files["nosum"])
	}
	if b := obs.Paths["/b"]; b.Kind != PathFile || !b.Files[""].HasData || b.Files[""].Mode != 0o7777&^0o022 {
		t.Errorf("b = %+v %+v", b, b.Files[""])
	}
	if obs.Env["A"] != "b=c" || obs.Env["HOME"] != "/root" {
		t.Errorf("env = %v", obs.Env)
	}

	// Truncated anywhere: an error, never a partial success.
	for i := 0; i < len(ok)-1; i++ {
		if _, err := ParseObservation([]byte(ok[:i]), n, paths); err == nil {
			t.Fatalf("truncated at %d parsed", i)
		}
	}
	// Wrong nonce at the end.
	if _, err := ParseObservation([]byte(strings.Replace(ok, rec("Z", n), rec("Z", "other"), 1)), n, paths); err == nil {
		t.Error("bad final nonce accepted")
	}
	// A file that changed size while read: resynchronised, marked unread.
	short := rec("P", "0", "A", testTS, "F", "f", "-rw-r--r--", "10", "C") + "abc" + rec(n) + rec("F", "g", "-rw-r--r--", "1", "C") + "g" + rec(n) + rec("Q", testTS, "Z", n)
	obs, err = ParseObservation([]byte(short), n, paths)
	if err != nil {
		t.Fatal(err)
	}
	if f := obs.Paths["/a"].Files["f"]; f.HasData || f.Unread == "" {
		t.Errorf("f = %+v", f)
	}
	if g := obs.Paths["/a"].Files["g"]; string(g.Data) != "g" {
		t.Errorf("g = %+v", g)
	}
	// ..data moved during every attempt: unstable; a stable retry wins.
	moved := rec("P", "0", "A", testTS, "Q", "..2024_05_06_07_08_10.1", "P", "0", "A", "..2024_05_06_07_08_10.1", "Q", "..2024_05_06_07_08_10.1", "Z", n)
	obs, err = ParseObservation([]byte(moved), n, paths)
	if err != nil || obs.Paths["/a"].Unstable || obs.Paths["/a"].Target != "..2024_05_06_07_08_10.1" {
		t.Errorf("moved: %v %+v", err, obs.Paths["/a"])
	}
	unstable := rec("P", "0", "A", testTS, "Q", "..x", "Z", n)
	obs, err = ParseObservation([]byte(unstable), n, paths)
	if err != nil || !obs.Paths["/a"].Unstable {
		t.Errorf("unstable: %v %+v", err, obs.Paths["/a"])
	}
	for _, bad := range []string{
		rec("P", "7", "Q", "", "Z", n),           // index out of range
		rec("F", "x", "-", "1", "C") + "x",       // file outside a path
		rec("P", "0", "K", "z", "Q", "", "Z", n), // unknown kind
		rec("P", "0", "Z", n),                    // unterminated path
		rec("?"),
	} {
		if _, err := ParseObservation([]byte(bad), n, paths); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

func TestParseLsMode(t *testing.T) {
	for in, want := range map[string]int32{
		"-rw-r--r--":  0o644,
		"-rw-r--r--.": 0o644,
		"-r--r-----+": 0o440,
		"-rwxr-xr-x":  0o755,
		"-rwSr-Sr-T":  0o7644,
		"-rwsr-sr-t":  0o7755,
		"drwxrwxrwx":  0o777,
		"?":           -1,
		"-rw-r--r-Q":  -1,
		"":            -1,
	} {
		if got := ParseLsMode(in); got != want {
			t.Errorf("ParseLsMode(%q) = %o, want %o", in, got, want)
		}
	}
}

func TestSyncedAt(t *testing.T) {
	got, ok := SyncedAt("..2024_05_06_07_08_09.123456789")
	if !ok || !got.Equal(time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)) {
		t.Errorf("got %v %v", got, ok)
	}
	for _, bad := range []string{"..data", "2024_05_06_07_08_09.1", "..2024_05_06_07_08_09", "..2024_05_06_07_08_09.", "..2024_13_06_07_08_09.1", "..2024_05_06_07_08_09.1x"} {
		if _, ok := SyncedAt(bad); ok {
			t.Errorf("SyncedAt(%q) ok", bad)
		}
	}
}

func TestParseEnvLines(t *testing.T) {
	env := parseEnvLines([]byte("A=1\nB=two\nlines\nC=x=y\n"))
	if env["A"] != "1" || env["B"] != "two\nlines" || env["C"] != "x=y" {
		t.Errorf("env = %q", env)
	}
}

func TestClassifyExecError(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		err  error
		want string
	}{
		{fmt.Errorf("wrapped: %w", context.DeadlineExceeded), ObserveTimeout},
		{errors.New(`pods "p" is forbidden: User "u" cannot create resource "pods/exec"`), ObserveForbidden},
		{errors.New(`OCI runtime exec failed: exec failed: unable to start container process: exec: "sh": executable file not found in $PATH: unknown`), ObserveNoShell},
		{utilexec.CodeExitError{Err: errors.New("command terminated with exit code 127"), Code: 127}, ObserveNoShell},
		{errors.New(`unable to upgrade connection: container not found ("c")`), ObserveNotRunning},
		{utilexec.CodeExitError{Err: errors.New("command terminated with exit code 2"), Code: 2}, ObserveFailed},
		// seen on the e2e cluster: a pod deleted and a container that exited while they were observed
		{errors.New(`unable to upgrade connection: pods "deleted" not found`), ObserveNotRunning},
		{errors.New(`Internal error occurred: error executing command in container: failed to exec in container: failed to create exec "36960a": ttrpc: closed: unknown`), ObserveNotRunning},
		{errors.New(`Internal error occurred: error executing command in container: failed to exec in container: failed to load task: no running task found: task bf2b not found: not found`), ObserveNotRunning},
	}
	for _, c := range cases {
		if got := ClassifyExecError(ctx, c.err, nil); got.Reason != c.want {
			t.Errorf("%v: %s, want %s", c.err, got.Reason, c.want)
		}
	}
}

// FuzzParseObservation: the parser must never panic or loop, whatever the
// container prints.
func FuzzParseObservation(f *testing.F) {
	n := "cmsync-f"
	f.Add([]byte("P\x000\x00A\x00..2024_05_06_07_08_09.1\x00F\x00a\x00-rw-r--r--\x001\x00C\x00x" + n + "\x00Q\x00..2024_05_06_07_08_09.1\x00Z\x00" + n + "\x00"))
	f.Add([]byte("P\x001\x00K\x00f\x00F\x00\x00?\x00-1\x00U\x00Q\x00\x00V\x00A=1\x00" + n + "\x00Z\x00" + n + "\x00"))
	f.Add([]byte("P\x000\x00K\x00d\x00D\x00x\x00L\x00y\x00O\x00z\x00F\x00x/a\x00-rw-------\x0099999999999\x00C\x00"))
	f.Add([]byte("Z\x00" + n + "\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		obs, err := ParseObservation(data, n, []string{"/a", "/b"})
		if err == nil && obs == nil {
			t.Fatal("nil observation without error")
		}
		if err == nil {
			for p, op := range obs.Paths {
				if p != "/a" && p != "/b" {
					t.Fatalf("unexpected path %q", p)
				}
				for _, f := range op.Files {
					if f.HasData && f.Size >= 0 && int64(len(f.Data)) != f.Size {
						t.Fatalf("content of %q has %d bytes, size says %d", f.Path, len(f.Data), f.Size)
					}
				}
			}
		}
	})
}

func TestFirstLineDropsRequestQuery(t *testing.T) {
	msg := `Internal error occurred: error sending request: Post "https://192.0.2.2:10250/exec/ns/p/c?command=sh&command=-c&command=m%3D%241": dial unix /run/tunnel.sock: connect: resource temporarily unavailable`
	want := `Internal error occurred: error sending request: Post "https://192.0.2.2:10250/exec/ns/p/c": dial unix /run/tunnel.sock: connect: resource temporarily unavailable`
	if got := firstLine(msg); got != want {
		t.Fatalf("firstLine =\n%s\nwant\n%s", got, want)
	}
}

// TestScriptBatchesManyFiles: 1,000 files of one directory (a ConfigMap with
// 1,000 keys) are read with one stat and one cat, not a fork per file, and
// every file, hostile names included, comes out right.
func TestScriptBatchesManyFiles(t *testing.T) {
	for name, tools := range shells(t) {
		if tools["stat"] == "" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			pwned := filepath.Join(root, "pwned")
			files := map[string][]byte{"-n": []byte("dash"), "a$(touch " + pwned + ")": []byte("x"), "new\nline": []byte("nl"),
				"fake": []byte("\x00G\x00\x001\x00C\x00Z\x00cmsync-0\x00"), "empty": {}, "sub/inner": []byte("in")}
			for i := range 1000 {
				files[fmt.Sprintf("k%04d", i)] = []byte(fmt.Sprintf("v-%d", i))
			}
			vol := filepath.Join(root, "v")
			atomicVolume(t, vol, testTS, files, map[string]os.FileMode{"-n": 0o600})
			// count the forks of cat: a wrapper that logs each run
			log := filepath.Join(root, "cat.log")
			wrapper := filepath.Join(root, "catwrap")
			script := "#!" + tools["sh"] + "\necho x \"$*\" >>" + log + "\nexec " + tools["cat"] + " \"$@\"\n"
			if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			if name != "busybox" { // busybox ash runs its own cat applet whatever PATH says
				tools = maps.Clone(tools)
				tools["cat"] = wrapper
			}
			ex := &localExecutor{binDir: toolDir(t, tools)}
			obs := Observe(context.Background(), ex, ObserveRequest{Paths: []PathRequest{{Path: vol}}}, ObserveOptions{MaxBytes: 4096, Timeout: time.Minute})
			if obs.Err != nil {
				t.Fatal(obs.Err)
			}
			if _, err := os.Stat(pwned); err == nil {
				t.Error("a file name ran as shell text")
			}
			v := obs.Paths[vol]
			if len(v.Files) != len(files) {
				t.Errorf("observed %d files, want %d", len(v.Files), len(files))
			}
			for p, want := range files {
				if f := v.Files[p]; f == nil || !f.HasData || !bytes.Equal(f.Data, want) || f.Size != int64(len(want)) {
					t.Errorf("file %q = %+v, want %q", p, f, want)
				}
			}
			if m := v.Files["-n"].Mode; m != 0o600 {
				t.Errorf("-n mode = %o, want 600", m)
			}
			if m := v.Files["k0001"].Mode; m != 0o644 {
				t.Errorf("k0001 mode = %o, want 644", m)
			}
			if name != "busybox" {
				b, _ := os.ReadFile(log)
				// one cat for the top directory; sub/inner and the file
				// under the directories of "a$(touch /tmp/...)" are alone
				// in theirs and read one by one
				if n := bytes.Count(b, []byte("x ")); n != 3 {
					t.Errorf("cat ran %d times for %d files, want 3 (one per directory):\n%.2000s", n, len(files), b)
				}
			}
		})
	}
}

// A batch whose contents do not add up (a file changed between stat and
// cat) leaves every file of the batch unread and the rest of the output
// parsed.
func TestParseBatchThatChangedWhileRead(t *testing.T) {
	n := "cmsync-abc"
	rec := func(fields ...string) string { return strings.Join(fields, "\x00") + "\x00" }
	ok := rec("P", "0", "K", "d", "G", "", "2", "a", "b", "-rw-r--r--", "2", "-rw-------", "3", "C") + "xxyyy" + rec(n, "Q", "", "Z", n)
	obs, err := ParseObservation([]byte(ok), n, []string{"/v"})
	if err != nil {
		t.Fatal(err)
	}
	if a, b := obs.Paths["/v"].Files["a"], obs.Paths["/v"].Files["b"]; string(a.Data) != "xx" || string(b.Data) != "yyy" || b.Mode != 0o600 {
		t.Errorf("batch = %+v %+v", a, b)
	}
	short := rec("P", "0", "K", "d", "G", "p/", "2", "a", "b", "-rw-r--r--", "2", "-rw-------", "3", "C") + "xxyy" + rec(n, "Q", "", "Z", n)
	obs, err = ParseObservation([]byte(short), n, []string{"/v"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"p/a", "p/b"} {
		if f := obs.Paths["/v"].Files[p]; f == nil || f.HasData || f.Unread == "" {
			t.Errorf("%s = %+v, want unread", p, f)
		}
	}
	for _, bad := range []string{
		rec("P", "0", "G", "", "99999", "a") + rec("Z", n),
		rec("P", "0", "G", "", "1", "a", "-rw-r--r--", "-5", "C") + rec(n, "Q", "", "Z", n),
		rec("P", "0", "G", "", "1", "a", "-rw-r--r--", "1", "X") + rec(n, "Q", "", "Z", n),
	} {
		if _, err := ParseObservation([]byte(bad), n, []string{"/v"}); err == nil {
			t.Errorf("%q parsed, want an error", bad)
		}
	}
}

// TestForbiddenExecReason: an exec RBAC denies is reported with the missing
// permission first ("forbidden: create pods/exec"), the API server's words
// (without client-go's prefix) and the rule that grants it.
func TestForbiddenExecReason(t *testing.T) {
	const server = `pods "web-1" is forbidden: User "system:serviceaccount:shop:reader" cannot create resource "pods/exec" in API group "" in the namespace "shop"`
	cases := []struct{ name, msg, want string }{
		{"SPDY fallback (create)", "unable to upgrade connection: " + server,
			`forbidden: create pods/exec (` + server + `; verify needs get and create on pods/exec: a Role with {apiGroups: [""], resources: ["pods/exec"], verbs: ["get", "create"]} grants them)`},
		{"WebSocket only (get)", strings.ReplaceAll(server, "cannot create", "cannot get"),
			`forbidden: get pods/exec (` + strings.ReplaceAll(server, "cannot create", "cannot get") + `; verify needs get and create on pods/exec: a Role with {apiGroups: [""], resources: ["pods/exec"], verbs: ["get", "create"]} grants them)`},
		{"unknown wording", "Forbidden",
			`forbidden: create pods/exec (Forbidden; verify needs get and create on pods/exec: a Role with {apiGroups: [""], resources: ["pods/exec"], verbs: ["get", "create"]} grants them)`},
	}
	for _, c := range cases {
		got := ClassifyExecError(context.Background(), errors.New(c.msg), nil)
		if got.Reason != ObserveForbidden || got.Error() != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got.Error(), c.want)
		}
		if c := causeOfObserveError(got.Reason); c != CauseExecForbidden {
			t.Errorf("cause %q, want %q", c, CauseExecForbidden)
		}
	}
}

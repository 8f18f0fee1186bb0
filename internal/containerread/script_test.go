package containerread_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread"
	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread/readtest"
)

func TestScriptReadsVolumes(t *testing.T) {
	for name, tools := range readtest.Shells(t) {
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
			readtest.AtomicVolume(t, vol, readtest.TS, files, map[string]os.FileMode{"app.conf": 0o600, "bin": 0o755})
			sub := filepath.Join(root, "subfile")
			if err := os.WriteFile(sub, []byte("subpath content"), 0o644); err != nil {
				t.Fatal(err)
			}
			emptyDir := filepath.Join(root, "emptydir")
			if err := os.Mkdir(emptyDir, 0o755); err != nil {
				t.Fatal(err)
			}
			missing := filepath.Join(root, "nope")
			ex := &readtest.LocalExecutor{BinDir: readtest.ToolDir(t, tools), Env: []string{"with-dash=1", "with.dot=2", "9lives=3", "MULTI=a\nb=c", "EMPTY="}}
			req := containerread.ExecRequest{Paths: []containerread.PathRequest{{Path: vol}, {Path: sub}, {Path: emptyDir}, {Path: missing}}, Env: true}
			obs := containerread.ReadContainer(context.Background(), ex, req, containerread.Options{MaxBytes: 4096, Timeout: 10 * time.Second})
			if obs.Err != nil {
				t.Fatalf("observe: %v", obs.Err)
			}
			if len(ex.Calls) != 1 {
				t.Errorf("execs = %d, want 1", len(ex.Calls))
			}
			for _, p := range []string{pwned, pwned + "2", pwned + "3"} {
				if _, err := os.Stat(p); err == nil {
					t.Errorf("%s was created: injection", p)
				}
			}
			v := obs.Paths[vol]
			if v == nil || v.Kind != containerread.PathAtomic || v.Target != readtest.TS || v.Unstable || !v.Listed {
				t.Fatalf("volume observation = %+v", v)
			}
			for p, want := range files {
				f := v.Files[p]
				if f == nil {
					t.Errorf("file %q not observed", p)
					continue
				}
				if int64(len(want)) > 4096 {
					if f.HasData || f.SHA256 != containerread.SHA256Hex(want) || f.Size != int64(len(want)) {
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
			if s := obs.Paths[sub]; s == nil || s.Kind != containerread.PathFile || string(s.Files[""].Data) != "subpath content" {
				t.Errorf("subPath file = %+v", s)
			}
			if s := obs.Paths[emptyDir]; s == nil || s.Kind != containerread.PathDir || len(s.Files) != 0 || !s.Listed {
				t.Errorf("empty dir = %+v", s)
			}
			if s := obs.Paths[missing]; s == nil || s.Kind != containerread.PathMissing {
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
	for name, tools := range readtest.Shells(t) {
		t.Run(name, func(t *testing.T) {
			delete(tools, "sha256sum")
			root := t.TempDir()
			vol := filepath.Join(root, "v")
			readtest.AtomicVolume(t, vol, readtest.TS, map[string][]byte{"big": bytes.Repeat([]byte("q"), 100), "small": []byte("s")}, nil)
			ex := &readtest.LocalExecutor{BinDir: readtest.ToolDir(t, tools)}
			obs := containerread.ReadContainer(context.Background(), ex, containerread.ExecRequest{Paths: []containerread.PathRequest{{Path: vol}}}, containerread.Options{MaxBytes: 10})
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

// TestScriptBatchesManyFiles: 1,000 files of one directory (a ConfigMap with
// 1,000 keys) are read with one stat and one cat, not a fork per file, and
// every file, hostile names included, comes out right.
func TestScriptBatchesManyFiles(t *testing.T) {
	for name, tools := range readtest.Shells(t) {
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
			readtest.AtomicVolume(t, vol, readtest.TS, files, map[string]os.FileMode{"-n": 0o600})
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
			ex := &readtest.LocalExecutor{BinDir: readtest.ToolDir(t, tools)}
			obs := containerread.ReadContainer(context.Background(), ex, containerread.ExecRequest{Paths: []containerread.PathRequest{{Path: vol}}}, containerread.Options{MaxBytes: 4096, Timeout: time.Minute})
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

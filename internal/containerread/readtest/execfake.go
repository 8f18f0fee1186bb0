// Package readtest holds a fake containerread.Executor for tests of the
// commands built on inspect.Verify: it answers the observation script from
// containers described in memory. It is imported by tests only, so it never
// ships in the binary.
package readtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread"
)

// Container is what a Executor container shows: atomic-writer
// volumes, plain files and directories (subPath mounts), an environment.
type Container struct {
	// Volumes by mount path: the ..data target and the files under it.
	Volumes map[string]Volume
	// Files by absolute path (a subPath onto a file).
	Files map[string][]byte
	// Dirs by absolute path: the files under it, by relative path (a
	// subPath onto a directory; empty once the kubelet deleted it).
	Dirs map[string]map[string][]byte
	Env  map[string]string
	// NoShell: the image has no sh (nor anything else).
	NoShell bool
	// NoSHA256: the image has no sha256sum.
	NoSHA256 bool
	// Err fails every exec with this error.
	Err error
}

// Volume is an atomic-writer volume.
type Volume struct {
	Target string
	Files  map[string][]byte
	// Mode of every file (default 0644).
	Mode int32
}

// Executor answers the observation script from Containers, keyed
// "namespace/pod/container"; for tests of the commands built on Verify.
type Executor struct {
	Containers map[string]*Container
	mu         sync.Mutex
	// Calls records every argv, keyed like Containers.
	Calls map[string][][]string
	// Before, when set, runs at the start of every exec: a test holds the
	// execs with it until something else has happened.
	Before func()
}

// Exec implements containerread.Executor.
func (f *Executor) Exec(ctx context.Context, t containerread.Target, argv []string, stdout, stderr io.Writer) error {
	if f.Before != nil {
		f.Before()
	}
	key := t.Namespace + "/" + t.Pod + "/" + t.Container
	f.mu.Lock()
	if f.Calls == nil {
		f.Calls = map[string][][]string{}
	}
	f.Calls[key] = append(f.Calls[key], argv)
	c := f.Containers[key]
	f.mu.Unlock()
	if c == nil {
		return fmt.Errorf("unable to upgrade connection: container not found (%q)", t.Container)
	}
	if c.Err != nil {
		return c.Err
	}
	if c.NoShell || len(argv) < 7 || argv[0] != "sh" || argv[1] != "-c" {
		return fmt.Errorf("OCI runtime exec failed: exec failed: unable to start container process: exec: %q: executable file not found in $PATH: unknown", argv[0])
	}
	maxBytes, _ := strconv.ParseInt(argv[4], 10, 64)
	nonce, env, paths := argv[5], argv[6] == "1", argv[7:]
	rec := func(fields ...string) {
		for _, s := range fields {
			io.WriteString(stdout, s)
			stdout.Write([]byte{0})
		}
	}
	file := func(rel string, data []byte, mode int32) {
		rec("F", rel, lsMode(mode), strconv.Itoa(len(data)))
		switch {
		case int64(len(data)) <= maxBytes:
			rec("C")
			stdout.Write(data)
			rec(nonce)
		case !c.NoSHA256:
			s := sha256.Sum256(data)
			rec("H", hex.EncodeToString(s[:]))
		default:
			rec("S")
		}
	}
	dirs := func(files map[string][]byte) {
		seen := map[string]bool{}
		for _, rel := range sortedKeys(files) {
			for d := path.Dir(rel); d != "."; d = path.Dir(d) {
				if !seen[d] {
					seen[d] = true
					rec("D", d)
				}
			}
		}
	}
	for i, p := range paths {
		rec("P", strconv.Itoa(i))
		switch {
		case c.Volumes[p].Target != "":
			v := c.Volumes[p]
			mode := v.Mode
			if mode == 0 {
				mode = defaultFileMode
			}
			rec("A", v.Target)
			dirs(v.Files)
			for _, rel := range sortedKeys(v.Files) {
				file(rel, v.Files[rel], mode)
			}
			rec("Q", v.Target)
		case c.Files[p] != nil:
			rec("K", "f")
			file("", c.Files[p], defaultFileMode)
			rec("Q", "")
		case c.Dirs[p] != nil:
			rec("K", "d")
			dirs(c.Dirs[p])
			for _, rel := range sortedKeys(c.Dirs[p]) {
				file(rel, c.Dirs[p][rel], defaultFileMode)
			}
			rec("Q", "")
		default:
			rec("K", "n", "Q", "")
		}
	}
	if env {
		rec("V")
		names := make([]string, 0, len(c.Env))
		for k := range c.Env {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			rec(k + "=" + c.Env[k])
		}
		rec(nonce)
	}
	rec("Z", nonce)
	return nil
}

// Update changes the container keyed "namespace/pod/container" while
// execs may be running: change gets a deep copy, which replaces the
// container under the lock, so an exec in flight reads the old container
// whole and the next one the new (tests that change Containers directly
// while the code under test execs race with it).
func (f *Executor) Update(key string, change func(c *Container)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.Containers[key].clone()
	change(c)
	f.Containers[key] = c
}

// clone copies c and every map under it; nil gives an empty container.
func (c *Container) clone() *Container {
	if c == nil {
		return &Container{}
	}
	out := *c
	out.Volumes = make(map[string]Volume, len(c.Volumes))
	for p, v := range c.Volumes {
		v.Files = maps.Clone(v.Files)
		out.Volumes[p] = v
	}
	out.Files = maps.Clone(c.Files)
	if c.Dirs != nil {
		out.Dirs = make(map[string]map[string][]byte, len(c.Dirs))
		for p, d := range c.Dirs {
			out.Dirs[p] = maps.Clone(d)
		}
	}
	out.Env = maps.Clone(c.Env)
	return &out
}

// lsMode renders permission bits as ls -l does.
func lsMode(m int32) string {
	const rwx = "rwxrwxrwx"
	b := []byte("-")
	for i := 0; i < 9; i++ {
		if m&(1<<uint(8-i)) != 0 {
			b = append(b, rwx[i])
		} else {
			b = append(b, '-')
		}
	}
	return strings.TrimSpace(string(b))
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// defaultFileMode is the mode the kubelet gives a file of a ConfigMap or
// Secret volume with no defaultMode (0644).
const defaultFileMode = 0o644

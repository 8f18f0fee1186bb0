package nodereader

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// tarOf builds a node script's T output (without the T record) from
// members: a name ending in "/" is a directory, "->" in a name makes a
// symlink, "=>" a hard link.
func tarOf(t *testing.T, nonce string, members ...[2]string) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, m := range members {
		name, body := m[0], m[1]
		h := &tar.Header{Name: name, Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(body))}
		switch {
		case name[len(name)-1] == '/':
			h.Typeflag, h.Mode, h.Size = tar.TypeDir, 0o755, 0
		case body != "" && body[0] == '>':
			h.Typeflag, h.Linkname, h.Size = tar.TypeSymlink, body[1:], 0
		case body != "" && body[0] == '=':
			h.Typeflag, h.Linkname, h.Size = tar.TypeLink, body[1:], 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte(body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return append(b.Bytes(), "Z\x00"+nonce+"\x00"...)
}

// TestParseTarOutput: an atomic volume (target before and after), content
// up to maxBytes and a hash above it, a hard link, a moved ..data, a
// missing path, and output cut short.
func TestParseTarOutput(t *testing.T) {
	const n = "cmsync-nonce"
	v := "/r/k/pods/u/volumes/kubernetes.io~configmap/cfg"
	moved := "/r/k/pods/u/volumes/kubernetes.io~configmap/moved"
	out := tarOf(t, n,
		[2]string{"r/k/pods/u/volumes/kubernetes.io~configmap/cfg/..data", ">..ts1"},
		[2]string{"r/k/pods/u/volumes/kubernetes.io~configmap/cfg/", ""},
		[2]string{"r/k/pods/u/volumes/kubernetes.io~configmap/cfg/..ts1/", ""},
		[2]string{"r/k/pods/u/volumes/kubernetes.io~configmap/cfg/..ts1/small", "abc"},
		[2]string{"r/k/pods/u/volumes/kubernetes.io~configmap/cfg/..ts1/big", "0123456789"},
		[2]string{"r/k/pods/u/volumes/kubernetes.io~configmap/cfg/..ts1/same", "=r/k/pods/u/volumes/kubernetes.io~configmap/cfg/..ts1/small"},
		[2]string{"r/k/pods/u/volumes/kubernetes.io~configmap/cfg/small", ">..data/small"},
		[2]string{"r/k/pods/u/volumes/kubernetes.io~configmap/cfg/..data", ">..ts1"},
		[2]string{"r/k/pods/u/volumes/kubernetes.io~configmap/moved/..data", ">..ts1"},
		[2]string{"r/k/pods/u/volumes/kubernetes.io~configmap/moved/", ""},
		[2]string{"r/k/pods/u/volumes/kubernetes.io~configmap/moved/..data", ">..ts2"},
	)
	got, err := parseTarOutput(out, n, []string{v, moved, "/r/none"}, 5)
	if err != nil {
		t.Fatal(err)
	}
	cfg := got.Paths[v]
	if cfg.Kind != inspect.PathAtomic || cfg.Target != "..ts1" || cfg.Unstable || !cfg.Listed {
		t.Fatalf("volume = %+v", cfg)
	}
	if f := cfg.Files["small"]; f == nil || string(f.Data) != "abc" || !f.HasData || f.Mode != 0o644 || f.Size != 3 {
		t.Errorf("small = %+v", f)
	}
	sum := sha256.Sum256([]byte("0123456789"))
	if f := cfg.Files["big"]; f == nil || f.HasData || f.SHA256 != hex.EncodeToString(sum[:]) || f.Size != 10 {
		t.Errorf("big = %+v", f)
	}
	if f := cfg.Files["same"]; f == nil || string(f.Data) != "abc" {
		t.Errorf("hard link = %+v", f)
	}
	if len(cfg.Files) != 3 || len(cfg.Dirs) != 0 || len(cfg.Others) != 0 {
		t.Errorf("volume lists files %v, dirs %v, others %v: only the data directory's content counts", cfg.Files, cfg.Dirs, cfg.Others)
	}
	if m := got.Paths[moved]; m.Kind != inspect.PathAtomic || !m.Unstable {
		t.Errorf("..data moved while archived: %+v, want unstable", m)
	}
	if m := got.Paths["/r/none"]; m.Kind != inspect.PathMissing || m.Listed {
		t.Errorf("missing path = %+v", m)
	}
	if _, err := parseTarOutput(out[:len(out)-3], n, []string{v}, 5); !errors.Is(err, inspect.ErrTruncated) {
		t.Errorf("cut short: err = %v, want ErrTruncated", err)
	}
	if _, err := parseTarOutput(append(bytes.Repeat([]byte{1}, 600), "Z\x00"+n+"\x00"...), n, []string{v}, 5); err == nil {
		t.Error("a corrupt tar was accepted")
	}
}

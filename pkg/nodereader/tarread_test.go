package nodereader

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread"
)

// tarOf builds a tar of members: a name ending in "/" is a directory, a
// body ">T" a symlink to T, "=N" a hard link to member N.
func tarOf(t *testing.T, members ...[2]string) []byte {
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
	return b.Bytes()
}

// section is the node script's T section (without the T): the links'
// listing, the tar, tar's status and the listing again.
func section(nonce, before string, archive []byte, status, after string) []byte {
	out := append([]byte("B\x00"+before+"\x00"), archive...)
	return append(out, "X\x00"+nonce+"\x00"+status+"\x00"+after+"\x00"...)
}

// TestParseTarSection: an atomic volume (content up to maxBytes, a hash
// above it, a hard link as GNU tar writes a file archived twice), one the
// kubelet swapped as it was read (the listings differ), a missing path,
// output cut short, a corrupt tar, and a failed tar handing over to the
// verify script's records.
func TestParseTarSection(t *testing.T) {
	const n = "cmsync-nonce"
	v := "/r/k/pods/u/volumes/kubernetes.io~configmap/cfg"
	moved := "/r/k/pods/u/volumes/kubernetes.io~configmap/moved"
	archive := tarOf(t,
		[2]string{"r/k/pods/u/volumes/kubernetes.io~configmap/cfg/", ""},
		[2]string{"r/k/pods/u/volumes/kubernetes.io~configmap/cfg/..data", ">..ts1"},
		[2]string{"r/k/pods/u/volumes/kubernetes.io~configmap/cfg/..ts1/", ""},
		[2]string{"r/k/pods/u/volumes/kubernetes.io~configmap/cfg/..ts1/small", "abc"},
		[2]string{"r/k/pods/u/volumes/kubernetes.io~configmap/cfg/..ts1/big", "0123456789"},
		[2]string{"r/k/pods/u/volumes/kubernetes.io~configmap/cfg/..ts1/same", "=r/k/pods/u/volumes/kubernetes.io~configmap/cfg/..ts1/small"},
		[2]string{"r/k/pods/u/volumes/kubernetes.io~configmap/cfg/small", ">..data/small"},
		[2]string{"r/k/pods/u/volumes/kubernetes.io~configmap/moved/", ""},
		[2]string{"r/k/pods/u/volumes/kubernetes.io~configmap/moved/..data", ">..ts1"},
	)
	before := "lrwxrwxrwx 1 0 0 5 Nov 26 01:17 " + v + "/..data -> ..ts1\nlrwxrwxrwx 1 0 0 5 Nov 26 01:17 " + moved + "/..data -> ..ts1"
	after := "lrwxrwxrwx 1 0 0 5 Nov 26 01:17 " + v + "/..data -> ..ts1\nlrwxrwxrwx 1 0 0 5 Nov 26 01:17 " + moved + "/..data -> ..ts2"
	out := section(n, before, archive, "0", after)
	got, rest, err := parseTarSection(out, n, []string{v, moved, "/r/none"}, 5)
	if err != nil || len(rest) != 0 {
		t.Fatalf("err %v, %d bytes left", err, len(rest))
	}
	cfg := got.Paths[v]
	if cfg.Kind != containerread.PathAtomic || cfg.Target != "..ts1" || cfg.Unstable || !cfg.Listed {
		t.Fatalf("volume = %+v", cfg)
	}
	if f := cfg.Files["small"]; f == nil || string(f.Data) != "abc" || !f.HasData || f.Mode != 0o644 || f.Size != 3 {
		t.Errorf("small = %+v", f)
	}
	sum := sha256.Sum256([]byte("0123456789"))
	if f := cfg.Files["big"]; f == nil || f.HasData || f.SHA256 != hex.EncodeToString(sum[:]) || f.Size != 10 {
		t.Errorf("big = %+v", f)
	}
	if f := cfg.Files["same"]; f == nil || string(f.Data) != "abc" || f.Mode != 0o644 {
		t.Errorf("hard link = %+v", f)
	}
	if len(cfg.Files) != 3 || len(cfg.Dirs) != 0 || len(cfg.Others) != 0 {
		t.Errorf("volume lists files %v, dirs %v, others %v: only the data directory's content counts", cfg.Files, cfg.Dirs, cfg.Others)
	}
	if m := got.Paths[moved]; m.Kind != containerread.PathAtomic || !m.Unstable {
		t.Errorf("..data moved while archived: %+v, want unstable", m)
	}
	if m := got.Paths["/r/none"]; m.Kind != containerread.PathMissing || m.Listed {
		t.Errorf("missing path = %+v", m)
	}
	if _, _, err := parseTarSection(out[:len(out)-len(after)-8], n, []string{v}, 5); err == nil {
		t.Error("output cut short was accepted")
	}
	if _, _, err := parseTarSection(section(n, "", bytes.Repeat([]byte{1}, 600), "0", ""), n, []string{v}, 5); err == nil {
		t.Error("a corrupt tar was accepted")
	}
	failed := append(section(n, before, archive[:100], "2", after), "V\x00..."...)
	if v, rest, err := parseTarSection(failed, n, []string{v}, 5); err != nil || v != nil || string(rest) != "V\x00..." {
		t.Errorf("failed tar: %v, %v, rest %q; want the verify script's records handed on", v, err, rest)
	}
}

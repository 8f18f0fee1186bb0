package nodereader

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread"
)

// What the node script's tar showed, as the exec reader's script would
// have shown it (the same VerifiedPath for each path, so the comparisons
// cannot tell the readers apart): an atomic volume's ..data target, every
// file under it (mode, size, and the content when at most maxBytes, else
// its sha256), its directories and its links; a directory likewise; a
// file; something else; or nothing.

// tarEntry is one member of the tar.
type tarEntry struct {
	hdr  *tar.Header
	data []byte
}

// tarMembers indexes the members by name (no leading or trailing slash;
// the node script passes each path once, so a name is archived once).
type tarMembers map[string]*tarEntry

// parseTarSection parses the node script's T section: B and the listing
// of the ..data links, the tar, X nonce status and the listing again. A
// tar that failed (status not 0) gives no Verified but the output after
// the section, where the verify script's records follow.
func parseTarSection(out []byte, nonce string, paths []string, maxBytes int64) (*containerread.Verified, []byte, error) {
	f := &containerread.NULFields{B: out}
	if tag, err := f.Field(); err != nil || tag != "B" {
		return nil, nil, containerread.ErrTruncated
	}
	before, err := f.Field()
	if err != nil {
		return nil, nil, err
	}
	marker := []byte("X\x00" + nonce + "\x00")
	end := bytes.Index(out[f.Pos:], marker)
	if end < 0 {
		return nil, nil, containerread.ErrTruncated
	}
	archive := out[f.Pos : f.Pos+end]
	f.Pos += end + len(marker)
	tail, err := f.Fields(2)
	if err != nil {
		return nil, nil, err
	}
	if tail[0] != "0" {
		return nil, out[f.Pos:], nil
	}
	members, err := readTar(archive)
	if err != nil {
		return nil, nil, err
	}
	a, q := dataTargets(before, paths), dataTargets(tail[1], paths)
	v := &containerread.Verified{Paths: map[string]*containerread.VerifiedPath{}}
	for _, p := range paths {
		v.Paths[p] = members.path(memberName(p), a[p], q[p], maxBytes)
	}
	return v, out[f.Pos:], nil
}

// dataTargets reads an ls -ld listing of PATH/..data links ("... PATH/..data
// -> TARGET" per line) into each path's target name.
func dataTargets(listing string, paths []string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(listing, "\n") {
		i := strings.LastIndex(line, " -> ")
		if i < 0 {
			continue
		}
		for _, p := range paths {
			if strings.HasSuffix(line[:i], " "+p+"/..data") {
				out[p] = path.Base(line[i+4:])
			}
		}
	}
	return out
}

// readTar reads every member; a hard link gets its target's content.
func readTar(b []byte) (tarMembers, error) {
	m := tarMembers{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return m, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading the node's tar: %w", err)
		}
		e := &tarEntry{hdr: h}
		switch h.Typeflag {
		case tar.TypeReg:
			if e.data, err = io.ReadAll(tr); err != nil {
				return nil, fmt.Errorf("reading the node's tar: %w", err)
			}
		case tar.TypeLink:
			// the same file archived again (GNU tar): what it links to
			if t := m[memberName(h.Linkname)]; t != nil {
				hdr := *t.hdr
				hdr.Name = h.Name
				e = &tarEntry{hdr: &hdr, data: t.data}
			}
		}
		if name := memberName(h.Name); m[name] == nil {
			m[name] = e
		}
	}
}

// memberName is a path as tar names it: no leading slash (tar strips it),
// no trailing one (directories have it).
func memberName(p string) string {
	return strings.TrimPrefix(path.Clean("/"+p), "/")
}

// path is what one requested path showed. before and after are its
// ..data target as listed before and after the tar ("" when it has none):
// they differ, or differ from the link in the tar, when the kubelet
// swapped the volume as it was read.
func (m tarMembers) path(name, before, after string, maxBytes int64) *containerread.VerifiedPath {
	vp := &containerread.VerifiedPath{Files: map[string]*containerread.VerifiedFile{}, Listed: true}
	link := m[name+"/..data"]
	if before != "" || (link != nil && link.hdr.Typeflag == tar.TypeSymlink) {
		archived := ""
		if link != nil {
			archived = path.Base(link.hdr.Linkname)
		}
		if before == "" {
			before = archived
		}
		vp.Kind, vp.Target = containerread.PathAtomic, before
		vp.Unstable = after != before || archived != before
		m.walk(vp, name+"/"+vp.Target, maxBytes)
		return vp
	}
	self := m[name]
	switch {
	case self == nil:
		vp.Kind, vp.Listed = containerread.PathMissing, false
	case self.hdr.Typeflag == tar.TypeDir:
		vp.Kind = containerread.PathDir
		m.walk(vp, name, maxBytes)
	case self.hdr.Typeflag == tar.TypeReg:
		vp.Kind = containerread.PathFile
		vp.Files[""] = file("", self, maxBytes)
	default:
		vp.Kind, vp.Listed = containerread.PathOther, false
	}
	return vp
}

// walk adds the members under root to vp, by their path relative to it.
func (m tarMembers) walk(vp *containerread.VerifiedPath, root string, maxBytes int64) {
	prefix := root + "/"
	for name, e := range m {
		rel, ok := strings.CutPrefix(name, prefix)
		if !ok || rel == "" {
			continue
		}
		switch e.hdr.Typeflag {
		case tar.TypeReg:
			vp.Files[rel] = file(rel, e, maxBytes)
		case tar.TypeDir:
			vp.Dirs = append(vp.Dirs, rel)
		default:
			vp.Others = append(vp.Others, rel)
		}
	}
	sort.Strings(vp.Dirs)
	sort.Strings(vp.Others)
}

// file is one regular file: its content when at most maxBytes, else its
// sha256 (the exec reader's rule).
func file(rel string, e *tarEntry, maxBytes int64) *containerread.VerifiedFile {
	f := &containerread.VerifiedFile{Path: rel, Mode: int32(e.hdr.Mode & 0o7777), Size: int64(len(e.data))}
	if f.Size <= maxBytes {
		f.Data, f.HasData = e.data, true
		return f
	}
	sum := sha256.Sum256(e.data)
	f.SHA256 = hex.EncodeToString(sum[:])
	return f
}

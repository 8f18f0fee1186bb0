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

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
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

// tarMembers indexes the members by name (no leading or trailing slash);
// a name archived more than once (an atomic volume's ..data, before and
// after its volume) keeps every occurrence, in order.
type tarMembers map[string][]*tarEntry

// parseTarOutput parses the node script's T output: the tar, then Z and
// the nonce (without them the read was cut short).
func parseTarOutput(out []byte, nonce string, paths []string, maxBytes int64) (*inspect.Verified, error) {
	trailer := []byte("Z\x00" + nonce + "\x00")
	if !bytes.HasSuffix(out, trailer) {
		return nil, inspect.ErrTruncated
	}
	members, err := readTar(out[:len(out)-len(trailer)])
	if err != nil {
		return nil, err
	}
	v := &inspect.Verified{Paths: map[string]*inspect.VerifiedPath{}}
	for _, p := range paths {
		v.Paths[p] = members.path(memberName(p), maxBytes)
	}
	return v, nil
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
			if t := m[memberName(h.Linkname)]; len(t) > 0 {
				e = &tarEntry{hdr: &tar.Header{Typeflag: tar.TypeReg, Name: h.Name, Mode: t[0].hdr.Mode, Size: int64(len(t[0].data))}, data: t[0].data}
			}
		}
		name := memberName(h.Name)
		m[name] = append(m[name], e)
	}
}

// memberName is a path as tar names it: no leading slash (tar strips it),
// no trailing one (directories have it).
func memberName(p string) string {
	return strings.TrimPrefix(path.Clean("/"+p), "/")
}

// path is what one requested path showed.
func (m tarMembers) path(name string, maxBytes int64) *inspect.VerifiedPath {
	vp := &inspect.VerifiedPath{Files: map[string]*inspect.VerifiedFile{}, Listed: true}
	if links := m[name+"/..data"]; len(links) > 0 && links[0].hdr.Typeflag == tar.TypeSymlink {
		first, last := links[0].hdr.Linkname, links[len(links)-1].hdr.Linkname
		vp.Kind, vp.Target = inspect.PathAtomic, path.Base(first)
		vp.Unstable = path.Base(last) != vp.Target
		m.walk(vp, name+"/"+vp.Target, maxBytes)
		return vp
	}
	self := m[name]
	switch {
	case len(self) == 0:
		vp.Kind, vp.Listed = inspect.PathMissing, false
	case self[0].hdr.Typeflag == tar.TypeDir:
		vp.Kind = inspect.PathDir
		m.walk(vp, name, maxBytes)
	case self[0].hdr.Typeflag == tar.TypeReg:
		vp.Kind = inspect.PathFile
		vp.Files[""] = file("", self[0], maxBytes)
	default:
		vp.Kind, vp.Listed = inspect.PathOther, false
	}
	return vp
}

// walk adds the members under root to vp, by their path relative to it.
func (m tarMembers) walk(vp *inspect.VerifiedPath, root string, maxBytes int64) {
	prefix := root + "/"
	for name, es := range m {
		rel, ok := strings.CutPrefix(name, prefix)
		if !ok || rel == "" {
			continue
		}
		e := es[0]
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
func file(rel string, e *tarEntry, maxBytes int64) *inspect.VerifiedFile {
	f := &inspect.VerifiedFile{Path: rel, Mode: int32(e.hdr.Mode & 0o7777), Size: int64(len(e.data))}
	if f.Size <= maxBytes {
		f.Data, f.HasData = e.data, true
		return f
	}
	sum := sha256.Sum256(e.data)
	f.SHA256 = hex.EncodeToString(sum[:])
	return f
}

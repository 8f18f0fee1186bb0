package inspect

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrTruncated is returned by ParseObservation when the output ends before
// the final record (the exec was cut short).
var ErrTruncated = errors.New("output ended early")

// ParseObservation parses the output of the observation script for the
// given paths (in argument order).
func ParseObservation(out []byte, nonce string, paths []string) (*Observation, error) {
	if nonce == "" {
		return nil, errors.New("empty nonce")
	}
	p := &recordParser{b: out, nonce: []byte(nonce)}
	obs := &Observation{Paths: map[string]*ObservedPath{}}
	var cur *ObservedPath
	var curIdx = -1
	attempts := map[int]*ObservedPath{}
	for {
		tag, err := p.field()
		if err != nil {
			return nil, err
		}
		switch tag {
		case "P":
			s, err := p.field()
			if err != nil {
				return nil, err
			}
			idx, err := strconv.Atoi(s)
			if err != nil || idx < 0 || idx >= len(paths) {
				return nil, badRecord("bad path index", s)
			}
			cur = &ObservedPath{Files: map[string]*ObservedFile{}, Listed: true}
			curIdx = idx
		case "A", "K":
			if cur == nil {
				return nil, fmt.Errorf("record %s outside a path", tag)
			}
			s, err := p.field()
			if err != nil {
				return nil, err
			}
			if tag == "A" {
				cur.Kind, cur.Target = PathAtomic, s
				continue
			}
			switch s {
			case "d":
				cur.Kind = PathDir
			case "f":
				cur.Kind = PathFile
			case "o":
				cur.Kind, cur.Listed = PathOther, false
			case "n":
				cur.Kind, cur.Listed = PathMissing, false
			default:
				return nil, badRecord("bad path kind", s)
			}
		case "D", "L", "O":
			if cur == nil {
				return nil, fmt.Errorf("record %s outside a path", tag)
			}
			s, err := p.field()
			if err != nil {
				return nil, err
			}
			if tag == "D" {
				cur.Dirs = append(cur.Dirs, s)
			} else {
				cur.Others = append(cur.Others, s)
			}
		case "F":
			if cur == nil {
				return nil, errors.New("file record outside a path")
			}
			rel, err := p.field()
			if err != nil {
				return nil, err
			}
			perm, err := p.field()
			if err != nil {
				return nil, err
			}
			sz, err := p.field()
			if err != nil {
				return nil, err
			}
			size, err := strconv.ParseInt(sz, 10, 64)
			if err != nil || size < -1 {
				return nil, badRecord("bad size", sz)
			}
			f := &ObservedFile{Path: rel, Mode: ParseLsMode(perm), Size: size}
			cur.Files[rel] = f
			kind, err := p.field()
			if err != nil {
				return nil, err
			}
			switch kind {
			case "C":
				if size < 0 {
					return nil, errors.New("content without a size")
				}
				data, ok, err := p.content(size)
				if err != nil {
					return nil, err
				}
				if ok {
					f.Data, f.HasData = data, true
				} else {
					f.Unread = "the file changed size while it was read"
				}
			case "H":
				h, err := p.field()
				if err != nil {
					return nil, err
				}
				if validSHA256(h) {
					f.SHA256 = h
				} else {
					f.Unread = "sha256sum failed"
				}
			case "S":
				f.Unread = "larger than --max-bytes and the container has no sha256sum"
			case "U":
				f.Unread = "unreadable"
			default:
				return nil, badRecord("bad file record", kind)
			}
		case "G":
			if cur == nil {
				return nil, errors.New("file batch outside a path")
			}
			if err := p.batch(cur); err != nil {
				return nil, err
			}
		case "Q":
			if cur == nil {
				return nil, errors.New("end record outside a path")
			}
			s, err := p.field()
			if err != nil {
				return nil, err
			}
			if cur.Kind == PathAtomic && s != cur.Target {
				cur.Unstable = true
			}
			if prev, ok := attempts[curIdx]; !ok || prev.Unstable || !cur.Unstable {
				attempts[curIdx] = cur
			}
			cur, curIdx = nil, -1
		case "V":
			data, err := p.until()
			if err != nil {
				return nil, err
			}
			obs.Env, obs.EnvRead = ParseEnviron(data), true
		case "W":
			obs.EnvErr = "/proc/$$/environ (the shell's environment) is not readable in the container"
		case "Z":
			s, err := p.field()
			if err != nil {
				return nil, err
			}
			if s != nonce {
				return nil, errors.New("bad final record")
			}
			if cur != nil {
				return nil, errors.New("unterminated path record")
			}
			for i, pth := range paths {
				if a, ok := attempts[i]; ok {
					obs.Paths[pth] = a
				}
			}
			return obs, nil
		default:
			return nil, badRecord("unknown record", tag)
		}
	}
}

type recordParser struct {
	b     []byte
	pos   int
	nonce []byte
}

// field reads up to the next NUL.
func (p *recordParser) field() (string, error) {
	if p.pos >= len(p.b) {
		return "", ErrTruncated
	}
	i := bytes.IndexByte(p.b[p.pos:], 0)
	if i < 0 {
		return "", ErrTruncated
	}
	s := string(p.b[p.pos : p.pos+i])
	p.pos += i + 1
	return s, nil
}

// batch reads a G record: the prefix of the names, their count, the
// names, a mode and a size for each, "C", then the contents back to back
// and the nonce. When the contents do not add up (a file changed or
// vanished between stat and cat) every file of the batch is unread.
func (p *recordParser) batch(cur *ObservedPath) error {
	prefix, err := p.field()
	if err != nil {
		return err
	}
	cs, err := p.field()
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(cs)
	// every name takes at least 4 bytes of output (name, mode, size, each NUL-terminated)
	if err != nil || n < 1 || n > (len(p.b)-p.pos)/4 {
		return badRecord("bad file count", cs)
	}
	files := make([]*ObservedFile, n)
	for i := range files {
		name, err := p.field()
		if err != nil {
			return err
		}
		files[i] = &ObservedFile{Path: prefix + name}
	}
	var total int64
	for _, f := range files {
		perm, err := p.field()
		if err != nil {
			return err
		}
		sz, err := p.field()
		if err != nil {
			return err
		}
		size, err := strconv.ParseInt(sz, 10, 64)
		if err != nil || size < 0 || size > int64(len(p.b)) {
			return badRecord("bad size", sz)
		}
		f.Mode, f.Size = ParseLsMode(perm), size
		total += size
	}
	if c, err := p.field(); err != nil {
		return err
	} else if c != "C" {
		return badRecord("bad file batch", c)
	}
	data, ok, err := p.content(total)
	if err != nil {
		return err
	}
	for _, f := range files {
		if ok {
			f.Data, f.HasData, data = data[:f.Size:f.Size], true, data[f.Size:]
		} else {
			f.Unread = "the file changed size while it was read"
		}
		cur.Files[f.Path] = f
	}
	return nil
}

// content reads size bytes followed by the nonce and a NUL. When the
// trailer is not where the size says (the file changed while it was read),
// it resynchronises on the next nonce and reports ok false.
func (p *recordParser) content(size int64) ([]byte, bool, error) {
	trailer := append(append([]byte{}, p.nonce...), 0)
	rest := int64(len(p.b) - p.pos)
	if size <= rest-int64(len(trailer)) {
		end := p.pos + int(size)
		if bytes.Equal(p.b[end:end+len(trailer)], trailer) {
			data := p.b[p.pos:end]
			p.pos = end + len(trailer)
			return data, true, nil
		}
	}
	i := bytes.Index(p.b[p.pos:], trailer)
	if i < 0 {
		return nil, false, ErrTruncated
	}
	p.pos += i + len(trailer)
	return nil, false, nil
}

// until reads up to the nonce and a NUL.
func (p *recordParser) until() ([]byte, error) {
	trailer := append(append([]byte{}, p.nonce...), 0)
	i := bytes.Index(p.b[p.pos:], trailer)
	if i < 0 {
		return nil, ErrTruncated
	}
	data := p.b[p.pos : p.pos+i]
	p.pos += i + len(trailer)
	return data, nil
}

func validSHA256(h string) bool {
	if len(h) != 64 {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil
}

// ParseLsMode turns the first field of `ls -l` ("-rw-r--r--", maybe with a
// trailing "." or "+") into permission bits; -1 when it is not one.
func ParseLsMode(s string) int32 {
	if len(s) < 10 {
		return -1
	}
	var m int32
	bits := []struct {
		pos  int
		c    byte
		bit  int32
		spec int32 // setuid, setgid, sticky with the exec bit
		nx   byte  // the same special bit without exec
	}{
		{1, 'r', 0o400, 0, 0}, {2, 'w', 0o200, 0, 0}, {3, 'x', 0o100, 0o4000, 'S'},
		{4, 'r', 0o040, 0, 0}, {5, 'w', 0o020, 0, 0}, {6, 'x', 0o010, 0o2000, 'S'},
		{7, 'r', 0o004, 0, 0}, {8, 'w', 0o002, 0, 0}, {9, 'x', 0o001, 0o1000, 'T'},
	}
	for _, b := range bits {
		c := s[b.pos]
		switch {
		case c == '-':
		case c == b.c:
			m |= b.bit
		case b.spec != 0 && (c == 's' || c == 't'):
			m |= b.bit | b.spec
		case b.spec != 0 && c == b.nx:
			m |= b.spec
		default:
			return -1
		}
	}
	return m
}

// ParseEnviron splits a NUL-separated environment (/proc/PID/environ) into
// variables; a later duplicate wins.
func ParseEnviron(data []byte) map[string]string {
	env := map[string]string{}
	for _, kv := range bytes.Split(data, []byte{0}) {
		if len(kv) == 0 {
			continue
		}
		k, v, ok := bytes.Cut(kv, []byte("="))
		if !ok || len(k) == 0 {
			continue
		}
		env[string(k)] = string(v)
	}
	return env
}

// parseEnvLines parses the output of `env`, one NAME=VALUE a line; a line
// without "=" continues the previous value (a value with a newline).
func parseEnvLines(data []byte) map[string]string {
	env := map[string]string{}
	last := ""
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok || k == "" || strings.ContainsAny(k, " \t") {
			if last != "" {
				env[last] += "\n" + line
			}
			continue
		}
		env[k], last = v, k
	}
	return env
}

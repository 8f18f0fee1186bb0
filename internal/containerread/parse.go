package containerread

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrTruncated is returned by ParseVerified when the output ends before
// the final record (the exec was cut short).
var ErrTruncated = errors.New("output ended early")

// ParseVerified parses the output of the verify script for the
// given paths (in argument order).
func ParseVerified(out []byte, nonce string, paths []string) (*Verified, error) {
	if nonce == "" {
		return nil, errors.New("empty nonce")
	}
	s := &scriptOutput{
		p:        &recordParser{NULFields: NULFields{B: out}, nonce: []byte(nonce)},
		nonce:    nonce,
		paths:    paths,
		obs:      &Verified{Paths: map[string]*VerifiedPath{}},
		curIdx:   -1,
		attempts: map[int]*VerifiedPath{},
	}
	for {
		tag, err := s.p.Field()
		if err != nil {
			return nil, err
		}
		done, err := s.record(tag)
		if err != nil {
			return nil, err
		}
		if done {
			return s.obs, nil
		}
	}
}

// scriptOutput is the state of ParseVerified: the path being read
// (cur, between its P and Q records) and, per path, the attempt kept.
type scriptOutput struct {
	p        *recordParser
	nonce    string
	paths    []string
	obs      *Verified
	cur      *VerifiedPath
	curIdx   int
	attempts map[int]*VerifiedPath
}

// record reads the fields of one record after its tag; done at the final
// record.
func (s *scriptOutput) record(tag string) (done bool, err error) {
	switch tag {
	case "P":
		return false, s.pathStart()
	case "A", "K":
		return false, s.pathKind(tag)
	case "D", "L", "O":
		return false, s.entry(tag)
	case "F":
		return false, s.file()
	case "G":
		if s.cur == nil {
			return false, errors.New("file batch outside a path")
		}
		return false, s.p.batch(s.cur)
	case "Q":
		return false, s.pathEnd()
	case "V":
		data, err := s.p.until()
		if err != nil {
			return false, err
		}
		s.obs.Env, s.obs.EnvRead = ParseEnviron(data), true
		return false, nil
	case "W":
		s.obs.EnvErr = "/proc/$$/environ (the shell's environment) is not readable in the container"
		return false, nil
	case "Z":
		return true, s.final()
	}
	return false, badRecord("unknown record", tag)
}

// pathStart (P index) begins one attempt at reading a path.
func (s *scriptOutput) pathStart() error {
	f, err := s.p.Field()
	if err != nil {
		return err
	}
	idx, err := strconv.Atoi(f)
	if err != nil || idx < 0 || idx >= len(s.paths) {
		return badRecord("bad path index", f)
	}
	s.cur = &VerifiedPath{Files: map[string]*VerifiedFile{}, Listed: true}
	s.curIdx = idx
	return nil
}

// pathKind reads A (an atomic volume and its ..data target) or K (what
// else the path is).
func (s *scriptOutput) pathKind(tag string) error {
	f, err := s.pathField(tag)
	if err != nil {
		return err
	}
	if tag == "A" {
		s.cur.Kind, s.cur.Target = PathAtomic, f
		return nil
	}
	switch f {
	case "d":
		s.cur.Kind = PathDir
	case "f":
		s.cur.Kind = PathFile
	case "o":
		s.cur.Kind, s.cur.Listed = PathOther, false
	case "n":
		s.cur.Kind, s.cur.Listed = PathMissing, false
	default:
		return badRecord("bad path kind", f)
	}
	return nil
}

// pathField reads the one field of a record that belongs inside a path.
func (s *scriptOutput) pathField(tag string) (string, error) {
	if s.cur == nil {
		return "", fmt.Errorf("record %s outside a path", tag)
	}
	return s.p.Field()
}

// entry reads D (a directory) or L and O (a link or special file).
func (s *scriptOutput) entry(tag string) error {
	f, err := s.pathField(tag)
	if err != nil {
		return err
	}
	if tag == "D" {
		s.cur.Dirs = append(s.cur.Dirs, f)
	} else {
		s.cur.Others = append(s.cur.Others, f)
	}
	return nil
}

// file reads an F record: path, mode and size, then the content (C), its
// hash (H), or why neither came (S, U).
func (s *scriptOutput) file() error {
	if s.cur == nil {
		return errors.New("file record outside a path")
	}
	fields, err := s.p.Fields(3)
	if err != nil {
		return err
	}
	rel, perm, sz := fields[0], fields[1], fields[2]
	size, err := strconv.ParseInt(sz, 10, 64)
	if err != nil || size < -1 {
		return badRecord("bad size", sz)
	}
	f := &VerifiedFile{Path: rel, Mode: ParseLsMode(perm), Size: size}
	s.cur.Files[rel] = f
	kind, err := s.p.Field()
	if err != nil {
		return err
	}
	switch kind {
	case "C":
		if size < 0 {
			return errors.New("content without a size")
		}
		data, ok, err := s.p.content(size)
		if err != nil {
			return err
		}
		if ok {
			f.Data, f.HasData = data, true
		} else {
			f.Unread = "the file changed size while it was read"
		}
	case "H":
		h, err := s.p.Field()
		if err != nil {
			return err
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
		return badRecord("bad file record", kind)
	}
	return nil
}

// pathEnd (Q target) ends an attempt: an atomic volume whose ..data moved
// meanwhile is unstable. A stable attempt replaces an unstable one.
func (s *scriptOutput) pathEnd() error {
	if s.cur == nil {
		return errors.New("end record outside a path")
	}
	f, err := s.p.Field()
	if err != nil {
		return err
	}
	if s.cur.Kind == PathAtomic && f != s.cur.Target {
		s.cur.Unstable = true
	}
	if prev, ok := s.attempts[s.curIdx]; !ok || prev.Unstable || !s.cur.Unstable {
		s.attempts[s.curIdx] = s.cur
	}
	s.cur, s.curIdx = nil, -1
	return nil
}

// final (Z nonce) checks the output is complete and keeps each path's
// attempt.
func (s *scriptOutput) final() error {
	f, err := s.p.Field()
	if err != nil {
		return err
	}
	if f != s.nonce {
		return errors.New("bad final record")
	}
	if s.cur != nil {
		return errors.New("unterminated path record")
	}
	for i, pth := range s.paths {
		if a, ok := s.attempts[i]; ok {
			s.obs.Paths[pth] = a
		}
	}
	return nil
}

type recordParser struct {
	NULFields
	nonce []byte
}

// NULFields reads the NUL-terminated fields the verify scripts write, from
// B at Pos (the node reader parses its own records with it too).
type NULFields struct {
	B   []byte
	Pos int
}

// Field reads up to the next NUL.
func (p *NULFields) Field() (string, error) {
	if p.Pos >= len(p.B) {
		return "", ErrTruncated
	}
	i := bytes.IndexByte(p.B[p.Pos:], 0)
	if i < 0 {
		return "", ErrTruncated
	}
	s := string(p.B[p.Pos : p.Pos+i])
	p.Pos += i + 1
	return s, nil
}

// Fields reads the next n fields.
func (p *NULFields) Fields(n int) ([]string, error) {
	out := make([]string, n)
	for i := range out {
		f, err := p.Field()
		if err != nil {
			return nil, err
		}
		out[i] = f
	}
	return out, nil
}

// batch reads a G record: the prefix of the names, their count, the
// names, a mode and a size for each, "C", then the contents back to back
// and the nonce. When the contents do not add up (a file changed or
// vanished between stat and cat) every file of the batch is unread.
func (p *recordParser) batch(cur *VerifiedPath) error {
	head, err := p.Fields(2)
	if err != nil {
		return err
	}
	prefix, cs := head[0], head[1]
	n, err := strconv.Atoi(cs)
	// every name takes at least 4 bytes of output (name, mode, size, each NUL-terminated)
	if err != nil || n < 1 || n > (len(p.B)-p.Pos)/4 {
		return badRecord("bad file count", cs)
	}
	files := make([]*VerifiedFile, n)
	for i := range files {
		name, err := p.Field()
		if err != nil {
			return err
		}
		files[i] = &VerifiedFile{Path: prefix + name}
	}
	var total int64
	for _, f := range files {
		ms, err := p.Fields(2)
		if err != nil {
			return err
		}
		perm, sz := ms[0], ms[1]
		size, err := strconv.ParseInt(sz, 10, 64)
		if err != nil || size < 0 || size > int64(len(p.B)) {
			return badRecord("bad size", sz)
		}
		f.Mode, f.Size = ParseLsMode(perm), size
		total += size
	}
	if c, err := p.Field(); err != nil {
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
	rest := int64(len(p.B) - p.Pos)
	if size <= rest-int64(len(trailer)) {
		end := p.Pos + int(size)
		if bytes.Equal(p.B[end:end+len(trailer)], trailer) {
			data := p.B[p.Pos:end]
			p.Pos = end + len(trailer)
			return data, true, nil
		}
	}
	i := bytes.Index(p.B[p.Pos:], trailer)
	if i < 0 {
		return nil, false, ErrTruncated
	}
	p.Pos += i + len(trailer)
	return nil, false, nil
}

// until reads up to the nonce and a NUL.
func (p *recordParser) until() ([]byte, error) {
	trailer := append(append([]byte{}, p.nonce...), 0)
	i := bytes.Index(p.B[p.Pos:], trailer)
	if i < 0 {
		return nil, ErrTruncated
	}
	data := p.B[p.Pos : p.Pos+i]
	p.Pos += i + len(trailer)
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

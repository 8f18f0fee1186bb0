package inspect

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread"
)

// subPathRestart is what a stale subPath use needs.
const subPathRestart = "a subPath mount is bound when the container starts and never follows the volume: restart the workload"

// compareSubPath compares a subPath (or subPathExpr) use: a file or a
// directory of the volume, bound when the container started.
func compareSubPath(it Use, pod *corev1.Pod, in useInputs, obs *containerread.Verified, o CompareOptions) Comparison {
	pl, plErr := in.pl, in.plErr
	op, bad := mountRead(it, obs)
	if bad != nil {
		return *bad
	}
	sub, bad := resolveSubPath(it, obs)
	if bad != nil {
		return *bad
	}
	if plErr != nil {
		return Comparison{State: StateUnverifiable, Reason: plErr.Error()}
	}
	s := &subPathFiles{it: it, obs: obs, op: op, pl: pl, sub: sub,
		shown: subPathShown(it, pod, sub), kind: strings.ToLower(it.Object.Kind),
		fsGroup: hasFSGroup(pod), ps: otherSources(it, pod, o.Object)}
	if f, ok := pl.File(sub); ok {
		return s.onFile(f)
	}
	s.prefix = sub + "/"
	if sub == "" {
		s.prefix = ""
	}
	s.collectExpected()
	if op.Kind == containerread.PathFile || (op.Kind == containerread.PathUnknown && op.Files[""] != nil) {
		return s.leftoverFile()
	}
	if op.Kind == containerread.PathMissing {
		return Comparison{State: StateUnverifiable, Reason: fmt.Sprintf("mountPath %q does not exist in the container", it.Volume.MountPath)}
	}
	if op.Kind == containerread.PathOther || op.Kind == containerread.PathAtomic {
		return Comparison{State: StateUnverifiable, Reason: fmt.Sprintf("mountPath %q is not what a subPath mount of this volume shows", it.Volume.MountPath)}
	}
	// subPath onto a directory (or onto a path the payload lacks, which the
	// kubelet makes an empty directory).
	return s.onDir()
}

// resolveSubPath is the use's subPath as a payload path, subPathExpr
// expanded with the container's environment.
func resolveSubPath(it Use, obs *containerread.Verified) (string, *Comparison) {
	sub := it.Volume.SubPath
	if it.Mode == ModeSubPathExpr {
		if !obs.EnvRead {
			return "", &Comparison{State: StateUnverifiable, Reason: "cannot resolve subPathExpr: the container's environment could not be read"}
		}
		s, err := ExpandSubPathExpr(it.Volume.SubPathExpr, obs.Env)
		if err != nil {
			return "", &Comparison{State: StateUnverifiable, Reason: "cannot resolve subPathExpr: " + err.Error()}
		}
		sub = s
	}
	return cleanSubPath(sub), nil
}

// subPathFiles compares one subPath use.
type subPathFiles struct {
	it      Use
	obs     *containerread.Verified
	op      *containerread.VerifiedPath
	pl      Payload
	ps      projectedSources
	sub     string // the subPath, a payload path
	prefix  string // sub + "/" ("" for the volume root)
	shown   string // the subPath as the messages quote it
	kind    string
	fsGroup bool
	fileTally
	// expected: the payload's files below the subPath, relative to it, that
	// the container shows as this use's.
	expected []ExpectedFile
}

// onFile compares a subPath onto a file of the payload.
func (s *subPathFiles) onFile(f ExpectedFile) Comparison {
	it, op := s.it, s.op
	if known, maybe := s.ps.overrides(s.sub); known {
		return Comparison{State: StateNA, Reason: fmt.Sprintf("subPath %s shows the file of a later source of projected volume %q, which wins over this %s", s.shown, it.Volume.Name, s.kind)}
	} else if len(maybe) > 0 {
		return Comparison{State: StateUnverifiable, Reason: fmt.Sprintf("subPath %s %s", s.shown, unreadNote("", maybe)[1:]), Cause: CauseSecretsNotRead}
	}
	f.Path = ""
	switch {
	case op.Kind == containerread.PathDir || (op.Kind == containerread.PathUnknown && slices.Contains(op.Dirs, "")):
		return Comparison{State: StateStale, Reason: fmt.Sprintf("the container sees a directory at %q: it started before key %q existed; %s", it.Volume.MountPath, f.Key, subPathRestart),
			Files: []FileComparison{{Path: "", Key: f.Key, Status: FileMissing, Expected: &f, ExpectedMode: FSGroupMode(f.Mode, s.fsGroup)}}}
	case op.Kind == containerread.PathMissing:
		return Comparison{State: StateUnverifiable, Reason: fmt.Sprintf("mountPath %q does not exist in the container", it.Volume.MountPath)}
	case op.Kind == containerread.PathOther:
		return Comparison{State: StateUnverifiable, Reason: fmt.Sprintf("mountPath %q is not a regular file in the container", it.Volume.MountPath)}
	}
	fc := compareFile(&f, op.Files[""], s.fsGroup)
	c := Comparison{Files: []FileComparison{fc}}
	switch fc.Status {
	case FileEqual:
		c.State = StateCurrent
		c.Reason = fmt.Sprintf("matches the API now; it will keep this content after the next change of the %s until the container restarts%s", s.kind, noShellNote(s.obs))
	case FileNotCompared:
		c.State = StateUnverifiable
		c.Reason = "the file was not compared: larger than --max-bytes and the container has no sha256sum, or unreadable"
	case FileMissing:
		c.State = StateUnverifiable
		c.Reason = fmt.Sprintf("the file at mountPath %q could not be read", it.Volume.MountPath)
	default:
		c.State = StateStale
		c.Reason = fmt.Sprintf("differs from the API: %s", subPathRestart)
	}
	return c
}

// collectExpected finds the payload's files below the subPath.
func (s *subPathFiles) collectExpected() {
	for _, f := range s.pl.Files {
		rel, ok := strings.CutPrefix(f.Path, s.prefix)
		if !ok {
			continue
		}
		if known, maybe := s.ps.overrides(f.Path); known {
			s.overridden++
			continue
		} else if len(maybe) > 0 {
			s.mayBeUnread(displayPath(rel), maybe)
			continue
		}
		f.Path = rel
		s.expected = append(s.expected, f)
	}
}

// leftoverFile judges a file at a subPath the payload has no file for: a
// file the API no longer has (a removed key) or another source's file.
func (s *subPathFiles) leftoverFile() Comparison {
	known, maybe := s.ps.writes(s.sub)
	switch {
	case known || (s.ps.projected && len(s.it.KeyPaths) > 0):
		return Comparison{State: StateNA, Reason: fmt.Sprintf("subPath %s comes from another source of the projected volume", s.shown)}
	case len(maybe) > 0:
		return Comparison{State: StateUnverifiable, Reason: fmt.Sprintf("the container has a file at subPath %s, which the %s does not provide: it %s", s.shown, s.kind, unreadNote("", maybe)[1:]), Cause: CauseSecretsNotRead}
	}
	return Comparison{State: StateStale, Reason: fmt.Sprintf("the container still has subPath %s, which the %s no longer provides; %s", s.shown, s.kind, subPathRestart),
		Files: []FileComparison{compareFile(nil, s.op.Files[""], s.fsGroup)}}
}

// onDir compares a subPath onto a directory: the expected files, then the
// container's files that no source provides.
func (s *subPathFiles) onDir() Comparison {
	op := s.op
	for i := range s.expected {
		s.files = append(s.files, compareFile(&s.expected[i], op.Files[s.expected[i].Path], s.fsGroup))
	}
	for _, p := range slices.Sorted(maps.Keys(op.Files)) {
		if p == "" {
			continue
		}
		if _, ok := s.pl.File(s.prefix + p); ok {
			continue // expected, or another source's that wins
		}
		known, maybe := s.ps.writes(s.prefix + p)
		if known {
			continue
		}
		if len(maybe) > 0 {
			s.mayBeUnread(displayPath(p), maybe)
			continue
		}
		s.files = append(s.files, compareFile(nil, op.Files[p], s.fsGroup))
	}
	c := Comparison{Files: s.files}
	sortByPath(c.Files)
	s.dirVerdict(&c)
	return c
}

// dirVerdict sets the state and reason of a subPath onto a directory.
func (s *subPathFiles) dirVerdict(c *Comparison) {
	it, op := s.it, s.op
	t := tallyFiles(c.Files)
	extrasUnknown := !op.Listed
	seen := len(op.Files) + len(op.Dirs) + len(op.Others)
	note := s.overriddenNote()
	switch {
	case t.differ == 0 && len(s.unknown) > 0:
		c.State, c.Cause = StateUnverifiable, CauseSecretsNotRead
		c.Reason = fmt.Sprintf("the files of the %s that could be compared match (%s), but %s", s.kind, plural(t.equal, "file"), unreadNote(listNames(s.unknown, 3), s.unreadBy))
	case len(s.expected) == 0 && t.differ == 0 && s.overridden == 0:
		c.State = StateCurrent
		c.Reason = fmt.Sprintf("subPath %s is not in the payload; the container sees an empty directory, as the kubelet made it", s.shown)
	case t.differ == 0 && t.notCompared == 0 && !extrasUnknown:
		c.State = StateCurrent
		c.Reason = fmt.Sprintf("matches the API now (%s); at the next change of the %s the kubelet deletes this directory and the container sees it empty until it restarts%s", plural(t.equal, "file"), s.kind, note)
	case t.differ == 0:
		c.State = StateUnverifiable
		c.Reason = "the files that could be read match, but not all could be compared (no sha256sum for large files, or no shell to list the directory)"
	case seen == 0 && op.Listed:
		c.State = StateBroken
		c.Reason = fmt.Sprintf("the container sees an empty directory at %q: the kubelet deleted the directory this subPath was bound to when the %s changed; restart the workload (and mount the volume without subPath to get updates)", it.Volume.MountPath, s.kind)
	case op.Kind == containerread.PathUnknown && t.equal == 0 && t.notCompared == 0 && len(s.expected) > 0 &&
		!slices.ContainsFunc(c.Files, func(f FileComparison) bool { return f.Status == FileExtra }):
		c.State = StateBroken
		c.Reason = fmt.Sprintf("none of the files is at %q any more: the kubelet deleted the directory this subPath was bound to when the %s changed; restart the workload", it.Volume.MountPath, s.kind)
	default:
		c.State = StateStale
		c.Reason = fmt.Sprintf("differs from the API (%s): %s%s", listNames(t.names, 3), subPathRestart, note)
		if len(s.unknown) > 0 {
			c.Reason += "; not compared: " + unreadNote(listNames(s.unknown, 3), s.unreadBy)
		}
	}
}

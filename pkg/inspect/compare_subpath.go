package inspect

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

func compareSubPath(it Item, pod *corev1.Pod, obj Object, pl Payload, plErr error, obs *Observation, o CompareOptions) Comparison {
	op := obs.Paths[it.Volume.MountPath]
	if op == nil {
		return Comparison{State: StateUnverifiable, Reason: "the mount was not read"}
	}
	if op.Err != "" {
		return Comparison{State: StateUnverifiable, Reason: "no shell: " + op.Err, Cause: CauseNoShell}
	}
	sub := it.Volume.SubPath
	if it.Mode == ModeSubPathExpr {
		if !obs.EnvRead {
			return Comparison{State: StateUnverifiable, Reason: "cannot resolve subPathExpr: the container's environment could not be read"}
		}
		s, err := ExpandSubPathExpr(it.Volume.SubPathExpr, obs.Env)
		if err != nil {
			return Comparison{State: StateUnverifiable, Reason: "cannot resolve subPathExpr: " + err.Error()}
		}
		sub = s
	}
	sub = cleanSubPath(sub)
	if plErr != nil {
		return Comparison{State: StateUnverifiable, Reason: plErr.Error()}
	}
	shown := subPathShown(it, pod, sub)
	fsGroup := hasFSGroup(pod)
	kind := strings.ToLower(it.Object.Kind)
	restart := "a subPath mount is bound when the container starts and never follows the volume: restart the workload"
	ps := otherSources(it, pod, o.Object)
	if f, ok := pl.File(sub); ok {
		// subPath onto a file.
		if known, maybe := ps.overrides(sub); known {
			return Comparison{State: StateNA, Reason: fmt.Sprintf("subPath %s shows the file of a later source of projected volume %q, which wins over this %s", shown, it.Volume.Name, kind)}
		} else if len(maybe) > 0 {
			return Comparison{State: StateUnverifiable, Reason: fmt.Sprintf("subPath %s %s", shown, unreadNote("", maybe)[1:]), Cause: CauseSecretsNotRead}
		}
		f.Path = ""
		var of *ObservedFile
		switch {
		case op.Kind == PathDir || (op.Kind == PathUnknown && containsString(op.Dirs, "")):
			return Comparison{State: StateStale, Reason: fmt.Sprintf("the container sees a directory at %q: it started before key %q existed; %s", it.Volume.MountPath, f.Key, restart),
				Files: []FileComparison{{Path: "", Key: f.Key, Status: FileMissing, Expected: &f, ExpectedMode: FSGroupMode(f.Mode, fsGroup)}}}
		case op.Kind == PathMissing:
			return Comparison{State: StateUnverifiable, Reason: fmt.Sprintf("mountPath %q does not exist in the container", it.Volume.MountPath)}
		case op.Kind == PathOther:
			return Comparison{State: StateUnverifiable, Reason: fmt.Sprintf("mountPath %q is not a regular file in the container", it.Volume.MountPath)}
		}
		of = op.Files[""]
		fc := compareFile(&f, of, fsGroup)
		c := Comparison{Files: []FileComparison{fc}}
		switch fc.Status {
		case FileEqual:
			c.State = StateCurrent
			c.Reason = fmt.Sprintf("matches the API now; it will keep this content after the next change of the %s until the container restarts%s", kind, noShellNote(obs))
		case FileNotCompared:
			c.State = StateUnverifiable
			c.Reason = "the file was not compared: larger than --max-bytes and the container has no sha256sum, or unreadable"
		case FileMissing:
			c.State = StateUnverifiable
			c.Reason = fmt.Sprintf("the file at mountPath %q could not be read", it.Volume.MountPath)
		default:
			c.State = StateStale
			c.Reason = fmt.Sprintf("differs from the API: %s", restart)
		}
		return c
	}
	prefix := sub + "/"
	if sub == "" {
		prefix = ""
	}
	var expected []ExpectedFile
	var unknown, unreadBy []string
	overridden := 0
	for _, f := range pl.Files {
		rel, ok := strings.CutPrefix(f.Path, prefix)
		if !ok {
			continue
		}
		if known, maybe := ps.overrides(f.Path); known {
			overridden++
			continue
		} else if len(maybe) > 0 {
			unknown = append(unknown, displayPath(rel))
			unreadBy = unionStrings(unreadBy, maybe)
			continue
		}
		f.Path = rel
		expected = append(expected, f)
	}
	if op.Kind == PathFile || (op.Kind == PathUnknown && op.Files[""] != nil) {
		// A file the API no longer has (a removed key) or another
		// source's file.
		known, maybe := ps.writes(sub)
		switch {
		case known || (ps.projected && len(it.Items) > 0):
			return Comparison{State: StateNA, Reason: fmt.Sprintf("subPath %s comes from another source of the projected volume", shown)}
		case len(maybe) > 0:
			return Comparison{State: StateUnverifiable, Reason: fmt.Sprintf("the container has a file at subPath %s, which the %s does not provide: it %s", shown, kind, unreadNote("", maybe)[1:]), Cause: CauseSecretsNotRead}
		}
		return Comparison{State: StateStale, Reason: fmt.Sprintf("the container still has subPath %s, which the %s no longer provides; %s", shown, kind, restart),
			Files: []FileComparison{compareFile(nil, op.Files[""], fsGroup)}}
	}
	if op.Kind == PathMissing {
		return Comparison{State: StateUnverifiable, Reason: fmt.Sprintf("mountPath %q does not exist in the container", it.Volume.MountPath)}
	}
	if op.Kind == PathOther || op.Kind == PathAtomic {
		return Comparison{State: StateUnverifiable, Reason: fmt.Sprintf("mountPath %q is not what a subPath mount of this volume shows", it.Volume.MountPath)}
	}
	// subPath onto a directory (or onto a path the payload lacks, which the
	// kubelet makes an empty directory).
	var c Comparison
	for i := range expected {
		c.Files = append(c.Files, compareFile(&expected[i], op.Files[expected[i].Path], fsGroup))
	}
	extrasUnknown := !op.Listed
	for _, p := range sortedKeys(op.Files) {
		if p == "" {
			continue
		}
		if _, ok := pl.File(prefix + p); ok {
			continue // expected, or another source's that wins
		}
		known, maybe := ps.writes(prefix + p)
		if known {
			continue
		}
		if len(maybe) > 0 {
			unknown = append(unknown, displayPath(p))
			unreadBy = unionStrings(unreadBy, maybe)
			continue
		}
		c.Files = append(c.Files, compareFile(nil, op.Files[p], fsGroup))
	}
	sort.SliceStable(c.Files, func(i, j int) bool { return c.Files[i].Path < c.Files[j].Path })
	t := tallyFiles(c.Files)
	seen := len(op.Files) + len(op.Dirs) + len(op.Others)
	note := ""
	if overridden > 0 {
		note = fmt.Sprintf("; %s overwritten by a later source of the projected volume not compared", plural(overridden, "file"))
	}
	switch {
	case t.differ == 0 && len(unknown) > 0:
		c.State, c.Cause = StateUnverifiable, CauseSecretsNotRead
		c.Reason = fmt.Sprintf("the files of the %s that could be compared match (%s), but %s", kind, plural(t.equal, "file"), unreadNote(listNames(unknown, 3), unreadBy))
	case len(expected) == 0 && t.differ == 0 && overridden == 0:
		c.State = StateCurrent
		c.Reason = fmt.Sprintf("subPath %s is not in the payload; the container sees an empty directory, as the kubelet made it", shown)
	case t.differ == 0 && t.notCompared == 0 && !extrasUnknown:
		c.State = StateCurrent
		c.Reason = fmt.Sprintf("matches the API now (%s); at the next change of the %s the kubelet deletes this directory and the container sees it empty until it restarts%s", plural(t.equal, "file"), kind, note)
	case t.differ == 0:
		c.State = StateUnverifiable
		c.Reason = "the files that could be read match, but not all could be compared (no sha256sum for large files, or no shell to list the directory)"
	case seen == 0 && op.Listed:
		c.State = StateBroken
		c.Reason = fmt.Sprintf("the container sees an empty directory at %q: the kubelet deleted the directory this subPath was bound to when the %s changed; restart the workload (and mount the volume without subPath to get updates)", it.Volume.MountPath, kind)
	case op.Kind == PathUnknown && t.equal == 0 && t.notCompared == 0 && len(expected) > 0 && !containsExtra(c.Files):
		c.State = StateBroken
		c.Reason = fmt.Sprintf("none of the files is at %q any more: the kubelet deleted the directory this subPath was bound to when the %s changed; restart the workload", it.Volume.MountPath, kind)
	default:
		c.State = StateStale
		c.Reason = fmt.Sprintf("differs from the API (%s): %s%s", listNames(t.names, 3), restart, note)
		if len(unknown) > 0 {
			c.Reason += "; not compared: " + unreadNote(listNames(unknown, 3), unreadBy)
		}
	}
	return c
}

func containsExtra(fcs []FileComparison) bool {
	for _, f := range fcs {
		if f.Status == FileExtra {
			return true
		}
	}
	return false
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

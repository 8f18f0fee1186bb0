package inspect

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread"
)

// compareVolume compares a volume use (a whole object, items, or a source
// of a projected volume): the files of the kubelet's payload against the
// files under the atomic ..data link at the mountPath.
func compareVolume(it Use, pod *corev1.Pod, in useInputs, obs *containerread.Verified, o CompareOptions) Comparison {
	obj, pl, plErr := in.obj, in.pl, in.plErr
	op, bad := mountRead(it, obs)
	if bad != nil {
		return *bad
	}
	switch op.Kind {
	case containerread.PathMissing:
		return Comparison{State: StateUnverifiable, Reason: fmt.Sprintf("mountPath %q does not exist in the container", it.Volume.MountPath)}
	case containerread.PathDir, containerread.PathFile, containerread.PathOther:
		return Comparison{State: StateUnverifiable, Reason: fmt.Sprintf("no ..data link at mountPath %q: what the container sees there is not the kubelet's volume (shadowed by another mount?)", it.Volume.MountPath)}
	}
	if op.Unstable {
		return Comparison{State: StateUnverifiable, Reason: "the kubelet rewrote the volume while it was being read; run again"}
	}
	var c Comparison
	if t, ok := containerread.SyncedAt(op.Target); ok {
		c.SyncedAt = &t
	}
	if plErr != nil {
		return Comparison{State: StateUnverifiable, Reason: plErr.Error(), SyncedAt: c.SyncedAt}
	}
	// A projected volume shares its directory with other sources: a later
	// source that writes the same path wins it, and a file this payload
	// lacks may be another source's.
	v := &volumeFiles{it: it, pl: pl, op: op, fsGroup: hasFSGroup(pod), ps: otherSources(it, pod, o.Object),
		blocked: blockingSource(it, pod, o.Object)}
	v.compareExpected()
	v.compareExtras()
	c.Files = v.files
	sortByPath(c.Files)
	volumeVerdict(&c, it, obj, obs, o.Now, v)
	return c
}

// mountRead is what the container showed at the use's mountPath, or the
// verdict when the read did not reach it.
func mountRead(it Use, obs *containerread.Verified) (*containerread.VerifiedPath, *Comparison) {
	op := obs.Paths[it.Volume.MountPath]
	if op == nil {
		return nil, &Comparison{State: StateUnverifiable, Reason: "the mount was not read"}
	}
	if op.Err != "" {
		return nil, &Comparison{State: StateUnverifiable, Reason: "no shell: " + op.Err, Cause: CauseNoShell}
	}
	return op, nil
}

// fileTally is what a volume or subPath comparison collects besides the
// comparisons: the files left out because an unread Secret may provide
// them (and which), and how many a later projected source overwrites.
type fileTally struct {
	files      []FileComparison
	unknown    []string
	unreadBy   []string
	overridden int
}

// mayBeUnread leaves out a file that the unread sources by may provide.
func (t *fileTally) mayBeUnread(name string, by []string) {
	t.unknown = append(t.unknown, name)
	t.unreadBy = unionStrings(t.unreadBy, by)
}

// overriddenNote says how many files a later projected source overwrites.
func (t *fileTally) overriddenNote() string {
	if t.overridden == 0 {
		return ""
	}
	return fmt.Sprintf("; %s overwritten by a later source of the projected volume not compared", plural(t.overridden, "file"))
}

// volumeFiles compares the files of one volume use.
type volumeFiles struct {
	it      Use
	pl      Payload
	op      *containerread.VerifiedPath
	ps      projectedSources
	fsGroup bool
	fileTally
	// extrasUnknown: without a shell, the names in the volume could not be
	// listed, so a removed key's file would go unseen.
	extrasUnknown bool
	// foreign counts the files left to a source of the projected volume
	// this client does not know.
	foreign int
	// blocked names another source that makes the kubelet fail the
	// volume's update (blockingSource).
	blocked string
}

// compareExpected compares each file of the payload that the container
// shows as this use's: all but those a later source that was read writes.
// A file a later unread Secret may write is compared too (shadowable).
func (v *volumeFiles) compareExpected() {
	for i := range v.pl.Files {
		p := v.pl.Files[i].Path
		known, maybe := v.ps.overrides(p)
		if known {
			v.overridden++
			continue
		}
		v.files = append(v.files, shadowable(compareFile(&v.pl.Files[i], v.op.Files[p], v.fsGroup), maybe))
	}
}

// compareExtras adds the files the container has that the payload lacks
// and that are this use's to explain.
func (v *volumeFiles) compareExtras() {
	if v.op.Listed {
		for _, p := range slices.Sorted(maps.Keys(v.op.Files)) {
			v.extra(p, v.op.Files[p])
		}
		return
	}
	// no shell
	seen := map[string]bool{}
	for _, p := range slices.Sorted(maps.Keys(v.op.Files)) {
		seen[p] = true
		v.extra(p, v.op.Files[p])
	}
	if len(v.it.KeyPaths) > 0 {
		return
	}
	if v.op.Names == nil {
		v.extrasUnknown = true
	}
	for _, n := range v.op.Names {
		if strings.HasPrefix(n, "..") || seen[n] {
			continue
		}
		v.extra(n, &containerread.VerifiedFile{Path: n, Mode: -1, Size: -1})
	}
}

func (v *volumeFiles) extra(p string, of *containerread.VerifiedFile) {
	if _, ok := v.pl.File(p); ok {
		return
	}
	mine, maybe := ownsExtra(v.it, v.ps, p)
	if mine && v.ps.unknown > 0 && len(v.it.KeyPaths) == 0 {
		// it may be the file of a source this client does not know
		v.foreign++
		return
	}
	if len(maybe) > 0 {
		v.mayBeUnread(displayPath(p), maybe)
	}
	if mine {
		v.files = append(v.files, compareFile(nil, of, v.fsGroup))
	}
}

// volumeVerdict sets the state and reason of a volume comparison from its
// files. Files an unread Secret may write that the payload lacks (notes)
// do not keep it from in-sync: they are named as not compared.
func volumeVerdict(c *Comparison, it Use, obj Object, obs *containerread.Verified, now time.Time, v *volumeFiles) {
	t := tallyFiles(c.Files)
	written := ""
	if c.SyncedAt != nil {
		written = fmt.Sprintf("; the kubelet last wrote the volume at %s", c.SyncedAt.UTC().Format(time.RFC3339))
	}
	kind := strings.ToLower(it.Object.Kind)
	immutable := it.Object.Immutable || obj.Immutable
	note := v.notes()
	switch {
	case t.differ == 0 && t.notCompared == 0 && !v.extrasUnknown:
		c.State = StateInSync
		c.Reason = fmt.Sprintf("matches the API (%s)%s%s%s", plural(t.equal, "file"), written, noShellNote(obs), note)
	case t.differ == 0:
		c.State = StateUnverifiable
		if t.notCompared > 0 {
			c.Reason = fmt.Sprintf("%s not compared: larger than --max-bytes and the container has no sha256sum, or unreadable (%s); the rest matches", plural(t.notCompared, "file"), listNames(t.unread, 3))
		} else {
			c.Reason, c.Cause = "no shell: every expected file matches, but without sh or ls the container's other files cannot be listed", CauseNoShell
		}
	case len(t.names) == 0 && (immutable || v.blocked != ""):
		// Every difference may be an unread Secret's file, and the kubelet
		// will not write the volume again: waiting cannot tell an old file
		// from the Secret's.
		why := fmt.Sprintf("the %s is immutable", kind)
		if !immutable {
			why = "blocked by another source: " + v.blocked
		}
		c.State, c.Cause = StateUnverifiable, CauseSecretsNotRead
		c.Reason = fmt.Sprintf("%s, and the kubelet does not rewrite the volume (%s): only the Secret's data tells which%s%s",
			t.differences(), why, written, note)
	case immutable:
		c.State = StateStale
		c.Reason = fmt.Sprintf("%s, and the %s is immutable: it was deleted and re-created, and the kubelet keeps serving its old copy (even to new pods on this node while any pod there uses it); roll out a new name",
			t.differences(), kind)
	case v.blocked != "":
		c.State = StateStale
		c.Reason = fmt.Sprintf("%s; blocked by another source: %s, and the kubelet fails the whole volume's update, so the container keeps the old content until that is fixed%s%s",
			t.differences(), v.blocked, written, note)
	case len(t.names) == 0 && overdue(it, obj, now):
		// Every difference may be an unread Secret's file, and the kubelet
		// should have written the change by now: most likely the Secret's.
		c.State, c.Cause = StateUnverifiable, CauseSecretsNotRead
		c.Reason = fmt.Sprintf("%s; the %s changed longer ago than the kubelet takes to write a change (%s), so the file is most likely the Secret's%s%s",
			t.differences(), kind, formatDelay(useDelay(it)), written, note)
	default:
		// Also when every difference may be an unread Secret's file: right
		// after an edit it is most likely the kubelet's delay, so a wait
		// goes on; the reason names both.
		c.State = StatePending
		c.Reason = fmt.Sprintf("%s; %s%s%s", t.differences(), pendingTiming(it, obj, now), written, note)
	}
}

// notes says what of the volume was not compared: files a later source
// overwrites, files an unread Secret may provide, files of sources of an
// unknown kind.
func (v *volumeFiles) notes() string {
	note := v.overriddenNote()
	if len(v.unknown) > 0 {
		note += "; not compared: " + unreadNote(listNames(v.unknown, 3), v.unreadBy)
	}
	if v.foreign > 0 {
		note += fmt.Sprintf("; %s of the volume not compared: %s may come from a source of projected volume %q of a kind this client does not know",
			plural(v.foreign, "other file"), pluralVerb(v.foreign, "it", "they"), v.it.Volume.Name)
	}
	return note
}

// ownsExtra says whether a file at path p of the volume (relative to its
// root) that this use's payload lacks is this use's to explain (a key
// removed from the object): any file of a whole configMap or secret volume;
// only the listed paths of a source with items; for a whole source of a
// projected volume, a top-level name. A path another source writes is not;
// a path an unread Secret source may write is not either, and unreadBy names
// those sources.
func ownsExtra(it Use, ps projectedSources, p string) (mine bool, unreadBy []string) {
	if len(it.KeyPaths) > 0 {
		listed := slices.ContainsFunc(it.KeyPaths, func(kp KeyPath) bool { return path.Clean(kp.Path) == p })
		if !listed {
			return false, nil
		}
	} else if !ps.projected {
		return true, nil
	} else if strings.Contains(p, "/") {
		return false, nil
	}
	known, maybe := ps.writes(p)
	if known {
		return false, nil
	}
	if len(maybe) > 0 {
		return false, maybe
	}
	return true, nil
}

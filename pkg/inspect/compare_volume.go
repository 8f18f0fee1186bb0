package inspect

import (
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func compareVolume(it Item, pod *corev1.Pod, obj Object, pl Payload, plErr error, obs *Observation, o CompareOptions) Comparison {
	op := obs.Paths[it.Volume.MountPath]
	if op == nil {
		return Comparison{State: StateUnverifiable, Reason: "the mount was not read"}
	}
	if op.Err != "" {
		return Comparison{State: StateUnverifiable, Reason: "no shell: " + op.Err, Cause: CauseNoShell}
	}
	switch op.Kind {
	case PathMissing:
		return Comparison{State: StateUnverifiable, Reason: fmt.Sprintf("mountPath %q does not exist in the container", it.Volume.MountPath)}
	case PathDir, PathFile, PathOther:
		return Comparison{State: StateUnverifiable, Reason: fmt.Sprintf("no ..data link at mountPath %q: what the container sees there is not the kubelet's volume (shadowed by another mount?)", it.Volume.MountPath)}
	}
	if op.Unstable {
		return Comparison{State: StateUnverifiable, Reason: "the kubelet rewrote the volume while it was being read; run again"}
	}
	var c Comparison
	if t, ok := SyncedAt(op.Target); ok {
		c.SyncedAt = &t
	}
	if plErr != nil {
		return Comparison{State: StateUnverifiable, Reason: plErr.Error(), SyncedAt: c.SyncedAt}
	}
	fsGroup := hasFSGroup(pod)
	// A projected volume shares its directory with other sources: a later
	// source that writes the same path wins it, and a file this payload
	// lacks may be another source's.
	ps := otherSources(it, pod, o.Object)
	var unknown []string // paths an unread Secret may hold
	var unreadBy []string
	overridden := 0
	for i := range pl.Files {
		p := pl.Files[i].Path
		known, maybe := ps.overrides(p)
		switch {
		case known:
			overridden++
			continue
		case len(maybe) > 0:
			unknown = append(unknown, displayPath(p))
			unreadBy = unionStrings(unreadBy, maybe)
			continue
		}
		c.Files = append(c.Files, compareFile(&pl.Files[i], op.Files[p], fsGroup))
	}
	extra := func(p string, of *ObservedFile) {
		if _, ok := pl.File(p); ok {
			return
		}
		mine, maybe := ownsExtra(it, ps, p)
		if len(maybe) > 0 {
			unknown = append(unknown, displayPath(p))
			unreadBy = unionStrings(unreadBy, maybe)
		}
		if mine {
			c.Files = append(c.Files, compareFile(nil, of, fsGroup))
		}
	}
	extrasUnknown := false
	switch {
	case op.Listed:
		for _, p := range sortedKeys(op.Files) {
			extra(p, op.Files[p])
		}
	default: // no shell
		seen := map[string]bool{}
		for _, p := range sortedKeys(op.Files) {
			seen[p] = true
			extra(p, op.Files[p])
		}
		if len(it.Items) == 0 {
			if op.Names == nil {
				extrasUnknown = true
			}
			for _, n := range op.Names {
				if strings.HasPrefix(n, "..") || seen[n] {
					continue
				}
				extra(n, &ObservedFile{Path: n, Mode: -1, Size: -1})
			}
		}
	}
	sort.SliceStable(c.Files, func(i, j int) bool { return c.Files[i].Path < c.Files[j].Path })
	t := tallyFiles(c.Files)
	written := ""
	if c.SyncedAt != nil {
		written = fmt.Sprintf("; the kubelet last wrote the volume at %s", c.SyncedAt.UTC().Format(time.RFC3339))
	}
	kind := strings.ToLower(it.Object.Kind)
	note := ""
	if overridden > 0 {
		note = fmt.Sprintf("; %s overwritten by a later source of the projected volume not compared", plural(overridden, "file"))
	}
	if len(unknown) > 0 {
		note += "; not compared: " + unreadNote(listNames(unknown, 3), unreadBy)
	}
	switch {
	case t.differ == 0 && t.notCompared == 0 && !extrasUnknown && len(unknown) == 0:
		c.State = StateInSync
		c.Reason = fmt.Sprintf("matches the API (%s)%s%s%s", plural(t.equal, "file"), written, noShellNote(obs), note)
	case t.differ == 0 && len(unknown) > 0:
		// Never in-sync (a removed key may remain) nor pending (the file
		// may be the Secret's): unknown.
		c.State, c.Cause = StateUnverifiable, CauseSecretsNotRead
		c.Reason = fmt.Sprintf("the files of the %s that could be compared match (%s), but %s", kind, plural(t.equal, "file"),
			unreadNote(listNames(unknown, 3), unreadBy))
	case t.differ == 0:
		c.State = StateUnverifiable
		if t.notCompared > 0 {
			c.Reason = fmt.Sprintf("%s not compared: larger than --max-bytes and the container has no sha256sum, or unreadable (%s); the rest matches", plural(t.notCompared, "file"), listNames(t.unread, 3))
		} else {
			c.Reason, c.Cause = "no shell: every expected file matches, but without sh or ls the container's other files cannot be listed", CauseNoShell
		}
	case it.Object.Immutable || obj.Immutable:
		c.State = StateStale
		c.Reason = fmt.Sprintf("differs from the API (%s), and the %s is immutable: it was deleted and re-created, and the kubelet keeps serving its old copy (even to new pods on this node while any pod there uses it); roll out a new name",
			listNames(t.names, 3), kind)
	default:
		c.State = StatePending
		c.Reason = fmt.Sprintf("differs from the API (%s); %s%s%s", listNames(t.names, 3), pendingTiming(it, obj, o.Now), written, note)
	}
	return c
}

// pendingTiming says how long ago the object changed against the delay
// estimate.
func pendingTiming(it Item, obj Object, now time.Time) string {
	d := Delay{Min: durationOf(0), Max: durationOf(time.Duration(float64(DefaultSyncFrequency) * (1 + syncJitter))), Basis: BasisDefault}
	if it.Delay != nil {
		d = *it.Delay
	}
	kind := strings.ToLower(it.Object.Kind)
	last := obj.LastChange
	if last.IsZero() && it.Object.LastChange != nil {
		last = it.Object.LastChange.Time
	}
	if last.IsZero() {
		return fmt.Sprintf("the kubelet applies changes within %s", formatDelay(d))
	}
	since := now.Sub(last)
	if since < 0 {
		since = 0
	}
	ago := since.Truncate(time.Second).String()
	if since > d.Max.Duration {
		return fmt.Sprintf("the %s changed %s ago, longer than the %s the kubelet should take: it may be failing to sync this pod (see the pod's events); a pod annotation (refresh) makes it re-sync now",
			kind, ago, formatDelay(d))
	}
	return fmt.Sprintf("the %s changed %s ago and the kubelet applies changes within %s", kind, ago, formatDelay(d))
}

// ownsExtra says whether a file at path p of the volume (relative to its
// root) that this use's payload lacks is this use's to explain (a key
// removed from the object): any file of a whole configMap or secret volume;
// only the listed paths of a source with items; for a whole source of a
// projected volume, a top-level name. A path another source writes is not;
// a path an unread Secret source may write is not either, and unreadBy names
// those sources.
func ownsExtra(it Item, ps projectedSources, p string) (mine bool, unreadBy []string) {
	if len(it.Items) > 0 {
		listed := false
		for _, kp := range it.Items {
			if path.Clean(kp.Path) == p {
				listed = true
				break
			}
		}
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

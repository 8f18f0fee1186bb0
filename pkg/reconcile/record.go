package reconcile

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// With Config.DigestKey the loop records, on each consumer it made
// current, the keyed digest of what it reads of each object
// (AnnotationApplied); at start (Config.Resume) it compares the
// records with the objects and acts only where they differ: a restarted
// controller, or a new leader, restarts nothing that is current.

// subject is the object a record is kept on: a Deployment, StatefulSet,
// DaemonSet or Argo Rollout (its metadata: the pod template never changes, so recording
// rolls nothing out), or the pod itself for any other owner (a bare pod, a
// Job's, a custom controller's).
type subject struct {
	Kind, Namespace, Name string
	// workload is the consumers' owner, as the round's `only` filter
	// names it.
	workload inspect.WorkloadRef
}

func subjectOf(it inspect.Use) subject {
	if recordedOnWorkload(it.Workload) {
		return subject{Kind: it.Workload.GroupKind(), Namespace: it.Object.Namespace, Name: it.Workload.Name, workload: it.Workload}
	}
	return subject{Kind: "Pod", Namespace: it.Object.Namespace, Name: it.Pod.Name, workload: it.Workload}
}

func recordedOnWorkload(w inspect.WorkloadRef) bool {
	if refresh.IsRollout(w.GroupKind()) {
		return true // an Argo Rollout, recorded as a Deployment is
	}
	gk, ok := refresh.BuiltinKind(w.Kind)
	return ok && w.Builtin() && gk.Group == "apps" && gk.Kind != "ReplicaSet"
}

// recordKey names an object in a record: "configmap/NAME" or "secret/NAME".
func recordKey(k inspect.ObjectKey) string { return strings.ToLower(k.Kind) + "/" + k.Name }

// Record is the value of AnnotationApplied: per object, the digest of
// what the subject's consumers read of it when it was last made current,
// and the object's version then, as an entry (entryOf; keyID: which key
// made it).
type Record map[string]string

// keyID names a key without telling it: the first 4 bytes of an HMAC of a
// fixed text. An entry made under another key (the key rotated: its Secret
// was re-created) cannot be compared: its consumer is checked (verified,
// and restarted only if stale), never restarted for it.
func keyID(key []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("kubectl-cmsync record key id"))
	return hex.EncodeToString(m.Sum(nil)[:4])
}

// recordFormat prefixes the entries this build writes:
// "KEYID:v2.DIGEST.VERSION", DIGEST what Digest makes (without its own
// "v1." prefix) and VERSION the resource version of the object it was
// made from. A v1 entry ("KEYID:v1.DIGEST", the same digest) has no
// version.
const recordFormat = "v2"

// entry is one object's entry in a record, in its parts.
type entry struct{ keyID, format, digest, version string }

func parseEntry(s string) entry {
	id, rest, _ := strings.Cut(s, ":")
	format, rest, _ := strings.Cut(rest, ".")
	digest, version, _ := strings.Cut(rest, ".")
	return entry{keyID: id, format: format, digest: digest, version: version}
}

// entryOf is the entry of an object o whose consumers read reads.
func entryOf(key []byte, o inspect.Object, reads []Read) string {
	d := strings.TrimPrefix(Digest(key, reads), digestVersion)
	return keyID(key) + ":" + recordFormat + "." + d + "." + o.ResourceVersion
}

// sameDigests are the formats whose entries hold the same digest (v2 adds
// the object's version to v1's).
var sameDigests = map[string]bool{"v1": true, recordFormat: true}

// sameKeyAndFormat tells whether two entries were made under the same key and
// in formats of the same digest: only then can their digests be compared
// (a key rotation or a newer format differs with no edit).
func sameKeyAndFormat(a, b string) bool {
	ea, eb := parseEntry(a), parseEntry(b)
	return ea.keyID == eb.keyID && (ea.format == eb.format || sameDigests[ea.format] && sameDigests[eb.format])
}

// edits are the objects of differ edited since their record (editedFor):
// recorded under the same key and format as now, and the object written
// since. One whose version is the recorded one was not written: its
// record differs only because its consumers read other keys of it now (a
// new pod template), which is no edit. Without a version on either side
// (a v1 record, an absent object) a difference is taken for an edit.
func edits(recorded, now Record, differ []string) []string {
	var out []string
	for _, k := range differ {
		was, is := parseEntry(recorded[k]), parseEntry(now[k])
		if sameKeyAndFormat(recorded[k], now[k]) && (was.version == "" || is.version == "" || was.version != is.version) {
			out = append(out, k)
		}
	}
	return out
}

// ParseRecord reads an annotation's value; a value it cannot read is an
// empty record (every object is then recorded anew).
func ParseRecord(s string) Record {
	r := Record{}
	if s != "" && json.Unmarshal([]byte(s), &r) != nil {
		return Record{}
	}
	return r
}

// String is the annotation's value (sorted keys: equal records are equal
// strings).
func (r Record) String() string {
	b, _ := json.Marshal(map[string]string(r))
	return string(b)
}

// digests computes, for each subject with a pod, the digest of what it
// reads of each object (the uses' keys; all keys for a whole-object use).
func digests(key []byte, snap *inspect.Snapshot, items []inspect.Use) map[subject]Record {
	type read struct {
		subject subject
		object  inspect.ObjectKey
	}
	reads := map[read][]Read{}
	seen := map[string]bool{}
	for _, it := range items {
		if it.Pod.Name == "" {
			continue
		}
		s, k := subjectOf(it), it.Key()
		var keys []string
		if len(it.Keys) > 0 {
			keys = slices.Sorted(slices.Values(it.Keys))
		}
		// a Deployment's pods read the same: count each read once, so that
		// scaling does not change the digest
		id := strings.Join(append([]string{s.Kind, s.Name, recordKey(k), strings.Join(keys, "\x00")}, boolString(keys == nil)), "\x01")
		if seen[id] {
			continue
		}
		seen[id] = true
		obj := snap.Object(k)
		if obj.Unread {
			continue
		}
		reads[read{s, k}] = append(reads[read{s, k}], Read{Object: obj, Keys: keys})
	}
	out := map[subject]Record{}
	for r, rs := range reads {
		if out[r.subject] == nil {
			out[r.subject] = Record{}
		}
		out[r.subject][recordKey(r.object)] = entryOf(key, rs[0].Object, rs)
	}
	return out
}

func boolString(b bool) string {
	if b {
		return "all"
	}
	return "listed"
}

// updated is the record to write on a subject once the objects done (by
// recordKey) were made current: their digests now, the other entries kept
// (they were not checked), entries of objects it no longer reads dropped.
// ok is false when nothing changes.
func updated(old, now Record, done []string) (Record, bool) {
	r := Record{}
	for k, v := range old {
		if _, reads := now[k]; reads {
			r[k] = v
		}
	}
	for _, k := range done {
		if v, ok := now[k]; ok {
			r[k] = v
		}
	}
	return r, !maps.Equal(r, old)
}

// compare tells, for one subject, which objects it reads are to be
// checked (differ: its digest changed since its record, recorded under
// another key, or in a format of another digest: a key rotation or a newer
// controller checks them, which restarts only what is stale) and which it
// has no record of (unknown). The object's version alone changing (its
// metadata written) is no difference.
func compare(recorded, now Record) (differ, unknown []string) {
	for _, k := range slices.Sorted(maps.Keys(now)) {
		switch old, ok := recorded[k]; {
		case !ok:
			unknown = append(unknown, k)
		case !sameKeyAndFormat(old, now[k]) || parseEntry(old).digest != parseEntry(now[k]).digest:
			differ = append(differ, k)
		}
	}
	return differ, unknown
}

// recordPatch is the merge patch of a subject's record.
func recordPatch(r Record) []byte {
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{AnnotationApplied: r.String()}}})
	return b
}

package reconcile

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"hash"
	"maps"
	"slices"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// digestVersion prefixes every digest, so that a change of the encoding is
// seen as "different", never as equal.
const digestVersion = "v1."

// Read is what one consumer reads of one object: Keys nil for every key.
type Read struct {
	Object inspect.Object
	Keys   []string
}

// Digest returns a keyed digest (HMAC-SHA256 under secret) of what reads
// read: for each object (in a fixed order), whether it exists, and each
// key read with its value and whether it is binary. Keyed, so that the
// annotation tells nothing of a Secret's values to whoever can read the
// workload: a plain hash of a short value can be reversed by trying them
// all. An empty secret is refused by the caller, not here.
func Digest(secret []byte, reads []Read) string {
	sorted := make([]Read, len(reads))
	for i, r := range reads {
		sorted[i] = Read{Object: r.Object, Keys: normalKeys(r.Keys)}
	}
	slices.SortFunc(sorted, compareReads)
	m := hmac.New(sha256.New, secret)
	for _, r := range sorted {
		o := r.Object
		field(m, o.Kind, o.Namespace, o.Name)
		if !o.Exists {
			field(m, "absent")
			continue
		}
		keys := r.Keys
		if keys == nil {
			keys = slices.Sorted(maps.Keys(o.Data))
		}
		for _, k := range keys {
			v, ok := o.Data[k]
			switch {
			case !ok:
				field(m, k, "missing")
			case o.BinaryKeys[k]:
				field(m, k, "binary", string(v))
			default:
				field(m, k, "data", string(v))
			}
		}
		field(m, "end")
	}
	return digestVersion + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// field writes each string length-prefixed, so that no two different
// inputs write the same bytes.
func field(h hash.Hash, parts ...string) {
	var n [8]byte
	for _, p := range parts {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write([]byte(p))
	}
}

func keyOf(o inspect.Object) inspect.ObjectKey {
	return inspect.ObjectKey{Kind: o.Kind, Namespace: o.Namespace, Name: o.Name}
}

func compareKey(a, b inspect.ObjectKey) int {
	for _, c := range [][2]string{{a.Kind, b.Kind}, {a.Namespace, b.Namespace}, {a.Name, b.Name}} {
		if c[0] != c[1] {
			if c[0] < c[1] {
				return -1
			}
			return 1
		}
	}
	return 0
}

// normalKeys is a read's key list sorted, each key once (nil stays nil:
// every key).
func normalKeys(keys []string) []string {
	if keys == nil {
		return nil
	}
	return slices.Compact(slices.Sorted(slices.Values(keys)))
}

// compareReads orders reads by object, then by the keys read (every key
// first), so that the digest of one consumer's reads does not depend on the
// order they were found in, even where it reads one object twice.
func compareReads(a, b Read) int {
	if c := compareKey(keyOf(a.Object), keyOf(b.Object)); c != 0 {
		return c
	}
	if (a.Keys == nil) != (b.Keys == nil) {
		if a.Keys == nil {
			return -1
		}
		return 1
	}
	return slices.Compare(a.Keys, b.Keys)
}

package inspect

import (
	"fmt"
	"path"
	"sort"
	"strings"
)

// DefaultFileMode is the mode of a configMap, secret or projected volume's
// files when the volume sets no defaultMode (the API server defaults it to
// the same value).
const DefaultFileMode int32 = 0o644

// ExpectedFile is one file the kubelet writes for a volume use.
type ExpectedFile struct {
	// Path is relative to the volume root: slash-separated and cleaned
	// (items paths may contain sub-directories).
	Path string
	// Key is the object key the content comes from.
	Key string
	// Mode holds the permission bits the kubelet sets (before any fsGroup
	// adjustment; see FSGroupMode).
	Mode int32
	Data []byte
}

// Payload is what the kubelet writes for one volume use (one configMap or
// secret volume, or one source of a projected volume).
type Payload struct {
	// Files, sorted by Path.
	Files []ExpectedFile
	// Skipped lists the keys named by `items` that the object lacks while
	// the use is optional: the kubelet skips them.
	Skipped []string
}

// File returns the expected file at p, if any.
func (p Payload) File(rel string) (ExpectedFile, bool) {
	i := sort.Search(len(p.Files), func(i int) bool { return p.Files[i].Path >= rel })
	if i < len(p.Files) && p.Files[i].Path == rel {
		return p.Files[i], true
	}
	return ExpectedFile{}, false
}

// PayloadError says why the kubelet would refuse to write the volume: the
// object or a named key is missing and the use is not optional, or a path is
// invalid. A running container keeps whatever it had before.
type PayloadError struct {
	// ObjectMissing is set when the object itself does not exist.
	ObjectMissing bool
	// MissingKeys are the keys named by `items` that the object lacks.
	MissingKeys []string
	// BadPath is an items path the atomic writer rejects.
	BadPath string
	Object  ObjectKey
}

func (e *PayloadError) Error() string {
	what := fmt.Sprintf("%s %q", e.Object.Kind, e.Object.Name)
	switch {
	case e.ObjectMissing:
		return fmt.Sprintf("%s does not exist", what)
	case e.BadPath != "":
		return fmt.Sprintf("invalid items path %q", e.BadPath)
	default:
		q := make([]string, len(e.MissingKeys))
		for i, k := range e.MissingKeys {
			q[i] = fmt.Sprintf("%q", k)
		}
		return fmt.Sprintf("key %s is not in %s", strings.Join(q, ", "), what)
	}
}

// ExpectedFiles returns the files the kubelet writes for a volume source,
// following pkg/volume/configmap (and secret, projected) MakePayload and the
// atomic writer's path rules:
//   - without items, every key of data and binaryData becomes a file named
//     after the key, with defaultMode (DefaultFileMode when nil);
//   - with items, only the listed keys, each at its path (which may contain
//     sub-directories), with the item's mode if set, else defaultMode; a
//     later item with the same path wins;
//   - a missing key is skipped when the use is optional, else an error;
//   - a missing object is an empty payload when optional, else an error.
//
// The error, when not nil, is a *PayloadError.
func ExpectedFiles(obj Object, items []KeyPath, defaultMode *int32, optional bool) (Payload, error) {
	mode := DefaultFileMode
	if defaultMode != nil {
		mode = *defaultMode
	}
	key := ObjectKey{Kind: obj.Kind, Namespace: obj.Namespace, Name: obj.Name}
	if !obj.Exists {
		if optional {
			return Payload{}, nil
		}
		return Payload{}, &PayloadError{ObjectMissing: true, Object: key}
	}
	byPath := map[string]ExpectedFile{}
	var p Payload
	if len(items) == 0 {
		for k, v := range obj.Data {
			byPath[k] = ExpectedFile{Path: k, Key: k, Mode: mode, Data: v}
		}
	} else {
		var missing []string
		for _, kp := range items {
			v, ok := obj.Data[kp.Key]
			if !ok {
				if optional {
					p.Skipped = append(p.Skipped, kp.Key)
					continue
				}
				missing = append(missing, kp.Key)
				continue
			}
			m := mode
			if kp.Mode != nil {
				m = *kp.Mode
			}
			byPath[kp.Path] = ExpectedFile{Path: kp.Path, Key: kp.Key, Mode: m, Data: v}
		}
		if len(missing) > 0 {
			return Payload{}, &PayloadError{MissingKeys: missing, Object: key}
		}
	}
	// The atomic writer validates every path, then cleans it.
	raws := make([]string, 0, len(byPath))
	for raw := range byPath {
		raws = append(raws, raw)
	}
	sort.Strings(raws)
	cleaned := map[string]ExpectedFile{}
	for _, raw := range raws {
		f := byPath[raw]
		if !ValidPayloadPath(raw) {
			return Payload{}, &PayloadError{BadPath: raw, Object: key}
		}
		c := path.Clean(raw)
		f.Path = c
		cleaned[c] = f
	}
	for _, f := range cleaned {
		p.Files = append(p.Files, f)
	}
	sort.Slice(p.Files, func(i, j int) bool { return p.Files[i].Path < p.Files[j].Path })
	return p, nil
}

// ValidPayloadPath applies the atomic writer's validatePath: not empty, not
// absolute, at most 4096 bytes, no ".." element, no element longer than 255
// bytes, and the first element does not start with "..".
func ValidPayloadPath(p string) bool {
	if p == "" || strings.HasPrefix(p, "/") || len(p) > 4096 {
		return false
	}
	elems := strings.Split(p, "/")
	for _, e := range elems {
		if e == ".." || len(e) > 255 {
			return false
		}
	}
	if strings.HasPrefix(elems[0], "..") && len(elems[0]) > 2 {
		return false
	}
	// path.Clean must leave something that names a file below the root.
	c := path.Clean(p)
	return c != "." && c != "/"
}

// ItemPayload builds the payload of a volume use from its item: Items and
// DefaultMode as uses.go recorded them.
func ItemPayload(it Use, obj Object) (Payload, error) {
	return ExpectedFiles(obj, it.KeyPaths, it.DefaultMode, it.Optional)
}

// FSGroupMode returns the mode the kubelet leaves on a file of a configMap,
// secret or projected volume when the pod sets securityContext.fsGroup: the
// volume is read-only, so the group read bits are added (0440).
func FSGroupMode(mode int32, fsGroup bool) int32 {
	if fsGroup {
		return mode | 0o440
	}
	return mode
}

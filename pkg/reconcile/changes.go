package reconcile

import (
	"bytes"
	"slices"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// Change is what differs between two versions of one ConfigMap or Secret.
type Change struct {
	Object inspect.ObjectKey
	// Keys are the keys added, removed or changed, sorted. A ConfigMap key
	// that moved between data and binaryData with the same bytes counts as
	// changed: it stops (or starts) being an environment variable.
	Keys []string
	// Created or Deleted: the object appeared or disappeared; every use of
	// it is concerned, whatever keys it reads.
	Created, Deleted bool
	// Version is the object's resourceVersion after the change (the
	// latest of merged changes): a snapshot of that version already holds
	// it.
	Version string
}

// Diff returns the change from old to cur, two versions of the same object
// (Exists false for an absent one).
func Diff(old, cur inspect.Object) Change {
	c := Change{Object: inspect.ObjectKey{Kind: cur.Kind, Namespace: cur.Namespace, Name: cur.Name}}
	if c.Object.Name == "" {
		c.Object = inspect.ObjectKey{Kind: old.Kind, Namespace: old.Namespace, Name: old.Name}
	}
	c.Version = cur.ResourceVersion
	c.Created = !old.Exists && cur.Exists
	c.Deleted = old.Exists && !cur.Exists
	for k, v := range cur.Data {
		ov, ok := old.Data[k]
		if !ok || !bytes.Equal(ov, v) || old.BinaryKeys[k] != cur.BinaryKeys[k] {
			c.Keys = append(c.Keys, k)
		}
	}
	for k := range old.Data {
		if _, ok := cur.Data[k]; !ok {
			c.Keys = append(c.Keys, k)
		}
	}
	slices.Sort(c.Keys)
	return c
}

// Empty reports whether nothing a consumer can read changed (an edit of
// labels or annotations only, or a resync).
func (c Change) Empty() bool {
	return len(c.Keys) == 0 && !c.Created && !c.Deleted
}

// Concerns returns the changed keys the use reads, and whether the change
// can alter what it sees: a use that reads every key (a whole volume,
// envFrom) is concerned by any key, a use of listed keys (items, env
// valueFrom) only by those, and every use by the object appearing or
// disappearing. A key a use does not read is no reason to act on it.
func Concerns(it inspect.Use, c Change) ([]string, bool) {
	if it.Key() != c.Object {
		return nil, false
	}
	if len(it.Keys) == 0 {
		return c.Keys, !c.Empty()
	}
	var read []string
	for _, k := range it.Keys {
		if _, found := slices.BinarySearch(c.Keys, k); found && !slices.Contains(read, k) {
			read = append(read, k)
		}
	}
	return read, len(read) > 0 || c.Created || c.Deleted
}
